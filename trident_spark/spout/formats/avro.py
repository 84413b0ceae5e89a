"""Avro record values: the schema as a Spark type, and a column of records decoded into Arrow.

``KafkaSpout(value_format="avro")`` exposes each record as its ``value`` field, a struct of
the Avro record's fields (as ``value_format="json"`` does with a Spark schema). The Spark
type comes from the Avro schema given in code (``value_schema=``) or, with a Schema
Registry, from the latest version of the topic's subject; records written with older
(or newer) schemas are resolved to it by Avro's schema resolution rules.

Records are read with fastavro's C reader one by one, checking that each record uses all
its bytes, then put into Arrow in one conversion per column. Records are untrusted: a writer
schema whose records could stall or crash fastavro (arrays of items of no bytes, recursive
types) has each record walked first within bounds (:mod:`trident_spark.spout.formats.avro_bounds`),
and whatever a record makes the reader raise (RecursionError included) makes it one
malformed record, with the reason. (Reading a whole column as one
Avro block is twice as fast but cannot tell where a record with trailing bytes ends: it
would decode its neighbours wrongly without an error.)
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from trident_spark.errors import InvalidArgumentError, SchemaRegistryError, TridentSparkError
from trident_spark.spout.formats.avro_bounds import AvroBounds, AvroBoundsError, avro_bounds, check_record
from trident_spark.spout.formats.decode import DECODE_TIMEOUT_S, to_arrow, too_slow
from trident_spark.spout.formats.schema_registry import (
    NotWireFormatError,
    SchemaRegistryClient,
    UnknownSchemaError,
    split_wire_format,
)
from trident_spark.state.extras import require_extra

#: Avro's primitive types and the Spark type each becomes.
PRIMITIVES = {"boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
              "bytes": "BINARY", "string": "STRING"}
#: Logical types read as Spark types of their own; any other logical type is read as its base type.
LOGICAL = {("int", "date"): "DATE", ("long", "timestamp-millis"): "TIMESTAMP",
           ("long", "timestamp-micros"): "TIMESTAMP", ("long", "local-timestamp-millis"): "TIMESTAMP_NTZ",
           ("long", "local-timestamp-micros"): "TIMESTAMP_NTZ"}

AVRO_SCHEMA_EXAMPLE = ('value_schema={"type": "record", "name": "Click", "fields": [{"name": "user", '
                       '"type": "string"}, {"name": "clicks", "type": "int"}]}')


def fastavro_module() -> Any:
    """fastavro, or an error naming the extra that installs it."""
    return require_extra("fastavro", "KafkaSpout(value_format='avro')")


def avro_schema_text(schema: str | Mapping[str, Any] | Sequence[Any], part: str = "value") -> str:
    """An Avro schema given as a dict (or list, for a union) or as JSON text, as JSON text.

    Examples
    --------
    >>> avro_schema_text({"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]})
    '{"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}'
    >>> avro_schema_text('"string"')
    '"string"'
    """
    if isinstance(schema, str):
        try:
            json.loads(schema)
        except ValueError:
            if schema in PRIMITIVES:  # a bare primitive name: Avro's JSON is the quoted name
                return json.dumps(schema)
            raise avro_schema_error(schema, "it is not JSON", part) from None
        return schema
    if isinstance(schema, Mapping | list | tuple):
        return json.dumps(schema)
    raise avro_schema_error(schema, f"it is a {type(schema).__name__}, not a dict or JSON text", part)


def avro_schema_error(schema: object, reason: str, part: str = "value") -> InvalidArgumentError:
    """The error for a ``value_schema`` (or ``key_schema``) that is not an Avro schema: what was
    given, why, an example."""
    shown = schema if len(repr(schema)) <= 200 else f"{repr(schema)[:200]}..."
    example = AVRO_SCHEMA_EXAMPLE if part == "value" else "key_schema='string'"
    return InvalidArgumentError(
        f"KafkaSpout({part}_format='avro', {part}_schema={shown!r}) is not a usable Avro schema: {reason}. "
        f"Give the schema as a dict or JSON text, e.g. {example}")


def parse_avro(text: str, part: str = "value") -> Any:
    """``text`` parsed by fastavro, with the logical types Spark has no type for read as their base
    type (``uuid`` as a string, ``time-millis`` as an int, ...)."""
    fastavro = fastavro_module()
    try:
        return fastavro.parse_schema(_plain_logical_types(json.loads(text)))
    except Exception as exc:  # fastavro's SchemaParseException, UnknownType, KeyError, TypeError...
        if type(exc).__name__ == "UnknownType":
            raise avro_schema_error(text, f"it names type {str(exc)!r}, which Avro does not have and the "
                                          "schema does not define", part) from None
        raise avro_schema_error(text, f"{type(exc).__name__}: {exc}", part) from None


def _plain_logical_types(schema: Any) -> Any:
    """``schema`` without the logical types read as their base type (a copy)."""
    if isinstance(schema, list):
        return [_plain_logical_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    logical = out.get("logicalType")
    if logical is not None and (out.get("type"), logical) not in LOGICAL and logical != "decimal":
        del out["logicalType"]
    if "fields" in out:
        out["fields"] = [{**f, "type": _plain_logical_types(f.get("type"))} for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = _plain_logical_types(out[key])
    if isinstance(out.get("type"), dict | list):
        out["type"] = _plain_logical_types(out["type"])
    return out


def avro_spark_type(text: str, part: str = "value") -> str:
    """The Spark type (DDL) of values written with the Avro schema ``text``.

    Records become structs, enums strings, fixed binary, maps ``MAP<STRING, ...>``; a union
    with null is its other branch (Spark's values are all nullable); other unions are refused.

    Examples
    --------
    >>> avro_spark_type('{"type": "record", "name": "C", "fields": [{"name": "user", "type": "string"},'
    ...                 ' {"name": "tags", "type": {"type": "array", "items": "string"}},'
    ...                 ' {"name": "score", "type": ["null", "double"]}]}')
    'STRUCT<`user`: STRING, `tags`: ARRAY<STRING>, `score`: DOUBLE>'
    """
    parse_avro(text, part)  # a schema fastavro refuses is named as such first
    try:
        return _spark_type(json.loads(text), {}, part)
    except InvalidArgumentError as exc:
        if part == "value":
            raise
        raise InvalidArgumentError(str(exc).replace("value_format=", "key_format=", 1)
                                   .replace("value_schema=", "key_schema=", 1)) from None


def _spark_type(schema: Any, named: dict[str, Any], where: str) -> str:
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return PRIMITIVES[schema]
        if schema == "null":
            raise avro_schema_error(schema, f"{where} is always null")
        if schema in named or schema.rsplit(".", 1)[-1] in named:
            return _spark_type(named.get(schema) or named[schema.rsplit(".", 1)[-1]], named, where)
        raise avro_schema_error(schema, f"{where} names type {schema!r}, defined nowhere before it")
    if isinstance(schema, list):
        branches = [s for s in schema if s != "null"]
        if len(branches) != 1:
            union = ", ".join(map(_type_name, schema))
            raise avro_schema_error(schema, f"{where} is a union of {union}; only a type or null "
                                            "(['null', T]) can be read into a Spark column")
        return _spark_type(branches[0], named, where)
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return f"DECIMAL({int(schema['precision'])}, {int(schema.get('scale', 0))})"
    if (kind, logical) in LOGICAL:
        return LOGICAL[(kind, logical)]
    if kind == "record":
        _name(schema, named)
        fields = [f"`{f['name']}`: {_spark_type(f['type'], named, where + '.' + f['name'])}"
                  for f in schema["fields"]]
        return f"STRUCT<{', '.join(fields)}>"
    if kind in ("enum", "fixed"):
        _name(schema, named)
        return "STRING" if kind == "enum" else "BINARY"
    if kind == "array":
        return f"ARRAY<{_spark_type(schema['items'], named, f'{where}[]')}>"
    if kind == "map":
        return f"MAP<STRING, {_spark_type(schema['values'], named, f'{where}{{}}')}>"
    return _spark_type(kind, named, where)


def _name(schema: Mapping[str, Any], named: dict[str, Any]) -> None:
    name = str(schema["name"])
    named[name] = schema
    if schema.get("namespace"):
        named[f"{schema['namespace']}.{name}"] = schema


def _type_name(schema: Any) -> str:
    if isinstance(schema, str):
        return schema
    return str(schema.get("type")) if isinstance(schema, dict) else "union"


class AvroDecoder:
    """Decodes a column of Avro values into one Arrow array (picklable: parsed lazily).

    Parameters
    ----------
    reader_schema : str
        The Avro schema (JSON text) the values are read as: the stream's ``value`` type.
    registry_url : str, optional
        With it, values are in Confluent's wire format and each is read with the writer
        schema its id names, resolved to ``reader_schema``; without it, values are plain
        Avro binary written with ``reader_schema``.

    Examples
    --------
    >>> import fastavro, io
    >>> schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "int"}]}
    >>> body = io.BytesIO(); fastavro.schemaless_writer(body, schema, {"n": 7})
    >>> errors = [None, None]
    >>> decoder = AvroDecoder(json.dumps(schema))
    >>> decoder.decode([body.getvalue(), b"\\x80"], pa.struct([("n", pa.int32())]), errors).to_pylist()
    [{'n': 7}, None]
    >>> errors[1]
    'value is not Avro of value_schema (IndexError: string index out of range)'
    """

    def __init__(self, reader_schema: str, registry_url: str | None = None,
                 timeout_s: float = 10.0, part: str = "value", outage_budget_s: float = 0.0,
                 decode_timeout_s: float = DECODE_TIMEOUT_S) -> None:
        self.reader_schema = reader_schema
        self.registry_url = registry_url
        self.timeout_s = timeout_s
        self.part = part
        self.outage_budget_s = outage_budget_s
        self.decode_timeout_s = decode_timeout_s
        self._parsed: Any = None
        self._bounds: AvroBounds | None = None
        self._writers: dict[int, tuple[Any, AvroBounds | None]] = {}
        self._registry: SchemaRegistryClient | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"reader_schema": self.reader_schema, "registry_url": self.registry_url,
                "timeout_s": self.timeout_s, "part": self.part, "outage_budget_s": self.outage_budget_s,
                "decode_timeout_s": self.decode_timeout_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    def decode(self, raw: Sequence[bytes | None], arrow_type: pa.DataType,
               errors: list[str | None]) -> pa.Array:
        """``raw`` as an Arrow array of ``arrow_type``; a value that cannot be read becomes null,
        its reason put at its index in ``errors``. A registry that does not answer raises
        :class:`~trident_spark.errors.SchemaRegistryError` (the batch fails, and is replayed)."""
        read = fastavro_module().schemaless_reader
        if self._parsed is None:
            self._parsed = parse_avro(self.reader_schema, self.part)
            self._bounds = _needed(avro_bounds(self.reader_schema))
        values: list[Any] = []
        last = time.perf_counter()  # one clock reading per record: the end of one is the next one's start
        for i, item in enumerate(raw):
            if item is None:
                values.append(None)
                continue
            try:
                values.append(self._read_one(read, item))
            except SchemaRegistryError:
                raise  # the registry does not answer: the batch fails (after the outage budget)
            except _MalformedError as exc:
                values.append(None)
                errors[i] = errors[i] or str(exc)
            except Exception as exc:  # RecursionError, MemoryError's kin...: one record, never the stream
                values.append(None)
                errors[i] = errors[i] or f"{self.part} cannot be read as Avro ({type(exc).__name__}: {exc})"
            now = time.perf_counter()
            if now - last > self.decode_timeout_s:
                values[-1] = None
                errors[i] = errors[i] or too_slow(now - last, self.decode_timeout_s, self.part)
            last = now
        return to_arrow(values, arrow_type, errors, self.part)

    def _read_one(self, read: Callable[..., Any], item: bytes) -> Any:
        start, writer, reader, bounds = 0, self._parsed, None, self._bounds
        if self.registry_url is not None:
            try:
                schema_id, start = split_wire_format(item)
            except NotWireFormatError as exc:
                raise _MalformedError(f"{self.part} is {exc}") from None
            writer, bounds = self._writer(schema_id)
            reader = None if writer is self._parsed else self._parsed  # no resolution to do
        if bounds is not None:
            try:
                check_record(bounds, item, start)  # before fastavro, which cannot be interrupted
            except AvroBoundsError as exc:
                raise _MalformedError(f"{self.part} is refused before reading it as Avro of {self._what()}: "
                                      f"{exc}") from None
        buffer = io.BytesIO(item)
        buffer.seek(start)
        try:
            record = read(buffer, writer, reader)
        except Exception as exc:  # EOFError, IndexError, UnicodeDecodeError, SchemaResolutionError...
            raise _MalformedError(
                f"{self.part} is not Avro of {self._what()} ({type(exc).__name__}: {exc})") from None
        left = len(item) - buffer.tell()
        if left:
            raise _MalformedError(
                f"{self.part} is not Avro of {self._what()} ({left} bytes left after the record)")
        return record

    def _what(self) -> str:
        return "its registered schema" if self.registry_url is not None else f"{self.part}_schema"

    def _writer(self, schema_id: int) -> tuple[Any, AvroBounds | None]:
        """The parsed writer schema of ``schema_id`` and its bounds (fetched and analysed once)."""
        found = self._writers.get(schema_id)
        if found is not None:
            return found
        if self._registry is None:
            assert self.registry_url is not None
            self._registry = SchemaRegistryClient(self.registry_url, self.timeout_s,
                                                  outage_budget_s=self.outage_budget_s)
        try:
            registered = self._registry.schema(schema_id)
        except UnknownSchemaError as exc:
            raise _MalformedError(f"{self.part} names schema id {schema_id}, which the registry does not "
                                  f"hold ({exc})") from None
        if registered.schema_type != "AVRO":
            raise _MalformedError(
                f"{self.part} names schema id {schema_id}, a {registered.schema_type} schema, not Avro")
        try:
            same = json.loads(registered.schema) == json.loads(self.reader_schema)
            parsed = self._parsed if same else parse_avro(registered.schema)
            bounds = _needed(avro_bounds(registered.schema))
        except (InvalidArgumentError, AvroBoundsError, ValueError, RecursionError) as exc:
            raise _MalformedError(
                f"{self.part} names schema id {schema_id}, which cannot be read ({exc})") from None
        self._writers[schema_id] = (parsed, bounds)
        return parsed, bounds


def _needed(bounds: AvroBounds) -> AvroBounds | None:
    """``bounds`` when records must be checked against them (None: fastavro reads them directly)."""
    return bounds if bounds.walk or bounds.refused is not None else None


class _MalformedError(TridentSparkError):
    """One value cannot be read: the reason, as the record's error."""


__all__ = ["AvroDecoder", "avro_schema_text", "avro_spark_type", "fastavro_module", "parse_avro"]
