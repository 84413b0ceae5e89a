"""Protobuf values: a message type as a Spark type, messages decoded into Arrow, malformed ones
named; Confluent's wire format (message indexes) against an in-process registry."""

from __future__ import annotations

import json
import pickle
import sys

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tests.schema_registry_server import schema_registry
from trident_spark.errors import InvalidArgumentError, MissingExtraError
from trident_spark.spout import KafkaSpout
from trident_spark.spout.formats.protobuf import (
    ProtobufDecoder,
    example_click_class,
    protobuf_schema_text,
    protobuf_spark_type,
    skip_message_indexes,
)
from trident_spark.spout.formats.schema_registry import clear_cache, wire_format
from trident_spark.spout.kafka.config import KafkaSpoutConfig

F = descriptor_pb2.FieldDescriptorProto


def order_class(recursive: bool = False):
    """shop.Order (importing shop.Item from another file): every kind of field."""
    items = descriptor_pb2.FileDescriptorProto(name="shop/item.proto", package="shop", syntax="proto3")
    item = items.message_type.add(name="Item")
    item.field.add(name="sku", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    item.field.add(name="qty", number=2, type=F.TYPE_UINT32, label=F.LABEL_OPTIONAL)
    orders = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3",
                                                dependency=["shop/item.proto"])
    order = orders.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    order.field.add(name="total", number=2, type=F.TYPE_DOUBLE, label=F.LABEL_OPTIONAL)
    order.field.add(name="note", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, proto3_optional=True,
                    oneof_index=0)
    order.oneof_decl.add(name="_note")
    order.field.add(name="items", number=4, type=F.TYPE_MESSAGE, type_name=".shop.Item",
                    label=F.LABEL_REPEATED)
    order.field.add(name="first", number=5, type=F.TYPE_MESSAGE, type_name=".shop.Item",
                    label=F.LABEL_OPTIONAL)
    entry = order.nested_type.add(name="PricesEntry", options=descriptor_pb2.MessageOptions(map_entry=True))
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_SINT32, label=F.LABEL_OPTIONAL)
    order.field.add(name="prices", number=6, type=F.TYPE_MESSAGE, type_name=".shop.Order.PricesEntry",
                    label=F.LABEL_REPEATED)
    order.field.add(name="raw", number=7, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
    if recursive:
        order.field.add(name="parent", number=8, type=F.TYPE_MESSAGE, type_name=".shop.Order",
                        label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(items)
    pool.Add(orders)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


ORDER_ARROW = pa.struct([
    ("id", pa.int64()), ("total", pa.float64()), ("note", pa.string()),
    ("items", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int64())]))),
    ("first", pa.struct([("sku", pa.string()), ("qty", pa.int64())])),
    ("prices", pa.map_(pa.string(), pa.int32())), ("raw", pa.binary())])


def decode(decoder, raw, arrow_type=ORDER_ARROW):
    errors = [None] * len(raw)
    return decoder.decode(raw, arrow_type, errors).to_pylist(), errors


def test_spark_type_of_a_message_with_every_kind_of_field():
    assert protobuf_spark_type(protobuf_schema_text(order_class())) == (
        "STRUCT<`id`: BIGINT, `total`: DOUBLE, `note`: STRING, "
        "`items`: ARRAY<STRUCT<`sku`: STRING, `qty`: BIGINT>>, "
        "`first`: STRUCT<`sku`: STRING, `qty`: BIGINT>, `prices`: MAP<STRING, INT>, `raw`: BINARY>")


def test_a_class_and_its_descriptor_give_the_same_settings_and_round_trip():
    order = order_class()
    text = protobuf_schema_text(order)
    assert protobuf_schema_text(order.DESCRIPTOR) == text
    assert protobuf_schema_text(text) == text
    spout = KafkaSpout("127.0.0.1:9092", ["orders"], value_format="protobuf", value_schema=order)
    assert KafkaSpoutConfig.from_json(spout.config.to_json()) == spout.config
    assert spout.config.schema_ddl().startswith("key STRING, value STRUCT<`id`: BIGINT, ")


def test_messages_decode_and_bad_ones_are_named():
    order = order_class()
    decoder = ProtobufDecoder(protobuf_schema_text(order))
    full = order(id=2**40, total=9.5, note="gift", raw=b"\x00\x01")
    full.items.add(sku="a", qty=2)
    full.first.sku = "a"
    full.prices["a"] = -3
    raw = [full.SerializeToString(), order(id=1).SerializeToString(), b"\xff\xff", None]
    values, errors = decode(decoder, raw)
    assert values[0] == {"id": 2**40, "total": 9.5, "note": "gift", "items": [{"sku": "a", "qty": 2}],
                         "first": {"sku": "a", "qty": 0}, "prices": [("a", -3)], "raw": b"\x00\x01"}
    # proto3: an unset optional field is null, an unset plain field its default, an unset message null
    assert values[1] == {"id": 1, "total": 0.0, "note": None, "items": [], "first": None, "prices": [],
                         "raw": b""}
    assert values[2:] == [None, None]
    assert errors[2].startswith("value is not a shop.Order message (DecodeError")
    assert errors[:2] == [None, None] and errors[3] is None
    copy = pickle.loads(pickle.dumps(decoder))
    assert decode(copy, [full.SerializeToString()])[0][0]["id"] == 2**40


def test_message_indexes_of_the_wire_format():
    assert skip_message_indexes(b"\x00rest", 0) == 1
    assert skip_message_indexes(b"xx\x04\x02\x06rest", 2) == 5
    with pytest.raises(ValueError, match="run past the end"):
        skip_message_indexes(b"\x04\x02", 0)


def test_wire_format_with_a_registry():
    clear_cache()
    click = example_click_class()
    arrow = pa.struct([("user", pa.string()), ("clicks", pa.int32()), ("tags", pa.list_(pa.string())),
                       ("kind", pa.string())])
    with schema_registry() as registry:
        proto = registry.register("clicks-value", 'syntax = "proto3"; message Click {}', "PROTOBUF")
        avro = registry.register("other-value", '"string"')
        decoder = ProtobufDecoder(protobuf_schema_text(click), registry.url)
        body = click(user="ann", clicks=3, tags=["x"], kind=1).SerializeToString()
        raw = [wire_format(proto, b"\x00" + body), wire_format(proto, b"\x02\x00" + body),
               wire_format(avro, b"\x00" + body), wire_format(55, b"\x00" + body), body,
               wire_format(proto, b"\x04\x02")]
        values, errors = decode(decoder, raw, arrow)
        assert values[:2] == [{"user": "ann", "clicks": 3, "tags": ["x"], "kind": "BUY"}] * 2
        assert values[2:] == [None] * 4
        assert errors[2] == f"value names schema id {avro}, a AVRO schema, not Protobuf"
        assert errors[3].startswith("value names schema id 55, which the registry does not hold")
        assert errors[4].startswith("value is not in Schema Registry wire format: it starts with byte 0x0a")
        assert errors[5] == ("value is not in Schema Registry wire format: the message indexes run past "
                             "the end of the record")
        assert registry.requests[f"/schemas/ids/{proto}"] == 1


def test_options_of_protobuf_values():
    with pytest.raises(InvalidArgumentError, match=r"value_format='protobuf'\) needs value_schema=, the"):
        KafkaSpout("127.0.0.1:9092", ["c"], value_format="protobuf")
    with pytest.raises(InvalidArgumentError, match=r"shop\.Order contains itself"):
        KafkaSpout("127.0.0.1:9092", ["c"], value_format="protobuf", value_schema=order_class(recursive=True))
    with pytest.raises(InvalidArgumentError, match="it is a dict, not a message class or a Descriptor"):
        KafkaSpout("127.0.0.1:9092", ["c"], value_format="protobuf", value_schema={"type": "record"})
    with pytest.raises(InvalidArgumentError, match="does not read value_format='protobuf'"):
        KafkaSpout("127.0.0.1:9092", ["c"], value_format="protobuf", value_schema=order_class(), engine="jvm")


def test_without_protobuf_the_error_names_the_extra(monkeypatch):
    for name in {"google.protobuf", *(name for name in sys.modules if name.startswith("google.protobuf"))}:
        monkeypatch.setitem(sys.modules, name, None)  # `import google.protobuf...` raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'trident-spark\[protobuf\]'"):
        KafkaSpout("127.0.0.1:9092", ["c"], value_format="protobuf", value_schema=json.dumps({}))
