"""Trident conformance on FeederBatchSpout: every case of ``conformance_cases``, one topology, one run.

Three batches are fed: the first two test batches, then an empty one (every case's Trident
result for a batch with no tuples; the Kafka run covers the third test batch). The feeder cuts
each batch into 3 contiguous chunks, one per Spark partition, so the partition-dependent
results are computed from that split. The aggregations' Spark plans are checked here too.
"""

from __future__ import annotations

import time
from typing import Any

import conformance_cases as cc
import conformance_ops as ops
import pytest

from trident_spark import TridentTopology
from trident_spark.spout import FeederBatchSpout
from trident_spark.spout.testing.batch_files import chunk_bounds

pytestmark = pytest.mark.integration

PARTITIONS = 3
BATCHES = [*ops.BATCHES[:2], []]  # the 3rd is empty
OTHER = tuple([*side[:2], []] for side in ops.OTHER_BATCHES)


def split(rows: list[ops.Row], parts: int) -> list[list[ops.Row]]:
    """FeederBatchSpout's documented split: contiguous chunks, the first ones one row longer."""
    return [rows[slice(*chunk_bounds(len(rows), parts, i))] for i in range(parts)]


@pytest.fixture(scope="module")
def conformance(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    topology = TridentTopology()
    main = FeederBatchSpout(ops.FIELDS, num_partitions=PARTITIONS)
    m1 = FeederBatchSpout(ops.OTHER_FIELDS, num_partitions=2)
    m2 = FeederBatchSpout(ops.OTHER_FIELDS, num_partitions=2)
    streams = ops.Streams(topology, topology.newStream("conformance", main), topology.newStream("m1", m1),
                         topology.newStream("m2", m2))
    built = cc.build_cases(streams)
    for k, batch in enumerate(BATCHES):
        main.feed(ops.values_of(batch, ops.NAMES))
        m1.feed(ops.values_of(OTHER[0][k], ops.OTHER_NAMES))
        m2.feed(ops.values_of(OTHER[1][k], ops.OTHER_NAMES))

    started = time.monotonic()
    handle = topology.run(checkpoint_location=tmp_path_factory.mktemp("conformance") / "ckpt",
                          trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    print(f"conformance on FeederBatchSpout: {len(built)} outputs x {len(BATCHES)} batches in "
          f"{time.monotonic() - started:.1f} s")

    views = [ops.View(k, split(batch, PARTITIONS), (OTHER[0][k], OTHER[1][k]), split(OTHER[0][k], 2))
             for k, batch in enumerate(BATCHES)]
    env = ops.Env(default_parallelism=spark.sparkContext.defaultParallelism,
                 shuffle_partitions=int(spark.conf.get("spark.sql.shuffle.partitions")))
    return {"cases": {c.name: c for c in built}, "views": views, "env": env,
            "plans": cc.spark_plans(spark, topology, built)}


@pytest.mark.parametrize("name", cc.params())
def test_conformance(conformance: dict[str, Any], name: str) -> None:
    cc.check_case(conformance["cases"][name], conformance["views"], conformance["env"])


@pytest.mark.parametrize("name", [c.name for c in ops.CASES if c.plan is not None])
def test_aggregation_plan(conformance: dict[str, Any], name: str) -> None:
    """Built-in combiners run as Spark SQL; Python combiners aggregate partially before the shuffle
    (Trident's plan); other aggregators see the shuffled tuples."""
    cc.check_plan(conformance["plans"][name], conformance["cases"][name].plan)
