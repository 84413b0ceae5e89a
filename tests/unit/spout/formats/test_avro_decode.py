"""Avro values: the schema as a Spark type, records decoded into Arrow, malformed ones named;
Confluent's wire format against an in-process registry (a real HTTP server)."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from tests.schema_registry_server import schema_registry
from trident_spark.errors import InvalidArgumentError, SchemaRegistryError
from trident_spark.spout.formats.avro import AvroDecoder, avro_schema_text, avro_spark_type
from trident_spark.spout.formats.schema_registry import clear_cache, wire_format

CLICK = {"type": "record", "name": "Click", "namespace": "shop", "fields": [
    {"name": "user", "type": "string"},
    {"name": "clicks", "type": "int"},
]}
CLICK_ARROW = pa.struct([("user", pa.string()), ("clicks", pa.int32())])


def avro(schema, record) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def decode(decoder, raw, arrow_type=CLICK_ARROW):
    errors = [None] * len(raw)
    return decoder.decode(raw, arrow_type, errors).to_pylist(), errors


def test_spark_type_of_every_avro_type():
    schema = {"type": "record", "name": "All", "fields": [
        {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"}, {"name": "l", "type": "long"},
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
        {"name": "raw", "type": "bytes"},
        {"name": "maybe", "type": ["null", "string"]},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "BLUE"]}},
        {"name": "md5", "type": {"type": "fixed", "name": "MD5", "size": 16}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
        {"name": "inner",
         "type": {"type": "record", "name": "Inner", "fields": [{"name": "x", "type": "int"}]}},
        {"name": "again", "type": ["null", "Inner"]},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "t", "type": {"type": "int", "logicalType": "time-millis"}},
    ]}
    assert avro_spark_type(json.dumps(schema)) == (
        "STRUCT<`b`: BOOLEAN, `i`: INT, `l`: BIGINT, `f`: FLOAT, `d`: DOUBLE, `s`: STRING, `raw`: BINARY, "
        "`maybe`: STRING, `color`: STRING, `md5`: BINARY, `tags`: ARRAY<STRING>, "
        "`counts`: MAP<STRING, BIGINT>, "
        "`inner`: STRUCT<`x`: INT>, `again`: STRUCT<`x`: INT>, `day`: DATE, `at`: TIMESTAMP, "
        "`local`: TIMESTAMP_NTZ, `price`: DECIMAL(10, 2), `id`: STRING, `t`: INT>")
    assert avro_spark_type('"string"') == "STRING"


def test_unions_of_two_types_and_bad_schemas_are_refused_with_the_reason():
    union = {"type": "record", "name": "U", "fields": [{"name": "v", "type": ["int", "string"]}]}
    with pytest.raises(InvalidArgumentError, match=r"value\.v is a union of int, string; only a type"):
        avro_spark_type(json.dumps(union))
    with pytest.raises(InvalidArgumentError, match=r"it is not JSON\. Give the schema as a dict"):
        avro_schema_text("{record")
    unknown = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "integer"}]}
    with pytest.raises(InvalidArgumentError, match="it names type 'integer', which Avro does not have"):
        avro_spark_type(json.dumps(unknown))


def test_records_decode_into_the_struct_and_bad_ones_are_named():
    decoder = AvroDecoder(json.dumps(CLICK))
    good = avro(CLICK, {"user": "ann", "clicks": 3})
    values, errors = decode(decoder, [good, None, good + b"\x02", good[:-1], b""])
    assert values == [{"user": "ann", "clicks": 3}, None, None, None, None]
    assert errors[:2] == [None, None]
    assert errors[2] == "value is not Avro of value_schema (1 bytes left after the record)"
    assert errors[3].startswith("value is not Avro of value_schema (EOFError")
    assert errors[4].startswith("value is not Avro of value_schema (")


def test_logical_types_reach_arrow():
    schema = {"type": "record", "name": "L", "fields": [
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "counts", "type": {"type": "map", "values": "long"}},
    ]}
    at = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
    record = {"day": dt.date(2026, 11, 27), "at": at, "price": Decimal("12.34"),
              "id": "6f1c4ad2-3d5b-4b7e-9a57-3c1c1a0e2b11", "counts": {"a": 1}}
    arrow = pa.struct([("day", pa.date32()), ("at", pa.timestamp("us", tz="UTC")),
                       ("price", pa.decimal128(10, 2)), ("id", pa.string()),
                       ("counts", pa.map_(pa.string(), pa.int64()))])
    values, errors = decode(AvroDecoder(json.dumps(schema)), [avro(schema, record)], arrow)
    assert errors == [None]
    assert values[0]["day"] == record["day"] and values[0]["at"] == at
    assert values[0]["price"] == Decimal("12.34")
    assert values[0]["id"] == record["id"] and values[0]["counts"] == [("a", 1)]


def test_wire_format_reads_each_writer_schema_resolved_to_the_reader_schema():
    clear_cache()
    v1 = {"type": "record", "name": "Click", "namespace": "shop",
          "fields": [{"name": "user", "type": "string"}]}
    with schema_registry() as registry:
        id1 = registry.register("clicks-value", json.dumps(v1))
        id2 = registry.register("clicks-value", json.dumps(CLICK))
        reader = {**CLICK, "fields": [*CLICK["fields"][:1], {"name": "clicks", "type": "int", "default": 0}]}
        decoder = AvroDecoder(json.dumps(reader), registry.url)
        raw = [wire_format(id1, avro(v1, {"user": "old"})),
               wire_format(id2, avro(CLICK, {"user": "new", "clicks": 5})),
               wire_format(id2, avro(CLICK, {"user": "again", "clicks": 6})),
               avro(CLICK, {"user": "unframed", "clicks": 1}),
               wire_format(99, b"\x02a\x02")]
        values, errors = decode(decoder, raw)
        assert values[:3] == [{"user": "old", "clicks": 0}, {"user": "new", "clicks": 5},
                              {"user": "again", "clicks": 6}]
        assert values[3:] == [None, None]
        assert errors[3].startswith("value is not in Schema Registry wire format: it starts with byte 0x10")
        assert errors[4].startswith("value names schema id 99, which the registry does not hold")
        # each id fetched once per process, however many records name it
        assert registry.requests[f"/schemas/ids/{id2}"] == 1
        decode(AvroDecoder(json.dumps(reader), registry.url), raw[:3])
        assert registry.requests[f"/schemas/ids/{id2}"] == 1


def test_an_unreachable_registry_fails_naming_its_url_without_the_password():
    clear_cache()
    with schema_registry() as registry:
        url = registry.url
    decoder = AvroDecoder(json.dumps(CLICK), url.replace("http://", "http://app:s3cret@"), timeout_s=2)
    with pytest.raises(SchemaRegistryError) as info:
        decode(decoder, [wire_format(1, b"\x02a\x02")])
    message = str(info.value)
    host = url.removeprefix("http://")
    assert message.startswith(f"Schema Registry at http://app:***@{host} did not answer "
                              "GET /schemas/ids/1 within 2 s")
    assert "s3cret" not in message


def test_the_decoder_pickles_without_its_caches():
    import pickle

    decoder = AvroDecoder(json.dumps(CLICK))
    decode(decoder, [avro(CLICK, {"user": "a", "clicks": 1})])
    copy = pickle.loads(pickle.dumps(decoder))
    assert copy._parsed is None and decode(copy, [avro(CLICK, {"user": "a", "clicks": 1})])[1] == [None]
