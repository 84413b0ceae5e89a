"""KafkaSpout against a real broker: every record once, in order, in limited batches."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from trident_spark import TridentTopology
from trident_spark.local.kafka import produce
from trident_spark.sink import CollectSink
from trident_spark.spout import KafkaSpout

pytestmark = pytest.mark.integration


def run_available_now(spark: Any, spout: KafkaSpout, checkpoint: Path, name: str
                      ) -> tuple[CollectSink, list[Any]]:
    """Read everything the topic holds now, in the spout's limited batches."""
    topology = TridentTopology()
    sink = topology.newStream(name, spout).collect()
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(180), "the availableNow run did not finish in 180 s"
    finally:
        handle.stop()
    return sink, handle.progress


def partition_offsets(tuples: list[dict[str, Any]]) -> dict[int, list[int]]:
    by_partition: dict[int, list[int]] = defaultdict(list)
    for t in tuples:
        by_partition[t["partition"]].append(t["offset"])
    return by_partition


def test_every_record_arrives_exactly_once_with_contiguous_offsets(
        spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=4)
    n = 4000
    produce(kafka_bootstrap, topic, [(f"k{i}".encode(), f"record-{i:05d}".encode(), i % 4) for i in range(n)])

    spout = KafkaSpout(kafka_bootstrap, [topic], max_offsets_per_trigger=700)
    sink, progress = run_available_now(spark, spout, tmp_path / "ckpt", "once")

    values = [t["value"] for t in sink.tuples]
    assert sorted(values) == [f"record-{i:05d}" for i in range(n)]
    assert len(values) == n  # no duplicates
    for partition, offsets in partition_offsets(sink.tuples).items():
        assert offsets == list(range(n // 4)), f"partition {partition} offsets not contiguous"
    # several batches, each within the row limit (a starving partition may add one per partition)
    assert len(sink.batches) >= n // 700
    assert all(len(batch) <= 700 + 4 for batch in sink.batches.values())
    # each batch continues exactly where the previous one ended, per partition
    last_end: dict[int, int] = {}
    for batch in sink.batches.values():
        for partition, offsets in partition_offsets(batch).items():
            assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
            assert offsets[0] == last_end.get(partition, 0)
            last_end[partition] = offsets[-1] + 1
    assert sum(p.rows for p in progress) == n
    assert {t["key"] for t in sink.tuples} == {f"k{i}" for i in range(n)}


def test_max_fetch_bytes_takes_about_b_bytes_per_partition_per_batch(
        spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=4)
    record_bytes, per_partition, budget = 100, 50, 1000
    produce(kafka_bootstrap, topic,
            [(None, f"{i:06d}".ljust(record_bytes, "x").encode(), i % 4) for i in range(4 * per_partition)])

    spout = KafkaSpout(kafka_bootstrap, [topic], max_fetch_bytes=budget)
    sink, progress = run_available_now(spark, spout, tmp_path / "ckpt", "fetchbytes")

    # Trident's rule: batch size = partitions x max_fetch_bytes / record_bytes = 4 x 1000 / 100 = 40
    assert len(sink.tuples) == 4 * per_partition
    assert len(sink.batches) == (4 * per_partition) // (4 * budget // record_bytes) == 5
    for batch in sink.batches.values():
        for offsets in partition_offsets(batch).values():
            assert len(offsets) * record_bytes == budget
    assert [p.limited_by for p in progress][:4] == ["max_fetch_bytes"] * 4
    assert all(p.record_bytes == record_bytes for p in progress)
    assert [p.bytes for p in progress] == [4 * budget] * 5


@pytest.mark.parametrize("sample_bytes", [256 * 1024, 3_000], ids=["exact", "extrapolated"])
def test_max_fetch_bytes_with_varying_record_sizes_stays_within_10_percent(
        spark, kafka_bootstrap, new_topic, tmp_path, sample_bytes):
    topic = new_topic(partitions=4)
    rng = random.Random(7)
    budget = 20_000
    sizes = [rng.randint(50, 150) for _ in range(4 * 1000)]
    produce(kafka_bootstrap, topic, [(None, b"v" * size, i % 4) for i, size in enumerate(sizes)])

    spout = KafkaSpout(kafka_bootstrap, [topic], max_fetch_bytes=budget, size_sample_bytes=sample_bytes)
    sink, _ = run_available_now(spark, spout, tmp_path / "ckpt", f"varying{sample_bytes}")

    assert len(sink.tuples) == len(sizes)
    # Check every partition's share of every batch, except where the partition ran out of records.
    last_offset = len(sizes) // 4 - 1
    checked = 0
    for batch in sink.batches.values():
        used: dict[int, int] = defaultdict(int)
        ended: set[int] = set()
        for t in batch:
            used[t["partition"]] += len(t["value"])
            if t["offset"] == last_offset:
                ended.add(t["partition"])
        for partition, nbytes in used.items():
            if partition in ended:
                continue
            checked += 1
            assert abs(nbytes - budget) <= 0.10 * budget, (partition, nbytes)
            if sample_bytes >= budget:  # counted exactly: never over B
                assert nbytes <= budget
    assert checked >= 4 * (int(sum(sizes) / 4 // budget) - 1)


def test_keys_headers_and_timestamps_as_bytes(spark, kafka_bootstrap, new_topic, tmp_path):
    from confluent_kafka import Producer

    topic = new_topic(partitions=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topic, value=b"\x00\xffraw", key=b"\x01key", headers=[("trace", b"abc")],
                     timestamp=1_700_000_000_123)
    producer.produce(topic, value=None, key=b"gone")  # a tombstone
    assert producer.flush(10) == 0

    spout = KafkaSpout(kafka_bootstrap, [topic], value_format="bytes", key_format="bytes",
                       include_headers=True)
    sink, _ = run_available_now(spark, spout, tmp_path / "ckpt", "bytes")

    first, tombstone = sink.tuples
    assert first["value"] == b"\x00\xffraw" and first["key"] == b"\x01key"
    assert first["headers"] == [{"key": "trace", "value": b"abc"}]
    assert int(first["timestamp"].timestamp() * 1000) == 1_700_000_000_123
    assert tombstone["value"] is None and tombstone["key"] == b"gone"


def test_starting_offsets_latest_and_per_partition(spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, f"old-{i}".encode(), i % 2) for i in range(10)])

    explicit = KafkaSpout(kafka_bootstrap, [topic], starting_offsets={topic: {0: 3}})
    sink, _ = run_available_now(spark, explicit, tmp_path / "explicit", "explicit")
    # partition 0 from offset 3 (records 6, 8); partition 1 from earliest (all 5)
    assert sorted(t["value"] for t in sink.tuples) == sorted(
        ["old-6", "old-8", "old-1", "old-3", "old-5", "old-7", "old-9"])

    latest = KafkaSpout(kafka_bootstrap, [topic], starting_offsets="latest")
    topology = TridentTopology()
    tail = topology.newStream("latest", latest).collect()
    handle = topology.run(checkpoint_location=tmp_path / "latest", trigger="200 milliseconds", spark=spark)
    try:
        handle.processAllAvailable()
        produce(kafka_bootstrap, topic, [(None, f"new-{i}".encode(), i % 2) for i in range(4)])
        wait_for(lambda: len(tail) >= 4, "the 4 new records")
        handle.processAllAvailable()
    finally:
        handle.stop()
    assert sorted(t["value"] for t in tail.tuples) == ["new-0", "new-1", "new-2", "new-3"]


def test_pattern_picks_up_new_topics_between_batches(spark, kafka_bootstrap, new_topic, tmp_path):
    from trident_spark.local.kafka import create_topic

    first = new_topic(partitions=2, prefix="grow")
    family = first.rsplit("-", 1)[0]
    produce(kafka_bootstrap, first, [(None, f"a{i}".encode(), i % 2) for i in range(6)])

    spout = KafkaSpout(kafka_bootstrap, pattern=f"{family}-.*")
    topology = TridentTopology()
    sink = topology.newStream("pattern", spout).collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark)
    try:
        wait_for(lambda: len(sink) >= 6, "the first topic's records")
        second = f"{family}-second"
        create_topic(kafka_bootstrap, second, partitions=3)
        produce(kafka_bootstrap, second, [(None, f"b{i}".encode(), i % 3) for i in range(9)])
        wait_for(lambda: len(sink) >= 15, "the new topic's records")
        handle.processAllAvailable()
    finally:
        handle.stop()
    expected = [f"a{i}" for i in range(6)] + [f"b{i}" for i in range(9)]
    assert sorted(t["value"] for t in sink.tuples) == sorted(expected)
    assert {t["topic"] for t in sink.tuples} == {first, second}


def test_min_offsets_per_trigger_waits_then_max_trigger_delay_releases(
        spark, kafka_bootstrap, new_topic, tmp_path):
    import time

    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, [(None, f"r{i}".encode(), 0) for i in range(10)])
    spout = KafkaSpout(kafka_bootstrap, [topic], min_offsets_per_trigger=100, max_trigger_delay="4s")
    topology = TridentTopology()
    sink = topology.newStream("minrows", spout).collect()
    started = time.monotonic()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark)
    try:
        time.sleep(2.0)
        assert len(sink) == 0, "a batch ran before min_offsets_per_trigger records were there"
        wait_for(lambda: len(sink) == 10, "the delayed batch", timeout=30)
        assert time.monotonic() - started >= 4.0
    finally:
        handle.stop()


def wait_for(condition: Any, what: str, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)
