"""Field types of the FeederBatchSpout: Spark SQL type names, checked in pure Python.

``feed()`` must reject a bad value on the spot, before any SparkSession
exists, so the Spark type names a field may declare (``"n:bigint"``) are
parsed here without the JVM. The parsed :class:`ColumnType` knows its Arrow
type (what the batch files hold), its canonical DDL (what Spark is told) and
whether a Python value fits it.

A field declared without a type has none here: it carries any Python value,
encoded by :mod:`trident_spark.object_values`.
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from trident_spark.errors import InvalidArgumentError

_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_SIMPLE: dict[str, pa.DataType] = {
    "string": pa.string(),
    "bigint": pa.int64(),
    "int": pa.int32(),
    "smallint": pa.int16(),
    "tinyint": pa.int8(),
    "double": pa.float64(),
    "float": pa.float32(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}
_ALIASES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint",
            "real": "float", "dec": "decimal", "numeric": "decimal",
            "timestamp_ltz": "timestamp"}
SUPPORTED = (f"{', '.join(_SIMPLE)}, decimal(p,s), array<T>, map<K,V>, "
             f"struct<name:T,...>")


@dataclass(frozen=True)
class ColumnType:
    """A parsed Spark SQL type: ``kind`` plus decimal ``params``, element ``children``, struct ``names``.

    Examples
    --------
    >>> t = parse_type("array<long>")
    >>> t.ddl, t.arrow
    ('array<bigint>', ListType(list<item: int64>))
    >>> t.problem([1, "x"])
    "element 1: 'x' is a str, not a bigint"
    """

    kind: str
    params: tuple[int, ...] = ()
    children: tuple[ColumnType, ...] = ()
    names: tuple[str, ...] = ()

    @property
    def ddl(self) -> str:
        """The type in Spark's DDL, canonical spelling (``long`` becomes ``bigint``)."""
        if self.kind == "decimal":
            return f"decimal({self.params[0]},{self.params[1]})"
        if self.kind == "array":
            return f"array<{self.children[0].ddl}>"
        if self.kind == "map":
            return f"map<{self.children[0].ddl},{self.children[1].ddl}>"
        if self.kind == "struct":
            pairs = zip(self.names, self.children, strict=True)
            body = ",".join(f"{quote_name(n)}:{c.ddl}" for n, c in pairs)
            return f"struct<{body}>"
        return self.kind

    @property
    def arrow(self) -> pa.DataType:
        """The Arrow type of the column in a batch file."""
        if self.kind == "decimal":
            return pa.decimal128(self.params[0], self.params[1])
        if self.kind == "array":
            return pa.list_(self.children[0].arrow)
        if self.kind == "map":
            return pa.map_(self.children[0].arrow, self.children[1].arrow)
        if self.kind == "struct":
            return pa.struct([pa.field(n, c.arrow) for n, c in zip(self.names, self.children, strict=True)])
        return _SIMPLE[self.kind]

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit this type, or None when it does (None always fits)."""
        if value is None:
            return None
        kind = self.kind
        if kind in _INT_BITS:
            if not isinstance(value, int) or isinstance(value, bool):
                return _wrong(value, kind)
            bits = _INT_BITS[kind]
            if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
                return f"{value} does not fit in a {kind} ({bits}-bit integer)"
            return None
        if kind in ("double", "float"):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            return None if ok else _wrong(value, kind)
        if kind == "decimal":
            ok = isinstance(value, decimal.Decimal | int) and not isinstance(value, bool)
            return None if ok else _wrong(value, self.ddl)
        if kind in ("timestamp", "timestamp_ntz"):
            return None if isinstance(value, datetime.datetime) else _wrong(value, kind)
        if kind == "date":
            ok = isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
            return None if ok else _wrong(value, kind)
        if kind in ("array", "map", "struct"):
            return self._nested_problem(value)
        expected = {"string": str, "boolean": bool, "binary": bytes | bytearray}[kind]
        return None if isinstance(value, expected) else _wrong(value, kind)

    @property
    def has_struct(self) -> bool:
        """Whether values need :meth:`normalized` before Arrow takes them."""
        return self.kind == "struct" or any(c.has_struct for c in self.children)

    def normalized(self, value: Any) -> Any:
        """``value`` with every struct as a dict (Arrow takes dicts or tuples, not both in one column)."""
        if value is None or not self.has_struct:
            return value
        if self.kind == "array":
            return [self.children[0].normalized(v) for v in value]
        if self.kind == "map":
            key_type, value_type = self.children
            return [(key_type.normalized(k), value_type.normalized(v)) for k, v in value.items()]
        items = value.items() if isinstance(value, Mapping) else zip(self.names, value, strict=True)
        types = dict(zip(self.names, self.children, strict=True))
        return {str(k): types[str(k)].normalized(v) for k, v in items}

    def _nested_problem(self, value: Any) -> str | None:
        if self.kind == "array":
            if not isinstance(value, list | tuple):
                return _wrong(value, self.ddl)
            return _first_problem((f"element {i}", self.children[0], v) for i, v in enumerate(value))
        if self.kind == "map":
            if not isinstance(value, Mapping):
                return _wrong(value, self.ddl)
            key_type, value_type = self.children
            checks = [(f"key {k!r}", key_type, k) for k in value]
            checks += [(f"value of key {k!r}", value_type, v) for k, v in value.items()]
            return _first_problem(checks)
        if isinstance(value, Mapping):
            extra = sorted(set(map(str, value)) - set(self.names))
            if extra:
                return f"{_shown(value)} has keys {extra} that {self.ddl} does not have"
            return _first_problem((f"field {n!r}", c, value.get(n))
                                  for n, c in zip(self.names, self.children, strict=True))
        if isinstance(value, list | tuple) and len(value) == len(self.names):
            return _first_problem((f"field {n!r}", c, v)
                                  for n, c, v in zip(self.names, self.children, value, strict=True))
        return _wrong(value, self.ddl) + f" (give a dict or a {len(self.names)}-tuple)"


def _first_problem(checks: Iterable[tuple[str, ColumnType, Any]]) -> str | None:
    for where, column_type, value in checks:
        problem = column_type.problem(value)
        if problem is not None:
            return f"{where}: {problem}"
    return None


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _wrong(value: Any, type_name: str) -> str:
    return f"{_shown(value)} is a {type(value).__name__}, not a {type_name}"


def quote_name(name: str) -> str:
    """A field name as a Spark DDL identifier (backticks, doubled inside)."""
    return "`" + name.replace("`", "``") + "`"


# --- parsing ---------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(`(?:[^`]|``)*`)|([A-Za-z_][A-Za-z0-9_]*)|(\d+)|([<>(),:]))")


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise InvalidArgumentError(f"unexpected {text[position:].strip()[:10]!r}")
        tokens.append(match.group(match.lastindex or 0))
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if not token or (expected is not None and token != expected):
            raise InvalidArgumentError(f"expected {expected or 'more'!r} but found {token or 'the end'!r}")
        self.at += 1
        return token

    def type(self) -> ColumnType:
        word = self.take().lower()
        word = _ALIASES.get(word, word)
        if word == "decimal":
            params = (10, 0)
            if self.peek() == "(":
                self.take("(")
                precision = int(self.take())
                scale = 0
                if self.peek() == ",":
                    self.take(",")
                    scale = int(self.take())
                self.take(")")
                params = (precision, scale)
            if not 1 <= params[0] <= 38 or not 0 <= params[1] <= params[0]:
                raise InvalidArgumentError(
                    f"decimal({params[0]},{params[1]}): precision is 1-38, scale 0-precision")
            return ColumnType("decimal", params)
        if word == "array":
            self.take("<")
            element = self.type()
            self.take(">")
            return ColumnType("array", children=(element,))
        if word == "map":
            self.take("<")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(">")
            return ColumnType("map", children=(key, value))
        if word == "struct":
            return self.struct()
        if word not in _SIMPLE:
            raise InvalidArgumentError(f"unknown type {word!r}")
        return ColumnType(word)

    def struct(self) -> ColumnType:
        self.take("<")
        names: list[str] = []
        children: list[ColumnType] = []
        while self.peek() != ">":
            if names:
                self.take(",")
            name = self.take()
            if name.startswith("`"):
                name = name[1:-1].replace("``", "`")
            if self.peek() == ":":
                self.take(":")
            names.append(name)
            children.append(self.type())
        self.take(">")
        return ColumnType("struct", children=tuple(children), names=tuple(names))


def parse_type(text: str) -> ColumnType:
    """Parse a Spark SQL type name (``"bigint"``, ``"array<string>"``, ``"decimal(10,2)"``).

    Raises
    ------
    InvalidArgumentError
        (a ValueError) When the text is not a type the feeder supports.

    Examples
    --------
    >>> parse_type("map<string, long>").ddl
    'map<string,bigint>'
    """
    parser = _Parser(text)
    try:
        parsed = parser.type()
        if parser.peek():
            raise InvalidArgumentError(f"unexpected {parser.peek()!r} after the type")
    except (ValueError, IndexError) as exc:
        raise InvalidArgumentError(f"{exc}; supported types: {SUPPORTED}") from None
    return parsed
