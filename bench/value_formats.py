"""Decode throughput of the Kafka spout's value formats, in one Python process: records/s of
one Arrow batch of values decoded as JSON (Arrow's C++ reader), as Avro with a schema in code,
as Avro in Confluent's wire format with the writer schema from a registry (cached), and as
Protobuf messages.

    .venv/bin/python bench/value_formats.py [records]

The registry is the tests' in-process one (tests/schema_registry_server.py); after the first
batch its schema is cached, so the figure is the decoding alone.
"""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import fastavro
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.schema_registry_server import schema_registry
from trident_spark.spout.formats.avro import AvroDecoder
from trident_spark.spout.formats.decode import decode_column
from trident_spark.spout.formats.protobuf import ProtobufDecoder, protobuf_schema_text
from trident_spark.spout.formats.schema_registry import wire_format

SCHEMA = {"type": "record", "name": "Click", "fields": [
    {"name": "user", "type": "string"}, {"name": "clicks", "type": "int"},
    {"name": "score", "type": ["null", "double"]}, {"name": "page", "type": "string"}]}
ARROW = pa.struct([("user", pa.string()), ("clicks", pa.int32()), ("score", pa.float64()),
                   ("page", pa.string())])


def best_rate(label: str, decode, n: int, repeats: int = 5) -> float:
    best = 0.0
    for _ in range(repeats):
        started = time.perf_counter()
        column = decode()
        best = max(best, n / (time.perf_counter() - started))
    assert len(column) == n and column.null_count == 0, label
    print(f"{label:<42} {best:>12,.0f} records/s")
    return best


def main(n: int) -> None:
    records = [{"user": f"user{i % 1000}", "clicks": i, "score": i * 0.5, "page": f"/p/{i % 37}"}
               for i in range(n)]
    parsed = fastavro.parse_schema(SCHEMA)
    bodies = []
    for record in records:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        bodies.append(out.getvalue())
    texts = [json.dumps(r).encode() for r in records]
    json_bytes, avro_bytes = sum(map(len, texts)) / n, sum(map(len, bodies)) / n
    print(f"{n:,} records; JSON {json_bytes:.0f} B, Avro {avro_bytes:.0f} B each")
    best_rate("json (pyarrow.json)", lambda: decode_column(texts, ARROW, "json", [None] * n), n)
    in_code = AvroDecoder(json.dumps(SCHEMA))
    best_rate("avro, schema in code (fastavro)", lambda: in_code.decode(bodies, ARROW, [None] * n), n)
    with schema_registry() as registry:
        schema_id = registry.register("clicks-value", json.dumps(SCHEMA))
        framed = [wire_format(schema_id, b) for b in bodies]
        wired = AvroDecoder(json.dumps(SCHEMA), registry.url)
        best_rate("avro, wire format + registry (cached)", lambda: wired.decode(framed, ARROW, [None] * n), n)
    message = click_message()
    messages = [message(**r).SerializeToString() for r in records]
    protobuf = ProtobufDecoder(protobuf_schema_text(message))
    best_rate("protobuf (generated class)", lambda: protobuf.decode(messages, ARROW, [None] * n), n)


def click_message():
    """The same record as a Protobuf message (proto3, ``score`` optional)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="bench/click.proto", package="bench", syntax="proto3")
    click = file.message_type.add(name="Click")
    click.field.add(name="user", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    click.field.add(name="clicks", number=2, type=field.TYPE_INT32, label=field.LABEL_OPTIONAL)
    click.field.add(name="score", number=3, type=field.TYPE_DOUBLE, label=field.LABEL_OPTIONAL,
                    proto3_optional=True, oneof_index=0)
    click.oneof_decl.add(name="_score")
    click.field.add(name="page", number=4, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("bench.Click"))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
