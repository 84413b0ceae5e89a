"""How stored values become bytes: JSON in Storm's Redis state formats by default, pluggable.

Formats (the same as Storm's ``JSON*Serializer``, so states written by Storm's
Redis state read back here and the other way round):

==================  ======================  ======================================
kind                Python value            stored JSON
==================  ======================  ======================================
non-transactional   ``val``                 ``val``
transactional       ``TransactionalValue``  ``[txid, val]``
opaque              ``OpaqueValue``         ``[txid, curr, prev]``
==================  ======================  ======================================

A value of any Python type can be stored: a value JSON holds (``None``,
``bool``, ``int``, finite ``float``, ``str``, ``list``, ``dict`` with ``str``
keys) is written as itself, any other value (a tuple, bytes, a datetime, a
Decimal, a set, a dict with other keys, a user object) as a tagged JSON
object such as ``{"~tuple": [1, 2]}`` or ``{"~py": "<base64 pickle>"}``
(``pyvalues.py``), so the same value, of the same type, comes back. A value
that is not JSON and cannot be pickled raises :class:`UnstorableValueError`.
A serializer given ``default`` / ``object_hook`` hooks uses those instead of
the tags, as ``json.dumps`` / ``json.loads`` do.

A serializer is any picklable object with ``serialize(value) -> bytes`` and
``deserialize(data) -> value`` (it travels to Spark executors with the state's
settings). ``deserialize`` raises :class:`StateTypeMismatchError` when the data is
readable but of another kind (an opaque reader finding ``[txid, val]``) and any
other exception when it cannot read the data; :func:`deserialize_stored` turns
those into errors that name the state and the key, and :func:`serialize_stored`
does the same for a value that cannot be written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from .errors import StateError, StateTypeMismatchError, UnreadableValueError, UnstorableValueError, type_name
from .pyvalues import decode_object, to_json
from .values import OpaqueValue, StateType, TransactionalValue


@runtime_checkable
class Serializer(Protocol):
    """Turns one stored value into bytes and back. Must be picklable.

    Examples
    --------
    >>> isinstance(JSONOpaqueSerializer(), Serializer)
    True
    """

    def serialize(self, value: Any) -> bytes:
        """Bytes for ``value`` (a val, TransactionalValue or OpaqueValue, by the state's kind)."""
        ...

    def deserialize(self, data: bytes) -> Any:
        """The value ``serialize`` wrote; raise on data it cannot read."""
        ...


# One encoder and decoder for every value (json.dumps/loads with options build new ones per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_DECODER = json.JSONDecoder(object_hook=decode_object)


class _JSONSerializer:
    """Shared JSON plumbing: compact UTF-8; tagged values for types JSON lacks, or the caller's hooks."""

    def __init__(self, default: Callable[[Any], Any] | None = None,
                 object_hook: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.default = default
        self.object_hook = object_hook

    def _value(self, value: Any) -> Any:
        """One value (val, curr or prev) as JSON: tagged, unless the caller gave hooks."""
        if self.default is not None or self.object_hook is not None:
            return value
        return to_json(value)

    def _dumps(self, obj: Any) -> bytes:
        if self.default is None:
            return _ENCODER.encode(obj).encode("utf-8")
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False,
                          default=self.default).encode("utf-8")

    def _loads(self, data: bytes) -> Any:
        text = bytes(data).decode("utf-8") if isinstance(data, bytes | bytearray | memoryview) else data
        if self.default is None and self.object_hook is None:
            return _DECODER.decode(text)
        return json.loads(text, object_hook=self.object_hook)

    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and isinstance(other, _JSONSerializer)
                and (other.default, other.object_hook) == (self.default, self.object_hook))

    def __hash__(self) -> int:
        return hash((type(self), self.default, self.object_hook))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _int_or_null(value: Any) -> str | None:
    """The JSON text of an ``int`` or None, else None: the common count's value needs no
    encoder (``json`` writes exactly ``str(int)`` and ``null``)."""
    if type(value) is int:
        return str(value)
    return "null" if value is None else None


def _is_txid(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _looks_like(decoded: Any) -> str:
    shown = json.dumps(decoded, default=repr)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    if isinstance(decoded, list) and decoded and _is_txid(decoded[0]):
        if len(decoded) == 2:
            return f"{shown}, which looks like a transactional value [txid, val]"
        if len(decoded) == 3:
            return f"{shown}, which looks like an opaque value [txid, curr, prev]"
    return f"{shown}, which looks like a non-transactional value"


class JSONNonTransactionalSerializer(_JSONSerializer):
    """Non-transactional values as plain JSON ``val``.

    Any JSON is a valid non-transactional value, so this serializer cannot tell
    that a state was written as another kind. Values JSON lacks are tagged
    (see the module docstring).

    Parameters
    ----------
    default : callable, optional
        ``json.dumps`` ``default`` hook for values JSON cannot hold (module-level, picklable).
    object_hook : callable, optional
        ``json.loads`` ``object_hook`` to rebuild them.

    Examples
    --------
    >>> s = JSONNonTransactionalSerializer()
    >>> s.serialize({"n": 3}), s.deserialize(b'{"n":3}')
    (b'{"n":3}', {'n': 3})
    >>> s.serialize((1, 2)), s.deserialize(s.serialize((1, 2)))
    (b'{"~tuple":[1,2]}', (1, 2))
    """

    def serialize(self, value: Any) -> bytes:
        text = _int_or_null(value)
        if text is not None:
            return text.encode("ascii")
        return self._dumps(self._value(value))

    def deserialize(self, data: bytes) -> Any:
        return self._loads(data)


class JSONTransactionalSerializer(_JSONSerializer):
    """Transactional values as JSON ``[txid, val]``.

    Parameters
    ----------
    default, object_hook : callable, optional
        As for :class:`JSONNonTransactionalSerializer`, applied to ``val``.

    Examples
    --------
    >>> s = JSONTransactionalSerializer()
    >>> s.serialize(TransactionalValue(3, 12)), s.deserialize(b"[3,12]")
    (b'[3,12]', TransactionalValue(txid=3, val=12))
    """

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, TransactionalValue):
            raise TypeError(f"a transactional state stores TransactionalValue, got {value!r}")
        val = _int_or_null(value.val)
        if type(value.txid) is int and val is not None:
            return f"[{value.txid},{val}]".encode("ascii")
        return self._dumps([value.txid, self._value(value.val)])

    def deserialize(self, data: bytes) -> Any:
        decoded = self._loads(data)
        if isinstance(decoded, list) and len(decoded) == 2 and _is_txid(decoded[0]):
            return TransactionalValue(decoded[0], decoded[1])
        raise StateTypeMismatchError("", None, expected="transactional", found=_looks_like(decoded))


class JSONOpaqueSerializer(_JSONSerializer):
    """Opaque values as JSON ``[txid, curr, prev]``.

    Parameters
    ----------
    default, object_hook : callable, optional
        As for :class:`JSONNonTransactionalSerializer`, applied to ``curr`` and ``prev``.

    Examples
    --------
    >>> s = JSONOpaqueSerializer()
    >>> s.serialize(OpaqueValue(3, 12, 10)), s.deserialize(b"[3,12,10]")
    (b'[3,12,10]', OpaqueValue(txid=3, curr=12, prev=10))
    """

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, OpaqueValue):
            raise TypeError(f"an opaque state stores OpaqueValue, got {value!r}")
        curr, prev = _int_or_null(value.curr), _int_or_null(value.prev)
        if type(value.txid) is int and curr is not None and prev is not None:
            return f"[{value.txid},{curr},{prev}]".encode("ascii")
        return self._dumps([value.txid, self._value(value.curr), self._value(value.prev)])

    def deserialize(self, data: bytes) -> Any:
        decoded = self._loads(data)
        if isinstance(decoded, list) and len(decoded) == 3 and _is_txid(decoded[0]):
            return OpaqueValue(decoded[0], decoded[1], decoded[2])
        raise StateTypeMismatchError("", None, expected="opaque", found=_looks_like(decoded))


def default_serializer(state_type: StateType) -> Serializer:
    """The JSON serializer for a kind of state (Storm's Redis state format).

    Examples
    --------
    >>> default_serializer(StateType.OPAQUE)
    JSONOpaqueSerializer()
    """
    serializers: dict[StateType, type[_JSONSerializer]] = {
        StateType.NON_TRANSACTIONAL: JSONNonTransactionalSerializer,
        StateType.TRANSACTIONAL: JSONTransactionalSerializer,
        StateType.OPAQUE: JSONOpaqueSerializer,
    }
    serializer: Serializer = serializers[state_type]()  # type: ignore[assignment]
    return serializer


def _show_bytes(data: Any) -> str:
    raw = bytes(data) if isinstance(data, bytes | bytearray | memoryview) else str(data).encode()
    return repr(raw[:60]) + ("..." if len(raw) > 60 else "")


def serialize_stored(serializer: Serializer, value: Any, *, key: Sequence[Any], address: str) -> bytes:
    """Write one value, turning a serializer's failure into an error naming the key and the state.

    Parameters
    ----------
    serializer : Serializer
        The state's serializer.
    value : Any
        The value object (a val, TransactionalValue or OpaqueValue).
    key : Sequence
        The key's group values (for the message).
    address : str
        The state's address (for the message).

    Returns
    -------
    bytes
        What the serializer made of ``value``.

    Raises
    ------
    UnstorableValueError
        The value cannot be written (not JSON and not picklable, or refused by
        a custom serializer).

    Examples
    --------
    >>> serialize_stored(JSONOpaqueSerializer(), OpaqueValue(1, (2, 3)), key=["cat"], address="memory://wc")
    b'[1,{"~tuple":[2,3]},null]'
    >>> import threading
    >>> try:
    ...     serialize_stored(JSONNonTransactionalSerializer(), [threading.Lock()], key=["cat"],
    ...                      address="memory://wc")
    ... except UnstorableValueError as exc:
    ...     print(str(exc).split(";")[0])
    cannot store the value of key ['cat'] in memory://wc: a _thread.lock value cannot be pickled \
(TypeError: cannot pickle '_thread.lock' object)
    """
    try:
        return serializer.serialize(value)
    except UnstorableValueError as exc:
        raise UnstorableValueError(address, key, exc.value_type, exc.reason) from None
    except StateError:
        raise
    except Exception as exc:
        held = getattr(value, "curr", getattr(value, "val", value))
        raise UnstorableValueError(address, key, type_name(held), f"{type(exc).__name__}: {exc}") from exc


def deserialize_stored(serializer: Serializer, data: bytes, *, key: Sequence[Any], address: str) -> Any:
    """Read one stored value, turning a serializer's failure into an error naming the key.

    Parameters
    ----------
    serializer : Serializer
        The state's serializer.
    data : bytes
        The stored bytes.
    key : Sequence
        The key's group values (for the message).
    address : str
        The state's address (for the message).

    Returns
    -------
    Any
        The deserialized value.

    Raises
    ------
    StateTypeMismatchError
        The data is of another kind of state.
    UnreadableValueError
        The serializer cannot read the data.

    Examples
    --------
    >>> deserialize_stored(JSONOpaqueSerializer(), b"[1,5,null]", key=["cat"], address="memory://wc")
    OpaqueValue(txid=1, curr=5, prev=None)
    """
    try:
        return serializer.deserialize(data)
    except StateTypeMismatchError as exc:
        raise StateTypeMismatchError(address, key, expected=exc.expected, found=exc.found) from exc
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc} (stored bytes: {_show_bytes(data)})"
        raise UnreadableValueError(address, key, reason) from exc


__all__ = [
    "JSONNonTransactionalSerializer",
    "JSONOpaqueSerializer",
    "JSONTransactionalSerializer",
    "Serializer",
    "default_serializer",
    "deserialize_stored",
    "serialize_stored",
]
