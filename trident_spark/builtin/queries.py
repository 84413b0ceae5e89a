"""Built-in query functions for ``stateQuery``: MapGet, SnapshotGet, TupleCollectionGet.

Each reads the state once per partition of a batch (``batchRetrieve``) and
appends what it read to every input tuple (``execute``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from trident_spark.errors import WrongTypeError
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
    value lists; Trident's ``ITupleCollection``). Every map state of
    ``trident_spark.state`` does, on every backend (memory, SQLite, Redis,
    Elasticsearch): one tuple per stored key, the key's group values followed
    by its current value (``curr`` of an opaque state, ``val`` of the others),
    so ``stateQuery(counts, TupleCollectionGet(), ["word", "count:bigint"])``
    for a state grouped by ``word`` (declare the output types: they are not
    taken from the state); the global key of an ungrouped state gives just
    ``[value]``. Inside a batch the values are what ``MapGet`` would read: an
    opaque state that this batch already wrote answers the values from before
    the batch (and leaves out keys the batch created).

    The whole state is read (the store itself, not the cache, in pages of
    ``max_multi_get_batch_size`` keys) once per partition with input tuples, and
    held in memory; each input tuple then emits one tuple per stored tuple,
    in the store's order. Meant for small states; query known keys with
    :class:`MapGet`.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.operation import TridentCollector
    >>> from trident_spark.state import MemoryState
    >>> counts = MemoryState.opaque(name="doc-tuplecollectionget").open()
    >>> counts.multiPut(0, [["cat"], ["dog"]], [3, 1])
    >>> query, out = TupleCollectionGet(), TridentCollector()
    >>> q = TridentTuple(["q1"], ["id"])
    >>> [result] = query.batchRetrieve(counts, [q])
    >>> query.execute(q, result, out); sorted(out.emitted)
    [['cat', 3], ['dog', 1]]

    Any object with ``getTuples()`` works:

    >>> class Pairs:
    ...     def getTuples(self):
    ...         return iter([["cat", 3], ["dog", 1]])
    >>> query, out = TupleCollectionGet(), TridentCollector()
    >>> [result] = query.batchRetrieve(Pairs(), [q])
    >>> query.execute(q, result, out); out.emitted
    [['cat', 3], ['dog', 1]]
    """

    output_types = {}
    #: The output fields take the types of the state's group fields and value, in order.
    returns_state_tuples = True

    def batchRetrieve(self, state: Any, tuples: list[TridentTuple]) -> list[list[list[Any]]]:
        if not tuples:
            return []
        get_tuples = getattr(state, "getTuples", None)
        if not callable(get_tuples):
            raise WrongTypeError(f"TupleCollectionGet() needs a state with getTuples() (Trident's "
                                 f"ITupleCollection), as every map state of trident_spark.state has; "
                                 f"{state!r} has none. Query keys with MapGet() instead, or give the "
                                 f"state a getTuples()")
        stored: Iterable[Sequence[Any]] = get_tuples()
        collection = [list(values) for values in stored]
        return [collection] * len(tuples)

    def execute(self, tuple: TridentTuple, result: list[list[Any]], collector: TridentCollector) -> None:
        for values in result:
            collector.emit(values)

    def __repr__(self) -> str:
        return "TupleCollectionGet()"


__all__ = ["MapGet", "SnapshotGet", "TupleCollectionGet"]
