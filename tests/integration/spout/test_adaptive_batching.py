"""KafkaSpout(adaptive_target_ms=) on real Spark (local[2]) and a real broker (the kafka fixture).

The operator's cost per record is set by a file the test rewrites: a
partitionAggregate that sleeps ``records x cost`` per partition, so the batch
duration the controller steers is real wall time on the driver. Durations are
Spark's ``addBatch`` (the ``foreachBatch`` call the feedback file measures).
Run with ``-s`` to see the batches.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from tests.integration.spout.test_kafka_spout_delivery import wait_for
from trident_spark import TridentTopology
from trident_spark.local.kafka import produce
from trident_spark.operation import Aggregator
from trident_spark.spout import KafkaSpout
from trident_spark.spout.kafka.adaptive import INITIAL_LIMIT_BYTES, AdaptiveController, Observation

pytestmark = pytest.mark.integration

# pytest imports this file from a path the executors do not have: ship its classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: Well above this loaded 2-core machine's fixed cost of a batch (0.4-1 s seen), so that
#: the per-record cost the test controls is most of a batch.
TARGET_MS = 1500
RECORD_BYTES = 100


class CostlyCount(Aggregator):
    """Counts a partition's records, then sleeps ``count x cost`` (ms per record, read from a file)."""

    output_types = {"n": "bigint"}

    def __init__(self, cost_file: str) -> None:
        self.cost_file = cost_file

    def init(self, batch_id, collector):
        return [0, float(Path(self.cost_file).read_text())]

    def aggregate(self, state, tuple, collector):
        state[0] += 1

    def complete(self, state, collector):
        time.sleep(state[0] * state[1] / 1000)
        collector.emit([state[0]])


def preload(bootstrap: str, topic: str, records: int) -> None:
    value = b"v" * RECORD_BYTES
    produce(bootstrap, topic, [(None, value, i % 2) for i in range(records)])


def start(spark: Any, bootstrap: str, topic: str, cost_file: Path, checkpoint: Path) -> Any:
    topology = TridentTopology()
    (topology.newStream("adaptive", KafkaSpout(bootstrap, [topic], adaptive_target_ms=TARGET_MS))
     .partitionAggregate(["value"], CostlyCount(str(cost_file)), ["n"]).collect())
    return topology.run(checkpoint_location=checkpoint, spark=spark)  # batches back to back


def batches_done(handle: Any, n: int) -> bool:
    """At least ``n`` batches finished; fails at once if the query died."""
    for query in handle.queries.values():
        if query.exception() is not None:
            raise AssertionError(f"the query failed: {query.exception()}")
    return len(handle.progress) >= n


def last_txid(handle: Any) -> int:
    return max(p.txid for p in handle.progress)


def offset_document(checkpoint: Path, txid: int) -> dict[str, Any]:
    """The spout's offset document Spark logged for batch ``txid`` (before running it)."""
    lines = (checkpoint / "adaptive" / "offsets" / str(txid)).read_text().splitlines()
    document = json.loads(lines[-1])
    return json.loads(document) if isinstance(document, str) else document


def batches(handle: Any, checkpoint: Path) -> list[dict[str, Any]]:
    out = []
    for p in sorted(handle.progress, key=lambda p: p.txid):
        if p.rows == 0:
            continue
        batch = offset_document(checkpoint, p.txid)["batch"]
        out.append({"txid": p.txid, "rows": p.rows, "ms": p.durations_ms.get("addBatch", p.duration_ms),
                    "limit": batch["read_limit_bytes"], "reason": batch["adapt"]["reason"],
                    "limited_by": batch["limited_by"]})
    return out


def show(rows: list[dict[str, Any]], title: str) -> None:
    print(f"\n{title} (target {TARGET_MS} ms)")
    for r in rows:
        off = (r["ms"] - TARGET_MS) / TARGET_MS
        print(f"  batch {r['txid']:3d}: {r['rows']:6d} rows, limit {r['limit']:8d} B/partition, "
              f"({r['reason']}), {r['ms']:5d} ms ({off:+.0%}), cut by {r['limited_by']}")


def within(r: dict[str, Any], tolerance: float = 0.25) -> bool:
    return abs(r["ms"] - TARGET_MS) <= tolerance * TARGET_MS


def settles(rows: list[dict[str, Any]], what: str) -> int:
    """Batches until the duration is within 25% of the target and stays there: that batch
    and the next two are within, and at least 80% of all batches from it on (a loaded
    machine has outliers)."""
    for k in range(10):
        rest = rows[k:]
        if all(within(x) for x in rest[:3]) and sum(within(x) for x in rest) >= 0.8 * len(rest):
            return k
    raise AssertionError(f"{what}: not settled within 25% of {TARGET_MS} ms in 10 batches")


def test_converges_to_the_target_and_recovers_after_a_cost_step(
        spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    # A backlog throughout: at the target a batch takes about 2 x (1,500 ms - the fixed cost) /
    # 0.4 ms records (5,000-6,500 here), so 12 batches and 11 at 4x the cost need at most ~100,000.
    preload(kafka_bootstrap, topic, 250_000)
    cost_file = tmp_path / "cost_ms"
    cost_file.write_text("0.4")  # ms per record: the target is ~4x the first batch's records
    checkpoint = tmp_path / "ckpt"
    handle = start(spark, kafka_bootstrap, topic, cost_file, checkpoint)
    try:
        wait_for(lambda: batches_done(handle, 12), "12 batches at the first cost", timeout=150)
        cost_file.write_text("1.6")  # 4x the cost per record
        stepped_after = last_txid(handle)  # the batch running now may see either
        wait_for(lambda: batches_done(handle, 1) and last_txid(handle) > stepped_after + 11,
                 "11 batches at the new cost", timeout=150)
    finally:
        handle.stop()
    rows = batches(handle, checkpoint)
    before = [r for r in rows if r["txid"] <= stepped_after]
    after = [r for r in rows if r["txid"] > stepped_after]
    show(before, "before the step (0.4 ms per record)")
    show(after, "after the step (1.6 ms per record)")
    assert before[0]["limit"] == INITIAL_LIMIT_BYTES
    assert all(r["limited_by"] in ("adaptive", "max_fetch_bytes") for r in rows)  # backlog throughout
    assert all(r["limit"] <= 1024 * 1024 for r in rows)
    first = settles(before, "from the start")
    again = settles(after, "after the cost step")
    print(f"settled within 25% after {first} batches from the start, {again} after the step")
    settled_before = before[-1]["limit"]
    assert settled_before >= 3 * INITIAL_LIMIT_BYTES  # grew to fit the target
    assert after[-1]["limit"] <= 0.5 * settled_before  # 4x the cost: a much smaller batch


def test_a_restart_replays_the_logged_batch_and_resumes_from_its_limit(
        spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    preload(kafka_bootstrap, topic, 60_000)
    cost_file = tmp_path / "cost_ms"
    cost_file.write_text("0.2")
    checkpoint = tmp_path / "ckpt"
    handle = start(spark, kafka_bootstrap, topic, cost_file, checkpoint)
    try:
        wait_for(lambda: batches_done(handle, 4), "4 batches", timeout=150)
    finally:
        handle.stop()
    last = max(int(p.name) for p in (checkpoint / "adaptive" / "offsets").iterdir() if p.name.isdigit())
    # As if the driver died after logging batch `last` and before committing it: Spark replays it.
    for name in (str(last), f".{last}.crc"):  # the commit and its checksum file
        (checkpoint / "adaptive" / "commits" / name).unlink(missing_ok=True)
    logged = offset_document(checkpoint, last)
    assert logged["batch"]["read_limit_bytes"] != INITIAL_LIMIT_BYTES

    handle = start(spark, kafka_bootstrap, topic, cost_file, checkpoint)
    try:
        wait_for(lambda: batches_done(handle, 3), "the replay and two new batches", timeout=150)
    finally:
        handle.stop()
    replay, resumed, then = sorted(handle.progress, key=lambda p: p.txid)[:3]
    assert (replay.txid, resumed.txid, then.txid) == (last, last + 1, last + 2)
    assert replay.end_offsets == logged["offsets"] and replay.rows == logged["batch"]["rows"]
    assert offset_document(checkpoint, last) == logged  # the logged limit was used, not re-decided
    # The replay is this run's warm-up: the next batch keeps the logged limit (not the initial one) ...
    nxt = offset_document(checkpoint, last + 1)["batch"]
    assert nxt["adapt"]["reason"] == "hold: warm-up batch" and nxt["adapt"]["feedback_batch"] == last
    assert nxt["read_limit_bytes"] == logged["batch"]["read_limit_bytes"]
    # ... and the one after follows from it and that batch's measured duration, by the rules.
    after = offset_document(checkpoint, last + 2)["batch"]
    seen_bytes, seen_ms = after["adapt"]["previous"]
    assert after["adapt"]["feedback_batch"] == last + 1 and seen_bytes == nxt["partition_bytes"]
    expected = AdaptiveController(TARGET_MS).next(
        nxt["read_limit_bytes"],
        Observation(seen_ms, seen_bytes, nxt["limited_by"] in ("adaptive", "max_fetch_bytes"),
                    nxt["record_bytes"]),
        tuple(nxt["adapt"]["reference"]) if nxt["adapt"]["reference"] else None,
        tuple(nxt["adapt"]["previous"]) if nxt["adapt"]["previous"] else None)
    assert after["read_limit_bytes"] == expected.limit and after["adapt"]["reason"] == expected.reason
    print(f"\nrestart: batch {last} replayed with its logged limit {nxt['read_limit_bytes']} B and offsets "
          f"{logged['offsets']}; batch {last + 1} kept it (warm-up); batch {last + 1} took {seen_ms:.0f} ms "
          f"-> batch {last + 2}: {after['read_limit_bytes']} B ({expected.reason})")
