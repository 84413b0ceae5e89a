"""Fields and tuples: Trident's ``Fields`` and ``TridentTuple``.

A field is a name; its values are any Python objects, as Trident's ``Values``
are, and may change type from tuple to tuple. A field may also carry a Spark SQL
type (``"count:bigint"``): the fast path, a plain Spark column that Spark SQL
aggregates without a Python call. An undeclared field's type is :data:`DEFAULT_TYPE`,
``"object"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

from trident_spark.errors import InvalidArgumentError

#: The type of a field declared without one: it carries any Python value.
DEFAULT_TYPE = "object"  # trident_spark.object_values.OBJECT


class Fields(Sequence[str]):
    """An ordered list of field names, optionally typed.

    Examples
    --------
    >>> f = Fields("word", "count:bigint")
    >>> list(f), f.types
    (['word', 'count'], {'word': 'object', 'count': 'bigint'})
    """

    def __init__(self, *names: str | Iterable[str], types: Mapping[str, str] | None = None,
                 declared: Iterable[str] | None = None) -> None:
        flat: list[str] = []
        for item in names:
            if isinstance(item, str):
                flat.append(item)
            else:
                flat.extend(item)
        self._names: list[str] = []
        self._types: dict[str, str] = {}
        self._declared: set[str] = set()
        for spec in flat:
            name, _, type_ = spec.partition(":")
            name = name.strip()
            if not name:
                raise InvalidArgumentError(f"Fields: empty field name in {spec!r}")
            self._names.append(name)
            given = type_.strip() or (types or {}).get(name)
            self._types[name] = given or DEFAULT_TYPE
            if given and given != DEFAULT_TYPE and (declared is None or name in declared or type_.strip()):
                self._declared.add(name)

    @classmethod
    def of(cls, value: Fields | str | Iterable[str] | None) -> Fields:
        """Accept what users pass where fields are expected: Fields, a name, or a list."""
        if value is None:
            return cls()
        if isinstance(value, Fields):
            return value
        return cls(value)

    @property
    def types(self) -> dict[str, str]:
        """The type of every field (``"object"``, any Python value, where none was declared)."""
        return dict(self._types)

    @property
    def declared_types(self) -> dict[str, str]:
        """Only the types given explicitly (``"n:bigint"`` or ``types=``)."""
        return {name: self._types[name] for name in self._names if name in self._declared}

    def duplicates(self) -> list[str]:
        """Names that occur more than once, in first-occurrence order."""
        seen: set[str] = set()
        dups: list[str] = []
        for name in self._names:
            if name in seen and name not in dups:
                dups.append(name)
            seen.add(name)
        return dups

    def index(self, name: str, start: int = 0, stop: int | None = None) -> int:
        return self._names.index(name, start, stop if stop is not None else len(self._names))

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        return self._names[i]

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Fields):
            return self._names == other._names
        if isinstance(other, list | tuple):
            return self._names == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._names))

    def __repr__(self) -> str:
        return f"Fields({', '.join(map(repr, self._names))})"

    def toList(self) -> list[str]:
        return list(self._names)


class TridentTuple(Sequence[Any]):
    """One tuple of a batch: values by position or by field name.

    Examples
    --------
    >>> t = TridentTuple(["the cat", 3], Fields("value", "n"))
    >>> t[0], t["n"], t.getStringByField("value"), t.getLong(1)
    ('the cat', 3, 'the cat', 3)

    Trident's ``ITuple`` getters are all here: ``getString``, ``getInteger``, ``getLong``,
    ``getShort``, ``getByte``, ``getDouble``, ``getFloat``, ``getBoolean``, ``getBinary``, each
    with a ``...ByField(name)`` form; and ``size()``, ``get(i)``, ``select(fields)``.

    >>> t.getFloat(1), t.getShortByField("n"), t.size(), t.get(0), t.select(["n"])
    (3.0, 3, 2, 'the cat', [3])
    """

    __slots__ = ("_fields", "_index", "_values")

    def __init__(self, values: Sequence[Any], fields: Fields, index: Mapping[str, int] | None = None) -> None:
        self._values = values
        self._fields = fields
        self._index = index if index is not None else {name: i for i, name in enumerate(fields)}

    @overload
    def __getitem__(self, key: int) -> Any: ...
    @overload
    def __getitem__(self, key: slice) -> Sequence[Any]: ...
    @overload
    def __getitem__(self, key: str) -> Any: ...
    def __getitem__(self, key: int | slice | str) -> Any:
        if type(key) is int:  # the common case first, with the cheapest test
            return self._values[key]
        if isinstance(key, str):
            return self.getValueByField(key)
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return repr(dict(zip(self._fields, self._values, strict=True)))

    def __str__(self) -> str:
        """Trident's ``TridentTuple.toString()``: the value list as Java's ``List.toString`` writes it.

        Examples
        --------
        >>> str(TridentTuple(["cat", 3, None, True, [1.5, "x"]], Fields("w", "n", "a", "b", "c")))
        '[cat, 3, null, true, [1.5, x]]'
        """
        return java_string(list(self._values))

    def getFields(self) -> Fields:
        return self._fields

    def getValues(self) -> list[Any]:
        return list(self._values)

    def asDict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self._values, strict=True))

    def getValue(self, i: int) -> Any:
        return self._values[i]

    def getValueByField(self, name: str) -> Any:
        try:
            return self._values[self._index[name]]
        except KeyError:
            raise KeyError(f"tuple has no field {name!r}; its fields are {list(self._fields)}") from None

    def contains(self, name: str) -> bool:
        return name in self._index

    # Typed getters, as in Trident's ITuple.
    def getString(self, i: int) -> str:
        return self._values[i]  # type: ignore[no-any-return]

    def getStringByField(self, name: str) -> str:
        return self.getValueByField(name)  # type: ignore[no-any-return]

    def getLong(self, i: int) -> int:
        return int(self._values[i])

    def getLongByField(self, name: str) -> int:
        return int(self.getValueByField(name))

    getInteger = getLong
    getIntegerByField = getLongByField

    def getDouble(self, i: int) -> float:
        return float(self._values[i])

    def getDoubleByField(self, name: str) -> float:
        return float(self.getValueByField(name))

    def getBoolean(self, i: int) -> bool:
        return bool(self._values[i])

    def getBooleanByField(self, name: str) -> bool:
        return bool(self.getValueByField(name))

    def getBinary(self, i: int) -> bytes:
        return self._values[i]  # type: ignore[no-any-return]

    def getBinaryByField(self, name: str) -> bytes:
        return self.getValueByField(name)  # type: ignore[no-any-return]

    def getFloat(self, i: int) -> float:
        return float(self._values[i])

    def getFloatByField(self, name: str) -> float:
        return float(self.getValueByField(name))

    def getShort(self, i: int) -> int:
        return int(self._values[i])

    def getShortByField(self, name: str) -> int:
        return int(self.getValueByField(name))

    getByte = getShort
    getByteByField = getShortByField

    # Trident's TridentTuple is a java.util.List: size() and get(i), and select(Fields).
    def size(self) -> int:
        """The number of values (``len(tuple)``), as Trident's ``size()``.

        Examples
        --------
        >>> TridentTuple(["cat", 3], Fields("word", "n")).size()
        2
        """
        return len(self._values)

    def get(self, i: int) -> Any:
        """The value at position ``i``, as Trident's ``get(i)`` (the same as ``getValue(i)``).

        Examples
        --------
        >>> TridentTuple(["cat", 3], Fields("word", "n")).get(1)
        3
        """
        return self._values[i]

    def select(self, fields: Fields | str | Iterable[str]) -> list[Any]:
        """The values of ``fields``, in that order, as Trident's ``select(Fields)``.

        Raises
        ------
        KeyError
            A field the tuple does not have (the message lists the tuple's fields).

        Examples
        --------
        >>> t = TridentTuple(["cat", 3, True], Fields("word", "n", "ok"))
        >>> t.select(Fields("ok", "word"))
        [True, 'cat']
        """
        names = [fields] if isinstance(fields, str) else list(fields)
        return [self.getValueByField(name) for name in names]


def java_string(value: Any) -> str:
    """``value`` as Java's ``toString`` writes it: lists ``[a, b]``, maps ``{k=v}``, ``null``,
    ``true``/``false``, strings without quotes.

    Examples
    --------
    >>> java_string(["cat", 3, None, False, {"k": (1, 2)}])
    '[cat, 3, null, false, {k=[1, 2]}]'
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(java_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java_string(k)}={java_string(v)}" for k, v in value.items()) + "}"
    return str(value)
