"""KafkaSpout failures users hit: clear errors naming what, where and what to do; nothing lost."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from trident_spark import TridentTopology
from trident_spark.errors import (
    BrokerUnavailableError,
    DataLossError,
    MalformedRecordError,
    OffsetOutOfRangeError,
    UnknownTopicError,
)
from trident_spark.local.kafka import create_topic, produce
from trident_spark.local.services import start_kafka
from trident_spark.spout import KafkaSpout

pytestmark = pytest.mark.integration


def test_unreachable_broker_fails_fast_with_the_address(spark, tmp_path):
    topology = TridentTopology()
    topology.newStream("nobroker", KafkaSpout("127.0.0.1:1", ["words"], timeout=5)).collect()
    started = time.monotonic()
    with pytest.raises(BrokerUnavailableError, match=r"Kafka at 127\.0\.0\.1:1 did not answer"):
        topology.run(checkpoint_location=tmp_path / "ckpt", spark=spark)
    assert time.monotonic() - started < 30


def test_unknown_topic_is_named_with_the_topics_that_exist(spark, kafka_bootstrap, new_topic, tmp_path):
    existing = new_topic()
    topology = TridentTopology()
    topology.newStream("notopic", KafkaSpout(kafka_bootstrap, ["no-such-topic"])).collect()
    with pytest.raises(UnknownTopicError) as info:
        topology.run(checkpoint_location=tmp_path / "ckpt", spark=spark)
    message = str(info.value)
    assert "'no-such-topic' does not exist on " + kafka_bootstrap in message
    assert existing in message and "Create it first, or fix topics=" in message


def test_broker_lost_mid_stream_fails_the_query_once_the_outage_budget_is_spent(spark, tmp_path):
    with start_kafka() as kafka:
        create_topic(kafka.address, "events", partitions=1)
        produce(kafka.address, "events", [b"one", b"two"])
        topology = TridentTopology()
        sink = topology.newStream("lost", KafkaSpout(kafka.address, ["events"], timeout=5)).collect()
        handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark,
                              outage_budget=5)
        handle.processAllAvailable()
        assert [t["value"] for t in sink.tuples] == ["one", "two"]
    started = time.monotonic()
    try:
        with pytest.raises(BrokerUnavailableError) as caught:
            handle.awaitTermination(60)
    finally:
        handle.stop()
    # attempts of 5 s (timeout=5) until 5 s past the first failure: about 11 s
    assert time.monotonic() - started < 30
    message = str(caught.value)
    assert message.startswith(f"Kafka at {kafka.address} did not answer")
    assert (f"; the broker at {kafka.address} did not answer for " in message
            and " s, past outage_budget=5 s, so the stream stopped." in message)
    assert message.endswith("raise run(outage_budget=) (stream 'lost')")


def test_malformed_json_fails_naming_the_record(spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic()
    produce(kafka_bootstrap, topic, [(None, b'{"n": 1, "word": "cat"}', 0), (None, b"{not json", 0)])
    spout = KafkaSpout(kafka_bootstrap, [topic], value_format="json", value_schema="n INT, word STRING")
    topology = TridentTopology()
    topology.newStream("badjson", spout).collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        with pytest.raises(MalformedRecordError) as info:
            handle.awaitTermination(120)
    finally:
        handle.stop()
    assert f"record {topic}[0]@1 cannot be read" in str(info.value)
    assert "on_malformed='skip'" in str(info.value)


def test_malformed_records_skipped_and_counted(spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    records = [
        (None, b'{"n": 1, "word": "cat"}', 0),
        (None, b"{not json", 0),
        (None, b'{"n": "many", "word": "dog"}', 1),
        (None, b'{"n": 3, "word": "emu", "extra": true}', 1),
        (None, b"[1, 2]", 1),
    ]
    produce(kafka_bootstrap, topic, records)
    spout = KafkaSpout(kafka_bootstrap, [topic], value_format="json", value_schema="n INT, word STRING",
                       on_malformed="skip")
    topology = TridentTopology()
    sink = topology.newStream("skipjson", spout).collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        handle.awaitTermination(120)
    finally:
        handle.stop()
    assert sorted((t["value"]["n"], t["value"]["word"]) for t in sink.tuples) == [(1, "cat"), (3, "emu")]
    assert sum(p.malformed_records for p in handle.progress) == 3
    assert "malformed" not in sink.fields


@pytest.mark.parametrize("fail_on_data_loss", [True, False])
def test_offsets_gone_from_the_broker(spark, tmp_path, fail_on_data_loss):
    """The broker lost the stream's offsets (here: a new, empty broker, its topic re-created)."""
    checkpoint = tmp_path / "ckpt"
    name = f"loss{int(fail_on_data_loss)}"
    with start_kafka() as kafka:
        create_topic(kafka.address, "events", partitions=1)
        produce(kafka.address, "events", [f"old-{i}".encode() for i in range(20)])
        topology = TridentTopology()
        topology.newStream(name, KafkaSpout(kafka.address, ["events"])).collect()
        handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
        handle.awaitTermination(120)
        handle.stop()
    with start_kafka() as kafka:  # a new, empty broker
        create_topic(kafka.address, "events", partitions=1)
        produce(kafka.address, "events", [f"new-{i}".encode() for i in range(5)])
        topology = TridentTopology()
        spout = KafkaSpout(kafka.address, ["events"], fail_on_data_loss=fail_on_data_loss)
        sink = topology.newStream(name, spout).collect()
        handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
        try:
            if fail_on_data_loss:
                with pytest.raises(DataLossError) as info:
                    handle.awaitTermination(120)
                message = str(info.value)
                assert "events[0] the stream is at offset 20 but the partition ends before it" in message
                assert "fail_on_data_loss=False" in str(info.value)
            else:
                handle.awaitTermination(120)
                assert [t["value"] for t in sink.tuples] == [f"new-{i}" for i in range(5)]
        finally:
            handle.stop()


def test_a_starting_offset_past_the_end_names_the_partitions_range(spark, kafka_bootstrap, new_topic,
                                                                   tmp_path):
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, f"r{i}".encode(), 0) for i in range(5)])
    spout = KafkaSpout(kafka_bootstrap, [topic], starting_offsets={topic: {0: 500, 1: -2}})
    topology = TridentTopology()
    topology.newStream("pastend", spout).collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        with pytest.raises(OffsetOutOfRangeError) as info:
            handle.awaitTermination(120)
    finally:
        handle.stop()
    assert str(info.value) == (
        f"KafkaSpout(starting_offsets=...) on {kafka_bootstrap}: {topic}[0] starts at 500, past the end of "
        "the partition: it holds offsets [0, 5) (high watermark 5). Give an offset from the partition's "
        "first offset up to its high watermark, or starting_offsets='latest' (-1 for one partition) to read "
        "only new records, or 'earliest' (-2) to read everything it holds (stream 'pastend')")


def test_a_value_schema_spark_cannot_parse_is_named_without_the_spouts_columns(spark):
    spout = KafkaSpout("127.0.0.1:1", ["t"], value_format="json", value_schema="n INTEGR, word STRING")
    with pytest.raises(ValueError) as info:
        spout.to_dataframe(spark)
    assert str(info.value) == (
        "KafkaSpout(value_schema='n INTEGR, word STRING') is not a valid Spark schema: Unsupported data "
        "type \"INTEGR\" at character 3 ('INTEGR, word STRING') [Spark: UNSUPPORTED_DATATYPE]. Write the "
        "fields as 'name TYPE, ...' (Spark DDL), e.g. value_schema='user STRING, clicks INT, "
        "tags ARRAY<STRING>'")
    assert "__read_ms" not in str(info.value)


def test_progress_is_written_to_the_checkpoint(spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, b"x" * 50, i % 2) for i in range(100)])
    topology = TridentTopology()
    topology.newStream("progress", KafkaSpout(kafka_bootstrap, [topic], max_fetch_bytes=1000)).collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.awaitTermination(120)
    handle.stop()
    lines = (Path(tmp_path) / "ckpt" / "progress" / "trident-progress.jsonl").read_text().splitlines()
    batches = [json.loads(line) for line in lines]
    assert [b["rows"] for b in batches] == [40, 40, 20]
    assert [b["bytes"] for b in batches] == [2000, 2000, 1000]
    assert [b["txid"] for b in batches] == [0, 1, 2]
