"""Which fields of a node's output its consumers read: so a Python stage ships only those.

Spark prunes unused columns of SQL expressions by itself, but not through
``mapInArrow``: without this, a Python ``each`` ships every spout field to Python
and back for every tuple it emits (in a word count: the sentence, once per word).
"""

from __future__ import annotations

from trident_spark.graph import (
    AggregateNode,
    AggregationScope,
    EachNode,
    FilterNode,
    Node,
    ProjectNode,
    StateQueryNode,
)
from trident_spark.planner.query import QueryPlan


def needed_fields(query: QueryPlan, node: Node) -> list[str] | None:
    """The fields of ``node`` (in its order) that some consumer reads; None when all may be.

    Conservative: a collected output, a consumer that sees whole tuples (peek, map,
    merge, join, repartitioning, state writes) or one not handled here keeps them all.
    """
    memo: dict[int, frozenset[str] | None] = query.__dict__.setdefault("_needed_fields", {})
    need = _needed(query, node, memo)
    return None if need is None else [f for f in node.fields if f in need]


def _needed(query: QueryPlan, node: Node, memo: dict[int, frozenset[str] | None]) -> frozenset[str] | None:
    if id(node) in memo:
        return memo[id(node)]
    need: set[str] | None = set()
    if any(output.node is node for output in query.outputs):
        need = None  # collected, or a leaf: keep its tuples whole
    consumers = [n for n in query.nodes if any(i is node for i in n.inputs)]
    for consumer in consumers:
        if need is None:
            break
        reads = _reads(query, consumer, memo)
        need = None if reads is None else need | reads
    memo[id(node)] = None if need is None else frozenset(need)
    return memo[id(node)]


def _reads(query: QueryPlan, consumer: Node, memo: dict[int, frozenset[str] | None]) -> set[str] | None:
    """What ``consumer`` reads of its input: its own inputs and what passes through to its readers."""
    if isinstance(consumer, AggregateNode):
        if consumer.scope != AggregationScope.BATCH or not all(
                hasattr(s.aggregator, "spark_aggregates") for s in consumer.specs):
            return set(consumer.inputs[0].fields)  # Python aggregators are handed their input fields
        reads = set(consumer.group_fields)
        for spec in consumer.specs:
            if getattr(spec.aggregator, "reads_fields", True):
                reads |= set(spec.input_fields)
        return reads
    if isinstance(consumer, ProjectNode):
        return set(consumer.fields)
    if isinstance(consumer, EachNode | FilterNode | StateQueryNode):
        below = _needed(query, consumer, memo)
        if below is None:
            return None
        added = set(getattr(consumer, "function_fields", ()))
        return (set(below) - added) | set(consumer.input_fields)
    return None
