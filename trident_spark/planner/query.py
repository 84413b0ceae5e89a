"""The static plan of one Spark query: which nodes it runs, what it outputs, where stages begin.

One query runs per set of spouts connected through ``merge``/``join`` (so merged
streams share one batch id). Built once on the driver when the topology starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trident_spark.graph import (
    AggregateNode,
    AggregationScope,
    JoinNode,
    MergeNode,
    MultiReduceNode,
    Node,
    RepartitionNode,
    SpoutNode,
    WindowNode,
    ancestors,
    spouts_of,
)
from trident_spark.sink import Sink


@dataclass
class Output:
    """A node whose result is needed: a leaf (run for side effects), or one with sinks."""

    node: Node
    sinks: list[Sink] = field(default_factory=list)


def is_stage_boundary(node: Node) -> bool:
    """Nodes that start a new stage (Trident: the operations after a repartitioning).

    A persist is not one: like Trident's partitionPersist it runs in the stage it follows,
    so ``parallelismHint`` on a TridentState sizes that stage (after persistentAggregate's
    batch aggregation, or its partitionBy/global for a Reducer), keeping each key in one task.
    """
    if isinstance(node, SpoutNode | RepartitionNode | MergeNode | JoinNode | MultiReduceNode | WindowNode):
        return True
    return isinstance(node, AggregateNode) and node.scope == AggregationScope.BATCH


@dataclass
class QueryPlan:
    """Everything one Spark query runs.

    ``name`` is the query name (the stream name, or ``a+b`` for connected spouts) and
    names its checkpoint directory.
    """

    spouts: list[SpoutNode]
    outputs: list[Output]
    nodes: list[Node]
    consumers: dict[int, int]
    stage_partitions: dict[int, int]
    capped: dict[int, int] = field(default_factory=dict)  # spout -> its max task parallelism

    @property
    def name(self) -> str:
        return "+".join(s.stream_name for s in self.spouts)

    def consumer_count(self, node: Node) -> int:
        return self.consumers.get(id(node), 0)

    def partitions_of(self, boundary: Node) -> int | None:
        """The partition count ``parallelismHint`` asked for the stage ``boundary`` begins (None
        for a spout's stage whose hint its spout caps: see :meth:`cap_of`)."""
        if id(boundary) in self.capped:
            return None
        return self.stage_partitions.get(id(boundary))

    def cap_of(self, spout: Node) -> int | None:
        """The most partitions the stage of ``spout`` runs in, where its ``parallelismHint``
        asked more than the spout's max task parallelism allows (None: not capped)."""
        return self.capped.get(id(spout))


def stage_boundary(node: Node) -> Node:
    """The node that begins ``node``'s stage."""
    current = node
    while not is_stage_boundary(current) and current.parent is not None:
        current = current.parent
    return current


def spout_caps(spouts: list[SpoutNode], hints: dict[int, int]) -> dict[int, int]:
    """The spouts whose stage's ``parallelismHint`` exceeds the spout's max task parallelism
    (Trident's ``topology.max.task.parallelism``), each with that cap: Trident runs the
    operations after such a spout, up to a repartitioning, in at most that many tasks."""
    capped = {}
    for spout in spouts:
        hint = hints.get(id(spout))
        read_by = getattr(spout.spout, "max_task_parallelism", None)
        cap = read_by() if hint is not None and callable(read_by) else None
        if cap is not None and hint is not None and hint > cap:
            capped[id(spout)] = cap
    return capped


def plan_queries(nodes: list[Node], sinks: list[tuple[Node, Sink]]) -> list[QueryPlan]:
    """Split the topology's graph into queries: one per connected set of spouts."""
    children: dict[int, int] = {}
    for node in nodes:
        for parent in node.inputs:
            children[id(parent)] = children.get(id(parent), 0) + 1
    groups: list[list[SpoutNode]] = []
    for node in nodes:
        spouts = spouts_of(node) if node.inputs else ([node] if isinstance(node, SpoutNode) else [])
        touching = [g for g in groups if any(s in g for s in spouts)]
        merged: list[SpoutNode] = []
        for group in touching:
            groups.remove(group)
            merged.extend(s for s in group if s not in merged)
        merged.extend(s for s in spouts if s not in merged)
        if merged:
            groups.append(merged)
    plans = []
    for spouts in groups:
        members = [n for n in nodes if any(s in spouts for s in spouts_of(n))]
        outputs: dict[int, Output] = {}
        for node in members:
            if children.get(id(node), 0) == 0:
                outputs[id(node)] = Output(node)
        for node, sink in sinks:
            if any(s in spouts for s in spouts_of(node)):
                outputs.setdefault(id(node), Output(node)).sinks.append(sink)
        needed = ancestors([o.node for o in outputs.values()])
        consumers = {id(n): children.get(id(n), 0) for n in needed}
        for output in outputs.values():
            consumers[id(output.node)] = consumers.get(id(output.node), 0) + (1 if output.sinks else 0)
        hints: dict[int, int] = {}
        for node in needed:  # Trident: a group runs in the largest hint given in it
            if node.parallelism is not None:
                boundary = id(stage_boundary(node))
                hints[boundary] = max(node.parallelism, hints.get(boundary, 0))
        ordered = sorted(spouts, key=lambda s: nodes.index(s))
        plans.append(QueryPlan(ordered, list(outputs.values()), needed, consumers, hints,
                               spout_caps(ordered, hints)))
    return plans
