"""Decoding record keys and values into Arrow columns: bytes, UTF-8 text, JSON, Avro or Protobuf.

The whole column is decoded in Arrow's C++ code at once; only when that fails
does a per-record pass find which records are malformed, so good data stays
on the fast path and bad records are named precisely.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json


def decode_column(raw: Sequence[bytes | None], arrow_type: pa.DataType, what: str,
                  errors: list[str | None]) -> pa.Array:
    """Decode ``raw`` into ``arrow_type``; note per-record problems in ``errors``.

    A record that cannot be decoded becomes null and its error text is put at its
    index in ``errors`` (the caller decides to fail or skip). ``what`` is
    ``"key"``, ``"str"``, ``"bytes"`` or ``"json"`` and only shapes messages.

    Examples
    --------
    >>> errs = [None, None]
    >>> decode_column([b"hi", b"\\xff"], pa.string(), "str", errs).to_pylist()
    ['hi', None]
    >>> errs[1]
    'value is not valid UTF-8'
    """
    if raw.count(None) == len(raw):  # e.g. keyless records: nothing to decode
        return pa.nulls(len(raw), arrow_type)
    binary = pa.array(raw, pa.binary())
    if pa.types.is_binary(arrow_type):
        return binary
    if pa.types.is_string(arrow_type):
        try:
            return binary.cast(pa.string())
        except pa.ArrowInvalid:
            return _decode_text_slowly(raw, what, errors)
    if pa.types.is_struct(arrow_type):
        return _decode_json(raw, arrow_type, errors)
    raise TypeError(f"no decoder for Arrow type {arrow_type}")


def _decode_text_slowly(raw: Sequence[bytes | None], what: str,
                        errors: list[str | None]) -> pa.Array:
    label = "key" if what == "key" else "value"
    out: list[str | None] = []
    for i, item in enumerate(raw):
        if item is None:
            out.append(None)
            continue
        try:
            out.append(item.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(None)
            errors[i] = errors[i] or f"{label} is not valid UTF-8"
    return pa.array(out, pa.string())


def _decode_json(raw: Sequence[bytes | None], struct_type: pa.StructType,
                 errors: list[str | None]) -> pa.Array:
    present = [item for item in raw if item is not None]
    if present and not any(b"\n" in item for item in present):
        try:
            table = pa_json.read_json(
                io.BytesIO(b"\n".join(present)),
                parse_options=pa_json.ParseOptions(explicit_schema=pa.schema(list(struct_type)),
                                                   unexpected_field_behavior="ignore"),
            )
            if table.num_rows == len(present):
                parsed = table.to_struct_array().combine_chunks()
                parsed.validate(full=True)  # Arrow's JSON reader does not check strings are UTF-8
                if len(present) == len(raw):
                    return parsed
                return _reinsert_nulls(raw, parsed, struct_type)
        except pa.ArrowInvalid:
            pass
    return _decode_json_slowly(raw, struct_type, errors)


def _reinsert_nulls(raw: Sequence[bytes | None], parsed: pa.Array, struct_type: pa.DataType) -> pa.Array:
    indices: list[int | None] = []
    cursor = 0
    for item in raw:
        if item is None:
            indices.append(None)
        else:
            indices.append(cursor)
            cursor += 1
    return parsed.take(pa.array(indices, pa.int64())).cast(struct_type)


def _decode_json_slowly(raw: Sequence[bytes | None], struct_type: pa.StructType,
                        errors: list[str | None]) -> pa.Array:
    out: list[dict[str, object] | None] = []
    for i, item in enumerate(raw):
        if item is None:
            out.append(None)
            continue
        try:
            obj = json.loads(item)
            if not isinstance(obj, dict):
                raise ValueError(f"a JSON object was expected, got {type(obj).__name__}")
            pa.array([obj], struct_type)  # checks the fields' types against value_schema
            out.append(obj)
        except (ValueError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            out.append(None)
            errors[i] = errors[i] or f"value is not JSON matching value_schema ({exc})"
    return pa.array(out, struct_type)


def to_arrow(values: list[Any], arrow_type: pa.DataType, errors: list[str | None],
             part: str = "value") -> pa.Array:
    """Decoded values (Python objects) as one Arrow array; a value Arrow refuses (a long too large
    for a Spark INT given by a registry schema...) becomes null, its reason put in ``errors``.

    Examples
    --------
    >>> errors = [None, None]
    >>> to_arrow([{"n": 1}, {"n": 2**40}], pa.struct([("n", pa.int32())]), errors).to_pylist()
    [{'n': 1}, None]
    >>> errors[1].startswith("value does not fit the stream's value type")
    True
    """
    try:
        return pa.array(values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        pass
    for i, value in enumerate(values):
        if value is None:
            continue
        try:
            pa.array([value], arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError) as exc:
            values[i] = None
            errors[i] = errors[i] or f"{part} does not fit the stream's {part} type ({exc})"
    return pa.array(values, arrow_type)
