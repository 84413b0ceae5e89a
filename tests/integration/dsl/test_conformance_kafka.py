"""Trident conformance on KafkaSpout: every case of ``conformance_cases``, one topology, 3 batches.

Each tuple is a JSON object in a record's value, produced to an explicit partition of a
4-partition topic; ``each(["value"], FromJson(...), typed fields)`` + ``project`` turn records
into the same tuples the FeederBatchSpout run feeds. Batch k: produce its records, wait until
the broker's fetch responses show them all, run the topology with ``trigger="available_now"``
(one micro-batch of everything available), wait for it to stop; the next run resumes from
the same checkpoint, so run k is txid k.

The KafkaSpout gives one Spark partition per Kafka partition that has records in the batch,
in partition order, each in offset order: batch 2 leaves partitions 0 and 2 empty, so its
Spark partitions 0 and 1 are Kafka partitions 1 and 3
(``test_kafka_partitions_map_to_spark_partitions`` checks it on the raw spout).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import conformance_cases as cc
import conformance_ops as ops
import pytest

from trident_spark import TridentTopology
from trident_spark.local.kafka import create_topic, produce
from trident_spark.spout import KafkaSpout
from trident_spark.spout.kafka.client import KafkaBrokerClient

pytestmark = pytest.mark.integration

PARTITIONS = 4
#: The Kafka partition of each tuple of each batch (in produce order).
ASSIGNMENT = [[j % PARTITIONS for j in range(len(ops.BATCHES[0]))],
              [3, 0, 0, 1, 2, 2, 1],
              [1, 1, 3, 3, 1]]
OTHER_PARTITIONS = 2


def spark_partitions(batch: list[ops.Row], assignment: list[int]) -> list[list[ops.Row]]:
    """The batch as the KafkaSpout partitions it: Kafka partitions with records, in order."""
    by_partition = [[t for t, p in zip(batch, assignment, strict=True) if p == kp]
                    for kp in range(PARTITIONS)]
    return [rows for rows in by_partition if rows]


def other_partitions(batch: list[ops.Row]) -> list[list[ops.Row]]:
    """Spout m1's Spark partitions: record j goes to Kafka partition j % 2; the non-empty ones, in order."""
    parts = [[t for j, t in enumerate(batch) if j % OTHER_PARTITIONS == p] for p in range(OTHER_PARTITIONS)]
    return [rows for rows in parts if rows]


def wait_for_ends(bootstrap: str, topic: str, ends: dict[int, int], timeout: float = 30.0) -> None:
    """Until fetch responses show every partition ending at ``ends`` (Tansu's ListOffsets may lag)."""
    client = KafkaBrokerClient(KafkaSpout(bootstrap, [topic]).config)
    deadline = time.monotonic() + timeout
    try:
        while True:
            probes = client.probe({(topic, p): end for p, end in ends.items()}, sample_bytes=1)
            seen = {tp[1]: (None if r.out_of_range else r.high_watermark) for tp, r in probes.items()}
            if seen == ends:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: partitions end at {seen}, expected {ends}")
            time.sleep(0.2)
    finally:
        client.close()


class KafkaPartitionsCase:
    """Kafka only: the raw spout's tuples land in the Spark partition of their Kafka partition."""

    def __init__(self, stream: Any) -> None:
        self.sink = (stream.each(["partition"], ops.PartitionTag(), ops.TAG_FIELDS)
                     .project(["value", "partition", "pidx", "nparts"]).collect())

    def check(self, views: list[ops.View]) -> None:
        batches = self.sink.batches
        assert sorted(batches) == [v.txid for v in views]
        for view, assignment in zip(views, ASSIGNMENT, strict=True):
            used = sorted(set(assignment))
            batch = ops.BATCHES[view.txid]
            expected = [{"value": json.dumps(t), "partition": kp, "pidx": used.index(kp), "nparts": len(used)}
                        for kp in used for t, p in zip(batch, assignment, strict=True) if p == kp]
            assert batches[view.txid] == expected, f"batch {view.txid}"


def json_stream(topology: TridentTopology, name: str, spout: KafkaSpout, fields: list[str],
                names: list[str]) -> Any:
    raw = topology.newStream(name, spout)
    return raw, raw.each(["value"], ops.FromJson(names), fields).project(names)


@pytest.fixture(scope="module")
def conformance(spark: Any, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    stamp = f"{os.getpid()}-{int(time.time() * 1000) % 10**8}"
    topics = {key: f"conformance-{key}-{stamp}" for key in ("main", "m1", "m2")}
    create_topic(kafka_bootstrap, topics["main"], partitions=PARTITIONS)
    for key in ("m1", "m2"):
        create_topic(kafka_bootstrap, topics[key], partitions=OTHER_PARTITIONS)

    topology = TridentTopology()
    raw, main = json_stream(topology, "conformance", KafkaSpout(kafka_bootstrap, [topics["main"]]),
                            ops.FIELDS, ops.NAMES)
    _, m1 = json_stream(topology, "m1", KafkaSpout(kafka_bootstrap, [topics["m1"]]), ops.OTHER_FIELDS,
                        ops.OTHER_NAMES)
    _, m2 = json_stream(topology, "m2", KafkaSpout(kafka_bootstrap, [topics["m2"]]), ops.OTHER_FIELDS,
                        ops.OTHER_NAMES)
    built = cc.build_cases(ops.Streams(topology, main, m1, m2))
    partitions_case = KafkaPartitionsCase(raw)

    checkpoint = tmp_path_factory.mktemp("conformance-kafka") / "ckpt"
    ends = {key: dict.fromkeys(range(PARTITIONS if key == "main" else OTHER_PARTITIONS), 0) for key in topics}
    started = time.monotonic()
    for k, batch in enumerate(ops.BATCHES):
        records = {"main": [(None, json.dumps(t), p) for t, p in zip(batch, ASSIGNMENT[k], strict=True)]}
        for side, key in enumerate(("m1", "m2")):
            records[key] = [(None, json.dumps(t), j % OTHER_PARTITIONS)
                            for j, t in enumerate(ops.OTHER_BATCHES[side][k])]
        for key, produced in records.items():
            produce(kafka_bootstrap, topics[key], produced)
            for _, _, p in produced:
                ends[key][p] += 1
            wait_for_ends(kafka_bootstrap, topics[key], ends[key])
        handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
        try:
            assert handle.awaitTermination(600), f"run {k}: the availableNow run did not finish in 600 s"
        finally:
            handle.stop()
        txids = {k} | set(range(k))
        assert set(partitions_case.sink.batches) == txids, "one run must be one micro-batch (one txid)"
        assert set(built[0].sink.batches) == txids
    print(f"conformance on KafkaSpout: {len(built)} outputs x {len(ops.BATCHES)} runs in "
          f"{time.monotonic() - started:.1f} s")

    views = []
    for k, batch in enumerate(ops.BATCHES):
        m1_batch, m2_batch = ops.OTHER_BATCHES[0][k], ops.OTHER_BATCHES[1][k]
        views.append(ops.View(k, spark_partitions(batch, ASSIGNMENT[k]), (m1_batch, m2_batch),
                             other_partitions(m1_batch)))
    env = ops.Env(default_parallelism=spark.sparkContext.defaultParallelism,
                 shuffle_partitions=int(spark.conf.get("spark.sql.shuffle.partitions")))
    return {"cases": {c.name: c for c in built}, "views": views, "env": env, "partitions": partitions_case}


def test_kafka_partitions_map_to_spark_partitions(conformance: dict[str, Any]) -> None:
    conformance["partitions"].check(conformance["views"])


@pytest.mark.parametrize("name", cc.params())
def test_conformance(conformance: dict[str, Any], name: str) -> None:
    cc.check_case(conformance["cases"][name], conformance["views"], conformance["env"])
