"""Compound keys (lists of group values) encoded to one collision-free string.

The encoded key is the Redis key suffix, the Elasticsearch ``_id``, the SQLite
primary key and the cache's dictionary key, so a key reads the same in every
store. Group values that are equal under Python's ``==`` encode alike, as a
Python dict would count them: ``1``, ``1.0`` and ``True`` are one key
(``~i1``), ``0``, ``0.0``, ``-0.0`` and ``False`` another (``~i0``), while
``"1"`` (``1``) and ``1`` (``~i1``) are two. The rules, which make the
encoding injective on classes of equal values:

* components are joined with ``|``;
* a string is written as itself with ``%``, ``|`` and control characters
  percent-escaped, and a leading ``~`` escaped as ``%7E``; the empty string is
  ``~e``;
* every other value is ``~`` + a type letter + its text, and no type's text
  contains ``|``: ``~n`` None; a number by its canonical form
  (``pyvalues.canonical_number``): ``~i42`` an integral number (int, bool,
  ``42.0``, ``Decimal("42.00")``), ``~d1.5`` any other float (``~dinf``,
  ``~d-inf``, ``~dnan``), ``~D0.1`` a decimal no float holds exactly,
  ``~r1/3`` any other fraction; ``~x00ff`` bytes (and an equal bytearray);
  ``~a2024-05-01`` dates; ``~t2024-05-01T10:00:00`` datetimes (aware ones in
  UTC, since equal instants are equal datetimes);
* a list, tuple, dict, set or frozenset is ``~j`` + its canonical JSON
  (``pyvalues.canonical_json``: numbers canonical as above, dict entries and
  set items sorted, tuples as ``{"~tuple": [...]}``, so ``[1, 2]`` and
  ``(1, 2)`` stay two keys as in Python; dumped with sorted keys, no spaces)
  percent-escaped like a string, e.g. ``~j[1,"a"]``; other objects cannot be
  group values of a state (:class:`~.errors.StateError` says what to do);
* the global key of ungrouped state (Trident's SnapshottableMap) is the empty
  key ``()``, written ``~global``: grouped keys have at least one component and
  no component starts with ``~g``, so it cannot collide with a group's key;
* the state's commit record (``commit_record.py``) lives under the reserved
  key :data:`COMMIT_RECORD_KEY`, written ``~commit``: no group key encodes to
  a string starting with ``~c``, and scans leave it out (:func:`is_reserved`);
* an encoding longer than ``max_bytes`` UTF-8 bytes (Elasticsearch's ``_id``
  limit is 512) becomes ``~h`` + the SHA-256 of the full encoding + ``|`` + as
  much of the readable encoding as fits. Readable encodings never start with
  ``~h``, so hashed and readable keys cannot collide either.

Decoding gives each class's representative: ``~i1`` is ``1`` whichever of
``1``, ``1.0`` or ``True`` was written. Keys written before numbers were
canonical (``~T`` / ``~F`` booleans, ``~d2.0`` integral floats) still decode.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import hashlib
import json
import math
import numbers
import re
from collections.abc import Sequence
from typing import Any

from .errors import StateConfigError, StateError
from .pyvalues import canonical_json, canonical_number, decode_object

#: The key of an ungrouped persistentAggregate's single value (Trident's SnapshottableMap).
GLOBAL_KEY: tuple[()] = ()

#: Elasticsearch's ``_id`` limit, the default for every backend so keys read alike everywhere.
MAX_KEY_BYTES = 512

_GLOBAL_ENCODED = "~global"
_COMMIT_ENCODED = "~commit"
_HASHED_TAG = "~h"
_SEPARATOR = "|"
_MIN_MAX_BYTES = 80
# ``%``, ``|`` and control characters are escaped; a leading ``~`` separately.
_NEEDS_ESCAPE = re.compile(r"[%|\x00-\x1f\x7f]")
_ESCAPED = re.compile(r"%([0-9A-F]{2})")


def _escape_text(text: str) -> str:
    if text.isalnum():  # letters and digits only: nothing to escape (the common word)
        return text
    if not text:
        return "~e"
    escaped = _NEEDS_ESCAPE.sub(lambda m: f"%{ord(m.group()):02X}", text)
    return "%7E" + escaped[1:] if escaped[0] == "~" else escaped


def _encode_number(value: Any) -> str:
    number = canonical_number(value)
    if isinstance(number, int):
        return f"~i{number}"
    if isinstance(number, float):
        return f"~d{number!r}" if math.isfinite(number) else f"~d{number}"
    if isinstance(number, decimal.Decimal):
        return f"~D{number}"
    return f"~r{number}"


def _encode_container(value: Any) -> str:
    try:
        tree = canonical_json(value)
    except (TypeError, ValueError) as exc:
        raise StateError(
            f"cannot use {value!r:.200} ({type(value).__name__}) in a state key: it holds {exc}, and the "
            f"values inside a list, tuple, dict or set group value must themselves be group values (str, "
            f"numbers, bool, None, bytes, date, datetime, or lists, tuples, dicts and sets of them); "
            f"convert it (e.g. str()) before grouping") from None
    text = json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "~j" + _NEEDS_ESCAPE.sub(lambda m: f"%{ord(m.group()):02X}", text)


def _encode_component(value: Any) -> str:
    # Order matters: datetime is a date subclass.
    if isinstance(value, str):
        return _escape_text(value)
    kind = type(value)
    if kind is int:                                       # the common cases first
        return f"~i{value}"
    if kind is float and math.isfinite(value) and not value.is_integer():
        return f"~d{value!r}"
    if value is None:
        return "~n"
    if isinstance(value, numbers.Real | decimal.Decimal):
        try:
            return _encode_number(value)
        except (ValueError, ArithmeticError) as exc:      # a signaling NaN
            raise StateError(f"cannot use {value!r} in a state key: {exc}") from None
    if isinstance(value, bytes | bytearray):
        return f"~x{bytes(value).hex()}"
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None and value.utcoffset() is not None:
            value = value.astimezone(datetime.UTC)
        return f"~t{value.isoformat()}"
    if isinstance(value, datetime.date):
        return f"~a{value.isoformat()}"
    if isinstance(value, list | tuple | dict | set | frozenset):
        return _encode_container(value)
    raise StateError(
        f"cannot use {value!r:.200} ({type(value).__name__}) in a state key: group values of a state must "
        f"be str, numbers (int, float, Decimal, Fraction), bool, None, bytes, date, datetime, or lists, "
        f"tuples, dicts and sets of them; convert it (e.g. str(), or a tuple of its fields) before grouping")


class ReservedKey(tuple[()]):
    """A key the state itself uses, never a group's: it encodes to its own tag.

    It has no group values (so stores that copy group values into their rows or
    documents copy none) and equals only a reserved key of the same tag.

    Examples
    --------
    >>> encode_key(COMMIT_RECORD_KEY), COMMIT_RECORD_KEY == GLOBAL_KEY
    ('~commit', False)
    """

    encoded: str

    def __new__(cls, encoded: str) -> ReservedKey:
        key = super().__new__(cls)
        key.encoded = encoded
        return key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReservedKey) and other.encoded == self.encoded

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((ReservedKey, self.encoded))

    def __repr__(self) -> str:
        return f"ReservedKey({self.encoded!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReservedKey, (self.encoded,))


#: Where a state keeps its commit record (``commit_record.py``), beside its keys.
COMMIT_RECORD_KEY = ReservedKey(_COMMIT_ENCODED)


def is_reserved(encoded: str) -> bool:
    """Whether an encoded key is one the state itself uses (a scan leaves it out).

    Examples
    --------
    >>> is_reserved("~commit"), is_reserved("cat"), is_reserved("~global")
    (True, False, False)
    """
    return encoded == _COMMIT_ENCODED


def check_key(key: Any) -> Sequence[Any]:
    """Check that ``key`` is a list (or tuple) of group values and return it.

    Parameters
    ----------
    key : Any
        What the caller passed as one key.

    Returns
    -------
    Sequence
        ``key`` itself.

    Raises
    ------
    StateError
        ``key`` is a string or not a sequence: the common slip of passing
        ``"cat"`` (or ``["cat"]`` as the key list) instead of ``[["cat"]]``.

    Examples
    --------
    >>> check_key(["cat"])
    ['cat']
    """
    kind = type(key)
    if kind is list or kind is tuple:  # the common case, without the ABC check below
        return key  # type: ignore[no-any-return]
    if isinstance(key, str | bytes | bytearray) or not isinstance(key, Sequence):
        raise StateError(
            f"a state key is a list of group values, e.g. ['cat'], got {key!r}; "
            f"keys are lists of keys: multiGet([['cat'], ['dog']])")
    return key


def encode_key(key: Sequence[Any], max_bytes: int = MAX_KEY_BYTES) -> str:
    """Encode a key (a list of group values) to a string no two keys share.

    Parameters
    ----------
    key : Sequence
        The group values, in group-field order; ``()`` (:data:`GLOBAL_KEY`) for
        ungrouped state.
    max_bytes : int, default 512
        Longest readable encoding in UTF-8 bytes; longer ones are hashed
        (deterministically) to fit in ``max_bytes``.

    Returns
    -------
    str
        The encoded key.

    Examples
    --------
    >>> encode_key(["cat"]), encode_key(["a|b", 1]), encode_key(["1"]), encode_key([None])
    ('cat', 'a%7Cb|~i1', '1', '~n')
    >>> encode_key([1]) == encode_key([1.0]) == encode_key([True]), encode_key([1.5, (1, "a|b")])
    (True, '~d1.5|~j{"~tuple":[1,"a%7Cb"]}')
    >>> encode_key(GLOBAL_KEY)
    '~global'
    >>> len(encode_key(["x" * 1000]).encode())
    512
    """
    if max_bytes < _MIN_MAX_BYTES:
        raise StateConfigError(f"max_bytes must be at least {_MIN_MAX_BYTES}, got {max_bytes}")
    check_key(key)
    if isinstance(key, ReservedKey):
        return key.encoded
    if len(key) == 0:
        return _GLOBAL_ENCODED
    if len(key) == 1:
        encoded = _encode_component(key[0])
    else:
        encoded = _SEPARATOR.join([_encode_component(value) for value in key])
    if len(encoded) * 4 <= max_bytes:  # a character is at most 4 UTF-8 bytes: it fits
        return encoded
    raw = encoded.encode("utf-8")
    if len(raw) <= max_bytes:
        return encoded
    digest = hashlib.sha256(raw).hexdigest()
    room = max_bytes - len(_HASHED_TAG) - len(digest) - len(_SEPARATOR)
    readable = raw[:room].decode("utf-8", errors="ignore")
    return f"{_HASHED_TAG}{digest}{_SEPARATOR}{readable}"


def encode_keys(keys: Sequence[Sequence[Any]], max_bytes: int = MAX_KEY_BYTES) -> list[str]:
    """Check and encode a batch of keys: ``[encode_key(key) for key in keys]``, faster.

    The one place a batch's keys are encoded: the map rules encode a call's keys once
    and hand the encodings down through the cache and the batching layer to the store
    (``VersionedBackingMap.multiGetEncoded`` / ``multiPutEncoded``). A key of one short
    word (a list or tuple of one ``str`` of letters and digits) is its own encoding and
    skips the general path.

    Parameters
    ----------
    keys : sequence of Sequence
        The keys, each a list (or tuple) of group values.
    max_bytes : int, default 512
        As for :func:`encode_key`.

    Returns
    -------
    list of str
        Each key's encoding, in order; equal to :func:`encode_key`'s.

    Raises
    ------
    StateError
        A key is not a list of group values, or holds a value a state key cannot hold
        (the same errors as :func:`check_key` and :func:`encode_key`).

    Examples
    --------
    >>> encode_keys([["cat"], ("dog",), ["us", 2024], []])
    ['cat', 'dog', 'us|~i2024', '~global']
    """
    short = max_bytes // 4
    encoded: list[str] = []
    append = encoded.append
    for key in keys:
        kind = type(key)
        if (kind is list or kind is tuple) and len(key) == 1:
            word = key[0]
            if type(word) is str and len(word) <= short and word.isalnum():
                append(word)
                continue
        append(encode_key(key, max_bytes))
    return encoded


def is_hashed(encoded: str) -> bool:
    """Whether an encoded key is the hashed form of a long key (which cannot be decoded).

    Examples
    --------
    >>> is_hashed(encode_key(["cat"])), is_hashed(encode_key(["x" * 600]))
    (False, True)
    """
    return encoded.startswith(_HASHED_TAG)


def _unescape(text: str) -> str:
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


def _decode_json(payload: str) -> Any:
    return json.loads(_unescape(payload), object_hook=decode_object)


def _decode_component(text: str) -> Any:
    if not text.startswith("~"):
        return _unescape(text)
    tag, payload = text[1:2], text[2:]
    simple = {"e": "", "n": None, "T": True, "F": False}     # ~T and ~F: keys of earlier versions
    if tag in simple and not payload:
        return simple[tag]
    parsers: dict[str, Any] = {
        "i": int, "d": float, "D": decimal.Decimal, "r": fractions.Fraction, "x": bytes.fromhex,
        "t": datetime.datetime.fromisoformat, "a": datetime.date.fromisoformat, "j": _decode_json,
    }
    if tag not in parsers:
        raise ValueError(f"unknown tag {text[:2]!r}")
    return parsers[tag](payload)


def decode_key(encoded: str) -> list[Any]:
    """Decode a readable encoded key back to its group values.

    Parameters
    ----------
    encoded : str
        A value returned by :func:`encode_key`.

    Returns
    -------
    list
        The group values (``[]`` for the global key).

    Raises
    ------
    StateError
        The key was hashed (too long to keep readable) or is not an encoded key.

    Examples
    --------
    >>> decode_key("a%7Cb|~i1"), decode_key('~j[1,{"~tuple":[2.5]}]')
    (['a|b', 1], [[1, (2.5,)]])
    """
    if encoded == _GLOBAL_ENCODED:
        return []
    if is_hashed(encoded):
        raise StateError(f"key {encoded[:80]!r}... was hashed because it is long; it cannot be decoded: "
                         f"read the group values from the stored document or row instead")
    try:
        return [_decode_component(part) for part in encoded.split(_SEPARATOR)]
    except (ValueError, ZeroDivisionError, decimal.InvalidOperation) as exc:
        raise StateError(f"{encoded!r} is not an encoded state key: {exc}") from exc


def decode_scanned_key(encoded: str, address: str) -> list[Any]:
    """The group values of a key a scan found in a store that keeps only the encoded key.

    Parameters
    ----------
    encoded : str
        The stored encoded key (SQLite row key, Redis key without its prefix).
    address : str
        The state, for messages.

    Raises
    ------
    StateError
        The key was hashed (its encoding is longer than 512 bytes) or is not an
        encoded key (the store holds data of another program).

    Examples
    --------
    >>> decode_scanned_key("us|~i2024", "memory://wc"), decode_scanned_key("~global", "memory://wc")
    (['us', 2024], [])
    """
    if is_hashed(encoded):
        raise StateError(
            f"{address}: cannot list key {encoded[:80]!r}...: its encoding is longer than {MAX_KEY_BYTES} "
            f"bytes, so it is stored hashed and its group values cannot be read back (getTuples, "
            f"TupleCollectionGet); group by shorter values (e.g. a digest of the long one), or query "
            f"such keys with multiGet() / MapGet()")
    try:
        return decode_key(encoded)
    except StateError as exc:
        raise StateError(f"{address}: listing the state's keys: {exc}; another program may write under "
                         f"this state's name: give the state its own table, prefix or index") from None


__all__ = [
    "COMMIT_RECORD_KEY",
    "GLOBAL_KEY",
    "MAX_KEY_BYTES",
    "ReservedKey",
    "check_key",
    "decode_key",
    "decode_scanned_key",
    "encode_key",
    "encode_keys",
    "is_hashed",
    "is_reserved",
]
