"""KafkaSpout(engine="jvm") on Spark's own Kafka source (spark-sql-kafka-0-10 from Maven Central),
against a real broker: the same tuples as the Python engine, a word count exact with every batch
within max_offsets_per_trigger (checked in Spark's offset log), min_offsets_per_trigger, and
Spark's own Kafka sink from foreachBatch (docs/kafka-spout.md)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from trident_spark.local.kafka import produce
from trident_spark.local.services import describe_provider

ON_TANSU = pytest.mark.skipif(
    describe_provider("kafka") == "local (tansu)",
    reason="Tansu answers ListOffsets(latest) with a value that lags the log's end by a producer "
           "batch, and Spark's Kafka source reads up to it: these tests need Apache Kafka "
           "(KAFKA_BOOTSTRAP_SERVERS, or the local Apache broker)")

pytestmark = [pytest.mark.integration, ON_TANSU, pytest.mark.usefixtures("kafka_connector")]

WORDS = ["cat", "dog", "the", "a", "bird", "fish", "cow"]


def sentence(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(1 + i % 5))


def offset_ranges(stream_dir: Path) -> list[tuple[int, dict[str, int]]]:
    """Each batch's end offsets as Spark logged them before running it: (batch id, {partition: end})."""
    batches = []
    for path in (stream_dir / "offsets").iterdir():
        if path.name.isdigit():
            (ends,) = json.loads(path.read_text().splitlines()[-1]).values()
            batches.append((int(path.name), {p: int(o) for p, o in ends.items()}))
    return sorted(batches)


def test_jvm_engine_gives_the_python_engines_tuples(spark, kafka_bootstrap, new_topic, tmp_path):
    from trident_spark import TridentTopology
    from trident_spark.spout import KafkaSpout

    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(f"k{i}".encode() if i % 3 else None, f"r{i}".encode(), i % 2)
                                     for i in range(100)])
    results: dict[str, list[tuple[Any, ...]]] = {}
    for engine in ("python", "jvm"):
        topology = TridentTopology()
        spout = KafkaSpout(kafka_bootstrap, [topic], starting_offsets={topic: {0: 5, 1: -2}},
                           max_offsets_per_trigger=30, engine=engine)
        sink = topology.newStream(f"engine-{engine}", spout).collect()
        handle = topology.run(checkpoint_location=tmp_path / engine, trigger="available_now", spark=spark)
        handle.awaitTermination(120)
        handle.stop()
        results[engine] = sorted((t["topic"], t["partition"], t["offset"], t["key"], t["value"],
                                  type(t["timestamp"]).__name__) for t in sink.tuples)
    assert results["jvm"] == results["python"]
    assert len(results["jvm"]) == 95  # partition 0 from offset 5
    assert results["jvm"][0] == (topic, 0, 5, "k10", "r10", "datetime")


def test_jvm_word_count_is_exact_and_every_batch_is_within_max_offsets_per_trigger(
        spark, kafka_bootstrap, new_topic, tmp_path):
    from trident_spark import TridentTopology
    from trident_spark.builtin import Count, Split
    from trident_spark.spout import KafkaSpout
    from trident_spark.state import SqliteState, open_state

    topic = new_topic(partitions=3)
    n, limit = 2_000, 250
    sentences = [sentence(i) for i in range(n)]
    produce(kafka_bootstrap, topic, [(None, s.encode(), i % 3) for i, s in enumerate(sentences)])
    db = tmp_path / "counts.db"
    topology = TridentTopology()
    spout = KafkaSpout(kafka_bootstrap, [topic], max_offsets_per_trigger=limit, engine="jvm")
    (topology.newStream("wc", spout).each(["value"], Split(), ["word"]).groupBy(["word"])
     .persistentAggregate(SqliteState.opaque(path=str(db), table="wc"), Count(), ["count"]))
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.awaitTermination(300)
    handle.stop()

    expected = Counter(word for s in sentences for word in s.split())
    state = open_state(f"sqlite:///{db}?table=wc&type=opaque")
    assert dict(zip(expected, state.multiGet([[w] for w in expected]), strict=True)) == expected

    batches = offset_ranges(tmp_path / "ckpt" / "wc")
    previous = {"0": 0, "1": 0, "2": 0}
    sizes = []
    for _, ends in batches:
        sizes.append(sum(ends[p] - previous.get(p, 0) for p in ends))
        assert all(ends[p] >= previous.get(p, 0) for p in ends)
        previous = ends
    assert previous == {"0": 667, "1": 667, "2": 666}  # every record once, batches contiguous
    assert sum(sizes) == n
    # Spark's rule: 250 split over three equal backlogs is 83 each (rounded down): 249 a batch
    assert sizes[:7] == [249] * 7 and len(sizes) == 9
    assert all(size <= limit for size in sizes)
    assert [p.rows for p in handle.progress] == sizes


def wait_for_batches(sink: Any, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while len(sink.batches) < count and time.monotonic() < deadline:
        time.sleep(0.2)


def test_jvm_min_offsets_per_trigger_waits_for_enough_records(spark, kafka_bootstrap, new_topic, tmp_path):
    from trident_spark import TridentTopology
    from trident_spark.spout import KafkaSpout

    topic = new_topic(partitions=1)
    produce(kafka_bootstrap, topic, [(None, f"a{i}".encode(), 0) for i in range(30)])
    topology = TridentTopology()
    spout = KafkaSpout(kafka_bootstrap, [topic], min_offsets_per_trigger=50, max_trigger_delay="10m",
                       engine="jvm")
    sink = topology.newStream("min", spout).collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark)
    try:
        wait_for_batches(sink, 1)  # Spark's source never delays a query's first batch
        produce(kafka_bootstrap, topic, [(None, f"b{i}".encode(), 0) for i in range(20)])
        time.sleep(3)  # many triggers with 20 < 50 new records: no batch may run
        assert len(sink.batches) == 1
        produce(kafka_bootstrap, topic, [(None, f"c{i}".encode(), 0) for i in range(30)])
        wait_for_batches(sink, 2)
    finally:
        handle.stop()
    assert [len(rows) for rows in sink.batches.values()] == [30, 50]


def test_spark_kafka_sink_from_for_each_batch_writes_every_record(spark, kafka_bootstrap, new_topic,
                                                                   tmp_path):
    """docs/kafka-spout.md's example: Spark's own Kafka sink from foreachBatch (at least once)."""
    from trident_spark import TridentTopology
    from trident_spark.builtin import Count, Split
    from trident_spark.local.kafka import consume
    from trident_spark.spout import KafkaSpout

    source, target = new_topic(partitions=2), new_topic(partitions=1)
    produce(kafka_bootstrap, source, [(None, b"cat dog cat", 0), (None, b"dog bird", 1)])

    def to_kafka(df: Any, txid: int) -> None:
        (df.selectExpr("word AS key", "CAST(count AS STRING) AS value")
         .write.format("kafka").option("kafka.bootstrap.servers", kafka_bootstrap)
         .option("topic", target).save())

    topology = TridentTopology()
    (topology.newStream("words", KafkaSpout(kafka_bootstrap, [source], engine="jvm"))
     .each(["value"], Split(), ["word"]).groupBy(["word"]).aggregate(Count(), ["count"])
     .foreachBatch(to_kafka))
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.awaitTermination(120)
    handle.stop()
    records = consume(kafka_bootstrap, target, count=3, timeout=30)
    assert sorted((r.key, r.value) for r in records) == [(b"bird", b"1"), (b"cat", b"2"), (b"dog", b"2")]
