"""KafkaSpout's options for Avro, the Schema Registry and the dead-letter topic: checked when the
spout is built, with messages that say what to write; and a read batch's dead letters."""

from __future__ import annotations

import io
import json
import sys

import fastavro
import pyarrow as pa
import pytest

from tests.unit.spout.kafka.test_kafka_read_batch import FakeMessage
from trident_spark.errors import InvalidArgumentError, MissingExtraError, SchemaRegistryError
from trident_spark.spout import KafkaSpout
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import OffsetRange
from trident_spark.spout.kafka.read import to_record_batch

BROKER = "127.0.0.1:9092"
CLICK = {"type": "record", "name": "Click", "fields": [{"name": "user", "type": "string"},
                                                        {"name": "clicks", "type": "int"}]}


def error(**kwargs) -> str:
    kwargs.setdefault("topics", ["clicks"])
    with pytest.raises(InvalidArgumentError) as info:
        KafkaSpout(BROKER, **kwargs)
    return str(info.value)


def test_avro_schema_as_a_dict_or_json_text_and_its_spark_type():
    by_dict = KafkaSpout(BROKER, ["clicks"], value_format="avro", value_schema=CLICK)
    by_text = KafkaSpout(BROKER, ["clicks"], value_format="avro", value_schema=json.dumps(CLICK))
    assert by_dict.config == by_text.config
    assert by_dict.config.schema_ddl().startswith("key STRING, value STRUCT<`user`: STRING, `clicks`: INT>, ")
    assert KafkaSpoutConfig.from_json(by_dict.config.to_json()) == by_dict.config
    assert by_dict.fields == ["key", "value", "topic", "partition", "offset", "timestamp"]


def test_avro_needs_a_schema_or_a_registry():
    assert error(value_format="avro").startswith(
        "KafkaSpout(value_format='avro') needs value_schema= (the Avro schema, a dict or JSON text) or "
        "schema_registry_url=")
    assert error(value_format="avro", topics=["a", "b"], schema_registry_url="http://r:8081").startswith(
        "KafkaSpout(value_format='avro', schema_registry_url=...) without value_schema= reads the latest "
        "schema of subject '<topic>-value', so it needs exactly one topic")
    spout = KafkaSpout(BROKER, ["clicks"], value_format="avro", schema_registry_url="http://r:8081")
    assert spout.config.value_schema is None  # read from the registry when the stream starts


def test_registry_only_with_avro_and_its_password_never_shown():
    assert error(schema_registry_url="http://r:8081") == (
        "KafkaSpout(schema_registry_url=...) is read only with value_format= or key_format= 'avro' or "
        "'protobuf' (values are 'str' here): add value_format='avro', or drop schema_registry_url=")
    spout = KafkaSpout(BROKER, ["clicks"], value_format="avro", value_schema=CLICK,
                       schema_registry_url="https://app:s3cret@registry:8081")
    assert "s3cret" not in repr(spout.config) and "app:***@registry:8081" in repr(spout.config)
    with pytest.raises(SchemaRegistryError, match=r"schema_registry_url='r:8081' is not an http\(s\) URL"):
        KafkaSpout(BROKER, ["c"], value_format="avro", value_schema=CLICK, schema_registry_url="r:8081")


def test_dead_letter_options():
    assert error(on_malformed="dead_letter").startswith(
        "KafkaSpout(on_malformed='dead_letter') needs dead_letter_topic=, the topic malformed records are "
        "sent to")
    assert error(on_malformed="dead_letter", dead_letter_topic="clicks") == (
        "KafkaSpout(dead_letter_topic='clicks') is a topic the spout reads: its dead letters would be read "
        "again; give another topic")
    assert "is a topic the spout reads" in error(topics=None, pattern="click.*", on_malformed="dead_letter",
                                                 dead_letter_topic="clicks-dlq")
    assert error(dead_letter_topic="dlq").startswith(
        "KafkaSpout(dead_letter_topic=...) is used only with on_malformed='dead_letter' (it is 'fail' here)")
    spout = KafkaSpout(BROKER, ["clicks"], on_malformed="dead_letter", dead_letter_topic="dlq")
    assert spout.config.schema_ddl().endswith(", malformed STRING")
    assert "malformed" not in spout.fields


def test_the_jvm_engine_refuses_what_only_the_python_source_reads():
    assert error(engine="jvm", value_format="avro", value_schema=CLICK) == (
        "KafkaSpout(engine='jvm') does not read value_format='avro' (only the Python source does); use "
        "engine='python'")
    assert error(engine="jvm", on_malformed="dead_letter", dead_letter_topic="dlq") == (
        "KafkaSpout(engine='jvm') does not read on_malformed='dead_letter' (only the Python source does); "
        "use engine='python'")


def test_without_fastavro_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "fastavro", None)  # `import fastavro` raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'trident-spark\[avro\]'"):
        KafkaSpout(BROKER, ["clicks"], value_format="avro", value_schema=CLICK)


def avro(record) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(CLICK), record)
    return out.getvalue()


def test_a_read_batch_keeps_its_dead_letters_as_read():
    config = KafkaSpoutConfig(BROKER, topics=("clicks",), value_format="avro", value_schema=json.dumps(CLICK),
                              on_malformed="dead_letter", dead_letter_topic="dlq")
    click = pa.struct([("user", pa.string()), ("clicks", pa.int32())])
    schema = pa.schema([("key", pa.string()), ("value", click),
                        ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                        ("timestamp", pa.timestamp("us", tz="UTC")), ("malformed", pa.string())])
    msgs = [FakeMessage(7, avro({"user": "ann", "clicks": 2}), key=b"a"),
            FakeMessage(8, b"\x06an", key=b"b", headers=[("trace", b"42")]),
            FakeMessage(9, avro({"user": "bob", "clicks": 1}) + b"!", key=None, timestamp_ms=-1)]
    letters: list = []
    out = to_record_batch(config, schema, OffsetRange("clicks", 2, 7, 10), msgs, letters)
    assert out.column("value").to_pylist() == [{"user": "ann", "clicks": 2}, None, None]
    assert [m is None for m in out.column("malformed").to_pylist()] == [True, False, False]
    assert [(x.topic, x.partition, x.offset, x.key, x.value, x.timestamp_ms, list(x.headers))
            for x in letters] == [
        ("clicks", 2, 8, b"b", b"\x06an", 1_700_000_000_000, [("trace", b"42")]),
        ("clicks", 2, 9, None, msgs[2].value(), None, [])]
    assert letters[1].error == "value is not Avro of value_schema (1 bytes left after the record)"


def test_avro_and_protobuf_keys():
    from trident_spark.spout.formats.protobuf import example_click_class

    spout = KafkaSpout(BROKER, ["clicks"], key_format="avro", key_schema="string")
    assert spout.config.schema_ddl().startswith("key STRING, value STRING, ")
    spout = KafkaSpout(BROKER, ["clicks"], key_format="protobuf", key_schema=example_click_class())
    assert spout.config.schema_ddl().startswith("key STRUCT<`user`: STRING, `clicks`: INT, ")
    assert error(key_format="avro").startswith("KafkaSpout(key_format='avro') needs key_schema= (the Avro")
    assert error(key_format="protobuf").startswith("KafkaSpout(key_format='protobuf') needs key_schema=, the")
    assert error(key_schema="string") == (
        "KafkaSpout(key_schema=...) is read only with key_format='avro' or 'protobuf' (keys are 'str' here): "
        "add key_format='avro', or drop key_schema=")
    assert error(key_format="avro", key_schema=["int", "string"]).startswith(
        "KafkaSpout(key_format='avro', key_schema=")
    assert "key is a union of int, string" in error(key_format="avro", key_schema=["int", "string"])
    from_registry = KafkaSpout(BROKER, ["c"], key_format="avro", schema_registry_url="http://r:8081")
    assert from_registry.config.key_schema is None


def test_a_read_batch_decodes_avro_keys_and_names_a_bad_one():
    config = KafkaSpoutConfig(BROKER, topics=("clicks",), key_format="avro", key_schema='"long"',
                              on_malformed="skip")
    schema = pa.schema([("key", pa.int64()), ("value", pa.string()), ("topic", pa.string()),
                        ("partition", pa.int32()), ("offset", pa.int64()),
                        ("timestamp", pa.timestamp("us", tz="UTC")), ("malformed", pa.string())])
    msgs = [FakeMessage(0, b"a", key=b"\x54"), FakeMessage(1, b"b", key=b"\xff"), FakeMessage(2, b"c")]
    out = to_record_batch(config, schema, OffsetRange("clicks", 0, 0, 3), msgs)
    assert out.column("key").to_pylist() == [42, None, None]
    assert out.column("malformed").to_pylist()[0] is None and out.column("malformed").to_pylist()[2] is None
    assert out.column("malformed").to_pylist()[1].startswith("key is not Avro of key_schema (")
