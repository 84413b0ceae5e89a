"""Hostile Avro records, written as the attack: a 20-byte record claiming 2**62 nulls, a record
nested 100,000 deep in a recursive schema, a schema no record of which can end. Each is one
malformed record with its reason; the records around it decode; nothing hangs or crashes (the
decoder runs in a thread the test waits for with a timeout)."""

from __future__ import annotations

import io
import json
import threading

import fastavro
import pyarrow as pa
import pytest

from tests.schema_registry_server import schema_registry
from trident_spark.spout.formats.avro import AvroDecoder
from trident_spark.spout.formats.avro_bounds import (
    MAX_EMPTY_ITEMS,
    AvroBoundsError,
    avro_bounds,
    check_record,
)
from trident_spark.spout.formats.schema_registry import clear_cache, wire_format

READER = {"type": "record", "name": "Click", "fields": [{"name": "user", "type": "string"}]}
# What a hostile producer registers: the reader's record and an array of nulls (items of no bytes).
WRITER = {"type": "record", "name": "Click", "fields": [
    {"name": "user", "type": "string"}, {"name": "tags", "type": {"type": "array", "items": "null"}}]}
LINKED = {"type": "record", "name": "Click", "fields": [
    {"name": "user", "type": "string"}, {"name": "next", "type": ["null", "Click"]}]}


def zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = b""
    while True:
        low, n = n & 0x7F, n >> 7
        if not n:
            return out + bytes([low])
        out += bytes([low | 0x80])


def avro(schema, record) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def decode_within(decoder: AvroDecoder, raw: list[bytes], seconds: float = 60) -> tuple[list, list]:
    """Decode in a thread; fail the test (not hang) if it does not end within ``seconds``."""
    errors: list[str | None] = [None] * len(raw)
    out: list = []
    thread = threading.Thread(target=lambda: out.append(
        decoder.decode(raw, pa.struct([("user", pa.string())]), errors).to_pylist()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the decoder did not return: a record stalled it"
    return out[0], errors


def test_the_20_byte_record_claiming_2_62_nulls_is_one_malformed_record():
    clear_cache()
    with schema_registry() as registry:
        writer = registry.register("clicks-value", json.dumps(WRITER))
        hostile = wire_format(writer, b"\x08abcd" + zigzag(2**62))
        assert len(hostile) == 20
        good = [wire_format(writer, avro(WRITER, {"user": u, "tags": [None, None]})) for u in ("ann", "bob")]
        decoder = AvroDecoder(json.dumps(READER), registry.url)
        values, errors = decode_within(decoder, [good[0], hostile, good[1]])
    assert values == [{"user": "ann"}, None, {"user": "bob"}]
    assert errors == [None, "value is refused before reading it as Avro of its registered schema: an array "
                            "block claims 4611686018427387904 items that take no bytes (null); at most "
                            f"{MAX_EMPTY_ITEMS} such items are read per record", None]


def test_a_record_nested_100000_deep_in_a_recursive_schema_is_malformed_not_a_crash():
    clear_cache()
    with schema_registry() as registry:
        writer = registry.register("clicks-value", json.dumps(LINKED))
        shallow = {"user": "ann", "next": {"user": "in", "next": None}}
        deep = b"\x02a\x02" * 100_000 + b"\x02a\x00"  # user "a", next: the union's second branch, ...
        decoder = AvroDecoder(json.dumps(READER), registry.url)
        values, errors = decode_within(decoder, [wire_format(writer, avro(LINKED, shallow)),
                                                 wire_format(writer, deep)])
    assert values == [{"user": "ann"}, None]
    assert errors[1] == ("value is refused before reading it as Avro of its registered schema: it nests "
                         "records, arrays and maps more than 500 deep (a recursive schema; fastavro would "
                         "overflow its stack)")


def test_a_schema_whose_records_cannot_end_refuses_every_record():
    endless = {"type": "record", "name": "R", "fields": [{"name": "again", "type": "R"}]}
    with pytest.raises(AvroBoundsError, match="record 'R' contains itself with no union, array or map"):
        check_record(avro_bounds(json.dumps(endless)), b"")


@pytest.mark.parametrize(("schema", "body", "reason"), [
    ({"type": "array", "items": "null"}, zigzag(-(2**62)) + zigzag(0), "items that take no bytes"),
    ({"type": "array", "items": {"type": "record", "name": "E", "fields": []}}, zigzag(2**62),
     "items that take no bytes (E)"),
    ({"type": "array", "items": {"type": "fixed", "name": "F", "size": 0}}, zigzag(10**9), "(F)"),
    ({"type": "array", "items": {"type": "array", "items": "null"}}, zigzag(3) + zigzag(2**40),
     "items that take no bytes"),
    ({"type": "map", "values": {"type": "array", "items": "null"}}, zigzag(2**40) + b"\x02a",
     "a map block claims 1099511627776 items of at least 2 bytes each, with 2 bytes left"),
])
def test_every_shape_of_endless_count_is_refused(schema, body, reason):
    bounds = avro_bounds(json.dumps(schema))
    assert bounds.walk
    with pytest.raises(AvroBoundsError) as info:
        check_record(bounds, body)
    assert reason in str(info.value)


def test_honest_records_pass_the_walk_and_schemas_without_risk_are_not_walked():
    schema = {"type": "record", "name": "M", "fields": [
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "string"}}},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}},
        {"name": "e", "type": {"type": "record", "name": "E", "fields": []}},
        {"name": "es", "type": {"type": "array", "items": "E"}},
        {"name": "u", "type": ["null", "double", "E"]}]}
    record = {"m": {"a": ["x", "y"], "b": []}, "f": b"abc", "e": {}, "es": [{}, {}], "u": 2.5}
    bounds = avro_bounds(json.dumps(schema))
    assert bounds.walk  # an array of empty records
    check_record(bounds, avro(schema, record))
    with pytest.raises(AvroBoundsError, match=r"the record ends early \(8 bytes short\)"):
        check_record(bounds, avro(schema, record)[:-8])
    two = {"user": "a", "next": {"user": "b", "next": None}}
    check_record(avro_bounds(json.dumps(LINKED)), avro(LINKED, two))
    assert not avro_bounds(json.dumps(READER)).walk
    assert not avro_bounds('{"type": "array", "items": {"type": "map", "values": "null"}}').walk
