"""GroupedStream and chained aggregation: what ``groupBy`` and ``chainedAgg()`` return."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields
from trident_spark.graph import AggSpec
from trident_spark.operation import Aggregator, BaseFilter, BaseFunction, CombinerAggregator, QueryFunction
from trident_spark.signatures import AnyAggregator, MapAggregator, StateFactoryLike
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

    @overload
    def each(self, function: BaseFunction, function_fields: FieldsLike, /) -> GroupedStream: ...
    @overload
    def each(self, input_fields: FieldsLike | None, function: BaseFunction, function_fields: FieldsLike,
             /) -> GroupedStream: ...
    @overload
    def each(self, input_fields: FieldsLike | None, filter: BaseFilter, /) -> GroupedStream: ...
    def each(self, *args: Any) -> GroupedStream:
        """``Stream.each``, keeping the grouping.

        Examples
        --------
        >>> words.groupBy(["word"]).each(["word"], Upper(), ["upper"])      # doctest: +SKIP
        """
        return GroupedStream(self.stream.each(*args), self.group_fields)

    @overload
    def aggregate(self, aggregator: AnyAggregator, function_fields: FieldsLike, /) -> Stream: ...
    @overload
    def aggregate(self, input_fields: FieldsLike | None, aggregator: AnyAggregator,
                  function_fields: FieldsLike, /) -> Stream: ...
    def aggregate(self, *args: Any) -> Stream:
        """Aggregate each group of the batch: ``aggregate([input_fields], aggregator,
        function_fields)``; emits the group fields followed by ``function_fields``.

        Examples
        --------
        >>> words.groupBy(["word"]).aggregate(Count(), ["count"])          # doctest: +SKIP
        """
        declarer = ChainedAggregatorDeclarer(self.stream, self.group_fields, "")
        return declarer._add("aggregate", "batch", args).chainEnd()

    @overload
    def partitionAggregate(self, aggregator: AnyAggregator, function_fields: FieldsLike,
                           /) -> GroupedStream: ...
    @overload
    def partitionAggregate(self, input_fields: FieldsLike | None, aggregator: AnyAggregator,
                           function_fields: FieldsLike, /) -> GroupedStream: ...
    def partitionAggregate(self, *args: Any) -> GroupedStream:
        """Aggregate each group within each partition; stays grouped.

        Examples
        --------
        >>> words.groupBy(["word"]).partitionAggregate(Count(), ["count"])  # doctest: +SKIP
        """
        declarer = ChainedAggregatorDeclarer(self.stream, self.group_fields, "")
        return GroupedStream(declarer._add("partitionAggregate", "partition", args).chainEnd(),
                             self.group_fields)

    def chainedAgg(self) -> ChainedAggregatorDeclarer:
        """Several aggregators per group in one pass."""
        return ChainedAggregatorDeclarer(self.stream, self.group_fields)

    @overload
    def persistentAggregate(self, state_factory: StateFactoryLike, aggregator: MapAggregator,
                            function_fields: FieldsLike, /) -> TridentState: ...
    @overload
    def persistentAggregate(self, state_factory: StateFactoryLike, input_fields: FieldsLike | None,
                            aggregator: MapAggregator, function_fields: FieldsLike, /) -> TridentState: ...
    def persistentAggregate(self, state_factory: StateFactoryLike, *args: Any) -> TridentState:
        """Aggregate each group of the batch and fold it into the state under the group's key.

        Examples
        --------
        >>> words.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="wc"), Count(),
        ...                                             ["count"])           # doctest: +SKIP
        """
        with self.stream.topology._atomic():
            return _persistent_aggregate(self.stream, self.group_fields, state_factory, args)

    @overload
    def stateQuery(self, state: TridentState, function: QueryFunction[Any, Any], function_fields: FieldsLike,
                   /) -> Stream: ...
    @overload
    def stateQuery(self, state: TridentState, input_fields: FieldsLike | None,
                   function: QueryFunction[Any, Any], function_fields: FieldsLike, /) -> Stream: ...
    def stateQuery(self, state: TridentState, *args: Any) -> Stream:
        """``Stream.stateQuery`` after partitioning by the group fields (as Trident does).

        Examples
        --------
        >>> words.groupBy(["word"]).stateQuery(counts, ["word"], MapGet(), ["count"])  # doctest: +SKIP
        """
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

    @overload
    def aggregate(self, aggregator: AnyAggregator, function_fields: FieldsLike,
                  /) -> ChainedAggregatorDeclarer: ...
    @overload
    def aggregate(self, input_fields: FieldsLike | None, aggregator: AnyAggregator,
                  function_fields: FieldsLike, /) -> ChainedAggregatorDeclarer: ...
    def aggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        """Add a whole-batch aggregator: ``aggregate([input_fields], aggregator, function_fields)``."""
        return self._add("aggregate", "batch", args)

    @overload
    def partitionAggregate(self, aggregator: AnyAggregator, function_fields: FieldsLike,
                           /) -> ChainedAggregatorDeclarer: ...
    @overload
    def partitionAggregate(self, input_fields: FieldsLike | None, aggregator: AnyAggregator,
                           function_fields: FieldsLike, /) -> ChainedAggregatorDeclarer: ...
    def partitionAggregate(self, *args: Any) -> ChainedAggregatorDeclarer:
        """Add a per-partition aggregator: ``partitionAggregate([input_fields], aggregator,
        function_fields)``."""
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
