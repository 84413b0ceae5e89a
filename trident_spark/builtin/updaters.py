"""The state updaters ``persistentAggregate`` runs: Trident's ``MapCombinerAggStateUpdater`` and
``MapReducerAggStateUpdater``.

Each gets a partition's tuples of one batch and the state with the batch's txid
bound (:class:`~trident_spark.state.BatchState`), updates one key per group in
one ``multiUpdate`` and emits the group fields with each key's new value (what
``newValuesStream()`` carries). Ungrouped, the one key is the global key.
"""

from __future__ import annotations

from typing import Any

from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import CombinerAggregator, ReducerAggregator, StateUpdater, TridentCollector
from trident_spark.state.keys import GLOBAL_KEY
from trident_spark.state.value_updaters import Updater, combiner_updater


def _key(t: TridentTuple, group: list[int]) -> list[Any]:
    return [t.getValue(i) for i in group] if group else list(GLOBAL_KEY)


class MapCombinerAggStateUpdater(StateUpdater[Any]):
    """Fold a CombinerAggregator's per-group batch result into a map state.

    The tuples are the batch's partial results, one per group (group fields,
    then the partial value): key ``k`` becomes ``combine(old, partial)``, or
    ``partial`` for a new key.

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> from trident_spark.state import BatchState, MemoryState
    >>> state = BatchState(MemoryState.opaque(name="doc-combiner-updater").open(), txid=0)
    >>> fields = Fields("word", "count")
    >>> out = TridentCollector()
    >>> MapCombinerAggStateUpdater(Count(), Fields("word")).updateState(
    ...     state, [TridentTuple(["cat", 2], fields), TridentTuple(["dog", 1], fields)], out)
    >>> out.emitted
    [['cat', 2], ['dog', 1]]
    """

    def __init__(self, aggregator: CombinerAggregator[Any], group_fields: Fields) -> None:
        self.aggregator = aggregator
        self.group_fields = group_fields

    def updateState(self, state: Any, tuples: list[TridentTuple], collector: TridentCollector) -> None:
        if not tuples:
            return
        fields = tuples[0].getFields()
        group = [fields.index(f) for f in self.group_fields]
        value = len(fields) - 1  # the partial follows the group fields
        keys = [_key(t, group) for t in tuples]
        combine = self.aggregator.combine
        updaters = [combiner_updater(combine, t.getValue(value)) for t in tuples]
        for key, new in zip(keys, state.multiUpdate(keys, updaters), strict=True):
            collector.emit([*key, new] if group else [new])

    def __repr__(self) -> str:
        return f"MapCombinerAggStateUpdater({self.aggregator!r})"


class MapReducerAggStateUpdater(StateUpdater[Any]):
    """Fold a ReducerAggregator over each group's tuples into a map state.

    Key ``k`` becomes ``reduce(...reduce(old, t1)..., tn)`` over its tuples in
    order, starting from ``init()`` for a new key. The reducer sees each tuple's
    ``input_fields``.

    Examples
    --------
    >>> from trident_spark.operation import ReducerAggregator
    >>> from trident_spark.state import BatchState, MemoryState
    >>> class Concat(ReducerAggregator):
    ...     def init(self): return ""
    ...     def reduce(self, curr, tuple): return curr + tuple[0]
    >>> state = BatchState(MemoryState.opaque(name="doc-reducer-updater").open(), txid=0)
    >>> fields = Fields("key", "letter")
    >>> tuples = [TridentTuple(["k", "a"], fields), TridentTuple(["k", "b"], fields)]
    >>> out = TridentCollector()
    >>> MapReducerAggStateUpdater(Concat(), Fields("key"), Fields("letter")).updateState(state, tuples, out)
    >>> out.emitted
    [['k', 'ab']]
    """

    def __init__(self, aggregator: ReducerAggregator[Any], group_fields: Fields,
                 input_fields: Fields) -> None:
        self.aggregator = aggregator
        self.group_fields = group_fields
        self.input_fields = input_fields

    def updateState(self, state: Any, tuples: list[TridentTuple], collector: TridentCollector) -> None:
        if not tuples:
            return
        fields = tuples[0].getFields()
        group = [fields.index(f) for f in self.group_fields]
        inputs = [fields.index(f) for f in self.input_fields]
        index = {name: i for i, name in enumerate(self.input_fields)}
        grouped: dict[tuple[tuple[type, Any], ...], tuple[list[Any], list[TridentTuple]]] = {}
        for t in tuples:
            key = _key(t, group)
            # States keep 1, 1.0 and True apart (state/keys.py): so does the grouping.
            marker = tuple((type(v), v) for v in key)
            entry = grouped.get(marker)
            if entry is None:
                entry = grouped[marker] = (key, [])
            entry[1].append(TridentTuple([t.getValue(i) for i in inputs], self.input_fields, index))
        keys = [key for key, _ in grouped.values()]
        updaters = [self._updater(group_tuples) for _, group_tuples in grouped.values()]
        for key, new in zip(keys, state.multiUpdate(keys, updaters), strict=True):
            collector.emit([*key, new] if group else [new])

    def _updater(self, tuples: list[TridentTuple]) -> Updater:
        aggregator = self.aggregator

        def update(old: Any) -> Any:
            value = aggregator.init() if old is None else old
            for t in tuples:
                value = aggregator.reduce(value, t)
            return value
        return update

    def __repr__(self) -> str:
        return f"MapReducerAggStateUpdater({self.aggregator!r})"


__all__ = ["MapCombinerAggStateUpdater", "MapReducerAggStateUpdater"]
