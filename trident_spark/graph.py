"""The nodes the stream builders create: plain data, no Spark.

A topology is a forest: each spout is a root, each operation a node holding
its parent. The planner walks from the leaves back to the spouts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trident_spark.fields import Fields
from trident_spark.operation import BaseFilter, BaseFunction, Consumer


@dataclass(eq=False)
class Node:
    """A step of the topology; ``fields`` are the fields of the tuples it outputs."""

    fields: Fields
    label: str = ""

    @property
    def parent(self) -> Node | None:
        return None


@dataclass(eq=False)
class SpoutNode(Node):
    """Where a stream starts: ``topology.newStream(name, spout)``."""

    stream_name: str = ""
    spout: Any = None


@dataclass(eq=False)
class ChildNode(Node):
    """Any node with one input."""

    source: Node = field(default_factory=lambda: Node(Fields()))

    @property
    def parent(self) -> Node:
        return self.source


@dataclass(eq=False)
class EachNode(ChildNode):
    """``each(inputs, Function, outputs)``: appends ``function_fields`` to every tuple."""

    input_fields: Fields = field(default_factory=Fields)
    function: BaseFunction | None = None
    function_fields: Fields = field(default_factory=Fields)


@dataclass(eq=False)
class FilterNode(ChildNode):
    """``each(inputs, Filter)`` / ``filter(Filter)``: keeps tuples whose ``isKeep`` is true."""

    input_fields: Fields = field(default_factory=Fields)
    filter: BaseFilter | None = None


@dataclass(eq=False)
class PeekNode(ChildNode):
    """``peek(consumer)``: sees every tuple on the executors; passes them on unchanged."""

    consumer: Consumer | None = None


@dataclass(eq=False)
class ProjectNode(ChildNode):
    """``project(fields)``: keeps only ``fields``."""


def spout_of(node: Node) -> SpoutNode:
    """The spout at the root of ``node``'s chain."""
    current: Node | None = node
    while current is not None and not isinstance(current, SpoutNode):
        current = current.parent
    if current is None:
        raise ValueError(f"{node.label or type(node).__name__} is not connected to a spout")
    return current


def chain_of(node: Node) -> list[Node]:
    """The nodes from the spout (first) to ``node`` (last)."""
    chain = []
    current: Node | None = node
    while current is not None:
        chain.append(current)
        current = current.parent
    return chain[::-1]
