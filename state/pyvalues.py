"""Any Python value as JSON: JSON values as they are, every other value as a tagged object.

A state stores values as JSON (Storm's formats, ``serializers.py``) and builds
keys from group values (``keys.py``); a field of a tuple carries any Python
value. This module is the one vocabulary both use: a value that JSON holds
(``None``, ``bool``, ``int``, finite ``float``, ``str``, ``list``, and
``dict`` with ``str`` keys) is written as itself, so stored JSON stays what
Storm wrote; any other value is a JSON object with exactly one key, a tag
starting with ``~``:

=====================  =====================================================
Python value           JSON
=====================  =====================================================
``tuple``              ``{"~tuple": [...]}``
``bytes``              ``{"~bytes": "<base64>"}``
``datetime``           ``{"~datetime": "2024-05-01T10:00:00+00:00"}`` (naive, or a fixed offset)
``date``               ``{"~date": "2024-05-01"}``
``Decimal``            ``{"~decimal": "1.50"}``
``float`` inf, nan     ``{"~float": "inf"}``, ``"-inf"``, ``"nan"``
``set``, ``frozenset`` ``{"~set": [...]}``, ``{"~frozenset": [...]}``
``dict``, other keys   ``{"~dict": [[key, value], ...]}`` (non-``str`` keys, or one ``~`` key)
anything else          ``{"~py": "<base64 of pickle protocol 4>"}`` (user objects, ``Fraction``,
                       ``bytearray``, subclasses such as a namedtuple or an ``IntEnum``)
=====================  =====================================================

Types are matched exactly, so what comes back is the same type: a namedtuple
or an ``OrderedDict`` is pickled rather than written as a plain tuple or dict.
A user dict that itself has exactly one key starting with ``~`` is written as
``{"~dict": [...]}``, so no user value reads back as a tag. A value that
cannot be pickled (a lambda, a lock, an open socket) raises
:class:`~.errors.UnstorableValueError` naming its type. Unpickling runs the
code of the value's class: read states that you trust, with the module that
defines the class importable.

Keys use :func:`canonical_json` instead: one form per class of equal values
under Python's ``==`` (``1``, ``1.0`` and ``True`` are one key; ``[1, 2]`` and
``(1, 2)`` are two, as in Python), with ``~fraction`` for rationals that are
not decimals, and no pickles (a key's text must not depend on pickle details).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import fractions
import json
import math
import numbers
import pickle
from typing import Any

from .errors import TridentSparkError, UnstorableValueError, type_name

#: Pickle protocol of ``~py`` values: fixed, so stored bytes do not change with the Python version.
PICKLE_PROTOCOL = 4

_PLAIN = (str, int, bool, type(None))


def _tagged(tag: str, payload: Any) -> dict[str, Any]:
    return {tag: payload}


def _float_tag(value: float) -> dict[str, Any]:
    return _tagged("~float", "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf"))


def _is_tag_like(obj: dict[Any, Any]) -> bool:
    if len(obj) != 1:
        return False
    (name,) = obj
    return isinstance(name, str) and name.startswith("~")


def _datetime_text(value: datetime.datetime) -> str | None:
    """ISO text that reads back as an equal datetime with the same tzinfo, or None."""
    if value.tzinfo is None or type(value.tzinfo) is datetime.timezone:
        return value.isoformat()
    return None


def to_json(value: Any) -> Any:
    """``value`` as a JSON tree: itself if JSON holds it, else tagged (see the module docstring).

    Parameters
    ----------
    value : Any
        Any Python value.

    Returns
    -------
    Any
        A tree of ``None``, ``bool``, ``int``, ``float``, ``str``, ``list`` and
        ``dict`` with ``str`` keys, for ``json.dumps``; :func:`from_json` turns
        it back into an equal value of the same type.

    Raises
    ------
    UnstorableValueError
        ``value`` (or a value inside it) is not JSON and cannot be pickled.

    Examples
    --------
    >>> to_json({"n": [1, 2.5, None]})
    {'n': [1, 2.5, None]}
    >>> to_json((1, b"hi")), to_json({1: "a"})
    ({'~tuple': [1, {'~bytes': 'aGk='}]}, {'~dict': [[1, 'a']]})
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else _float_tag(value)
    if kind is list:
        return [to_json(item) for item in value]
    if kind is dict:
        if all(type(name) is str for name in value) and not _is_tag_like(value):
            return {name: to_json(item) for name, item in value.items()}
        return _tagged("~dict", [[to_json(name), to_json(item)] for name, item in value.items()])
    if kind is tuple:
        return _tagged("~tuple", [to_json(item) for item in value])
    if kind is bytes:
        return _tagged("~bytes", base64.b64encode(value).decode("ascii"))
    if kind is datetime.datetime:
        text = _datetime_text(value)
        if text is not None:
            return _tagged("~datetime", text)
    if kind is datetime.date:
        return _tagged("~date", value.isoformat())
    if kind is decimal.Decimal:
        return _tagged("~decimal", str(value))
    if kind is set or kind is frozenset:
        return _tagged("~" + kind.__name__, [to_json(item) for item in value])
    return _tagged("~py", _pickled(value))


def _pickled(value: Any) -> str:
    try:
        data = pickle.dumps(value, protocol=PICKLE_PROTOCOL)
    except Exception as exc:
        raise UnstorableValueError(None, None, type_name(value), f"{type(exc).__name__}: {exc}") \
            from None
    return base64.b64encode(data).decode("ascii")


class _PayloadError(TridentSparkError, ValueError):
    """A tagged value's payload cannot be read; the message says why already."""


def _unpickled(text: Any) -> Any:
    if not isinstance(text, str):
        raise _PayloadError(f"a ~py value holds base64 text, found {text!r:.100}")
    try:
        data = base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise _PayloadError(f"a ~py value is not base64: {exc}") from None
    try:
        return pickle.loads(data)
    except Exception as exc:
        raise _PayloadError(
            f"a pickled value (~py) cannot be unpickled here: {type(exc).__name__}: {exc}; the module that "
            f"defines its class must be importable where the state is read (define the class in a module, "
            f"not in __main__ or a notebook, and put that module on the path)") from None


def _pairs(payload: Any) -> list[tuple[Any, Any]]:
    if not isinstance(payload, list) or not all(isinstance(p, list) and len(p) == 2 for p in payload):
        raise _PayloadError(f"a ~dict value holds [key, value] pairs, found {payload!r:.100}")
    return [(name, item) for name, item in payload]


def _float(payload: Any) -> float:
    if payload not in ("inf", "-inf", "nan"):
        raise _PayloadError(f"a ~float value is 'inf', '-inf' or 'nan', found {payload!r:.100}")
    return float(payload)


def _fraction(payload: Any) -> fractions.Fraction:
    return fractions.Fraction(str(payload))


_DECODERS: dict[str, Any] = {
    "~tuple": tuple,
    "~bytes": lambda text: base64.b64decode(text, validate=True),
    "~datetime": datetime.datetime.fromisoformat,
    "~date": datetime.date.fromisoformat,
    "~decimal": decimal.Decimal,
    "~float": _float,
    "~set": set,
    "~frozenset": frozenset,
    "~dict": lambda payload: dict(_pairs(payload)),
    "~fraction": _fraction,
    "~py": _unpickled,
}


def decode_object(obj: dict[str, Any]) -> Any:
    """``json.loads`` ``object_hook``: a tagged object becomes its value, any other dict stays.

    A one-key object whose tag is unknown stays a dict (data another program wrote).

    Raises
    ------
    ValueError
        A known tag holds a payload it cannot read (the message says which).

    Examples
    --------
    >>> json.loads('[{"~tuple": [1, 2]}, {"n": 1}, {"~set": [3]}]', object_hook=decode_object)
    [(1, 2), {'n': 1}, {3}]
    """
    if len(obj) != 1:
        return obj
    ((tag, payload),) = obj.items()
    decoder = _DECODERS.get(tag)
    if decoder is None:
        return obj
    try:
        return decoder(payload)
    except _PayloadError as exc:
        raise ValueError(str(exc)) from None
    except Exception as exc:
        raise ValueError(f"cannot read a {tag} value from {payload!r:.100}: {type(exc).__name__}: {exc}") \
            from None


def from_json(tree: Any) -> Any:
    """The value a JSON tree made by :func:`to_json` (or :func:`canonical_json`) stands for.

    Examples
    --------
    >>> value = {"at": datetime.date(2024, 5, 1), 7: (b"x", {1.5})}
    >>> from_json(json.loads(json.dumps(to_json(value)))) == value
    True
    """
    if isinstance(tree, list):
        return [from_json(item) for item in tree]
    if isinstance(tree, dict):
        return decode_object({name: from_json(item) for name, item in tree.items()})
    return tree


def is_plain_json(value: Any) -> bool:
    """Whether ``value`` is written as itself (no tag anywhere inside it).

    Examples
    --------
    >>> is_plain_json({"n": [1, 2.5, None, True]}), is_plain_json((1, 2)), is_plain_json(float("nan"))
    (True, False, False)
    """
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is list:
        return all(is_plain_json(item) for item in value)
    if kind is dict:
        return (all(type(name) is str for name in value) and not _is_tag_like(value)
                and all(is_plain_json(item) for item in value.values()))
    return False


def canonical_number(value: numbers.Number) -> int | float | decimal.Decimal | fractions.Fraction:
    """One representative per class of numbers equal under Python's ``==``.

    Integral numbers become ``int`` (``True``, ``1.0``, ``Decimal("1.00")``
    -> ``1``; ``-0.0`` -> ``0``); other numbers that a float holds exactly
    become that ``float`` (and ``inf`` / ``nan``); other finite decimals a
    normalized ``Decimal``; the rest a ``Fraction``.

    Raises
    ------
    TypeError
        ``value`` is not a real number (a complex number, for instance).

    Examples
    --------
    >>> canonical_number(True), canonical_number(2.0), canonical_number(decimal.Decimal("1.50"))
    (1, 2, 1.5)
    >>> canonical_number(decimal.Decimal("0.10")), canonical_number(fractions.Fraction(1, 3))
    (Decimal('0.1'), Fraction(1, 3))
    """
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return float(value)                      # Decimal("Infinity") == float("inf")
        exact = fractions.Fraction(value)
    elif isinstance(value, numbers.Rational):
        exact = fractions.Fraction(int(value.numerator), int(value.denominator))
    else:
        raise TypeError(f"{value!r} is not a real number")
    if exact.denominator == 1:
        return int(exact)
    as_float = float(exact)
    if fractions.Fraction(as_float) == exact:
        return as_float
    denominator = exact.denominator
    twos_fives = 0
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
            twos_fives += 1
    if denominator != 1:
        return exact
    with decimal.localcontext() as context:
        context.prec = twos_fives + len(str(abs(exact.numerator))) + 2   # the quotient is exact
        return (decimal.Decimal(exact.numerator) / decimal.Decimal(exact.denominator)).normalize()


def _canonical_scalar(value: Any) -> Any:
    number = canonical_number(value)
    if isinstance(number, float) and not math.isfinite(number):
        return _float_tag(number)
    if isinstance(number, decimal.Decimal):
        return _tagged("~decimal", str(number))
    if isinstance(number, fractions.Fraction):
        return _tagged("~fraction", str(number))
    return number


def _sort_text(tree: Any) -> str:
    return json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> Any:
    """The JSON tree of a group value for its key: equal values (Python's ``==``) give equal trees.

    Numbers go through :func:`canonical_number`; a dict's entries and a set's
    items are sorted by their canonical text; an aware datetime is written in
    UTC (equal instants are equal datetimes); ``set`` and ``frozenset`` are
    both ``~frozenset`` (they compare equal). Dump it with ``sort_keys=True``.

    Raises
    ------
    TypeError
        A value (or one inside it) of another type: keys hold no pickles.

    Examples
    --------
    >>> canonical_json([1.0, True, (2.5, None)])
    [1, 1, {'~tuple': [2.5, None]}]
    >>> canonical_json({2: "b", 1.0: "a"})
    {'~dict': [[1, 'a'], [2, 'b']]}
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Real | decimal.Decimal):
        return _canonical_scalar(value)
    if isinstance(value, list):
        return [canonical_json(item) for item in value]
    if isinstance(value, tuple):
        return _tagged("~tuple", [canonical_json(item) for item in value])
    if isinstance(value, dict):
        entries = [(canonical_json(name), canonical_json(item)) for name, item in value.items()]
        if all(isinstance(name, str) for name, _ in entries) and not _is_tag_like(value):
            return dict(entries)
        entries.sort(key=lambda entry: _sort_text(entry[0]))
        return _tagged("~dict", [[name, item] for name, item in entries])
    if isinstance(value, set | frozenset):
        return _tagged("~frozenset", sorted((canonical_json(item) for item in value), key=_sort_text))
    if isinstance(value, bytes | bytearray):
        return _tagged("~bytes", base64.b64encode(bytes(value)).decode("ascii"))
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None and value.utcoffset() is not None:
            value = value.astimezone(datetime.UTC)
        return _tagged("~datetime", value.isoformat())
    if isinstance(value, datetime.date):
        return _tagged("~date", value.isoformat())
    raise TypeError(f"{value!r:.100} ({type(value).__name__})")


__all__ = [
    "PICKLE_PROTOCOL",
    "canonical_json",
    "canonical_number",
    "decode_object",
    "from_json",
    "is_plain_json",
    "to_json",
]
