"""Decoding record keys and values into Arrow columns: bytes, UTF-8 text, JSON, Avro or Protobuf.

The whole column is decoded in Arrow's C++ code at once; only when that fails
does a per-record pass find which records are malformed, so good data stays
on the fast path and bad records are named precisely.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

#: Seconds one record may take to decode (``KafkaSpoutConfig.decode_timeout_s``'s default).
DECODE_TIMEOUT_S = 10.0


def too_slow(took: float, timeout_s: float, part: str = "value") -> str | None:
    """The error of a record that took ``took`` seconds to decode, longer than ``timeout_s``; None
    when it did not.

    Checked between records: a decoder in C holding the GIL cannot be interrupted, so this does
    not end a long decode (the pre-checks of :mod:`trident_spark.spout.formats.avro_bounds` prevent the
    endless ones); it keeps a record that took that long out of the stream, as malformed.

    Examples
    --------
    >>> too_slow(0.002, 10.0) is None
    True
    >>> too_slow(12.04, 10.0)
    'value took 12.0 s to decode, more than the 10 s a record may take (KafkaSpoutConfig.decode_timeout_s)'
    """
    if took <= timeout_s:
        return None
    return (f"{part} took {took:.1f} s to decode, more than the {timeout_s:g} s a record may take "
            "(KafkaSpoutConfig.decode_timeout_s)")


def decode_column(raw: Sequence[bytes | None], arrow_type: pa.DataType, what: str,
                  errors: list[str | None], decode_timeout_s: float = DECODE_TIMEOUT_S) -> pa.Array:
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
        return _decode_json(raw, arrow_type, errors, decode_timeout_s)
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
                 errors: list[str | None], decode_timeout_s: float) -> pa.Array:
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
    return _decode_json_slowly(raw, struct_type, errors, decode_timeout_s)


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
                        errors: list[str | None], decode_timeout_s: float) -> pa.Array:
    out: list[dict[str, object] | None] = []
    last = time.perf_counter()  # one clock reading per record: the end of one is the next one's start
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
        except RecursionError:  # JSON nested deeper than Python's recursion limit: one bad record
            out.append(None)
            errors[i] = errors[i] or ("value is not JSON matching value_schema (nested deeper than "
                                      "Python's JSON reader goes: RecursionError)")
        except Exception as exc:  # ValueError, UnicodeDecodeError, Arrow's errors...: one bad record
            out.append(None)
            errors[i] = errors[i] or f"value is not JSON matching value_schema ({exc})"
        now = time.perf_counter()
        if (slow := too_slow(now - last, decode_timeout_s)) is not None:
            out[-1] = None
            errors[i] = errors[i] or slow
        last = now
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
    except Exception:  # ArrowInvalid, ArrowTypeError, OverflowError, RecursionError...: find which
        pass
    for i, value in enumerate(values):
        if value is None:
            continue
        try:
            pa.array([value], arrow_type)
        except Exception as exc:
            values[i] = None
            errors[i] = errors[i] or f"{part} does not fit the stream's {part} type ({exc})"
    return pa.array(values, arrow_type)
