"""The nodes the stream builders create: plain data, no Spark.

A topology is a directed acyclic graph: each spout is a root, each operation a
node holding its inputs (one, or several for ``merge`` and ``join``). The
planner walks from the leaves back to the spouts, one Spark query per set of
spouts that are connected through ``merge``/``join``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from trident_spark.fields import Fields
from trident_spark.joins import JoinOutFieldsMode, JoinType
from trident_spark.operation import Operation


@dataclass(eq=False)
class Node:
    """A step of the topology; ``fields`` are the fields of the tuples it outputs.

    ``parallelism`` is set by ``parallelismHint(n)``: the partition count of the
    stage this node belongs to.
    """

    fields: Fields
    label: str = ""
    inputs: list[Node] = field(default_factory=list)
    parallelism: int | None = None

    @property
    def parent(self) -> Node | None:
        """The single input of a one-input node (None for spouts)."""
        return self.inputs[0] if self.inputs else None


@dataclass(eq=False)
class SpoutNode(Node):
    """Where a stream starts: ``topology.newStream(name, spout)``."""

    stream_name: str = ""
    spout: Any = None


@dataclass(eq=False)
class EachNode(Node):
    """``each(inputs, Function, outputs)``: appends ``function_fields`` to every tuple."""

    input_fields: Fields = field(default_factory=Fields)
    function: Any = None
    function_fields: Fields = field(default_factory=Fields)


@dataclass(eq=False)
class FilterNode(Node):
    """``each(inputs, Filter)`` / ``filter(Filter)``: keeps tuples whose ``isKeep`` is true."""

    input_fields: Fields = field(default_factory=Fields)
    filter: Any = None


@dataclass(eq=False)
class MapNode(Node):
    """``map(fn[, out])`` / ``flatMap(fn[, out])``: replaces each tuple by what ``fn`` returns.

    ``fields`` are the output fields (the input's when no ``out`` was given).
    """

    function: Any = None
    flat: bool = False
    keeps_fields: bool = True


@dataclass(eq=False)
class PeekNode(Node):
    """``peek(consumer)``: sees every tuple on the executors; passes them on unchanged."""

    consumer: Any = None


@dataclass(eq=False)
class ProjectNode(Node):
    """``project(fields)``: keeps only ``fields``."""


@dataclass
class AggSpec:
    """One aggregator of an aggregation: its input fields, itself, its output fields."""

    input_fields: Fields
    aggregator: Operation
    function_fields: Fields

    @property
    def label(self) -> str:
        return type(self.aggregator).__name__


class AggregationScope(StrEnum):
    """Over which tuples an aggregation runs (per group, when grouped).

    A string enum: each member equals its text (``AggregationScope.BATCH == "batch"``).

    Examples
    --------
    >>> AggregationScope("partition") is AggregationScope.PARTITION, str(AggregationScope.BATCH)
    (True, 'batch')
    """

    #: ``partitionAggregate``: each partition of the batch on its own.
    PARTITION = "partition"
    #: ``aggregate``, ``persistentAggregate``: the whole batch.
    BATCH = "batch"


@dataclass(eq=False)
class AggregateNode(Node):
    """An aggregation; output = ``group_fields`` + every spec's ``function_fields``.

    ``scope`` is :attr:`AggregationScope.PARTITION` (``partitionAggregate``: per partition,
    per group) or :attr:`AggregationScope.BATCH` (``aggregate``: the whole batch, per group).
    """

    group_fields: Fields = field(default_factory=Fields)
    specs: list[AggSpec] = field(default_factory=list)
    scope: AggregationScope = AggregationScope.BATCH


class RepartitionKind(StrEnum):
    """How a repartitioning moves tuples (one per Trident repartitioning operation).

    A string enum: each member equals the text it had (``RepartitionKind.SHUFFLE == "shuffle"``),
    which is also the operation's label.

    Examples
    --------
    >>> RepartitionKind("partitionBy") is RepartitionKind.PARTITION_BY
    True
    """

    #: ``shuffle()``: round-robin.
    SHUFFLE = "shuffle"
    #: ``partitionBy(fields)``: by the hash of the key fields.
    PARTITION_BY = "partitionBy"
    #: ``global_()``: the whole batch to one partition.
    GLOBAL = "global"
    #: ``batchGlobal()``: each batch to one partition (in Spark, as ``global_``).
    BATCH_GLOBAL = "batchGlobal"
    #: ``broadcast()``: every tuple to every partition.
    BROADCAST = "broadcast"
    #: ``localOrShuffle()``: tuples stay where they are.
    LOCAL_OR_SHUFFLE = "localOrShuffle"
    #: ``identityPartition()``: partition i goes on as partition i.
    IDENTITY = "identity"
    #: ``partition(grouping)``: where the user's grouping says.
    CUSTOM = "custom"


@dataclass(eq=False)
class RepartitionNode(Node):
    """A repartitioning: ``shuffle``, ``partitionBy``, ``global``, ``batchGlobal``, ``broadcast``,
    ``localOrShuffle``, ``identity`` (``identityPartition``) or ``custom`` (``partition(grouping)``).
    ``key_fields`` for ``partitionBy``; ``grouping`` for ``custom``: ``grouping(tuple,
    num_partitions)`` returns the tuple's partition index (or a list of them)."""

    kind: RepartitionKind = RepartitionKind.SHUFFLE
    key_fields: Fields = field(default_factory=Fields)
    grouping: Any = None


@dataclass(eq=False)
class MergeNode(Node):
    """``topology.merge(streams)``: the union of the inputs; fields are the first input's."""


@dataclass(eq=False)
class JoinNode(Node):
    """``topology.join(...)``: joins the inputs on ``join_fields[i]`` within each batch.

    ``join_types[i]`` is ``JoinType.INNER`` or ``JoinType.OUTER`` for input ``i``: an outer
    input may be missing from a result; an inner one must be present.
    """

    join_fields: list[Fields] = field(default_factory=list)
    join_types: list[JoinType] = field(default_factory=list)
    mode: JoinOutFieldsMode = JoinOutFieldsMode.COMPACT  # PRESERVE emits every field of each input


@dataclass(eq=False)
class MultiReduceNode(Node):
    """``topology.multiReduce(streams, reducer, outputs)``: per batch, the tuples of every input
    go to one MultiReducer (ungrouped), or to one GroupedMultiReducer call chain per group.

    ``input_fields[i]`` are the fields of input ``i`` the reducer sees; ``group_fields[i]``
    its group fields (empty lists: ungrouped). ``fields`` name the whole output tuple: for a
    grouped reducer the group values come first, then what the reducer emits.
    """

    reducer: Any = None
    input_fields: list[Fields] = field(default_factory=list)
    group_fields: list[Fields] = field(default_factory=list)


@dataclass(eq=False)
class StateQueryNode(Node):
    """``stateQuery(state, inputs, QueryFunction, outputs)``: appends ``function_fields``."""

    state: Any = None
    input_fields: Fields = field(default_factory=Fields)
    function: Any = None
    function_fields: Fields = field(default_factory=Fields)


@dataclass(eq=False)
class PersistNode(Node):
    """``partitionPersist``/``persistentAggregate``: hands tuples to a StateUpdater each batch.

    ``fields`` are what the updater may emit (``newValuesStream``).
    """

    state: Any = None
    input_fields: Fields = field(default_factory=Fields)
    updater: Any = None
    group_fields: Fields = field(default_factory=Fields)
    aggregator: Any = None


@dataclass(eq=False)
class WindowNode(Node):
    """``tumblingWindow``/``slidingWindow``/``window``: each task's windows over the stream; emits
    ``spec``'s aggregate of every window that closes (``fields``: the aggregator's only).

    ``config`` is a window config (``trident_spark.windowing``), ``store_factory`` a windows
    store factory; with ``timestamp_field`` a duration window runs on event time, allowing
    tuples ``lateness_ms`` behind the largest timestamp seen.
    """

    config: Any = None
    store_factory: Any = None
    spec: AggSpec | None = None
    timestamp_field: str | None = None
    lateness_ms: int = 0


def spouts_of(node: Node) -> list[SpoutNode]:
    """The spouts ``node`` reads from (several after ``merge``/``join``), in first-seen order."""
    found: dict[int, SpoutNode] = {}
    seen: set[int] = set()
    todo = [node]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SpoutNode):
            found[id(current)] = current
        todo.extend(reversed(current.inputs))
    return list(found.values())


def spout_of(node: Node) -> SpoutNode:
    """The spout at the root of ``node``'s chain (the first one, when several feed it)."""
    spouts = spouts_of(node)
    if not spouts:
        raise ValueError(f"{node.label or type(node).__name__} is not connected to a spout")
    return spouts[0]


def chain_of(node: Node) -> list[Node]:
    """The nodes from the spout (first) to ``node`` (last), following first inputs."""
    chain = []
    current: Node | None = node
    while current is not None:
        chain.append(current)
        current = current.parent
    return chain[::-1]


def ancestors(nodes: list[Node]) -> list[Node]:
    """Every node ``nodes`` depend on, themselves included, inputs before users."""
    order: list[Node] = []
    seen: set[int] = set()

    def visit(node: Node) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for parent in node.inputs:
            visit(parent)
        order.append(node)

    for node in nodes:
        visit(node)
    return order
