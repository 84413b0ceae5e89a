"""Consumed Kafka messages -> one Arrow record batch in the spout's Spark schema (no broker)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from trident_spark.errors import MalformedRecordError
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import OffsetRange
from trident_spark.spout.kafka.read import to_record_batch


class FakeMessage:
    """The parts of confluent_kafka.Message that to_record_batch reads."""

    def __init__(self, offset, value, key=None, timestamp_ms=1_700_000_000_000, headers=None):
        self._offset = offset
        self._value = value
        self._key = key
        self._timestamp = (1, timestamp_ms) if timestamp_ms >= 0 else (0, -1)
        self._headers = headers

    def offset(self):
        return self._offset

    def key(self):
        return self._key

    def value(self):
        return self._value

    def timestamp(self):
        return self._timestamp

    def headers(self):
        return self._headers

    def error(self):
        return None


def spark_schema(config: KafkaSpoutConfig) -> StructType:
    """The spout's schema built by hand (StructType.fromDDL needs a JVM)."""
    text = {"str": StringType(), "bytes": BinaryType()}
    if config.value_format == "json":
        value = StructType([StructField("user", StringType()), StructField("clicks", IntegerType())])
    else:
        value = text[config.value_format]
    fields = [
        StructField("key", text[config.key_format]),
        StructField("value", value),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
    ]
    if config.include_headers:
        fields.append(StructField("headers", ArrayType(StructType(
            [StructField("key", StringType()), StructField("value", BinaryType())]))))
    if config.on_malformed == "skip":
        fields.append(StructField("malformed", StringType()))
    struct = StructType(fields)
    # keep the hand-built schema honest: it must be the one schema_ddl() declares
    ddl = config.schema_ddl().lower().replace(": ", ":").replace(", ", ",").replace(" ", ":")
    assert struct.simpleString() == f"struct<{ddl}>"
    return struct


def batch(msgs, r=None, **kwargs):
    kwargs.setdefault("topics", ("words",))
    config = KafkaSpoutConfig("127.0.0.1:9092", **kwargs)
    schema = to_arrow_schema(spark_schema(config), timezone="UTC")
    r = r or OffsetRange("words", 3, msgs[0].offset(), msgs[-1].offset() + 1)
    out = to_record_batch(config, schema, r, msgs)
    assert out.schema == schema
    return out


def test_text_records():
    out = batch([FakeMessage(5, b"the cat", key=b"k1"), FakeMessage(6, b"a dog", key=None)])
    assert out.num_rows == 2
    assert out.to_pydict() == {
        "key": ["k1", None],
        "value": ["the cat", "a dog"],
        "topic": ["words", "words"],
        "partition": [3, 3],
        "offset": [5, 6],
        "timestamp": [datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)] * 2,
    }


def test_schema_types():
    out = batch([FakeMessage(0, b"x")])
    assert out.schema.field("partition").type == pa.int32()
    assert out.schema.field("offset").type == pa.int64()
    assert out.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")


def test_contiguous_offsets():
    out = batch([FakeMessage(o, b"v") for o in range(100, 110)])
    assert out.column("offset").to_pylist() == list(range(100, 110))


def test_offsets_with_gaps_are_the_real_ones():
    # compaction and transaction markers leave holes in a partition's offsets
    msgs = [FakeMessage(o, b"v") for o in (5, 7, 8, 12)]
    out = batch(msgs, OffsetRange("words", 3, 5, 13))
    assert out.column("offset").to_pylist() == [5, 7, 8, 12]


def test_gaps_with_the_same_count_as_a_contiguous_run():
    msgs = [FakeMessage(o, b"v") for o in (1, 2, 4)]
    assert batch(msgs).column("offset").to_pylist() == [1, 2, 4]


def test_missing_timestamp_is_null():
    out = batch([FakeMessage(0, b"a", timestamp_ms=-1), FakeMessage(1, b"b", timestamp_ms=1_500)])
    assert out.column("timestamp").to_pylist() == [None, datetime(1970, 1, 1, 0, 0, 1, 500_000, tzinfo=UTC)]


def test_timestamp_keeps_milliseconds():
    out = batch([FakeMessage(0, b"a", timestamp_ms=1_700_000_000_123)])
    assert out.column("timestamp").to_pylist()[0] == datetime(2023, 11, 14, 22, 13, 20, 123_000, tzinfo=UTC)


def test_tombstone_value_is_null():
    out = batch([FakeMessage(0, None, key=b"gone")])
    assert out.column("value").to_pylist() == [None]
    assert out.column("key").to_pylist() == ["gone"]


def test_bytes_formats():
    out = batch([FakeMessage(0, b"\xff\x00", key=b"\xfe")], value_format="bytes", key_format="bytes")
    assert out.column("value").to_pylist() == [b"\xff\x00"]
    assert out.column("key").to_pylist() == [b"\xfe"]


def test_headers():
    msgs = [FakeMessage(0, b"a", headers=[("trace", b"abc"), ("empty", None)]),
            FakeMessage(1, b"b", headers=None)]
    out = batch(msgs, include_headers=True)
    assert out.column("headers").to_pylist() == [
        [{"key": "trace", "value": b"abc"}, {"key": "empty", "value": None}],
        [],
    ]


def test_json_values():
    msgs = [FakeMessage(0, b'{"user": "ann", "clicks": 3}'), FakeMessage(1, None)]
    out = batch(msgs, value_format="json", value_schema="user STRING, clicks INT")
    assert out.column("value").to_pylist() == [{"user": "ann", "clicks": 3}, None]


def test_malformed_value_fails_naming_the_record():
    msgs = [FakeMessage(40, b"ok"), FakeMessage(41, b"\xff"), FakeMessage(42, b"\xfe")]
    with pytest.raises(MalformedRecordError) as info:
        batch(msgs)
    message = str(info.value)
    assert message.startswith("KafkaSpout: record words[3]@41 cannot be read: value is not valid UTF-8.")
    assert "on_malformed='skip'" in message


def test_malformed_key_fails_naming_the_record():
    expected = r"record words\[3\]@7 cannot be read: key is not valid UTF-8"
    with pytest.raises(MalformedRecordError, match=expected):
        batch([FakeMessage(7, b"v", key=b"\xff")])


def test_malformed_record_offset_is_right_with_gaps():
    msgs = [FakeMessage(10, b"a"), FakeMessage(15, b"b"), FakeMessage(20, b"\xff")]
    with pytest.raises(MalformedRecordError, match=r"words\[3\]@20 "):
        batch(msgs)


def test_malformed_json_fails_naming_the_record():
    msgs = [FakeMessage(0, b'{"user": "a", "clicks": 1}'), FakeMessage(1, b"{oops")]
    expected = r"words\[3\]@1 cannot be read: value is not JSON matching"
    with pytest.raises(MalformedRecordError, match=expected):
        batch(msgs, value_format="json", value_schema="user STRING, clicks INT")


def test_skip_keeps_malformed_records_with_their_reason():
    msgs = [FakeMessage(0, b"ok"), FakeMessage(1, b"\xff"), FakeMessage(2, None)]
    out = batch(msgs, on_malformed="skip")
    assert out.column("value").to_pylist() == ["ok", None, None]
    assert out.column("malformed").to_pylist() == [None, "value is not valid UTF-8", None]
    assert out.column("offset").to_pylist() == [0, 1, 2]


def test_skip_with_json_and_headers():
    msgs = [FakeMessage(0, b'{"user": "a", "clicks": "x"}', headers=[("h", b"1")]),
            FakeMessage(1, b'{"user": "b", "clicks": 2}')]
    out = batch(msgs, on_malformed="skip", value_format="json", value_schema="user STRING, clicks INT",
                include_headers=True)
    assert out.column("value").to_pylist() == [None, {"user": "b", "clicks": 2}]
    assert out.column("malformed").to_pylist()[0].startswith("value is not JSON matching value_schema")
    assert out.column("malformed").to_pylist()[1] is None
    assert out.column("headers").to_pylist() == [[{"key": "h", "value": b"1"}], []]


def test_a_decoder_error_no_record_was_blamed_for_is_found_record_by_record(monkeypatch):
    from trident_spark.spout.kafka import read as kafka_read

    real = kafka_read.decode_column

    def faulty(raw, arrow_type, what, errors, timeout_s):
        if b"boom" in raw:  # a decoder that raises for the column (and for that record alone)
            raise RecursionError("maximum recursion depth exceeded")
        return real(raw, arrow_type, what, errors, timeout_s)

    monkeypatch.setattr(kafka_read, "decode_column", faulty)
    out = batch([FakeMessage(0, b"a"), FakeMessage(1, b"boom"), FakeMessage(2, b"c")], on_malformed="skip")
    assert out.column("value").to_pylist() == ["a", None, "c"]
    assert out.column("malformed").to_pylist() == [
        None, "value cannot be decoded (RecursionError: maximum recursion depth exceeded)", None]
    with pytest.raises(MalformedRecordError, match=r"record words\[3\]@1 cannot be read: value cannot be "
                                                   r"decoded \(RecursionError: maximum recursion depth"):
        batch([FakeMessage(0, b"a"), FakeMessage(1, b"boom")])
