"""Stream: the builder users chain Trident operations on. Builds graph nodes; runs nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.graph import (
    AggregateNode,
    AggregationScope,
    AggSpec,
    EachNode,
    FilterNode,
    MapNode,
    Node,
    PeekNode,
    PersistNode,
    ProjectNode,
    RepartitionKind,
    RepartitionNode,
    StateQueryNode,
)
from trident_spark.operation import (
    Aggregator,
    Assembly,
    BaseFilter,
    BaseFunction,
    CallableConsumer,
    CallableFilter,
    CallableFlatMapFunction,
    CallableMapFunction,
    CombinerAggregator,
    Consumer,
    FlatMapFunction,
    MapFunction,
    Operation,
    QueryFunction,
    ReducerAggregator,
    StateUpdater,
)
from trident_spark.signatures import (
    AGGREGATE,
    EACH,
    FILTER,
    PARTITION_PERSIST,
    PERSISTENT_AGGREGATE,
    STATE_QUERY,
    AnyAggregator,
    Comparator,
    ComparatorObject,
    Comparison,
    KeyFunction,
    MapAggregator,
    Predicate,
    StateFactoryLike,
    arity,
    bind_order,
    callable_name,
    check_tuple_comparator,
)
from trident_spark.sink import CollectSink, DataFrameSink
from trident_spark.validation import (
    FieldsLike,
    aggregator_fields,
    as_fields,
    check_outputs,
    check_parallelism,
    check_state_factory,
    concat,
    describe,
    output_fields,
    resolve_inputs,
)

if TYPE_CHECKING:
    from trident_spark.grouped import ChainedAggregatorDeclarer, GroupedStream
    from trident_spark.windowing import Duration, WindowConfig, WindowsStoreFactory

    WindowsStoreFactoryLike = WindowsStoreFactory
    from trident_spark.topology import TridentTopology
    from trident_spark.trident_state import TridentState

AGGREGATOR_KINDS = (Aggregator, CombinerAggregator, ReducerAggregator)


class Stream:
    """A stream of Trident batches; each method returns a new Stream.

    Examples
    --------
    >>> from trident_spark import TridentTopology
    >>> from trident_spark.spout import FeederBatchSpout
    >>> from trident_spark.builtin import Count, Split
    >>> topology = TridentTopology()
    >>> counts = (topology.newStream("s", FeederBatchSpout(["value"]))
    ...           .each(["value"], Split(), ["word"])
    ...           .groupBy(["word"])
    ...           .aggregate(Count(), ["count"]))
    >>> counts.getOutputFields()
    Fields('word', 'count')
    """

    def __init__(self, topology: TridentTopology, node: Node) -> None:
        self.topology = topology
        self.node = node

    def __repr__(self) -> str:
        return f"Stream({self.node.label}: {list(self.node.fields)})"

    def getOutputFields(self) -> Fields:
        """The fields of this stream's tuples."""
        return self.node.fields

    def _child(self, node: Node) -> Stream:
        self.topology._add(node)
        return Stream(self.topology, node)

    def _resolve(self, operator: str, fields: FieldsLike | None) -> Fields:
        return resolve_inputs(operator, self.node.fields, fields)

    # --- naming and parallelism --------------------------------------------------------
    def name(self, name: str) -> Stream:
        """Name the last operation: shown in Spark's UI, in metrics and in errors."""
        if not isinstance(name, str) or not name.strip():
            raise TopologyError(f"name({name!r}) on {self.node.label}: give a non-empty string, "
                                "e.g. name('split')")
        self.node.label = name
        return self

    def parallelismHint(self, n: int) -> Stream:
        """Run the operations since the last repartitioning in ``n`` partitions (Spark tasks)."""
        self.node.parallelism = check_parallelism(n, self.node.label)
        return self

    def toStream(self) -> Stream:
        """This stream (for symmetry with ``GroupedStream.toStream``)."""
        return self

    def applyAssembly(self, assembly: Assembly[Stream]) -> Stream:
        """``assembly.apply(self)``: a reusable piece of topology, e.g. ``FirstN``."""
        if isinstance(assembly, type) or not callable(getattr(assembly, "apply", None)):
            raise TopologyError(f"applyAssembly: expected an Assembly (an object with apply(stream)), got "
                                f"{describe(assembly)}; e.g. applyAssembly(FirstN(3, 'score'))")
        with self.topology._atomic():
            result = assembly.apply(self)
            if not isinstance(result, Stream):
                raise TopologyError(f"applyAssembly({type(assembly).__name__}): apply(stream) returned "
                                    f"{describe(result)}; it must return the Stream it built")
        return result

    # --- per-tuple operations ----------------------------------------------------------
    @overload
    def each(self, function: BaseFunction, function_fields: FieldsLike, /) -> Stream: ...
    @overload
    def each(self, input_fields: FieldsLike | None, function: BaseFunction, function_fields: FieldsLike,
             /) -> Stream: ...
    @overload
    def each(self, input_fields: FieldsLike | None, filter: BaseFilter, /) -> Stream: ...
    def each(self, *args: Any) -> Stream:
        """Run a Function (appending ``function_fields``) or a Filter on every tuple.

        Forms (Trident's): ``each(input_fields, function, function_fields)``,
        ``each(function, function_fields)`` and ``each(input_fields, filter)``. With no input
        fields the function sees an empty tuple, and what it emits is still appended to the
        whole tuple. With no output fields (``[]``, Java's ``new Fields()``) the function is run
        for its side effects: each ``emit`` passes the input tuple on (an emit with no values:
        ``collector.emit([])``), and a tuple it emits nothing for is dropped, as in Trident.
        Values emitted beyond the declared fields are kept by Trident where nothing can address
        them (no accessor, ``toString`` or operation after sees them); here they are dropped.

        Examples
        --------
        >>> stream.each(["value"], Split(), ["word"])        # doctest: +SKIP
        >>> stream.each(["word"], FilterNull())              # doctest: +SKIP
        >>> stream.each(Stamp(), ["stamp"])                  # doctest: +SKIP
        >>> stream.each(["alert"], DispatchAlert(), [])       # doctest: +SKIP
        """
        call = EACH.bind("each", args)
        operation = call["operation"]
        if "inputs" not in call and isinstance(operation, BaseFilter):
            raise TopologyError(
                f"each({type(operation).__name__}): a Filter needs its input fields, e.g. "
                "each(['word'], FilterNull()), or filter(f) to see every field")
        if "extra" in call:
            raise TopologyError(
                f"each({type(operation).__name__}, ...): with no input fields use each(function, "
                "output_fields); with input fields each(input_fields, function, output_fields)")
        inputs = call["inputs"] if "inputs" in call else Fields()
        return self._each("each", inputs, operation, call.get("outputs"))

    def _each(self, kind: str, input_fields: FieldsLike | None, operation: Any,
              function_fields: FieldsLike | None) -> Stream:
        shown = repr(operation) if isinstance(operation, CallableFilter) else type(operation).__name__
        label = f"{kind}({shown})"
        if isinstance(operation, BaseFilter):
            inputs = self._resolve(label, input_fields)
            if function_fields:
                raise TopologyError(
                    f"{label}: a Filter emits no fields; drop {list(as_fields(label, function_fields))}")
            return self._child(FilterNode(self.node.fields, label, [self.node], input_fields=inputs,
                                          filter=operation))
        if not isinstance(operation, BaseFunction):
            if isinstance(operation, AGGREGATOR_KINDS):
                hint = "aggregators go to aggregate(), partitionAggregate() or persistentAggregate()"
            elif isinstance(operation, QueryFunction):
                hint = "a QueryFunction goes to stateQuery(state, inputs, function, outputs)"
            elif callable(operation) and not isinstance(operation, type):
                hint = "for a plain callable use map(), flatMap() or filter()"
            else:
                hint = ("subclass BaseFunction (execute(tuple, collector)) or BaseFilter "
                        "(isKeep(tuple))")
            raise TopologyError(f"{label}: expected a BaseFunction or BaseFilter, got "
                                f"{describe(operation)}; {hint}")
        inputs = self._resolve(label, input_fields)
        # No output fields (Trident's ``new Fields()``): a Function for its side effects; each emit
        # (of any values: they have no field) passes the input tuple on, no emit drops it.
        if function_fields is None:
            raise TopologyError(
                f"{label}: a Function needs output fields, e.g. each(['value'], Split(), ['word']), or [] "
                "for a Function run for its side effects")
        out = as_fields(label, function_fields, "output field")
        check_outputs(label, out, self.node.fields, required=False)
        typed = output_fields(out, operation)
        node = EachNode(concat(self.node.fields, typed), label, [self.node], input_fields=inputs,
                        function=operation, function_fields=typed)
        return self._child(node)

    @overload
    def filter(self, filter: BaseFilter | Predicate, /) -> Stream: ...
    @overload
    def filter(self, input_fields: FieldsLike | None, filter: BaseFilter | Predicate, /) -> Stream: ...
    def filter(self, *args: Any) -> Stream:
        """Keep the tuples a Filter (or a plain predicate over the tuple) accepts.

        ``filter(f)`` sees every field; ``filter(["word"], f)`` only those.

        Examples
        --------
        >>> stream.filter(lambda t: t["n"] > 0)              # doctest: +SKIP
        >>> stream.filter(["word"], FilterNull())            # doctest: +SKIP
        """
        call = FILTER.bind("filter", args)
        fields, operation = call.get("inputs"), call["operation"]
        if not isinstance(operation, BaseFilter):
            if not callable(operation) or isinstance(operation, type | Operation):
                raise TopologyError(f"filter: expected a BaseFilter or a predicate (a callable taking the "
                                    f"tuple), got {describe(operation)}")
            operation = CallableFilter(operation)
        return self._each("filter", fields, operation, None)

    def map(self, function: MapFunction | Callable[[TridentTuple], Any],
            function_fields: FieldsLike | None = None) -> Stream:
        """One tuple in, one out: ``function`` returns the new values.

        Without ``function_fields`` the fields stay (with their types); with them the
        tuple is replaced by the new fields.
        """
        return self._map("map", function, function_fields, flat=False)

    def flatMap(self, function: FlatMapFunction | Callable[[TridentTuple], Iterable[Any]],
                function_fields: FieldsLike | None = None) -> Stream:
        """One tuple in, zero or more out: ``function`` returns a list of value lists."""
        return self._map("flatMap", function, function_fields, flat=True)

    def _map(self, kind: str, function: Any, function_fields: FieldsLike | None, flat: bool) -> Stream:
        expected: type[Operation] = FlatMapFunction if flat else MapFunction
        if not isinstance(function, expected):
            if not callable(function) or isinstance(function, type | Operation):
                raise TopologyError(f"{kind}: expected a {expected.__name__} or a callable taking the tuple, "
                                    f"got {describe(function)}")
            function = (CallableFlatMapFunction if flat else CallableMapFunction)(function)
        label = f"{kind}({type(function).__name__ if not hasattr(function, 'fn') else repr(function)})"
        if function_fields is None:
            fields, keeps = self.node.fields, True
        else:
            out = as_fields(label, function_fields, "output field")
            check_outputs(label, out)
            fields, keeps = output_fields(out, function), False
        return self._child(MapNode(fields, label, [self.node], function=function, flat=flat,
                                   keeps_fields=keeps))

    def peek(self, action: Consumer | Callable[[TridentTuple], Any]) -> Stream:
        """Call ``action`` on every tuple, on the executors; the stream passes on unchanged."""
        if not isinstance(action, Consumer):
            if not callable(action) or isinstance(action, type | Operation):
                raise TopologyError(f"peek: expected a Consumer or a callable taking the tuple, got "
                                    f"{describe(action)}")
            action = CallableConsumer(action)
        consumer = action
        return self._child(PeekNode(self.node.fields, f"peek({consumer!r})", [self.node],
                                    consumer=consumer))

    def project(self, fields: FieldsLike) -> Stream:
        """Keep only ``fields``, in that order."""
        kept = self._resolve("project", fields)
        if not kept:
            raise TopologyError(
                f"project: name at least one field to keep; the stream has {list(self.node.fields)}")
        return self._child(ProjectNode(kept, "project", [self.node]))

    # --- aggregations ------------------------------------------------------------------
    @overload
    def partitionAggregate(self, aggregator: AnyAggregator, function_fields: FieldsLike, /) -> Stream: ...
    @overload
    def partitionAggregate(self, input_fields: FieldsLike | None, aggregator: AnyAggregator,
                           function_fields: FieldsLike, /) -> Stream: ...
    def partitionAggregate(self, *args: Any) -> Stream:
        """Aggregate each partition of the batch; the output tuples replace the input.

        ``partitionAggregate([input_fields], aggregator, function_fields)``.

        Examples
        --------
        >>> stream.partitionAggregate(["n"], Sum(), ["sum"])   # doctest: +SKIP
        """
        spec = self._agg_spec("partitionAggregate", args)
        return self._aggregate([spec], Fields(), "partition")

    @overload
    def aggregate(self, aggregator: AnyAggregator, function_fields: FieldsLike, /) -> Stream: ...
    @overload
    def aggregate(self, input_fields: FieldsLike | None, aggregator: AnyAggregator,
                  function_fields: FieldsLike, /) -> Stream: ...
    def aggregate(self, *args: Any) -> Stream:
        """Aggregate the whole batch: ``aggregate([input_fields], aggregator, function_fields)``.

        A CombinerAggregator combines in each partition first, then once more on
        one partition; other aggregators see every tuple of the batch on one partition.

        Examples
        --------
        >>> stream.aggregate(Count(), ["count"])               # doctest: +SKIP
        """
        spec = self._agg_spec("aggregate", args)
        return self._aggregate([spec], Fields(), "batch")

    # --- windows (trident_spark.windowing) ----------------------------------------------
    @overload
    def tumblingWindow(self, window_count: int, store_factory: WindowsStoreFactoryLike,
                       input_fields: FieldsLike, aggregator: AnyAggregator, function_fields: FieldsLike, /, *,
                       timestamp_field: None = None, lateness: None = None) -> Stream: ...
    @overload
    def tumblingWindow(self, window_duration: Duration, store_factory: WindowsStoreFactoryLike,
                       input_fields: FieldsLike, aggregator: AnyAggregator, function_fields: FieldsLike, /, *,
                       timestamp_field: str | None = None, lateness: Duration | None = None) -> Stream: ...
    def tumblingWindow(self, size: int | Duration, *args: Any, timestamp_field: str | None = None,
                       lateness: Duration | None = None) -> Stream:
        """Trident's tumbling window: every ``n`` tuples, or every ``Duration``, each partition's
        tuples of that window through ``aggregator``; emits the aggregator's fields only.

        ``tumblingWindow(n | Duration, store_factory, input_fields, aggregator, function_fields)``;
        ``timestamp_field=``/``lateness=``: event time (duration windows). See docs/windows.md.

        Examples
        --------
        >>> stream.tumblingWindow(100, factory, ["word"], Count(), ["count"])   # doctest: +SKIP
        """
        from trident_spark.windowing.builder import tumbling_config

        config = tumbling_config("tumblingWindow", size)
        return self._window("tumblingWindow", config, args, timestamp_field, lateness)

    @overload
    def slidingWindow(self, window_count: int, sliding_count: int, store_factory: WindowsStoreFactoryLike,
                      input_fields: FieldsLike, aggregator: AnyAggregator, function_fields: FieldsLike, /, *,
                      timestamp_field: None = None, lateness: None = None) -> Stream: ...
    @overload
    def slidingWindow(self, window_duration: Duration, sliding_interval: Duration,
                      store_factory: WindowsStoreFactoryLike, input_fields: FieldsLike,
                      aggregator: AnyAggregator, function_fields: FieldsLike, /, *,
                      timestamp_field: str | None = None,
                      lateness: Duration | None = None) -> Stream: ...
    def slidingWindow(self, size: int | Duration, slide: int | Duration, *args: Any,
                      timestamp_field: str | None = None, lateness: Duration | None = None) -> Stream:
        """Trident's sliding window: the last ``n`` tuples (or fewer) every ``s`` tuples, or the
        last ``Duration`` every ``Duration``, through ``aggregator``.

        ``slidingWindow(n, s | d, s, store_factory, input_fields, aggregator, function_fields)``.

        Examples
        --------
        >>> stream.slidingWindow(100, 10, factory, ["x"], Sum(), ["sum"])   # doctest: +SKIP
        """
        from trident_spark.windowing.builder import sliding_config

        config = sliding_config("slidingWindow", size, slide)
        return self._window("slidingWindow", config, args, timestamp_field, lateness)

    @overload
    def window(self, config: WindowConfig, store_factory: WindowsStoreFactoryLike, input_fields: FieldsLike,
               aggregator: AnyAggregator, function_fields: FieldsLike, /, *,
               timestamp_field: str | None = None, lateness: Duration | None = None) -> Stream: ...
    @overload
    def window(self, config: WindowConfig, input_fields: FieldsLike, aggregator: AnyAggregator,
               function_fields: FieldsLike, /, *, timestamp_field: str | None = None,
               lateness: Duration | None = None) -> Stream: ...
    def window(self, config: WindowConfig, *args: Any, timestamp_field: str | None = None,
               lateness: Duration | None = None) -> Stream:
        """A window of ``config`` (``TumblingCountWindow.of(n)``, ...): ``window(config,
        [store_factory,] input_fields, aggregator, function_fields)``; no store factory: in memory.

        Examples
        --------
        >>> stream.window(TumblingCountWindow.of(1000), ["x"], Count(), ["n"])   # doctest: +SKIP
        """
        return self._window("window", config, args, timestamp_field, lateness)

    def _window(self, kind: str, config: object, args: tuple[Any, ...], timestamp_field: str | None,
                lateness: Duration | None) -> Stream:
        from trident_spark.windowing.builder import bind_window_args, window_node

        factory, inputs, aggregator, outputs = bind_window_args(kind, args)
        return self._child(window_node(self.node, kind, config, factory, inputs, aggregator, outputs,
                                       timestamp_field, lateness))

    def chainedAgg(self) -> ChainedAggregatorDeclarer:
        """Several aggregators in one pass: ``.chainedAgg().aggregate(...)...chainEnd()``."""
        from trident_spark.grouped import ChainedAggregatorDeclarer

        return ChainedAggregatorDeclarer(self, Fields())

    def groupBy(self, fields: FieldsLike) -> GroupedStream:
        """Group the batch's tuples by ``fields`` for ``aggregate``, ``persistentAggregate`` ..."""
        from trident_spark.grouped import GroupedStream

        group = self._resolve("groupBy", fields)
        if not group:
            raise TopologyError("groupBy: name at least one field to group by")
        return GroupedStream(self, group)

    @overload
    def minBy(self, field: str, /) -> Stream: ...
    @overload
    def minBy(self, field: str, comparator: Comparison, /) -> Stream: ...
    @overload
    def minBy(self, field: str, key: KeyFunction, /) -> Stream: ...
    @overload
    def minBy(self, field: str, comparator: ComparatorObject, /) -> Stream: ...
    @overload
    def minBy(self, field: str, /, *, key: KeyFunction) -> Stream: ...
    @overload
    def minBy(self, field: str, /, *, comparator: Comparison) -> Stream: ...
    @overload
    def minBy(self, field: str, /, *, comparator: ComparatorObject) -> Stream: ...
    def minBy(self, field: str, order: Comparator | KeyFunction | None = None, *,
              key: KeyFunction | None = None, comparator: Comparator | None = None) -> Stream:
        """Per partition, the whole tuple with the smallest ``field`` (Trident's ``minBy``).

        ``order`` (or ``comparator=``) may be a Java-style ``compare(a, b) -> int`` over the
        field's values, or an object with such a ``compare`` method; a one-argument ``order``
        (or ``key=``) maps each value to what is compared. Ties go to the later tuple and
        None values are skipped, as in Trident.

        Examples
        --------
        >>> stream.minBy("speed")                                          # doctest: +SKIP
        >>> stream.minBy("name", lambda a, b: len(a) - len(b))             # doctest: +SKIP
        """
        return self._compare_by("minBy", field, order, key, comparator)

    @overload
    def maxBy(self, field: str, /) -> Stream: ...
    @overload
    def maxBy(self, field: str, comparator: Comparison, /) -> Stream: ...
    @overload
    def maxBy(self, field: str, key: KeyFunction, /) -> Stream: ...
    @overload
    def maxBy(self, field: str, comparator: ComparatorObject, /) -> Stream: ...
    @overload
    def maxBy(self, field: str, /, *, key: KeyFunction) -> Stream: ...
    @overload
    def maxBy(self, field: str, /, *, comparator: Comparison) -> Stream: ...
    @overload
    def maxBy(self, field: str, /, *, comparator: ComparatorObject) -> Stream: ...
    def maxBy(self, field: str, order: Comparator | KeyFunction | None = None, *,
              key: KeyFunction | None = None, comparator: Comparator | None = None) -> Stream:
        """Per partition, the whole tuple with the largest ``field`` (see :meth:`minBy`).

        Examples
        --------
        >>> stream.maxBy("speed", key=abs)                                 # doctest: +SKIP
        """
        return self._compare_by("maxBy", field, order, key, comparator)

    @overload
    def min(self, comparator: Callable[[TridentTuple, TridentTuple], int], /) -> Stream: ...
    @overload
    def min(self, comparator: ComparatorObject, /) -> Stream: ...
    def min(self, comparator: Comparator) -> Stream:
        """Per partition, the smallest tuple by ``comparator(a, b) -> int`` on whole TridentTuples
        (Trident's ``min(Comparator<TridentTuple>)``); emits the whole tuple, ties to the later.

        Examples
        --------
        >>> stream.min(lambda a, b: a.getInteger(1) - b.getInteger(1))     # doctest: +SKIP
        """
        return self._compare_all("min", comparator)

    @overload
    def max(self, comparator: Callable[[TridentTuple, TridentTuple], int], /) -> Stream: ...
    @overload
    def max(self, comparator: ComparatorObject, /) -> Stream: ...
    def max(self, comparator: Comparator) -> Stream:
        """Per partition, the largest tuple by ``comparator(a, b) -> int`` (see :meth:`min`).

        Examples
        --------
        >>> stream.max(SpeedComparator())                                  # doctest: +SKIP
        """
        return self._compare_all("max", comparator)

    def _compare_all(self, kind: str, comparator: Any) -> Stream:
        from trident_spark.builtin.aggregators import Max, Min

        check_tuple_comparator(kind, comparator)
        aggregator = (Min if kind == "min" else Max)(comparator=comparator)
        fields = self.node.fields
        stream = self._aggregate([AggSpec(fields, aggregator, fields)], Fields(), "partition", check=False)
        stream.node.label = f"{kind}({callable_name(comparator)})"
        return stream

    def _compare_by(self, kind: str, field: str, order: Any, key: Any, comparator: Any) -> Stream:
        from trident_spark.builtin.aggregators import Max, Min

        label, key, comparator = bind_order(kind, field, order, key, comparator)
        self._resolve(label, [field])
        kind_class = Min if kind == "minBy" else Max
        aggregator = kind_class(field, key=key, comparator=comparator)
        fields = self.node.fields
        stream = self._aggregate([AggSpec(fields, aggregator, fields)], Fields(), "partition",
                                 check=False)
        stream.node.label = label
        return stream

    def _agg_spec(self, kind: str, args: tuple[Any, ...], prefix: str = "") -> AggSpec:
        """One aggregator's spec; ``prefix`` ("chainedAgg().") says where it was declared."""
        call = AGGREGATE.bind(kind, args, prefix)
        inputs, aggregator, outputs = call.get("inputs"), call["operation"], call["outputs"]
        label = f"{prefix}{kind}({type(aggregator).__name__})"
        if not isinstance(aggregator, AGGREGATOR_KINDS):
            hint = ("; a Function goes to each()" if isinstance(aggregator, BaseFunction)
                    else "; e.g. Count(), Sum() or a subclass of CombinerAggregator")
            raise TopologyError(f"{label}: expected an Aggregator, CombinerAggregator or "
                                f"ReducerAggregator, got {describe(aggregator)}{hint}")
        fields = self._resolve(label, inputs)
        out = as_fields(label, outputs, "output field")
        check_outputs(label, out)
        return AggSpec(fields, aggregator, aggregator_fields(out, aggregator, fields))

    def _aggregate(self, specs: list[AggSpec], group: Fields, scope: str, check: bool = True) -> Stream:
        kind = "partitionAggregate" if scope == "partition" else "aggregate"
        label = f"{kind}({', '.join(s.label for s in specs)})"
        outputs = concat(*(s.function_fields for s in specs))
        if check:
            check_outputs(label, outputs, group if group else None, existing_are_group=True)
        node = AggregateNode(concat(group, outputs), label, [self.node], group_fields=group,
                             specs=specs, scope=AggregationScope(scope))
        return self._child(node)

    # --- repartitioning ----------------------------------------------------------------
    def _repartition(self, kind: str, keys: Fields | None = None) -> Stream:
        label = kind if keys is None else f"{kind}({', '.join(keys)})"
        return self._child(RepartitionNode(self.node.fields, label, [self.node], kind=RepartitionKind(kind),
                                           key_fields=keys or Fields()))

    def shuffle(self) -> Stream:
        """Spread tuples round-robin over the next stage's partitions."""
        return self._repartition("shuffle")

    def partitionBy(self, fields: FieldsLike) -> Stream:
        """Send tuples with equal ``fields`` to the same partition (hash partitioning)."""
        keys = self._resolve("partitionBy", fields)
        if not keys:
            raise TopologyError("partitionBy: name at least one field")
        return self._repartition("partitionBy", keys)

    def global_(self) -> Stream:
        """Every tuple of the batch to one partition (Trident's ``global()``)."""
        return self._repartition("global")

    def batchGlobal(self) -> Stream:
        """Each batch's tuples to one partition (in Spark, the same as ``global_``)."""
        return self._repartition("batchGlobal")

    def broadcast(self) -> Stream:
        """Every tuple to every partition of the next stage."""
        return self._repartition("broadcast")

    def localOrShuffle(self) -> Stream:
        """Keep tuples where they are (Spark's stages are already local)."""
        return self._repartition("localOrShuffle")

    def identityPartition(self) -> Stream:
        """Keep the partitioning: partition ``i`` goes on as partition ``i`` (Trident's
        ``identityPartition``). With a ``parallelismHint(n)`` after it, partition ``i`` goes to
        ``i mod n``.

        Examples
        --------
        >>> stream.identityPartition().each(["x"], Tag(), ["tag"])        # doctest: +SKIP
        """
        return self._repartition("identity")

    def partition(self, grouping: Callable[[TridentTuple, int], int | Sequence[int]]) -> Stream:
        """Send each tuple where ``grouping(tuple, num_partitions)`` says: a partition index from
        0 to ``num_partitions - 1``, or a list of them to copy the tuple to each (Trident's
        ``partition(CustomStreamGrouping)``). ``num_partitions`` is the next stage's
        ``parallelismHint``, else Spark's default parallelism. An index out of range fails the
        batch, naming this operation and the tuple.

        Examples
        --------
        >>> stream.partition(lambda t, n: t["user_id"] % n).parallelismHint(4)   # doctest: +SKIP
        """
        if isinstance(grouping, type) or not callable(grouping):
            raise TopologyError(f"partition: expected a grouping, a callable grouping(tuple, num_partitions) "
                                f"-> partition index, got {describe(grouping)}; e.g. "
                                "partition(lambda t, n: hash(t['user']) % n)")
        label = f"partition({callable_name(grouping)})"
        if arity(grouping) not in (2, None):
            raise TopologyError(f"{label}: the grouping is called as grouping(tuple, num_partitions); "
                                f"{describe(grouping)} does not take two arguments")
        return self._child(RepartitionNode(self.node.fields, label, [self.node],
                                           kind=RepartitionKind.CUSTOM, grouping=grouping))

    # --- state -------------------------------------------------------------------------
    @overload
    def stateQuery(self, state: TridentState, function: QueryFunction[Any, Any], function_fields: FieldsLike,
                   /) -> Stream: ...
    @overload
    def stateQuery(self, state: TridentState, input_fields: FieldsLike | None,
                   function: QueryFunction[Any, Any], function_fields: FieldsLike, /) -> Stream: ...
    def stateQuery(self, state: TridentState, *args: Any) -> Stream:
        """Read ``state`` for each tuple: ``stateQuery(state, [input_fields], QueryFunction,
        function_fields)``.

        Examples
        --------
        >>> stream.stateQuery(counts, ["word"], MapGet(), ["count"])      # doctest: +SKIP
        """
        from trident_spark.trident_state import TridentState

        call = STATE_QUERY.bind("stateQuery", args)
        inputs, function, outputs = call.get("inputs"), call["operation"], call["outputs"]
        label = f"stateQuery({type(function).__name__})"
        if not isinstance(state, TridentState):
            raise TopologyError(
                f"{label}: expected a TridentState, got {describe(state)}; pass what persistentAggregate "
                "or partitionPersist returned, or topology.newStaticState(factory) for a state this "
                "topology only reads")
        if state.topology is not self.topology:
            raise TopologyError(
                f"{label}: state {state.describe()} belongs to another TridentTopology; "
                "query a state of this topology (persistentAggregate, partitionPersist or newStaticState)")
        if not isinstance(function, QueryFunction):
            raise TopologyError(
                f"{label}: expected a QueryFunction such as MapGet(), got {describe(function)}; subclass "
                "QueryFunction (batchRetrieve(state, tuples), execute(tuple, result, collector))")
        fields = self._resolve(label, inputs)
        out = as_fields(label, outputs, "output field")
        check_outputs(label, out, self.node.fields)
        typed = _state_value_typed(output_fields(out, function), function, state)
        node = StateQueryNode(concat(self.node.fields, typed), label, [self.node], state=state,
                              input_fields=fields, function=function, function_fields=typed)
        return self._child(node)

    @overload
    def partitionPersist(self, state_factory: StateFactoryLike, updater: StateUpdater[Any],
                         function_fields: FieldsLike | None = None, /) -> TridentState: ...
    @overload
    def partitionPersist(self, state_factory: StateFactoryLike, input_fields: FieldsLike | None,
                         updater: StateUpdater[Any], function_fields: FieldsLike | None = None,
                         /) -> TridentState: ...
    def partitionPersist(self, state_factory: StateFactoryLike, *args: Any) -> TridentState:
        """Hand each partition's tuples to ``updater`` with the state, once per batch:
        ``partitionPersist(state, [input_fields], StateUpdater[, function_fields])``.

        Examples
        --------
        >>> stream.partitionPersist(factory, ["word", "count"], Updater())    # doctest: +SKIP
        """
        call = PARTITION_PERSIST.bind("partitionPersist", args)
        inputs, updater, outputs = call.get("inputs"), call["operation"], call.get("outputs")
        label = f"partitionPersist({type(updater).__name__})"
        check_state_factory(label, state_factory)
        if not isinstance(updater, StateUpdater):
            hint = ("; to fold an aggregator into a map state use persistentAggregate"
                    if isinstance(updater, AGGREGATOR_KINDS) else "")
            raise TopologyError(f"{label}: expected a StateUpdater, got {describe(updater)}; subclass "
                                f"StateUpdater (updateState(state, tuples, collector)){hint}")
        fields = self._resolve(label, inputs)
        out = as_fields(label, outputs, "output field")
        check_outputs(label, out, required=False)
        node = PersistNode(output_fields(out, updater), label, [self.node], state=state_factory,
                           input_fields=fields, updater=updater)
        return self.topology._persist(node)

    @overload
    def persistentAggregate(self, state_factory: StateFactoryLike, aggregator: MapAggregator,
                            function_fields: FieldsLike, /) -> TridentState: ...
    @overload
    def persistentAggregate(self, state_factory: StateFactoryLike, input_fields: FieldsLike | None,
                            aggregator: MapAggregator, function_fields: FieldsLike, /) -> TridentState: ...
    def persistentAggregate(self, state_factory: StateFactoryLike, *args: Any) -> TridentState:
        """Aggregate each batch and fold the result into ``state`` exactly once per txid.

        ``persistentAggregate(state, [input_fields], CombinerAggregator | ReducerAggregator,
        function_fields)``; ungrouped, the value is kept under one global key.

        Examples
        --------
        >>> stream.persistentAggregate(MemoryState.opaque(name="n"), ["n"], Sum(), ["total"]) # doctest: +SKIP
        """
        with self.topology._atomic():
            return _persistent_aggregate(self, Fields(), state_factory, args)

    # --- results -----------------------------------------------------------------------
    def collect(self) -> CollectSink:
        """Gather this stream's tuples on the driver after each batch (``sink.tuples``)."""
        sink = CollectSink(self.node.fields)
        self.topology._add_sink(self.node, sink)
        return sink

    def foreachBatch(self, function: Callable[[Any, int], object],
                     types: Mapping[str, str] | None = None) -> Stream:
        """Hand each batch's DataFrame of this stream and its txid to ``function(df, txid)``, on the
        driver: write it to any Spark sink (parquet, Spark's kafka format, a table, noop).

        Spark's ``foreachBatch`` shape, with Trident's txid as the batch id. It runs before the
        batch commits; if it raises, the batch fails. A replayed batch calls it again with the
        same txid, so a sink that writes per txid (``mode("overwrite")`` into a directory of the
        txid) is replay-safe. Fields declared with a Spark SQL type keep it; a field that carries
        any Python value becomes a column of the type ``types`` gives it, else ``string``.

        Parameters
        ----------
        function : callable
            ``function(df, txid)``: a pyspark DataFrame with the stream's fields, and the batch's txid.
        types : dict of str to str, optional
            Spark SQL types for untyped fields (``{"count": "bigint"}``).

        Returns
        -------
        Stream
            This stream (the output is a branch of it).

        Examples
        --------
        >>> from trident_spark import TridentTopology
        >>> from trident_spark.spout import FeederBatchSpout
        >>> stream = TridentTopology().newStream("s", FeederBatchSpout(["word"]))
        >>> stream.foreachBatch(lambda df, txid: df.write.mode("overwrite").parquet(f"/tmp/out/txid={txid}"),
        ...                     types={"word": "string"}) is stream
        True
        """
        label = f"foreachBatch({callable_name(function)})"
        if arity(function) not in (2, None):
            raise TopologyError(f"{label}: expected a function of (df, txid), got {describe(function)}; "
                                "e.g. foreachBatch(lambda df, txid: df.write.parquet(f'/out/txid={txid}'))")
        wanted = dict(types or {})
        unknown = [name for name in wanted if name not in self.node.fields]
        if unknown:
            raise TopologyError(f"{label}: types= names {unknown}, which the stream does not have; its "
                                f"fields are {list(self.node.fields)}")
        self.topology._add_sink(self.node, DataFrameSink(self.node.fields, function, wanted))
        return self


def _persistent_aggregate(stream: Stream, group: Fields, state_factory: Any,
                          args: Sequence[Any]) -> TridentState:
    call = PERSISTENT_AGGREGATE.bind("persistentAggregate", args)
    inputs, aggregator, outputs = call.get("inputs"), call["operation"], call["outputs"]
    label = f"persistentAggregate({type(aggregator).__name__})"
    check_state_factory(label, state_factory)
    if not isinstance(aggregator, CombinerAggregator | ReducerAggregator):
        if isinstance(aggregator, Aggregator):
            hint = ("; a map state keeps one value per key, which only a CombinerAggregator or "
                    "ReducerAggregator can update: implement one of those, or aggregate() first and "
                    "partitionPersist() the result")
        else:
            hint = "; e.g. Count() or Sum()"
        raise TopologyError(
            f"{label}: expected a CombinerAggregator or ReducerAggregator, got {describe(aggregator)}{hint}")
    fields = stream._resolve(label, inputs)
    out = as_fields(label, outputs, "output field")
    check_outputs(label, out, group if group else None, existing_are_group=True)
    if len(out) != 1:
        raise TopologyError(f"{label}: a map state keeps one value per key; declare one output field, "
                            f"got {list(out)}")
    typed = aggregator_fields(out, aggregator, fields)
    from trident_spark.builtin.updaters import MapCombinerAggStateUpdater, MapReducerAggStateUpdater

    updater: StateUpdater[Any]
    if isinstance(aggregator, CombinerAggregator):
        # Trident: aggregate the batch per group first, then fold into the state.
        source: Stream = stream._aggregate([AggSpec(fields, aggregator, typed)], group, "batch")
        persisted = concat(group, typed)
        updater = MapCombinerAggStateUpdater(aggregator, group)
    else:
        source = stream.partitionBy(group) if group else stream.global_()
        # Trident's fieldsUnion: the group fields, then the inputs not already among them
        persisted = concat(group, Fields(*(f for f in fields if f not in group), types=fields.types))
        updater = MapReducerAggStateUpdater(aggregator, group, fields)
    node = PersistNode(concat(group, typed), label, [source.node], state=state_factory,
                       input_fields=persisted, updater=updater, group_fields=group, aggregator=aggregator)
    return stream.topology._persist(node)


def _state_value_typed(out: Fields, function: Any, state: TridentState) -> Fields:
    """Output fields typed like what the state persists, unless they declare a type: the value's
    type for a function returning values (MapGet, SnapshotGet: one field), the group fields'
    and the value's for one returning stored tuples (TupleCollectionGet)."""
    if state.node is None:
        return out
    persisted = state.node.fields
    if getattr(function, "returns_state_value", False) and len(out) == 1:
        source = [persisted[-1]]
    elif getattr(function, "returns_state_tuples", False) and len(out) == len(persisted):
        source = list(persisted)
    else:
        return out
    types = {name: (out.types[name] if name in out.declared_types else persisted.types[origin])
             for name, origin in zip(out, source, strict=True)}
    return Fields(*out, types=types, declared=out.declared_types)
