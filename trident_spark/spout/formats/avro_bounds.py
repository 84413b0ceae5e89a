"""Bounds on the work of reading one Avro record, checked in Python before fastavro reads it.

fastavro's C reader trusts what a record says about itself, and two shapes of writer schema
let a record of a few bytes take a worker down (a producer to the topic needs no more than
that: records are untrusted input):

* an array whose items encode to no bytes (``null``, a record of such fields, a ``fixed`` of
  size 0): a block claiming 2**62 items makes fastavro count to 2**62, holding the GIL, so no
  error, timeout or Spark cancel can end it (20 bytes stopped a stream for good);
* a recursive schema (a linked list, a tree): a record nested 100,000 deep overflows the C
  stack and the worker process dies (SIGSEGV).

Both are properties of the writer schema, found once per schema by :func:`avro_bounds`. A
record written with such a schema is walked here first, reading only its varints and lengths
and skipping the rest: every step consumes a byte of the record or is counted against
:data:`MAX_EMPTY_ITEMS`, and nesting is capped at :data:`MAX_NESTING`, so the walk's work is
bounded by the record's length and so is fastavro's after it. A record outside the bounds is
refused with the reason, as a malformed record. Schemas of neither shape are read by fastavro
directly: every item they hold takes at least one byte, so a false count ends at the record's
end (EOFError) after at most as many items as the record has bytes, and their nesting is the
schema's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trident_spark.errors import TridentSparkError

#: Items that encode to no bytes (nulls, empty records) one record may hold, in all its arrays.
MAX_EMPTY_ITEMS = 100_000
#: Records, arrays and maps one record may nest (fastavro's C stack: 1,000 levels read fine here,
#: 100,000 killed the process).
MAX_NESTING = 500

_PRIMITIVE_SIZES = {"null": 0, "boolean": 1, "int": 1, "long": 1, "float": 4, "double": 8, "bytes": 1,
                    "string": 1}


class AvroBoundsError(TridentSparkError, ValueError):
    """A record (or a writer schema) outside the bounds: the reason, for the record's error."""


@dataclass(eq=False)
class _Type:
    """One node of a writer schema, named types shared (a recursive schema is a cycle)."""

    kind: str
    name: str = ""
    children: list[_Type] = field(default_factory=list)  # record fields, union branches, array/map items
    size: int = 0  # fixed
    min_bytes: int = 0


@dataclass(frozen=True)
class AvroBounds:
    """What a writer schema needs before fastavro reads its records: ``walk`` is False for
    schemas that need no walk (most of them).

    Examples
    --------
    >>> avro_bounds('{"type": "array", "items": "null"}').walk
    True
    >>> avro_bounds('{"type": "array", "items": "int"}').walk
    False
    """

    root: Any
    walk: bool
    #: Why every record is refused (a schema no finite record fits), or None.
    refused: str | None = None


def avro_bounds(schema_text: str) -> AvroBounds:
    """The bounds of records written with the Avro schema ``schema_text`` (JSON text)."""
    named: dict[str, _Type] = {}
    root = _compile(json.loads(schema_text), "", named)
    nodes = _all_nodes(root)
    _min_bytes(nodes)
    endless = _endless_record(nodes)
    if endless is not None:
        return AvroBounds(root, True, f"its writer schema's record {endless!r} contains itself with no "
                                      "union, array or map in between, so no record of it can end")
    zero_items = any(t.kind == "array" and t.children[0].min_bytes == 0 for t in nodes)
    return AvroBounds(root, zero_items or _recursive(root), None)


def check_record(bounds: AvroBounds, data: bytes, start: int = 0) -> None:
    """Walk the record ``data[start:]`` against ``bounds``; raise :class:`AvroBoundsError` saying
    why when it is outside them (a count past the bytes left, too many empty items, too deep).

    Examples
    --------
    >>> bounds = avro_bounds('{"type": "array", "items": "null"}')
    >>> check_record(bounds, b"\\x06\\x00")          # three nulls
    >>> check_record(bounds, b"\\x80\\x80\\x80\\x80\\x80\\x80\\x80\\x80\\x80\\x01")
    Traceback (most recent call last):
    ...
    trident_spark.spout.formats.avro_bounds.AvroBoundsError: an array block claims 4611686018427387904 ...
    """
    if bounds.refused is not None:
        raise AvroBoundsError(bounds.refused)
    if not bounds.walk:
        return
    _Walk(data, start).run(bounds.root)


class _Walk:
    """One record's walk: an explicit stack (no Python recursion), a position that only grows."""

    def __init__(self, data: bytes, start: int) -> None:
        self.data = data
        self.pos = start
        self.empty_items = 0

    def run(self, root: _Type) -> None:
        depth = 0
        stack: list[tuple[int, Any, int]] = [(_VISIT, root, 0)]
        while stack:
            op, t, n = stack.pop()
            if op == _EXIT:
                depth -= 1
            elif op == _BLOCK:
                self._block(t, stack)
            elif op == _REPEAT:
                if n > 1:
                    stack.append((_REPEAT, t, n - 1))
                stack.append((_VISIT, t, 0))
            elif op == _ENTRY:  # one map entry: a string key, then the value
                if n > 1:
                    stack.append((_ENTRY, t, n - 1))
                stack.append((_VISIT, t, 0))
                self._skip(self._length("a map key"))
            else:
                kind = t.kind
                if kind in ("record", "array", "map"):
                    depth += 1
                    if depth > MAX_NESTING:
                        raise AvroBoundsError(f"it nests records, arrays and maps more than {MAX_NESTING} "
                                              "deep (a recursive schema; fastavro would overflow its stack)")
                    stack.append((_EXIT, None, 0))
                    if kind == "record":
                        stack.extend((_VISIT, f, 0) for f in reversed(t.children))
                    else:
                        stack.append((_BLOCK, t, 0))
                elif kind == "union":
                    index = self._long()
                    if not 0 <= index < len(t.children):
                        raise AvroBoundsError(f"a union index {index} of a union of {len(t.children)} types")
                    stack.append((_VISIT, t.children[index], 0))
                elif kind in ("int", "long", "enum"):
                    self._long()
                elif kind in ("bytes", "string"):
                    self._skip(self._length(f"a {kind} length"))
                elif kind == "fixed":
                    self._skip(t.size)
                elif kind in ("float", "double", "boolean"):
                    self._skip(_PRIMITIVE_SIZES[kind])

    def _block(self, t: _Type, stack: list[tuple[int, Any, int]]) -> None:
        count = self._long()
        if count == 0:
            return  # the array or map ends
        if count < 0:  # a block with its size in bytes
            count = -count
            self._length("a block size")
        stack.append((_BLOCK, t, 0))  # the next block
        item = t.children[0]
        per = item.min_bytes + (1 if t.kind == "map" else 0)
        left = len(self.data) - self.pos
        if per == 0:
            self.empty_items += count
            if self.empty_items > MAX_EMPTY_ITEMS:
                raise AvroBoundsError(
                    f"an array block claims {count} items that take no bytes ({item.name or item.kind}); "
                    f"at most {MAX_EMPTY_ITEMS} such items are read per record")
            return  # items of no bytes: nothing to skip
        if count > left // per:
            raise AvroBoundsError(f"a {t.kind} block claims {count} items of at least {per} bytes each, "
                                  f"with {left} bytes left in the record")
        stack.append((_ENTRY if t.kind == "map" else _REPEAT, item, count))

    def _long(self) -> int:
        data, pos = self.data, self.pos
        result = shift = 0
        while True:
            if pos >= len(data):
                raise AvroBoundsError("the record ends inside a number")
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if shift > 63:
                raise AvroBoundsError("a number longer than a 64-bit varint")
        self.pos = pos
        return (result >> 1) ^ -(result & 1)

    def _length(self, what: str) -> int:
        n = self._long()
        left = len(self.data) - self.pos
        if not 0 <= n <= left:
            raise AvroBoundsError(f"{what} of {n} bytes, with {left} bytes left in the record")
        return n

    def _skip(self, n: int) -> None:
        if n > len(self.data) - self.pos:
            raise AvroBoundsError(f"the record ends early ({n - (len(self.data) - self.pos)} bytes short)")
        self.pos += n


# What a stack entry asks: read a type, leave a nesting level, read an array's or map's next block,
# read n more items, read n more map entries.
_VISIT, _EXIT, _BLOCK, _REPEAT, _ENTRY = range(5)


def _compile(schema: Any, namespace: str, named: dict[str, _Type]) -> _Type:
    """``schema`` (parsed JSON) as a graph of :class:`_Type`, named types shared by full name."""
    if isinstance(schema, str):
        if schema in _PRIMITIVE_SIZES:
            return _Type(schema)
        spaced = f"{namespace}.{schema}" if namespace else schema
        for candidate in (schema, spaced, schema.rsplit(".", 1)[-1]):
            if candidate in named:
                return named[candidate]
        raise AvroBoundsError(f"its writer schema names type {schema!r}, defined nowhere before it")
    if isinstance(schema, list):
        return _Type("union", children=[_compile(s, namespace, named) for s in schema])
    kind = schema.get("type")
    if isinstance(kind, dict | list):
        return _compile(kind, namespace, named)
    if kind in ("record", "error", "enum", "fixed"):
        name = str(schema.get("name"))
        space = str(schema.get("namespace") or (name.rsplit(".", 1)[0] if "." in name else namespace))
        full = name if "." in name or not space else f"{space}.{name}"
        node = _Type("record" if kind == "error" else kind, name=full, size=int(schema.get("size") or 0))
        named[full] = named[name.rsplit(".", 1)[-1]] = node
        if kind in ("record", "error"):
            node.children = [_compile(f.get("type"), space, named) for f in schema.get("fields") or ()]
        return node
    if kind == "array":
        return _Type("array", children=[_compile(schema.get("items"), namespace, named)])
    if kind == "map":
        return _Type("map", children=[_compile(schema.get("values"), namespace, named)])
    return _compile(kind, namespace, named)


def _all_nodes(root: _Type) -> list[_Type]:
    seen: dict[int, _Type] = {}
    todo = [root]
    while todo:
        t = todo.pop()
        if id(t) not in seen:
            seen[id(t)] = t
            todo.extend(t.children)
    return list(seen.values())


def _min_bytes(nodes: list[_Type]) -> None:
    """Each node's fewest bytes (the least fixed point: named types may refer to themselves)."""
    for _ in range(len(nodes) + 2):
        changed = False
        for t in nodes:
            if t.kind == "record":
                found = min(sum(c.min_bytes for c in t.children), 1 << 20)
            elif t.kind == "union":
                found = 1 + min((c.min_bytes for c in t.children), default=0)
            elif t.kind == "fixed":
                found = t.size
            elif t.kind in ("array", "map", "enum"):
                found = 1
            else:
                found = _PRIMITIVE_SIZES[t.kind]
            if found != t.min_bytes:
                t.min_bytes, changed = found, True
        if not changed:
            return


def _endless_record(nodes: list[_Type]) -> str | None:
    """A record that contains itself through record fields only (no record of it is finite)."""
    for start in nodes:
        if start.kind != "record":
            continue
        seen: set[int] = set()
        todo = [c for c in start.children if c.kind == "record"]
        while todo:
            t = todo.pop()
            if t is start:
                return start.name
            if id(t) not in seen:
                seen.add(id(t))
                todo.extend(c for c in t.children if c.kind == "record")
    return None


def _recursive(root: _Type) -> bool:
    """Whether a named type can be reached from itself (so nesting is not bounded by the schema)."""
    state: dict[int, int] = {}  # 1: on the path, 2: done
    stack: list[tuple[_Type, int]] = [(root, 0)]
    while stack:
        t, i = stack.pop()
        if i == 0:
            if state.get(id(t)) == 1:
                return True
            if state.get(id(t)) == 2:
                continue
            state[id(t)] = 1
        if i < len(t.children):
            stack.append((t, i + 1))
            child = t.children[i]
            if state.get(id(child)) == 1:
                return True
            if state.get(id(child)) != 2:
                stack.append((child, 0))
        else:
            state[id(t)] = 2
    return False


__all__ = ["MAX_EMPTY_ITEMS", "MAX_NESTING", "AvroBounds", "AvroBoundsError", "avro_bounds", "check_record"]
