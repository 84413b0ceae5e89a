"""Stream: the builder users chain Trident operations on. Builds graph nodes; runs nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.graph import EachNode, FilterNode, Node, PeekNode, ProjectNode
from trident_spark.operation import BaseFilter, BaseFunction, CallableConsumer, Consumer
from trident_spark.sink import CollectSink

if TYPE_CHECKING:
    from trident_spark.topology import TridentTopology

FieldsLike = Fields | str | Sequence[str]


class Stream:
    """A stream of Trident batches; each method returns a new Stream.

    Examples
    --------
    >>> from trident_spark import TridentTopology
    >>> from trident_spark.spout import KafkaSpout
    >>> topology = TridentTopology()
    >>> words = (topology.newStream("s", KafkaSpout("127.0.0.1:9092", ["sentences"]))
    ...          .each(["value"], Split(), ["word"]))          # doctest: +SKIP
    """

    def __init__(self, topology: TridentTopology, node: Node) -> None:
        self.topology = topology
        self.node = node

    def __repr__(self) -> str:
        return f"Stream({self.node.label}: {list(self.node.fields)})"

    def getOutputFields(self) -> Fields:
        return self.node.fields

    def _child(self, node: Node) -> Stream:
        self.topology._add(node)
        return Stream(self.topology, node)

    def _resolve(self, operator: str, fields: FieldsLike) -> Fields:
        wanted = Fields.of(fields)
        unknown = [f for f in wanted if f not in self.node.fields]
        if unknown:
            raise TopologyError(
                f"{operator}: unknown input field {', '.join(map(repr, unknown))}; "
                f"the stream has {list(self.node.fields)}"
            )
        return wanted

    def name(self, name: str) -> Stream:
        """Name the last operation: shown in Spark's UI, in metrics and in errors."""
        self.node.label = name
        return self

    def each(self, input_fields: FieldsLike, operation: BaseFunction | BaseFilter,
             function_fields: FieldsLike | None = None) -> Stream:
        """Run a Function (appending ``function_fields``) or a Filter on every tuple.

        Examples
        --------
        >>> stream.each(["value"], Split(), ["word"])        # doctest: +SKIP
        >>> stream.each(["word"], FilterNull())              # doctest: +SKIP
        """
        label = f"each({type(operation).__name__})"
        inputs = self._resolve(label, input_fields)
        if isinstance(operation, BaseFilter):
            if function_fields:
                raise TopologyError(
                    f"{label}: a Filter emits no fields; drop {list(Fields.of(function_fields))}")
            return self._child(FilterNode(self.node.fields, label, self.node, inputs, operation))
        if not isinstance(operation, BaseFunction):
            raise TopologyError(f"{label}: expected a BaseFunction or BaseFilter, got {operation!r}")
        out = Fields.of(function_fields)
        if not out:
            raise TopologyError(
                f"{label}: a Function needs output fields, e.g. each(['value'], Split(), ['word'])")
        clash = [f for f in out if f in self.node.fields]
        dup = sorted({f for f in out if list(out).count(f) > 1})
        if clash or dup:
            raise TopologyError(
                f"{label}: duplicate output field {', '.join(map(repr, clash or dup))}; "
                f"the stream already has {list(self.node.fields)}"
            )
        types = {**out.types, **getattr(operation, "output_types", {})}
        all_fields = Fields(*self.node.fields, *out, types={**self.node.fields.types, **types})
        node = EachNode(all_fields, label, self.node, inputs, operation, Fields(*out, types=types))
        return self._child(node)

    def filter(self, operation: BaseFilter | Callable[[TridentTuple], bool]) -> Stream:
        """Keep the tuples a Filter (or a plain predicate over the tuple) accepts."""
        if not isinstance(operation, BaseFilter):
            operation = _PredicateFilter(operation)
        return self.each(self.node.fields, operation)

    def peek(self, action: Consumer | Callable[[TridentTuple], Any]) -> Stream:
        """Call ``action`` on every tuple, on the executors; the stream passes on unchanged."""
        consumer = action if isinstance(action, Consumer) else CallableConsumer(action)
        return self._child(PeekNode(self.node.fields, f"peek({consumer!r})", self.node, consumer))

    def project(self, fields: FieldsLike) -> Stream:
        """Keep only ``fields``, in that order."""
        kept = self._resolve("project", fields)
        types = self.node.fields.types
        fields = Fields(*kept, types={f: types[f] for f in kept})
        return self._child(ProjectNode(fields, "project", self.node))

    def collect(self) -> CollectSink:
        """Gather this stream's tuples on the driver after each batch (``sink.tuples``)."""
        sink = CollectSink(self.node.fields)
        self.topology._add_sink(self.node, sink)
        return sink


class _PredicateFilter(BaseFilter):
    def __init__(self, predicate: Callable[[TridentTuple], bool]) -> None:
        self.predicate = predicate

    def isKeep(self, tuple: TridentTuple) -> bool:
        return bool(self.predicate(tuple))

    def __repr__(self) -> str:
        return getattr(self.predicate, "__name__", "predicate")
