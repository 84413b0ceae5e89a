"""Untyped values in Spark columns: any Python value as one tagged binary, and back.

A field declared without a type (``"n"`` rather than ``"n:bigint"``) carries any Python
value, as Trident's ``Values`` do, and its values may change type from tuple to tuple.
Spark sees such a field as a ``binary`` column marked with :data:`OBJECT_METADATA` (see
``executor.object_columns``); each value is one byte string, a tag then the value:

=========================  ===========================  ====================================
Python value               encoded                      note
=========================  ===========================  ====================================
``None``                   null                         so ``FilterNull`` stays Spark SQL
``str``                    ``b"s"`` + UTF-8
``bytes``                  ``b"y"`` + the bytes
``int``                    ``b"1"`` + decimal text      ``b"142"`` for ``42``
``float``                  ``b"2"`` + canonical text    integral floats as ints: ``b"22"``
``bool``                   ``b"3"`` + ``1`` or ``0``
anything else              ``b"p"`` + cloudpickle       lists, dicts, tuples, datetimes,
                                                        user objects
=========================  ===========================  ====================================

Numbers share one canonical text, so the *group key* of a number (:func:`group_key`:
tag ``1`` and the text) is the same for ``1``, ``1.0`` and ``True``, and Spark groups,
partitions and joins them together, as a Python dict would; ``"1"`` and ``1`` stay apart.
The tag keeps each value's own type, so ``1.0`` comes back as ``1.0``.

Strings, the common case, are tagged and untagged with Arrow compute over whole columns,
without a Python call per value.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from trident_spark.errors import TridentSparkError

#: The type name of a field declared without a type (``Fields("n").types["n"]``).
OBJECT = "object"

#: The Spark column metadata that marks an untyped field's column (a ``binary`` column).
OBJECT_METADATA: dict[str, str] = {"trident_spark": OBJECT}

STR, BYTES, INT, FLOAT, BOOL, PICKLED = b"s", b"y", b"1", b"2", b"3", b"p"
_STR, _BYTES, _INT, _FLOAT, _BOOL, _PICKLED = (t[0] for t in (STR, BYTES, INT, FLOAT, BOOL, PICKLED))
_NONE_TYPE = type(None)

_MAX_STOP = 2**31 - 1  # binary_slice without a stop fails (Arrow 26): slice to the end this way

#: Shown values are cut to this many characters in error messages.
MAX_SHOWN = 200


class UncarriableValueError(TridentSparkError, ValueError):
    """A value that cannot travel in an untyped field (it does not pickle).

    The message names the value and what to do; callers add the operator and the field.
    """


def _number_text(value: float) -> bytes:
    """Canonical text of a float: an integral one as its int (``2.0`` -> ``2``), else ``repr``."""
    if math.isfinite(value) and value == int(value):
        return str(int(value)).encode()
    return repr(value).encode()


def encode_value(value: Any) -> bytes | None:
    """One Python value as its tagged bytes (None stays None).

    Examples
    --------
    >>> encode_value("cat"), encode_value(42), encode_value(2.0), encode_value(True)
    (b'scat', b'142', b'22', b'31')
    >>> decode_value(encode_value({"a": [1, 2]}))
    {'a': [1, 2]}
    """
    kind = type(value)
    if kind is str:
        return STR + str.encode(value, "utf-8", "surrogatepass")
    if value is None:
        return None
    if kind is bool:
        return BOOL + (b"1" if value else b"0")
    if kind is int:
        return INT + str(value).encode()
    if kind is float:
        return FLOAT + _number_text(value)
    if kind is bytes:
        return BYTES + bytes(value)
    return PICKLED + _pickled(value)


def _pickled(value: Any) -> bytes:
    from pyspark import cloudpickle

    try:
        return bytes(cloudpickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))  # type: ignore[no-untyped-call]
    except Exception as exc:
        shown = repr(value)
        if len(shown) > MAX_SHOWN:
            shown = shown[:MAX_SHOWN] + "...(truncated)"
        raise UncarriableValueError(
            f"the value {shown} ({type(value).__name__}) cannot be carried: an untyped field carries "
            f"values that pickle, and this one does not ({type(exc).__name__}: {exc}); emit something "
            f"that pickles (e.g. its data as a dict or str), or give the class __getstate__") from None


def decode_value(data: bytes | None) -> Any:
    """The Python value :func:`encode_value` made ``data`` from.

    Examples
    --------
    >>> [decode_value(encode_value(v)) for v in ("1", 1, 1.0, True, b"x", None, (1, "a"))]
    ['1', 1, 1.0, True, b'x', None, (1, 'a')]
    """
    if data is None:
        return None
    tag = data[0]
    if tag == _STR:
        return data[1:].decode("utf-8", "surrogatepass")
    if tag == _INT:
        return int(data[1:])
    if tag == _FLOAT:
        return float(data[1:])
    if tag == _BOOL:
        return data[1:] == b"1"
    if tag == _BYTES:
        return bytes(data[1:])
    if tag == _PICKLED:
        return pickle.loads(data[1:])
    raise ValueError(f"not an untyped field's value: {bytes(data[:40])!r} (tag {chr(tag)!r})")


def group_key(data: bytes | None) -> bytes | None:
    """The bytes equal values share: numbers lose their type tag (``1``, ``1.0``, ``True``).

    Examples
    --------
    >>> group_key(encode_value(1)) == group_key(encode_value(1.0)) == group_key(encode_value(True))
    True
    >>> group_key(encode_value("1")) == group_key(encode_value(1))
    False
    """
    if data is None or data[:1] not in (INT, FLOAT, BOOL):
        return data
    return INT + data[1:]


def hashable(value: Any) -> Any:
    """``value`` as a dict key with Python's equality: lists as tuples, dicts and sets as
    frozensets (so group values that are lists or dicts group as equal values do).

    Examples
    --------
    >>> hashable([1, {"a": [2]}]) == hashable([1.0, {"a": [2]}])
    True
    """
    if isinstance(value, list | tuple):
        return (type(value) is list, tuple(hashable(v) for v in value))
    if isinstance(value, dict):
        return ("dict", frozenset((k, hashable(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return frozenset(hashable(v) for v in value)
    return value


def encode_column(values: Sequence[Any]) -> pa.Array:
    """Python values as one Arrow ``binary`` column of tagged values.

    All strings (the common case) or all ints are tagged with Arrow compute; a mix goes
    value by value. Raises :class:`UncarriableValueError` for a value that does not pickle.

    Examples
    --------
    >>> decode_column(encode_column(["a", None, 1, 2.5, [1]]))
    ['a', None, 1, 2.5, [1]]
    """
    inferred = _inferred(values)
    if inferred is not None:
        if pa.types.is_string(inferred.type):
            return _prefixed(inferred, "s")
        if pa.types.is_int64(inferred.type):
            return _prefixed(inferred.cast(pa.string()), "1")
        if pa.types.is_null(inferred.type):
            return pa.nulls(len(values), pa.binary())
    return pa.array([encode_value(v) for v in values], pa.binary())


def _inferred(values: Sequence[Any]) -> pa.Array | None:
    try:
        return pa.array(values, from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError):
        return None


def _prefixed(strings: pa.Array, tag: str) -> pa.Array:
    joined = pc.binary_join_element_wise(pa.scalar(tag, pa.string()), strings, "")
    return joined.cast(pa.binary())


def decode_column(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """An Arrow column of tagged values as Python values (all strings untagged at once).

    Examples
    --------
    >>> decode_column(pa.array([b"scat", b"142", None], pa.binary()))
    ['cat', 42, None]
    """
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(array)
    if array.null_count == n:
        return [None] * n
    tags = pc.binary_slice(array, 0, 1)
    for tag, kind in ((STR, pa.string()), (INT, pa.int64())):
        if pc.all(pc.equal(tags, pa.scalar(tag, pa.binary()))).as_py():
            try:
                untagged = pc.binary_slice(array, 1, _MAX_STOP).cast(pa.string())
                return list(untagged.cast(kind).to_pylist() if kind != pa.string() else untagged.to_pylist())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # an int beyond int64
                break
    return [None if data is None else decode_value(data) for data in array.to_pylist()]


def decode_arrow(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """An Arrow column of tagged values as an Arrow array of the one type its values have
    (for operations that take whole Arrow batches); strings and ints are untagged without a
    Python call. Raises ``ValueError`` when the values are of several Python types (``1`` and
    ``2.5``: one array would turn the int into a float) or of one Arrow cannot hold.

    Examples
    --------
    >>> decode_arrow(encode_column(["cat", None, "dog"])).type
    DataType(string)
    >>> decode_arrow(encode_column([1, 2.5]))
    Traceback (most recent call last):
      ...
    ValueError: its values mix types (float, int), which no one Arrow type holds
    """
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if array.null_count == len(array):
        return pa.nulls(len(array))
    tags = pc.binary_slice(array, 0, 1)
    for tag, kind in ((STR, pa.string()), (INT, pa.int64())):
        if pc.all(pc.equal(tags, pa.scalar(tag, pa.binary()))).as_py():
            try:
                untagged = pc.binary_slice(array, 1, _MAX_STOP).cast(pa.string())
                return untagged if kind == pa.string() else untagged.cast(kind)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # an int beyond int64
                break
    return one_type_array(decode_column(array))


def one_type_array(values: Sequence[Any]) -> pa.Array:
    """Python values of one type (None aside) as one Arrow array, their type kept; a
    ``ValueError`` names the types when there are several, or the one Arrow cannot hold.

    Examples
    --------
    >>> one_type_array([[1], None, [2, 3]]).type
    ListType(list<item: int64>)
    >>> one_type_array([True, 1])
    Traceback (most recent call last):
      ...
    ValueError: its values mix types (bool, int), which no one Arrow type holds
    """
    types = set(map(type, values))  # at C speed: this runs over every value a stage emits
    types.discard(_NONE_TYPE)
    kinds = sorted({t.__name__ for t in types})
    if len(kinds) > 1:
        raise ValueError(f"its values mix types ({', '.join(kinds)}), which no one Arrow type holds")
    try:
        if types == {str}:  # the common case (words): no type to infer
            return pa.array(values, pa.string())
        return pa.array(values, from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, TypeError) as exc:
        raise ValueError(f"its values ({', '.join(kinds)}) have no Arrow type ({type(exc).__name__}: "
                         f"{exc})") from None


def encode_arrow(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """An Arrow array as an untyped field's column of tagged values: strings and integers
    tagged with Arrow compute, anything else value by value (:func:`encode_column`).

    Examples
    --------
    >>> decode_column(encode_arrow(pa.array(["cat", None])))
    ['cat', None]
    >>> decode_column(encode_arrow(pa.array([3, 4], pa.int32())))
    [3, 4]
    """
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    type_ = array.type
    if pa.types.is_null(type_):
        return pa.nulls(len(array), pa.binary())
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return _prefixed(array.cast(pa.string()), "s")
    if pa.types.is_integer(type_):
        return _prefixed(array.cast(pa.int64()).cast(pa.string()), "1")
    return encode_column(array.to_pylist())
