"""Built-in query functions for ``stateQuery``: MapGet, SnapshotGet, TupleCollectionGet.

Each reads the state once per partition of a batch (``batchRetrieve``) and
appends what it read to every input tuple (``execute``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from trident_spark.fields import TridentTuple
from trident_spark.operation import QueryFunction, TridentCollector
from trident_spark.state.keys import GLOBAL_KEY


def _distinct_key(key: Sequence[Any]) -> tuple[tuple[type, Any], ...]:
    # States keep 1, 1.0 and True apart (see state/keys.py), so a key's types count too.
    return tuple((type(value), value) for value in key)


class MapGet(QueryFunction[Any, Any]):
    """Append each tuple's current value in a grouped map state: Trident's ``MapGet``.

    The input fields are the key (``stateQuery(counts, ["word"], MapGet(),
    ["count"])``); a missing key gives None. Each distinct key is read once per
    partition, in one ``multiGet``. The value is the state's current one:
    ``curr`` of an opaque state, ``val`` of the others.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.operation import TridentCollector
    >>> from trident_spark.state import MemoryState
    >>> counts = MemoryState.opaque(name="doc-mapget").open()
    >>> counts.multiPut(0, [["cat"]], [3])
    >>> tuples = [TridentTuple([w], ["word"]) for w in ["cat", "dog", "cat"]]
    >>> MapGet().batchRetrieve(counts, tuples)
    [3, None, 3]
    """

    output_types = {}
    #: The output field takes the type of the state's value (``count`` of a Count state: bigint).
    returns_state_value = True

    def batchRetrieve(self, state: Any, tuples: list[TridentTuple]) -> list[Any]:
        keys = [list(t) for t in tuples]
        slots: dict[Any, int] = {}
        distinct: list[list[Any]] = []
        positions: list[int] = []
        try:
            for key in keys:
                marker = _distinct_key(key)
                position = slots.get(marker)
                if position is None:
                    position = slots[marker] = len(distinct)
                    distinct.append(key)
                positions.append(position)
        except TypeError:  # an unhashable value: let the state say what is wrong with the key
            return list(state.multiGet(keys))
        values = state.multiGet(distinct)
        return [values[position] for position in positions]

    def execute(self, tuple: TridentTuple, result: Any, collector: TridentCollector) -> None:
        collector.emit([result])

    def __repr__(self) -> str:
        return "MapGet()"


class SnapshotGet(QueryFunction[Any, Any]):
    """Append the single value of an ungrouped state: Trident's ``SnapshotGet``.

    For the state of an ungrouped ``persistentAggregate`` (one value under the
    global key): read once per partition, with ``state.get()`` when the state
    has it, else ``state.multiGet([GLOBAL_KEY])``.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.state import MemoryState
    >>> total = MemoryState.transactional(name="doc-snapshotget").open()
    >>> total.set(0, 42)
    >>> SnapshotGet().batchRetrieve(total, [TridentTuple(["q1"], ["id"]), TridentTuple(["q2"], ["id"])])
    [42, 42]
    """

    output_types = {}
    returns_state_value = True

    def batchRetrieve(self, state: Any, tuples: list[TridentTuple]) -> list[Any]:
        if not tuples:
            return []
        get = getattr(state, "get", None)
        snapshot = get() if callable(get) else state.multiGet([GLOBAL_KEY])[0]
        return [snapshot] * len(tuples)

    def execute(self, tuple: TridentTuple, result: Any, collector: TridentCollector) -> None:
        collector.emit([result])

    def __repr__(self) -> str:
        return "SnapshotGet()"


class TupleCollectionGet(QueryFunction[Any, list[list[Any]]]):
    """Emit every tuple a state holds, once per input tuple: Trident's ``TupleCollectionGet``.

    For states that expose their contents as ``getTuples()`` (an iterable of
    value lists; Trident's ``ITupleCollection``). The state is read once per
    partition; each input tuple then emits one tuple per stored tuple.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.operation import TridentCollector
    >>> class Pairs:
    ...     def getTuples(self):
    ...         return iter([["cat", 3], ["dog", 1]])
    >>> query, out = TupleCollectionGet(), TridentCollector()
    >>> q = TridentTuple(["q1"], ["id"])
    >>> [result] = query.batchRetrieve(Pairs(), [q])
    >>> query.execute(q, result, out); out.emitted
    [['cat', 3], ['dog', 1]]
    """

    output_types = {}

    def batchRetrieve(self, state: Any, tuples: list[TridentTuple]) -> list[list[list[Any]]]:
        if not tuples:
            return []
        get_tuples = getattr(state, "getTuples", None)
        if not callable(get_tuples):
            raise TypeError(f"TupleCollectionGet() needs a state with getTuples() (Trident's "
                            f"ITupleCollection); {state!r} has none. For a map state, query keys "
                            f"with MapGet() instead")
        stored: Iterable[Sequence[Any]] = get_tuples()
        collection = [list(values) for values in stored]
        return [collection] * len(tuples)

    def execute(self, tuple: TridentTuple, result: list[list[Any]], collector: TridentCollector) -> None:
        for values in result:
            collector.emit(values)

    def __repr__(self) -> str:
        return "TupleCollectionGet()"


__all__ = ["MapGet", "SnapshotGet", "TupleCollectionGet"]
