"""A stream's operations run in this process on one batch's tuples, without a Spark job.

A DRPC request is one batch of one tuple (Trident's own rule: a batch per request). When its
stream only runs Python operations, aggregations and state reads, Spark's per-batch floor (a
job, its stages and tasks: hundreds of milliseconds) is all the latency there is; answered
here, a request takes what its operations and state reads take. :class:`DirectStream` runs
such a stream with the semantics of the Spark path: the same operation interfaces, called by
the same code (:mod:`trident_spark.executor.kernel`, as the Spark stages call them), an
ungrouped aggregation's single emit on an empty batch, ``prepare``/``cleanup`` once per run,
state read as the other queries wrote it (uncached: the values of the store now).

What it cannot run (a persist, a join, a merge, a multiReduce, anything new) is named by
:func:`why_not_direct`; such a stream runs as a Spark query.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from trident_spark.executor.aggregate_stage import group_keys
from trident_spark.executor.kernel import (
    AggStep,
    RunningAggregate,
    consume,
    each_values,
    keep_indices,
    map_values,
    query_state,
    tuple_views,
)
from trident_spark.executor.state_stage import is_plain_map
from trident_spark.fields import Fields, TridentTuple
from trident_spark.graph import (
    AggregateNode,
    AggregationScope,
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
    BaseFilter,
    BaseFunction,
    Consumer,
    Operation,
    OperationContext,
    ReportedErrors,
)
from trident_spark.state import BatchState, StateSource
from trident_spark.state.state_api import make_state

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
            return self._each(node, self._operation(node, node.function, txid), rows)
        if isinstance(node, FilterNode):
            return self._each(node, self._operation(node, node.filter, txid), rows)
        if isinstance(node, PeekNode):
            consumer = self._operation(node, node.consumer, txid)
            consume(node.label, consumer.accept, _tuples(rows, node.fields))
            return rows
        if isinstance(node, MapNode):
            execute = self._operation(node, node.function, txid).execute
            _, emitted = map_values(node.label, execute, _tuples(rows, node.inputs[0].fields), node.fields,
                                    flat=node.flat)
            return [dict(zip(node.fields, values, strict=True)) for values in emitted]
        if isinstance(node, ProjectNode | RepartitionNode):
            return [{name: row[name] for name in node.fields} for row in rows]
        if isinstance(node, AggregateNode):
            return self._aggregate(node, rows, txid)
        if isinstance(node, StateQueryNode):
            function = self._operation(node, node.function, txid)
            state = self._state(node)
            # A program's subclass of a map state gets the state itself (its own methods), as in Trident.
            view = BatchState(state, txid, reads_before_batch=False) if is_plain_map(state) else state
            parents, emitted = query_state(node.label, function, view, _tuples(rows, node.input_fields),
                                           node.function_fields, ReportedErrors(node.label))
            return _appended(rows, parents, emitted, node.function_fields)
        raise ValueError(f"{node.label}: not a step this stream runs")  # why_not_direct refused it

    def _each(self, node: EachNode | FilterNode, operation: Any, rows: list[Row]) -> list[Row]:
        tuples = _tuples(rows, node.input_fields)
        if isinstance(operation, BaseFilter):
            return [rows[i] for i in keep_indices(node.label, operation.isKeep, tuples)]
        if isinstance(operation, Consumer):
            consume(node.label, operation.accept, tuples)
            return rows
        assert isinstance(operation, BaseFunction) and isinstance(node, EachNode)
        parents, emitted = each_values(node.label, operation.execute, tuples, node.function_fields,
                                       ReportedErrors(node.label))
        return _appended(rows, parents, emitted, node.function_fields)

    def _aggregate(self, node: AggregateNode, rows: list[Row], txid: int) -> list[Row]:
        steps = [AggStep(node.label, self._operation(node, spec.aggregator, txid), spec.input_fields,
                         spec.function_fields, ReportedErrors(node.label)) for spec in node.specs]
        groups: dict[Any, tuple[list[Any], list[RunningAggregate]]] = {}
        if not node.group_fields:  # an ungrouped aggregation emits even for an empty batch (Trident's)
            groups[()] = ([], [RunningAggregate(step, txid) for step in steps])
        keys = (group_keys([[row[name] for row in rows] for name in node.group_fields]) if node.group_fields
                else [((), [])] * len(rows))
        tuples = [_tuples(rows, step.input_fields) for step in steps]
        for i, (key, group_values) in enumerate(keys):
            entry = groups.get(key)
            if entry is None:
                entry = groups[key] = (group_values, [RunningAggregate(step, txid) for step in steps])
            for running, step_tuples in zip(entry[1], tuples, strict=True):
                running.add(step_tuples[i])
        out: list[Row] = []
        for group_values, runs in groups.values():
            emitted = [run.finish() for run in runs]
            for combo in itertools.product(*emitted):
                values = [*group_values, *(v for values in combo for v in values)]
                out.append(dict(zip(node.fields, values, strict=True)))
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


def _tuples(rows: list[Row], fields: Fields) -> list[TridentTuple]:
    return tuple_views(fields, [[row[name] for row in rows] for name in fields], len(rows))


def _appended(rows: list[Row], parents: list[int], emitted: list[Any], fields: Fields) -> list[Row]:
    """Each emitted tuple: its parent row with the emitted fields."""
    return [{**rows[i], **dict(zip(fields, values, strict=True))}
            for i, values in zip(parents, emitted, strict=True)]


__all__ = ["DirectStream", "why_not_direct"]
