"""Protobuf record values: a message type as a Spark type, and a column of messages decoded into Arrow.

``KafkaSpout(value_format="protobuf", value_schema=Click)`` (a generated message class, or its
``Descriptor``) exposes each record as its ``value`` field, a struct of the message's fields,
as ``value_format="avro"`` and ``"json"`` do. The message type travels to the executors as
plain data: its ``.proto`` files as a serialized ``FileDescriptorSet`` (base64) and the
message's full name, from which each worker process builds the class once.

With a Schema Registry, values are in Confluent's wire format: the magic byte 0, the schema id
(4 bytes, big-endian), then the message indexes (a zigzag varint count and as many zigzag
varints; a single 0 byte for the first message of the file), then the message. The id must be
a Protobuf schema the registry holds (checked once per id); the message is read as
``value_schema``'s type (Protobuf needs no writer schema to read a compatible message).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from trident_spark.errors import InvalidArgumentError, SchemaRegistryError, TridentSparkError
from trident_spark.spout.formats.decode import DECODE_TIMEOUT_S, to_arrow, too_slow
from trident_spark.spout.formats.schema_registry import (
    NotWireFormatError,
    SchemaRegistryClient,
    UnknownSchemaError,
    split_wire_format,
)
from trident_spark.state.extras import require_extra

_INT = "INT"
_LONG = "BIGINT"


def protobuf_module() -> Any:
    """``google.protobuf``, or an error naming the extra that installs it."""
    for module in ("google.protobuf.descriptor_pb2", "google.protobuf.descriptor_pool",
                   "google.protobuf.message_factory"):
        require_extra(module, "KafkaSpout(value_format='protobuf')")
    return require_extra("google.protobuf", "KafkaSpout(value_format='protobuf')")


def protobuf_schema_text(message: Any, part: str = "value") -> str:
    """A message class or ``Descriptor`` as the spout's settings keep it: JSON text holding its
    files as a ``FileDescriptorSet`` (base64) and the message's full name. JSON text in that
    form is returned as it is.

    Examples
    --------
    >>> text = protobuf_schema_text(example_click_class())
    >>> json.loads(text)["message"]
    'shop.Click'
    """
    protobuf = protobuf_module()
    if isinstance(message, str):
        try:
            data = json.loads(message)
            if isinstance(data, dict) and {"descriptor_set", "message"} <= set(data):
                return message
        except ValueError:
            pass
        raise protobuf_schema_error(message, "a string is read only as the JSON text this function makes",
                                    part)
    descriptor = getattr(message, "DESCRIPTOR", message)
    if not isinstance(descriptor, protobuf.descriptor.Descriptor):
        raise protobuf_schema_error(message, f"it is a {type(message).__name__}, not a message class or "
                                             "a Descriptor", part)
    files = protobuf.descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()

    def add(file: Any) -> None:  # dependencies first: a pool adds files in that order
        if file.name in seen:
            return
        seen.add(file.name)
        for dependency in file.dependencies:
            add(dependency)
        file.CopyToProto(files.file.add())

    add(descriptor.file)
    encoded = base64.b64encode(files.SerializeToString()).decode()
    return json.dumps({"descriptor_set": encoded, "message": descriptor.full_name})


def protobuf_schema_error(schema: object, reason: str, part: str = "value") -> InvalidArgumentError:
    shown = schema if len(repr(schema)) <= 200 else f"{repr(schema)[:200]}..."
    return InvalidArgumentError(
        f"KafkaSpout({part}_format='protobuf', {part}_schema={shown!r}) is not a usable message type: "
        f"{reason}. Give the generated message class (e.g. {part}_schema=clicks_pb2.Click) or its "
        "DESCRIPTOR")


# Message classes by settings text, built once per worker process.
_classes: dict[str, Any] = {}
_classes_lock = threading.Lock()


def message_class(text: str) -> Any:
    """The message class that ``text`` (from :func:`protobuf_schema_text`) describes."""
    with _classes_lock:
        found = _classes.get(text)
    if found is not None:
        return found
    protobuf = protobuf_module()
    data = json.loads(text)
    files = protobuf.descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(data["descriptor_set"]))
    pool = protobuf.descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    try:
        descriptor = pool.FindMessageTypeByName(data["message"])
    except KeyError:
        raise protobuf_schema_error(text, f"its files define no message {data['message']!r}") from None
    cls = protobuf.message_factory.GetMessageClass(descriptor)
    with _classes_lock:
        _classes[text] = cls
    return cls


def protobuf_spark_type(text: str, part: str = "value") -> str:
    """The Spark type (DDL) of messages of the type ``text`` describes.

    Integers of 32 bits become INT (unsigned and fixed ones BIGINT), of 64 bits BIGINT;
    enums their names (STRING); messages structs; repeated fields arrays; maps
    ``MAP<K, V>``. A message that contains itself cannot be a Spark type and is refused.

    Examples
    --------
    >>> protobuf_spark_type(protobuf_schema_text(example_click_class()))
    'STRUCT<`user`: STRING, `clicks`: INT, `tags`: ARRAY<STRING>, `kind`: STRING>'
    """
    try:
        return _message_type(message_class(text).DESCRIPTOR, ())
    except InvalidArgumentError as exc:
        if part == "value":
            raise
        raise InvalidArgumentError(str(exc).replace("value_format=", "key_format=", 1)
                                   .replace("value_schema=", "key_schema=", 1)) from None


def _message_type(descriptor: Any, path: tuple[str, ...]) -> str:
    if descriptor.full_name in path:
        raise protobuf_schema_error(descriptor.full_name, f"{' > '.join(path)} contains itself, which a "
                                                          "Spark type cannot")
    fields = [f"`{f.name}`: {_field_type(f, (*path, descriptor.full_name))}" for f in descriptor.fields]
    return f"STRUCT<{', '.join(fields)}>"


def _field_type(field: Any, path: tuple[str, ...]) -> str:
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        key, value = message.fields_by_name["key"], message.fields_by_name["value"]
        return f"MAP<{_scalar_type(key, path)}, {_scalar_type(value, path)}>"
    single = _scalar_type(field, path)
    return f"ARRAY<{single}>" if field.is_repeated else single


def _scalar_type(field: Any, path: tuple[str, ...]) -> str:
    kind = field.type
    types = field.__class__
    if kind == types.TYPE_MESSAGE or kind == types.TYPE_GROUP:
        return _message_type(field.message_type, path)
    simple = {types.TYPE_DOUBLE: "DOUBLE", types.TYPE_FLOAT: "FLOAT", types.TYPE_INT32: _INT,
              types.TYPE_SINT32: _INT, types.TYPE_SFIXED32: _INT, types.TYPE_INT64: _LONG,
              types.TYPE_SINT64: _LONG, types.TYPE_SFIXED64: _LONG, types.TYPE_UINT32: _LONG,
              types.TYPE_FIXED32: _LONG, types.TYPE_UINT64: _LONG, types.TYPE_FIXED64: _LONG,
              types.TYPE_BOOL: "BOOLEAN", types.TYPE_STRING: "STRING", types.TYPE_BYTES: "BINARY",
              types.TYPE_ENUM: "STRING"}
    return simple[kind]


def skip_message_indexes(data: bytes, start: int) -> int:
    """Where the message starts after the message indexes of Confluent's Protobuf wire format.

    Examples
    --------
    >>> skip_message_indexes(b"\\x00" + b"msg", 0)       # the first message: one 0 byte
    1
    >>> skip_message_indexes(b"\\x04\\x02\\x06" + b"msg", 0)  # two indexes, 1 and 3
    3
    """
    count, position = _zigzag(data, start)
    if count < 0:
        raise ValueError(f"a negative message-index count ({count})")
    for _ in range(count):
        _, position = _zigzag(data, position)
    return position


def _zigzag(data: bytes, position: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if position >= len(data):
            raise ValueError("the message indexes run past the end of the record")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), position
        shift += 7
        if shift > 63:
            raise ValueError("a message index longer than a 64-bit varint")


class ProtobufDecoder:
    """Decodes a column of Protobuf messages into one Arrow array (picklable: built lazily).

    Examples
    --------
    >>> Click = example_click_class()
    >>> decoder = ProtobufDecoder(protobuf_schema_text(Click))
    >>> errors = [None, None]
    >>> arrow = pa.struct([("user", pa.string()), ("clicks", pa.int32()), ("tags", pa.list_(pa.string())),
    ...                    ("kind", pa.string())])
    >>> decoder.decode([Click(user="ann", clicks=2).SerializeToString(), b"\\xff"], arrow, errors).to_pylist()
    [{'user': 'ann', 'clicks': 2, 'tags': [], 'kind': 'VIEW'}, None]
    >>> errors[1].startswith("value is not a shop.Click message (DecodeError: Error parsing message")
    True
    """

    def __init__(self, schema: str, registry_url: str | None = None, timeout_s: float = 10.0,
                 part: str = "value", outage_budget_s: float = 0.0,
                 decode_timeout_s: float = DECODE_TIMEOUT_S) -> None:
        self.schema = schema
        self.registry_url = registry_url
        self.timeout_s = timeout_s
        self.part = part
        self.outage_budget_s = outage_budget_s
        self.decode_timeout_s = decode_timeout_s
        self._cls: Any = None
        self._checked: set[int] = set()
        self._registry: SchemaRegistryClient | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"schema": self.schema, "registry_url": self.registry_url, "timeout_s": self.timeout_s,
                "part": self.part, "outage_budget_s": self.outage_budget_s,
                "decode_timeout_s": self.decode_timeout_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def decode(self, raw: Sequence[bytes | None], arrow_type: pa.DataType,
               errors: list[str | None]) -> pa.Array:
        """``raw`` as an Arrow array of ``arrow_type``; a value that cannot be read becomes null,
        its reason put at its index in ``errors``: whatever a record makes the parser raise
        (``DecodeError``, ``RecursionError``, ...) makes it one malformed record. A registry that
        does not answer raises :class:`~trident_spark.errors.SchemaRegistryError`."""
        if self._cls is None:
            self._cls = message_class(self.schema)
        values: list[Any] = []
        last = time.perf_counter()  # one clock reading per record: the end of one is the next one's start
        for i, item in enumerate(raw):
            if item is None:
                values.append(None)
                continue
            try:
                values.append(_as_dict(self._read_one(item)))
            except SchemaRegistryError:
                raise  # the registry does not answer: the batch fails (after the outage budget)
            except _MalformedError as exc:
                values.append(None)
                errors[i] = errors[i] or str(exc)
            except Exception as exc:  # RecursionError and kin: one record, never the stream
                values.append(None)
                errors[i] = errors[i] or (f"{self.part} cannot be read as a {self._cls.DESCRIPTOR.full_name} "
                                          f"message ({type(exc).__name__}: {exc})")
            now = time.perf_counter()
            if now - last > self.decode_timeout_s:
                values[-1] = None
                errors[i] = errors[i] or too_slow(now - last, self.decode_timeout_s, self.part)
            last = now
        return to_arrow(values, arrow_type, errors, self.part)

    def _read_one(self, item: bytes) -> Any:
        start = 0
        if self.registry_url is not None:
            try:
                schema_id, start = split_wire_format(item)
                self._check_id(schema_id)
                start = skip_message_indexes(item, start)
            except (NotWireFormatError, ValueError) as exc:
                reason = (str(exc) if isinstance(exc, NotWireFormatError)
                          else f"not in Schema Registry wire format: {exc}")
                raise _MalformedError(f"{self.part} is {reason}") from None
        message = self._cls()
        try:
            message.ParseFromString(item[start:] if start else item)
        except Exception as exc:  # google.protobuf.message.DecodeError and kin
            raise _MalformedError(f"{self.part} is not a {self._cls.DESCRIPTOR.full_name} message "
                                  f"({type(exc).__name__}: {exc})") from None
        return message

    def _check_id(self, schema_id: int) -> None:
        if schema_id in self._checked:
            return
        if self._registry is None:
            assert self.registry_url is not None
            self._registry = SchemaRegistryClient(self.registry_url, self.timeout_s,
                                                  outage_budget_s=self.outage_budget_s)
        try:
            registered = self._registry.schema(schema_id)
        except UnknownSchemaError as exc:
            raise _MalformedError(f"{self.part} names schema id {schema_id}, which the registry does not "
                                  f"hold ({exc})") from None
        if registered.schema_type != "PROTOBUF":
            raise _MalformedError(
                f"{self.part} names schema id {schema_id}, a {registered.schema_type} schema, not Protobuf")
        self._checked.add(schema_id)


class _MalformedError(TridentSparkError):
    """One value cannot be read: the reason, as the record's error."""


def _as_dict(message: Any) -> dict[str, Any]:
    """A message as the Python values Arrow takes for its Spark type (enums by name)."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            inner = entry.fields_by_name["value"]
            out[field.name] = {k: _scalar(inner, v) for k, v in value.items()}
        elif field.is_repeated:
            out[field.name] = [_scalar(field, v) for v in value]
        elif field.has_presence and not message.HasField(field.name):
            out[field.name] = None
        else:
            out[field.name] = _scalar(field, value)
    return out


def _scalar(field: Any, value: Any) -> Any:
    types = field.__class__
    if field.type in (types.TYPE_MESSAGE, types.TYPE_GROUP):
        return _as_dict(value)
    if field.type == types.TYPE_ENUM:
        named = field.enum_type.values_by_number.get(value)
        return named.name if named is not None else str(value)
    return value


def example_click_class() -> Any:
    """A message class built in code, for the examples (``shop.Click``: user, clicks, tags, kind)."""
    protobuf = protobuf_module()
    pb2 = protobuf.descriptor_pb2
    file = pb2.FileDescriptorProto(name="shop/click.proto", package="shop", syntax="proto3")
    kind = file.enum_type.add(name="Kind")
    kind.value.add(name="VIEW", number=0)
    kind.value.add(name="BUY", number=1)
    click = file.message_type.add(name="Click")
    field = pb2.FieldDescriptorProto
    click.field.add(name="user", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    click.field.add(name="clicks", number=2, type=field.TYPE_INT32, label=field.LABEL_OPTIONAL)
    click.field.add(name="tags", number=3, type=field.TYPE_STRING, label=field.LABEL_REPEATED)
    click.field.add(name="kind", number=4, type=field.TYPE_ENUM, type_name=".shop.Kind",
                    label=field.LABEL_OPTIONAL)
    pool = protobuf.descriptor_pool.DescriptorPool()
    pool.Add(file)
    return protobuf.message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Click"))


__all__ = ["ProtobufDecoder", "example_click_class", "message_class", "protobuf_schema_text",
           "protobuf_spark_type", "skip_message_indexes"]
