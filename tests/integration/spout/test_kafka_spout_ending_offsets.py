"""KafkaSpout(ending_offsets=) against a real broker: a fixed slice, the same on every run."""

from __future__ import annotations

import dataclasses

import pytest

from tests.integration.spout.test_kafka_spout_delivery import run_available_now, wait_for
from trident_spark import TridentTopology
from trident_spark.local.kafka import produce
from trident_spark.spout import KafkaSpout

pytestmark = pytest.mark.integration


def test_a_slice_reads_exactly_its_records_at_any_batch_size(spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, f"{i:04d}".ljust(100, "x").encode(), i % 2) for i in range(600)])
    base = KafkaSpout(kafka_bootstrap, [topic], starting_offsets={topic: {0: 50, 1: 100}},
                      ending_offsets={topic: {0: 250, 1: 200}})
    seen = {}
    for budget in (2_000, 7_000):
        spout = KafkaSpout(kafka_bootstrap, [topic])
        spout.config = dataclasses.replace(base.config, max_fetch_bytes=budget)  # as the tune sweep does
        sink, progress = run_available_now(spark, spout, tmp_path / f"b{budget}", f"slice{budget}")
        seen[budget] = sorted((t["partition"], t["offset"]) for t in sink.tuples)
        assert all(len([t for t in b if t["partition"] == 0]) <= budget // 100 for b in sink.batches.values())
        assert progress[-1].end_offsets == {topic: {"0": 250, "1": 200}}
    expected = sorted([(0, o) for o in range(50, 250)] + [(1, o) for o in range(100, 200)])
    assert seen[2_000] == seen[7_000] == expected


def test_latest_ends_at_the_watermark_of_the_start_then_no_more_batches(
        spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, [(None, f"old-{i}".encode(), 0) for i in range(30)])
    spout = KafkaSpout(kafka_bootstrap, [topic], ending_offsets="latest", max_offsets_per_trigger=10)
    topology = TridentTopology()
    sink = topology.newStream("tolatest", spout).collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark)
    try:
        wait_for(lambda: len(sink) >= 30, "the 30 records there at the start")
        produce(kafka_bootstrap, topic, [(None, f"new-{i}".encode(), 0) for i in range(5)])
        handle.processAllAvailable()
        import time

        time.sleep(1.5)  # several triggers: none may read the new records
        handle.processAllAvailable()
    finally:
        handle.stop()
    assert sorted(t["value"] for t in sink.tuples) == sorted(f"old-{i}" for i in range(30))
    assert len(sink.batches) == 3
