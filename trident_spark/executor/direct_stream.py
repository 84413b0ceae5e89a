"""A stream's operations run in this process on one batch's tuples, without a Spark job.

A DRPC request is one batch of one tuple (Trident's own rule: a batch per request). When its
stream only runs Python operations, aggregations and state reads, Spark's per-batch floor (a
job, its stages and tasks: hundreds of milliseconds) is all the latency there is; answered
here, a request takes what its operations and state reads take. :class:`DirectStream` runs
such a stream with the semantics of the Spark path: the same operation interfaces, an
ungrouped aggregation's single emit on an empty batch, ``prepare``/``cleanup`` once per run,
state read as the other queries wrote it (uncached: the values of the store now).

What it cannot run (a persist, a join, a merge, a multiReduce, anything new) is named by
:func:`why_not_direct`; such a stream runs as a Spark query.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from trident_spark.errors import FailedException, OperatorError
from trident_spark.fields import Fields, TridentTuple, declared_values
from trident_spark.graph import (
    AggregateNode,
    AggregationScope,
    AggSpec,
    EachNode,
    FilterNode,
    MapNode,
    Node,
    PeekNode,
    ProjectNode,
    RepartitionNode,
    SpoutNode,
    StateQueryNode,
)
from trident_spark.operation import (
    Aggregator,
    BaseFilter,
    BaseFunction,
    CombinerAggregator,
    Consumer,
    Operation,
    OperationContext,
    ReportedErrors,
    TridentCollector,
)
from trident_spark.state import BatchState, StateSource
from trident_spark.state.map import MAP_KINDS
from trident_spark.state.state_api import make_state

#: Characters of a tuple an error message shows.
_SHOWN = 200
Row = dict[str, Any]


def why_not_direct(nodes: Sequence[Node]) -> str | None:
    """Why the stream of ``nodes`` (a spout and what follows it) cannot run in this process, or None.

    Examples
    --------
    >>> from trident_spark import TridentTopology
    >>> from trident_spark.builtin import Count
    >>> from trident_spark.graph import ancestors
    >>> from trident_spark.spout import FeederBatchSpout
    >>> from trident_spark.state import MemoryState
    >>> topology = TridentTopology()
    >>> stream = topology.newStream("s", FeederBatchSpout(["word"]))
    >>> why_not_direct(ancestors([stream.aggregate(Count(), ["n"]).node]))
    >>> counts = stream.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="n"), Count(), ["n"])
    >>> why_not_direct(ancestors([counts.node]))
    'persistentAggregate(Count) writes state (PersistNode): only a Spark query commits state'
    """
    repartitioned = False
    for node in nodes:
        if isinstance(node, RepartitionNode):
            repartitioned = True
        elif isinstance(node, AggregateNode) and node.scope is AggregationScope.PARTITION and repartitioned:
            return (f"{node.label} aggregates per partition after a repartitioning: its partitions are "
                    "Spark's")
        elif not isinstance(node, _RUNS):
            kind = type(node).__name__
            if kind == "PersistNode":
                return f"{node.label} writes state ({kind}): only a Spark query commits state"
            return f"{node.label} is not a per-batch Python step ({kind})"
        if len(node.inputs) > 1:
            return f"{node.label} has {len(node.inputs)} inputs"
    return None


class DirectStream:
    """The operations of a chain of nodes, run in this process on one batch's tuples at a time.

    Parameters
    ----------
    nodes : sequence of Node
        The spout's node first, then each node after it, parents before children (the
        topology's order); only the ones :func:`why_not_direct` accepts.
    output : Node
        The node whose tuples :meth:`run` returns.
    conf : dict
        The topology configuration ``prepare`` receives.

    Not thread-safe: one instance answers one batch at a time (a server keeps one per worker
    thread). Each holds its own copies of the operations (pickled and loaded, as Spark ships
    them to a task), prepared at their first use and cleaned up by :meth:`cleanup`.

    Examples
    --------
    >>> from trident_spark import TridentTopology
    >>> from trident_spark.builtin import Count
    >>> from trident_spark.graph import ancestors
    >>> from trident_spark.spout import FeederBatchSpout
    >>> topology = TridentTopology()
    >>> words = topology.newStream("s", FeederBatchSpout(["args"])).flatMap(
    ...     lambda t: [[w] for w in t[0].split()], ["word"])
    >>> counted = words.groupBy(["word"]).aggregate(Count(), ["n"])
    >>> direct = DirectStream(ancestors([counted.node]), counted.node, {})
    >>> direct.run(0, [{"args": "cat dog cat"}])
    [['cat', 2], ['dog', 1]]
    >>> direct.cleanup()
    """

    def __init__(self, nodes: Sequence[Node], output: Node, conf: dict[str, Any]) -> None:
        why = why_not_direct(nodes)
        if why is not None:
            raise ValueError(f"cannot run this stream in the driver: {why}")
        self.nodes = list(nodes)
        self.output = output
        self.conf = dict(conf)
        self._states: dict[int, Any] = {}
        self._instances: dict[int, Any] = {}

    # --- lifecycle ----------------------------------------------------------------------
    def _operation(self, node: Node, operation: Operation, txid: int) -> Any:
        """This stream's own instance of ``operation`` (a copy, as a Spark task gets one),
        prepared at its first use."""
        instance = self._instances.get(id(operation))
        if instance is None:
            from pyspark import cloudpickle

            instance = cloudpickle.loads(cloudpickle.dumps(operation))  # type: ignore[no-untyped-call]
            instance.prepare(dict(self.conf), OperationContext(0, 1, txid, node.label))
            self._instances[id(operation)] = instance
        return instance

    def cleanup(self) -> None:
        """``cleanup()`` every prepared operation and close the states opened here."""
        for operation in self._instances.values():
            operation.cleanup()
        self._instances.clear()
        for state in self._states.values():
            close = getattr(state, "close", None)
            if callable(close):
                close()
        self._states.clear()

    # --- one batch ----------------------------------------------------------------------
    def run(self, txid: int, tuples: Iterable[Row]) -> list[list[Any]]:
        """The output node's tuples (value lists, in its field order) for one batch."""
        rows: dict[int, list[Row]] = {}
        for node in self.nodes:
            parent = rows[id(node.inputs[0])] if node.inputs else [dict(t) for t in tuples]
            rows[id(node)] = parent if isinstance(node, SpoutNode) else self._step(node, parent, txid)
            if node is self.output:
                break
        names = list(self.output.fields)
        return [[row[name] for name in names] for row in rows[id(self.output)]]

    def _step(self, node: Node, rows: list[Row], txid: int) -> list[Row]:
        if isinstance(node, EachNode):
            return self._each(node, rows, txid)
        if isinstance(node, FilterNode):
            keep = self._operation(node, node.filter, txid)
            assert isinstance(keep, BaseFilter)
            return [row for row in rows if _keeps(node, keep, row)]
        if isinstance(node, PeekNode):
            consumer = self._operation(node, node.consumer, txid)
            assert isinstance(consumer, Consumer)
            for row in rows:
                t = _tuple(row, node.fields)
                _call(node, consumer.accept, t, t)
            return rows
        if isinstance(node, MapNode):
            return self._map(node, rows, txid)
        if isinstance(node, ProjectNode | RepartitionNode):
            return [{name: row[name] for name in node.fields} for row in rows]
        if isinstance(node, AggregateNode):
            return self._aggregate(node, rows, txid)
        if isinstance(node, StateQueryNode):
            return self._state_query(node, rows, txid)
        raise ValueError(f"{node.label}: not a step this stream runs")  # why_not_direct refused it

    def _each(self, node: EachNode, rows: list[Row], txid: int) -> list[Row]:
        operation = self._operation(node, node.function, txid)
        if isinstance(operation, BaseFilter):
            return [row for row in rows if _keeps(node, operation, row)]
        if isinstance(operation, Consumer):
            for row in rows:
                t = _tuple(row, node.input_fields)
                _call(node, operation.accept, t, t)
            return rows
        assert isinstance(operation, BaseFunction)
        collector = TridentCollector(ReportedErrors(node.label))
        out: list[Row] = []
        for row in rows:
            t = _tuple(row, node.input_fields)
            _call(node, operation.execute, t, t, collector)
            for values in collector.reset():
                out.append({**row, **_named(node, node.function_fields, values)})
        return out

    def _map(self, node: MapNode, rows: list[Row], txid: int) -> list[Row]:
        operation = self._operation(node, node.function, txid)
        execute: Callable[[TridentTuple], Any] = operation.execute  # type: ignore[attr-defined]
        fields = node.inputs[0].fields
        out: list[Row] = []
        for row in rows:
            t = _tuple(row, fields)
            result = _call(node, execute, t, t)
            for values in (result if node.flat else [result]):
                if not isinstance(values, list | tuple):
                    values = [values]  # a single value for a one-field tuple
                out.append(_named(node, node.fields, values))
        return out

    def _aggregate(self, node: AggregateNode, rows: list[Row], txid: int) -> list[Row]:
        groups: dict[tuple[Any, ...], list[Row]] = {}
        if not node.group_fields:
            groups[()] = []  # an ungrouped aggregation emits even for an empty batch (Trident's)
        for row in rows:
            groups.setdefault(tuple(_hashable(row[name]) for name in node.group_fields), []).append(row)
        out: list[Row] = []
        for members in groups.values():
            group_values = [members[0][name] for name in node.group_fields] if members else []
            emitted = [self._aggregated(node, spec, members, txid) for spec in node.specs]
            for combo in itertools.product(*emitted):
                values = [*group_values, *(v for values in combo for v in values)]
                out.append(dict(zip(node.fields, values, strict=True)))
        return out

    def _aggregated(self, node: AggregateNode, spec: AggSpec, rows: list[Row], txid: int) -> list[list[Any]]:
        """One aggregator over one group's tuples: what it emitted."""
        agg = self._operation(node, spec.aggregator, txid)
        collector = TridentCollector(ReportedErrors(node.label))
        tuples = [_tuple(row, spec.input_fields) for row in rows]
        if isinstance(agg, Aggregator):
            state = _call(node, agg.init, None, txid, collector)
            for t in tuples:
                new = _call(node, agg.aggregate, t, state, t, collector)
                if new is not None:  # Python aggregators may return the new state instead of mutating it
                    state = new
            _call(node, agg.complete, None, state, collector)
            emitted = collector.reset()
        elif isinstance(agg, CombinerAggregator):
            value = _call(node, agg.zero, None)
            for t in tuples:
                value = _call(node, agg.combine, t, value, _call(node, agg.init, t, t))
            emitted = [[value]]
        else:
            value = _call(node, agg.init, None)  # type: ignore[attr-defined]
            for t in tuples:
                value = _call(node, agg.reduce, t, value, t)  # type: ignore[attr-defined]
            emitted = [[value]]
        return [list(declared_values(node.label, values, spec.function_fields)) for values in emitted]

    def _state_query(self, node: StateQueryNode, rows: list[Row], txid: int) -> list[Row]:
        function = self._operation(node, node.function, txid)
        state = self._state(node)
        # A program's subclass of a map state gets the state itself (its own methods), as in Trident.
        plain = type(state) in MAP_KINDS.values()
        view = BatchState(state, txid, reads_before_batch=False) if plain else state
        tuples = [_tuple(row, node.input_fields) for row in rows]
        results = list(_call(node, function.batchRetrieve, None, view, tuples))  # type: ignore[attr-defined]
        if len(results) != len(tuples):
            raise OperatorError(f"{node.label}: batchRetrieve returned {len(results)} results for "
                                f"{len(tuples)} tuples; return one result per tuple, in order")
        collector = TridentCollector(ReportedErrors(node.label))
        out: list[Row] = []
        for row, t, result in zip(rows, tuples, results, strict=True):
            _call(node, function.execute, t, t, result, collector)  # type: ignore[attr-defined]
            for values in collector.reset():
                out.append({**row, **_named(node, node.function_fields, values)})
        return out

    def _state(self, node: StateQueryNode) -> Any:
        """The queried state, opened once here without a cache: the store's values now, as the
        queries that write it committed them (a cache here would keep answering old values)."""
        factory = node.state.factory
        key = id(factory)
        if key not in self._states:
            if isinstance(factory, StateSource):
                if dataclasses.is_dataclass(factory) and factory.cache_size > 0:
                    factory = dataclasses.replace(factory, cache_size=0)
                self._states[key] = factory.open()
            else:  # a user's Trident StateFactory
                self._states[key] = make_state(factory, dict(self.conf), 0, 1)
        return self._states[key]


#: The nodes a direct stream runs.
_RUNS = (SpoutNode, EachNode, FilterNode, PeekNode, MapNode, ProjectNode, RepartitionNode, AggregateNode,
         StateQueryNode)


def _keeps(node: FilterNode | EachNode, keep: BaseFilter, row: Row) -> bool:
    t = _tuple(row, node.input_fields)
    return bool(_call(node, keep.isKeep, t, t))


def _tuple(row: Row, fields: Fields) -> TridentTuple:
    return TridentTuple([row[name] for name in fields], fields)


def _named(node: Node, fields: Fields, values: Sequence[Any]) -> Row:
    return dict(zip(fields, declared_values(node.label, values, fields), strict=True))


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _call(node: Node, fn: Callable[..., Any], shown: TridentTuple | None, *args: Any) -> Any:
    """``fn(*args)``; an error names the operation and the tuple (``FailedException`` passes)."""
    try:
        return fn(*args)
    except FailedException:
        raise
    except Exception as exc:
        on = "" if shown is None else f" on tuple {shown!r:.{_SHOWN}}"
        raise OperatorError(f"{node.label} failed{on}: {type(exc).__name__}: {exc}") from exc


__all__ = ["DirectStream", "why_not_direct"]
