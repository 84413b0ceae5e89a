"""GroupedStream and chained aggregation: what ``groupBy`` and ``chainedAgg()`` return."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields
from trident_spark.graph import AggSpec
from trident_spark.operation import Aggregator, BaseFilter, BaseFunction, CombinerAggregator
from trident_spark.stream import Stream, _persistent_aggregate
from trident_spark.validation import FieldsLike, check_outputs, concat

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
        return self.chainedAgg().aggregate(*args).chainEnd()

    def partitionAggregate(self, *args: Any) -> GroupedStream:
        """Aggregate each group within each partition; stays grouped."""
        return GroupedStream(self.chainedAgg().partitionAggregate(*args).chainEnd(), self.group_fields)

    def chainedAgg(self) -> ChainedAggregatorDeclarer:
        """Several aggregators per group in one pass."""
        return ChainedAggregatorDeclarer(self.stream, self.group_fields)

    def persistentAggregate(self, state_factory: Any, *args: Any) -> TridentState:
        """Aggregate each group of the batch and fold it into the state under the group's key."""
        return _persistent_aggregate(self.stream, self.group_fields, state_factory, args)

    def stateQuery(self, state: TridentState, *args: Any) -> Stream:
        """``Stream.stateQuery`` after partitioning by the group fields (as Trident does)."""
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

    def __init__(self, stream: Stream, group_fields: Fields) -> None:
        self.stream = stream
        self.group_fields = group_fields
        self.specs: list[AggSpec] = []
        self.scopes: set[str] = set()

    def aggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        """Add a whole-batch aggregator: ``aggregate([in], aggregator, out)``."""
        self.specs.append(self.stream._agg_spec("aggregate", args))
        self.scopes.add("batch")
        return self

    def partitionAggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        """Add a per-partition aggregator: ``partitionAggregate([in], aggregator, out)``."""
        self.specs.append(self.stream._agg_spec("partitionAggregate", args))
        self.scopes.add("partition")
        return self

    def chainEnd(self) -> Stream:
        """The stream of (group fields +) every aggregator's output fields."""
        if not self.specs:
            raise TopologyError("chainEnd: add at least one aggregate(...) before chainEnd()")
        if len(self.scopes) > 1:
            raise TopologyError("chainedAgg: mixes aggregate and partitionAggregate; chain one kind")
        owner: dict[str, str] = {}
        for spec in self.specs:
            for name in spec.function_fields:
                if name in owner:
                    raise TopologyError(
                        f"chainedAgg: output fields of chained aggregators must be distinct; {name!r} is "
                        f"declared by {owner[name]} and {spec.label}")
                owner[name] = spec.label
        scope = self.scopes.pop()
        outputs = concat(*(s.function_fields for s in self.specs))
        if self.group_fields:
            kind = "partitionAggregate" if scope == "partition" else "aggregate"
            check_outputs(f"{kind}({', '.join(s.label for s in self.specs)})", outputs, self.group_fields)
        return self.stream._aggregate(self.specs, self.group_fields, scope)


def all_combiners(specs: list[AggSpec]) -> bool:
    """Whether every aggregator can combine partial results (so partial aggregation applies)."""
    return all(isinstance(s.aggregator, CombinerAggregator) for s in specs)


def is_general(spec: AggSpec) -> bool:
    return isinstance(spec.aggregator, Aggregator)
