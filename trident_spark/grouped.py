"""GroupedStream and chained aggregation: what ``groupBy`` and ``chainedAgg()`` return."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields
from trident_spark.graph import AggSpec
from trident_spark.operation import Aggregator, BaseFilter, BaseFunction, CombinerAggregator
from trident_spark.stream import Stream, _persistent_aggregate
from trident_spark.validation import FieldsLike

if TYPE_CHECKING:
    from trident_spark.trident_state import TridentState


class GroupedStream:
    """A stream grouped by ``group_fields``: aggregations run per group.

    Examples
    --------
    >>> counts = words.groupBy(["word"]).aggregate(Count(), ["count"])      # doctest: +SKIP
    >>> counts.getOutputFields()                                             # doctest: +SKIP
    Fields('word', 'count')
    """

    def __init__(self, stream: Stream, group_fields: Fields) -> None:
        self.stream = stream
        self.group_fields = group_fields

    def __repr__(self) -> str:
        return f"GroupedStream({list(self.group_fields)} of {self.stream!r})"

    def getGroupFields(self) -> Fields:
        return self.group_fields

    def getOutputFields(self) -> Fields:
        return self.stream.getOutputFields()

    def name(self, name: str) -> GroupedStream:
        """Name the last operation (see ``Stream.name``)."""
        return GroupedStream(self.stream.name(name), self.group_fields)

    def toStream(self) -> Stream:
        """The ungrouped stream."""
        return self.stream

    def each(self, input_fields: FieldsLike | None, operation: BaseFunction | BaseFilter,
             function_fields: FieldsLike | None = None) -> GroupedStream:
        """``Stream.each``, keeping the grouping."""
        return GroupedStream(self.stream.each(input_fields, operation, function_fields), self.group_fields)

    def aggregate(self, *args: Any) -> Stream:
        """Aggregate each group of the batch: ``aggregate([in], aggregator, out)``; emits the
        group fields followed by ``out``."""
        return ChainedAggregatorDeclarer(self.stream, self.group_fields, "").aggregate(*args).chainEnd()

    def partitionAggregate(self, *args: Any) -> GroupedStream:
        """Aggregate each group within each partition; stays grouped."""
        declarer = ChainedAggregatorDeclarer(self.stream, self.group_fields, "")
        return GroupedStream(declarer.partitionAggregate(*args).chainEnd(), self.group_fields)

    def chainedAgg(self) -> ChainedAggregatorDeclarer:
        """Several aggregators per group in one pass."""
        return ChainedAggregatorDeclarer(self.stream, self.group_fields)

    def persistentAggregate(self, state_factory: Any, *args: Any) -> TridentState:
        """Aggregate each group of the batch and fold it into the state under the group's key."""
        with self.stream.topology._atomic():
            return _persistent_aggregate(self.stream, self.group_fields, state_factory, args)

    def stateQuery(self, state: TridentState, *args: Any) -> Stream:
        """``Stream.stateQuery`` after partitioning by the group fields (as Trident does)."""
        with self.stream.topology._atomic():
            return self.stream.partitionBy(self.group_fields).stateQuery(state, *args)


class ChainedAggregatorDeclarer:
    """Collects aggregators for one pass; ``chainEnd()`` returns the stream of their outputs.

    Output fields of the chained aggregators must be distinct; they are emitted side by
    side (the cross product when an aggregator emits several tuples).

    Examples
    --------
    >>> stats = (stream.chainedAgg()
    ...          .aggregate(["n"], Sum(), ["sum"])
    ...          .aggregate(Count(), ["count"])
    ...          .chainEnd())                                               # doctest: +SKIP
    """

    def __init__(self, stream: Stream, group_fields: Fields, prefix: str = "chainedAgg().") -> None:
        self.stream = stream
        self.group_fields = group_fields
        self.specs: list[AggSpec] = []
        self.scope: str | None = None
        self._labels: list[str] = []
        self._prefix = prefix  # how messages name the calls; "" for GroupedStream.aggregate

    def aggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        """Add a whole-batch aggregator: ``aggregate([in], aggregator, out)``."""
        return self._add("aggregate", "batch", args)

    def partitionAggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        """Add a per-partition aggregator: ``partitionAggregate([in], aggregator, out)``."""
        return self._add("partitionAggregate", "partition", args)

    def _add(self, kind: str, scope: str, args: tuple[Any, ...]) -> ChainedAggregatorDeclarer:
        spec = self.stream._agg_spec(kind, args, self._prefix)
        if self.scope is not None and self.scope != scope:
            raise TopologyError(
                f"chainedAgg: {kind}({spec.label}) cannot follow {self._labels[0]} in one chain; chain "
                "either aggregate() calls (the whole batch) or partitionAggregate() calls (each "
                "partition), not both")
        self.scope = scope
        self.specs.append(spec)
        self._labels.append(f"{kind}({spec.label})")
        return self

    def chainEnd(self) -> Stream:
        """The stream of (group fields +) every aggregator's output fields."""
        if self.scope is None:
            raise TopologyError("chainEnd: nothing was chained; add aggregate(...) or "
                                "partitionAggregate(...) after chainedAgg(), then call chainEnd()")
        owner: dict[str, int] = {}
        for i, spec in enumerate(self.specs):
            for name in spec.function_fields:
                if name in owner:
                    first = owner[name]
                    raise TopologyError(
                        f"chainedAgg: output field {name!r} is declared by both {self._labels[first]} "
                        f"(aggregator {first + 1}) and {self._labels[i]} (aggregator {i + 1}); chained "
                        "aggregators emit side by side, so give each output field its own name")
                owner[name] = i
        return self.stream._aggregate(self.specs, self.group_fields, self.scope)


def all_combiners(specs: list[AggSpec]) -> bool:
    """Whether every aggregator can combine partial results (so partial aggregation applies)."""
    return all(isinstance(s.aggregator, CombinerAggregator) for s in specs)


def is_general(spec: AggSpec) -> bool:
    return isinstance(spec.aggregator, Aggregator)
