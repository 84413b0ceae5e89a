"""TridentTopology: where streams start, how they combine, and how they run on Spark."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, overload

from trident_spark import checkpoint_files
from trident_spark.errors import TopologyError, check_int
from trident_spark.fields import Fields
from trident_spark.graph import JoinNode, MergeNode, MultiReduceNode, Node, PersistNode, SpoutNode, spouts_of
from trident_spark.joins import JoinOutFieldsMode, JoinType
from trident_spark.operation import GroupedMultiReducer, MultiReducer
from trident_spark.runner import (
    DEFAULT_DRPC_PATH,
    DEFAULT_MAX_BATCH_RETRIES,
    DEFAULT_OUTAGE_BUDGET,
    DEFAULT_PROGRESS_HISTORY,
    DEFAULT_RETRY_DELAY,
    DEFAULT_TRIGGER,
    PlannedQuery,
    ProgressCallback,
    RunHandle,
    RunSettings,
    installed_runner,
)
from trident_spark.shapes import check_shape, node_operations
from trident_spark.signatures import JOIN_LISTS, JOIN_PAIRS, MULTI_REDUCE, JoinHow, JoinMode, StateFactoryLike
from trident_spark.sink import DRPCResultSink, Sink
from trident_spark.stream import Stream
from trident_spark.trident_state import TridentState
from trident_spark.validation import (
    FieldsLike,
    as_fields,
    check_outputs,
    check_state_factory,
    describe,
    resolve_inputs,
)

if TYPE_CHECKING:
    from trident_spark.grouped import GroupedStream

_STREAM_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_INNER, _OUTER = JoinType.INNER, JoinType.OUTER
#: ``run(drpc_path=)``: how DRPC requests are answered (see ``run``).
DRPC_PATHS = ("auto", "spark", "driver")
JOIN_TYPES = {"inner": (_INNER, _INNER), "outer": (_OUTER, _OUTER), "full": (_OUTER, _OUTER),
              "left": (_INNER, _OUTER), "right": (_OUTER, _INNER)}


class EngineSpout(Protocol):
    """A spout the engine reads as it is (``KafkaSpout``, ``FeederBatchSpout``, ``FixedBatchSpout``,
    any ``trident_spark.spout.Spout``): it declares its output fields."""

    @property
    def fields(self) -> Sequence[str]: ...


class TridentSpout(Protocol):
    """A spout in Trident's shapes (``IBatchSpout``, ``IPartitionedTridentSpout``,
    ``IOpaquePartitionedTridentSpout``): it turns itself into an engine spout for a stream."""

    def __trident_spout__(self, stream: str) -> Any: ...


#: What ``newStream`` accepts: a type checker flags anything else (``newStream("s", 42)``).
SpoutLike: TypeAlias = EngineSpout | TridentSpout


class TridentTopology:
    """A set of streams to run together.

    Examples
    --------
    >>> from trident_spark.spout import KafkaSpout
    >>> topology = TridentTopology()
    >>> stream = topology.newStream("sentences", KafkaSpout("127.0.0.1:9092", ["sentences"]))
    >>> stream.getOutputFields()
    Fields('key', 'value', 'topic', 'partition', 'offset', 'timestamp')
    """

    def __init__(self) -> None:
        self._spouts: dict[str, SpoutNode] = {}
        self._nodes: list[Node] = []
        self._sinks: list[tuple[Node, Sink]] = []
        self._states: list[TridentState] = []
        self._drpc: dict[str, SpoutNode] = {}

    # --- building ----------------------------------------------------------------------
    def newStream(self, name: str, spout: SpoutLike) -> Stream:
        """A stream of the batches ``spout`` emits; ``name`` names its Spark query and checkpoint."""
        if not _STREAM_NAME.match(name or ""):
            raise TopologyError(f"newStream({name!r}): use letters, digits, '_', '-' or '.' in stream names")
        if name in self._spouts:
            raise TopologyError(f"newStream({name!r}): a stream with this name already exists")
        as_spout = getattr(spout, "__trident_spout__", None)
        if callable(as_spout):  # a spout of the user's own (IBatchSpout, ...), wrapped as a Spout
            spout = as_spout(name)
        fields = getattr(spout, "fields", None)
        if not fields:
            raise TopologyError(f"newStream({name!r}): {spout!r} is not a spout (it has no fields)")
        node = SpoutNode(Fields.of(fields) if isinstance(fields, Fields) else Fields(*fields),
                         f"newStream({name})", stream_name=name, spout=spout)
        self._spouts[name] = node
        self._add(node)
        return Stream(self, node)

    def newDRPCStream(self, function: str, drpc: Any = None) -> Stream:
        """A stream of the requests of DRPC function ``function``: one field, ``args``.

        Each request is its own batch (Trident's). What reaches the end of this stream's part
        of the topology (the last operation added to it) for that batch is the request's answer:
        a JSON list of the result tuples' values (``'[[5]]'``; ``'[]'`` for none). A batch that
        fails fails the request at its caller (``DRPCExecutionException``); the stream goes on.

        Parameters
        ----------
        function : str
            The DRPC function name callers ask (``drpc.execute(function, args)``): letters,
            digits, ``_``, ``-``, ``.``. The stream is named ``drpc-<function>``.
        drpc : LocalDRPC, DRPCClient, DRPCServer, str or None
            Where the requests come from: a :class:`~trident_spark.drpc.LocalDRPC`, a running
            server (its ``DRPCClient``, or ``"host:port"``), or None: the run's server
            (``run(drpc="host:port")``, else one ``run()`` starts, on 127.0.0.1:3772 if free).

        Examples
        --------
        >>> from trident_spark.drpc import LocalDRPC
        >>> with LocalDRPC() as drpc:
        ...     TridentTopology().newDRPCStream("words", drpc).getOutputFields()
        Fields('args')
        """
        if not isinstance(function, str) or not _STREAM_NAME.match(function):
            raise TopologyError(f"newDRPCStream({function!r}): name the function with letters, digits, '_', "
                                "'-' or '.'")
        if function in self._drpc:
            raise TopologyError(f"newDRPCStream({function!r}): this topology already serves DRPC function "
                                f"{function!r}; serve each function from one DRPC stream")
        stream = self.newStream(f"drpc-{function}", installed_runner().drpc_spout(function, drpc))
        assert isinstance(stream.node, SpoutNode)
        self._drpc[function] = stream.node
        return stream

    @overload
    def merge(self, output_fields: Fields, /, *streams: Stream | Sequence[Stream]) -> Stream: ...
    @overload
    def merge(self, *streams: Stream | Sequence[Stream]) -> Stream: ...
    def merge(self, *args: Fields | Stream | Sequence[Stream]) -> Stream:
        """The union of ``streams`` within each batch.

        ``merge(s1, s2, ...)`` or ``merge([s1, s2])``: the output fields are the first stream's.
        ``merge(Fields(["a", "b"]), s1, s2)`` (Trident's ``merge(Fields, streams)``): the tuples
        pass as they are, renamed to the given fields (a type declared there, ``"n:bigint"``,
        applies). Every stream needs as many fields as the output has. Streams of different
        spouts merge into one Spark query, so they share batch ids.

        Examples
        --------
        >>> topology = TridentTopology()                                   # doctest: +SKIP
        >>> merged = topology.merge(Fields("word"), words, names)          # doctest: +SKIP
        >>> merged.getOutputFields()                                       # doctest: +SKIP
        Fields('word')
        """
        renamed: Fields | None = None
        rest: tuple[Any, ...] = args
        if args and isinstance(args[0], Fields):
            renamed, rest = args[0], args[1:]
            if not renamed:
                raise TopologyError("merge(Fields, streams): the output Fields are empty; name one field "
                                    "per field of the streams, e.g. merge(Fields('word'), s1, s2)")
            check_outputs("merge", renamed)
        label = "merge" if renamed is None else f"merge({', '.join(renamed)})"
        inputs = self._streams(label, rest)
        first = inputs[0].getOutputFields()
        expected = len(first) if renamed is None else len(renamed)
        for i, stream in enumerate(inputs):
            found = stream.getOutputFields()
            if len(found) == expected:
                continue
            if renamed is None:
                raise TopologyError(
                    f"merge: stream {i}{_origin(stream)} has {len(found)} fields {list(found)} but stream "
                    f"0{_origin(inputs[0])} has {len(first)} {list(first)}; project them to the same "
                    "number of fields first (the merged stream takes stream 0's field names)")
            raise TopologyError(
                f"{label}: stream {i}{_origin(stream)} has {len(found)} fields {list(found)} but the "
                f"output Fields name {expected} {list(renamed)}; each tuple passes as it is, so give "
                "one output name per field (or project the streams first)")
        if renamed is None:
            fields = first
        else:
            types = {new: renamed.declared_types.get(new, first.types[old])
                     for new, old in zip(renamed, first, strict=True)}
            fields = Fields(*renamed, types=types, declared=renamed.declared_types)
        node = MergeNode(fields, label, [s.node for s in inputs])
        self._add(node)
        return Stream(self, node)

    @overload
    def multiReduce(self, streams: Sequence[Stream], reducer: MultiReducer[Any], output_fields: FieldsLike,
                    /) -> Stream: ...
    @overload
    def multiReduce(self, streams: Sequence[GroupedStream], reducer: GroupedMultiReducer[Any],
                    output_fields: FieldsLike, /) -> Stream: ...
    @overload
    def multiReduce(self, input_fields: Sequence[FieldsLike | None], streams: Sequence[Stream],
                    reducer: MultiReducer[Any], output_fields: FieldsLike, /) -> Stream: ...
    @overload
    def multiReduce(self, input_fields: Sequence[FieldsLike | None], streams: Sequence[GroupedStream],
                    reducer: GroupedMultiReducer[Any], output_fields: FieldsLike, /) -> Stream: ...
    @overload
    def multiReduce(self, stream1: Stream, stream2: Stream, reducer: MultiReducer[Any],
                    output_fields: FieldsLike, /) -> Stream: ...
    @overload
    def multiReduce(self, stream1: GroupedStream, stream2: GroupedStream,
                    reducer: GroupedMultiReducer[Any], output_fields: FieldsLike, /) -> Stream: ...
    @overload
    def multiReduce(self, input_fields1: FieldsLike | None, stream1: Stream, input_fields2: FieldsLike | None,
                    stream2: Stream, reducer: MultiReducer[Any], output_fields: FieldsLike, /) -> Stream: ...
    @overload
    def multiReduce(self, input_fields1: FieldsLike | None, stream1: GroupedStream,
                    input_fields2: FieldsLike | None, stream2: GroupedStream,
                    reducer: GroupedMultiReducer[Any], output_fields: FieldsLike, /) -> Stream: ...
    def multiReduce(self, *args: Any) -> Stream:
        """Per batch, hand the tuples of several streams to one reducer (Trident's ``multiReduce``).

        Forms: ``multiReduce([s1, s2], reducer, out)``, ``multiReduce(s1, s2, reducer, out)``, and
        with the fields each stream hands over, ``multiReduce([f1, f2], [s1, s2], reducer, out)``
        or ``multiReduce(f1, s1, f2, s2, reducer, out)`` (default: all of a stream's fields).

        * Streams and a :class:`~trident_spark.operation.MultiReducer`: every tuple of the batch,
          of every stream, goes to one reducer: ``init(collector)``, then ``execute(state,
          stream_index, tuple, collector)`` per tuple, ``complete(state, collector)``; also
          for a batch with no tuples. ``out`` names what it emits.
        * GroupedStreams (``s.groupBy(...)``, the same number of group fields each) and a
          :class:`~trident_spark.operation.GroupedMultiReducer`: one reducer state per group,
          tuples of equal group values meeting whatever stream they come from. The output is
          the group values followed by what the reducer emits, and ``out`` names it all (as in
          Trident, where ``join`` is such a reducer): ``["key", "a", "b"]`` for one group
          field and two emitted values.

        Examples
        --------
        >>> counts = topology.multiReduce([clicks, views], CountBoth(), ["clicks", "views"])  # doctest: +SKIP
        """
        from trident_spark.grouped import GroupedStream

        call = MULTI_REDUCE.bind("multiReduce", args)
        reducer, out = call["operation"], call["outputs"]
        given = list(call["streams"]) if "streams" in call else [call["stream1"], call["stream2"]]
        fields_given = (list(call["inputs"]) if "inputs" in call
                        else [call["inputs1"], call["inputs2"]] if "inputs1" in call else None)
        label = f"multiReduce({type(reducer).__name__})"
        grouped = [isinstance(s, GroupedStream) for s in given]
        if any(grouped) and not all(grouped):
            raise TopologyError(f"{label}: give only Streams (for a MultiReducer) or only GroupedStreams "
                                "(for a GroupedMultiReducer), not both; group every stream, e.g. "
                                "s.groupBy(['key'])")
        is_grouped = bool(given) and all(grouped)
        wanted: type = GroupedMultiReducer if is_grouped else MultiReducer
        if not isinstance(reducer, wanted):
            other = "GroupedStreams" if is_grouped else "Streams"
            if isinstance(reducer, GroupedMultiReducer):
                hint = "; group the streams (s.groupBy([...])) for a GroupedMultiReducer"
            elif isinstance(reducer, MultiReducer):
                hint = "; a MultiReducer takes the streams ungrouped (drop the groupBy)"
            else:
                hint = "; subclass MultiReducer or GroupedMultiReducer (trident_spark.operation)"
            raise TopologyError(f"{label}: {other} need a {wanted.__name__}, got {describe(reducer)}{hint}")
        streams = self._streams(label, [g.toStream() if isinstance(g, GroupedStream) else g for g in given])
        groups = [g.getGroupFields() if isinstance(g, GroupedStream) else Fields() for g in given]
        if fields_given is not None and len(fields_given) != len(streams):
            raise TopologyError(f"{label}: {len(streams)} streams but {len(fields_given)} lists of input "
                                "fields; give one list per stream")
        inputs = [resolve_inputs(label, s.getOutputFields(),
                                 None if fields_given is None else fields_given[i],
                                 owner=f"stream {i}{_origin(s)}")
                  for i, s in enumerate(streams)]
        if is_grouped and len({len(g) for g in groups}) != 1:
            desc = ", ".join(f"{list(g)} for stream {i}" for i, g in enumerate(groups))
            raise TopologyError(f"{label}: every stream must be grouped by the same number of fields; got "
                                f"{desc}")
        out_fields = as_fields(label, out, "output field")
        check_outputs(label, out_fields)
        width = len(groups[0])
        if is_grouped and len(out_fields) <= width:
            raise TopologyError(
                f"{label}: the output is the {width} group value(s) then what the reducer emits, so name "
                f"more than {width} output fields: {list(out_fields)} names only the group fields "
                f"{list(groups[0])}; e.g. {[*groups[0], 'result']}")
        from trident_spark.validation import output_fields

        typed = output_fields(out_fields, reducer)
        types = typed.types
        for j, name in enumerate(out_fields[:width]):
            if name not in typed.declared_types and name not in getattr(reducer, "output_types", {}):
                types[name] = streams[0].getOutputFields().types[groups[0][j]]
        fields = Fields(*out_fields, types=types, declared=typed.declared_types)
        node = MultiReduceNode(fields, label, [s.node for s in streams], reducer=reducer,
                               input_fields=inputs, group_fields=groups)
        self._add(node)
        return Stream(self, node)

    @overload
    def join(self, stream1: Stream, join_fields1: FieldsLike, stream2: Stream, join_fields2: FieldsLike,
             output_fields: FieldsLike, /, how: JoinHow = "inner",
             mode: JoinMode = JoinOutFieldsMode.COMPACT) -> Stream: ...
    @overload
    def join(self, stream1: Stream, join_fields1: FieldsLike, stream2: Stream, join_fields2: FieldsLike,
             output_fields: FieldsLike, mode: JoinOutFieldsMode, /) -> Stream: ...
    @overload
    def join(self, streams: Sequence[Stream], join_fields: Sequence[FieldsLike], output_fields: FieldsLike,
             /, how: JoinHow = "inner", mode: JoinMode = JoinOutFieldsMode.COMPACT) -> Stream: ...
    @overload
    def join(self, streams: Sequence[Stream], join_fields: Sequence[FieldsLike], output_fields: FieldsLike,
             mode: JoinOutFieldsMode, /) -> Stream: ...
    def join(self, *args: Any, how: JoinHow = "inner", mode: JoinMode = JoinOutFieldsMode.COMPACT) -> Stream:
        """Join streams within each batch on their join fields.

        ``join(s1, ["k1"], s2, ["k2"], out[, how][, mode])`` or ``join([s1, s2], [["k1"], ["k2"]],
        out[, how][, mode])``, as Trident's overloads.
        ``how``: a :class:`~trident_spark.JoinType` for every stream (``JoinType.INNER``), a list
        of one per stream (``[JoinType.INNER, JoinType.OUTER]``: an outer stream may be missing
        from a result), or the strings "inner", "outer" (full), "left", "right".
        ``mode``: :class:`~trident_spark.JoinOutFieldsMode`. ``COMPACT``: ``out`` names the join
        fields, then the other fields of each stream in order. ``PRESERVE``: the join fields,
        then every field of each stream in its own order, join fields included (None for an
        outer stream with no tuple).

        Examples
        --------
        >>> joined = topology.join(orders, ["id"], users, ["id"], ["id", "order_id", "item", "uid", "name"],
        ...                        JoinType.INNER, JoinOutFieldsMode.PRESERVE)  # doctest: +SKIP
        """
        streams, join_fields, out, how, mode = _join_args(args, how, mode)
        preserve = _join_mode(mode) is JoinOutFieldsMode.PRESERVE
        inputs = self._streams("join", streams)
        types = _join_types(how, len(inputs))
        resolved = [resolve_inputs("join", s.getOutputFields(), f, what="join field",
                                   owner=f"stream {i}{_origin(s)}")
                    for i, (s, f) in enumerate(zip(inputs, join_fields, strict=True))]
        counts = {len(f) for f in resolved}
        if len(counts) != 1 or 0 in counts:
            desc = ", ".join(f"{len(f)} {list(f)} for stream {i}" for i, f in enumerate(resolved))
            raise TopologyError(f"join: every stream must join on the same number of fields (at least one); "
                                f"got {desc}; give each stream its join fields in matching order")
        others = [list(s.getOutputFields()) if preserve else [x for x in s.getOutputFields() if x not in f]
                  for s, f in zip(inputs, resolved, strict=True)]
        produced = len(resolved[0]) + sum(len(o) for o in others)
        out_fields = as_fields("join", out, "output field")
        if len(out_fields) != produced:
            what = "fields (PRESERVE mode)" if preserve else "other fields"
            parts = [f"join fields {list(resolved[0])}"] + [
                f"stream {i}'s {what} {o}" for i, o in enumerate(others)]
            raise TopologyError(f"join: {len(out_fields)} output fields {list(out_fields)} declared but the "
                                f"join produces {produced}: {', then '.join(parts)}; declare {produced} "
                                "names in that order")
        check_outputs("join", out_fields)
        field_types = _join_output_types(inputs, resolved, out_fields, preserve)
        node = JoinNode(Fields(*out_fields, types=field_types), "join", [s.node for s in inputs],
                        join_fields=resolved, join_types=types,
                        mode=JoinOutFieldsMode.PRESERVE if preserve else JoinOutFieldsMode.COMPACT)
        self._add(node)
        return Stream(self, node)

    def newStaticState(self, state_factory: StateFactoryLike) -> TridentState:
        """A state this topology reads (``stateQuery``) but does not write.

        Examples
        --------
        >>> from trident_spark.state import MemoryState
        >>> TridentTopology().newStaticState(MemoryState.opaque(name="seen"))
        TridentState(memory://seen?type=opaque)
        """
        check_state_factory("newStaticState", state_factory)
        state = TridentState(self, state_factory)
        self._states.append(state)
        return state

    def _streams(self, operator: str, streams: Sequence[Any]) -> list[Stream]:
        flat: list[Any] = []
        for item in streams:
            flat.extend(item if isinstance(item, list | tuple) else [item])
        if len(flat) < 2:
            raise TopologyError(f"{operator}: give at least two streams")
        for i, stream in enumerate(flat):
            if not isinstance(stream, Stream):
                hint = ("; call toStream() on a GroupedStream first" if hasattr(stream, "toStream")
                        else "; give the Streams newStream() and its operations return")
                raise TopologyError(f"{operator}: stream {i} is not a Stream but {describe(stream)}{hint}")
            if stream.topology is not self:
                raise TopologyError(
                    f"{operator}: stream {i}{_origin(stream)} belongs to another TridentTopology; build "
                    f"every stream of a {operator} with this topology's newStream()")
        return flat

    def _add(self, node: Node) -> None:
        for operation in node_operations(node):  # a wrong method shape found now, not in a Spark task
            check_shape(node.label, operation)
        self._nodes.append(node)

    @contextmanager
    def _atomic(self) -> Iterator[None]:
        """A builder call that adds several nodes: if it fails, the topology is left as it was
        (no half-built branch becomes an output when the caller catches the error)."""
        nodes, sinks, states = len(self._nodes), len(self._sinks), len(self._states)
        try:
            yield
        except BaseException:
            del self._nodes[nodes:], self._sinks[sinks:], self._states[states:]
            raise

    def _add_sink(self, node: Node, sink: Sink) -> None:
        self._sinks.append((node, sink))

    def _persist(self, node: PersistNode) -> TridentState:
        """Register a state write; one state must not be written from two independent streams."""
        identity = _state_identity(node.state)
        writers = spouts_of(node)
        here = "+".join(s.stream_name for s in writers)
        for state in self._states:
            if state.node is None or _state_identity(state.factory) != identity:
                continue
            other = spouts_of(state.node)
            there = "+".join(s.stream_name for s in other)
            if any(s in other for s in writers):
                raise TopologyError(
                    f"{node.label} on stream {here!r}: state {state.describe()} is already persisted by "
                    f"{state.node.label} on the same stream; two writes of one state in one batch would "
                    "overwrite each other (the second looks like a replay of the txid). Persist it once "
                    "(chainedAgg() computes several values in one pass), or use a separate state")
            raise TopologyError(
                f"{node.label} on stream {here!r}: state {state.describe()} is already persisted by "
                f"{state.node.label} on stream {there!r}; persisting one state from two independent "
                "streams would mix their txids (each stream numbers its own batches). Merge the streams "
                "first (topology.merge) and persist once, or use a separate state")
        self._add(node)
        state = TridentState(self, node.state, node)
        self._states.append(state)
        return state

    def queries(self) -> list[PlannedQuery]:
        """How the topology runs: one Spark query per set of spouts joined or merged together."""
        return list(installed_runner().queries(self._nodes, self._sinks + self._drpc_results()))

    def _drpc_results(self) -> list[tuple[Node, Sink]]:
        """Each DRPC stream's result sink, on the last node added to its part of the topology
        (Trident's ``completeDRPC``: what reaches it is the request's answer)."""
        sinks: list[tuple[Node, Sink]] = []
        for spout in self._drpc.values():
            last = [n for n in self._nodes if n is spout or spout in spouts_of(n)][-1]
            sinks.append((last, DRPCResultSink(last.fields, spout.stream_name)))
        return sinks

    # --- running -----------------------------------------------------------------------
    def run(self, checkpoint_location: str | Path | None = None, trigger: str | None = DEFAULT_TRIGGER,
            spark: Any = None, on_progress: ProgressCallback | None = None,
            conf: dict[str, Any] | None = None, max_batch_retries: int = DEFAULT_MAX_BATCH_RETRIES,
            retry_delay: float = DEFAULT_RETRY_DELAY, outage_budget: float = DEFAULT_OUTAGE_BUDGET,
            progress_history: int = DEFAULT_PROGRESS_HISTORY,
            accept_state_loss: bool = False, py_files: Sequence[str | Path] | None = None,
            drpc: Any = None, drpc_path: str = DEFAULT_DRPC_PATH, drpc_token: str | None = None) -> RunHandle:
        """Start every query on Spark; returns at once with a handle.

        A setting not given here is read from the session's Spark conf where it has a
        ``spark.trident.*`` key (``--conf spark.trident.trigger=5s``, ``spark-defaults.conf``,
        ``SparkSession.builder.config``), else it takes the default below: see
        docs/reference/configuration.md.

        Parameters
        ----------
        checkpoint_location : path or URI
            Each query keeps its offsets log and commit log in ``<path>/<query name>`` (the
            stream name; ``a+b`` for merged or joined streams). Restarting with the same path
            resumes, replaying an unfinished batch. A plain path, or a URI of any filesystem
            Spark checkpoints to (``file://``, ``hdfs://``, ``s3a://``, ``gs://``, ``abfs://``):
            trident-spark keeps its own files beside Spark's there (docs/deployment.md).
            Omitted: ``spark.trident.checkpointLocation`` of the session's conf (required then).
        trigger : str or None, default "1 second"
            ``"1 second"`` (a processing-time interval, Trident's batch emit interval),
            ``None`` (next batch as soon as the last ends), ``"available_now"`` (read what
            is there now, in limited batches, then stop) or ``"once"``.
        spark : SparkSession, optional
            Defaults to a local session on this machine's cores.
        on_progress : callable, optional
            Called with a :class:`~trident_spark.runtime.progress.BatchProgress` after each batch.
        conf : dict, optional
            The topology configuration every operation's ``prepare(conf, context)`` receives.
        max_batch_retries, retry_delay : int, float, default 3, 0.5
            A batch whose operation raises ``FailedException`` is replayed up to this many
            times (``retry_delay`` seconds apart, doubling), then the query fails.
        outage_budget : float, default 180
            Seconds a batch keeps retrying while a broker or store does not answer (with
            backoff; progress says what it waits for) before the query fails naming the address.
        progress_history : int, default 100
            Batches of progress the handle keeps in memory (``handle.progress``), as Spark's
            ``spark.sql.streaming.numRecentProgressUpdates``; the checkpoint's JSON lines keep more.
        accept_state_loss : bool, default False
            Run even though a state lost data or was rolled back behind this checkpoint
            (``StateLostError``): its record is re-based on the checkpoint and counting goes on
            from what the store holds. Only for a loss you have accepted.
        py_files : list of paths, optional
            ``.py``, ``.zip`` or ``.egg`` files the executors need to import the operations'
            code, shipped as ``spark-submit --py-files`` does (``SparkContext.addPyFile``). For
            a cluster: in local mode, modules the driver imported ship with the operations.
        drpc : str or LocalDRPC, optional
            The DRPC server of the DRPC streams that name none (``newDRPCStream(function)``):
            ``"host:port"`` of a running ``trident-spark drpc-server``; ``"127.0.0.1:0"`` starts
            one on a free port; None starts one on 127.0.0.1:3772, or on a free port when that
            port is taken (a server the run did not start is used only when named here). One
            INFO line and ``handle.drpc_address`` say which.
        drpc_token : str, optional
            The DRPC server's shared token: the server the run starts asks for it, a named one
            must take it. None: ``$TRIDENT_SPARK_DRPC_TOKEN`` if set, else no token.
        drpc_path : {"auto", "spark", "driver"}, default "auto"
            How DRPC requests are answered. ``"driver"``: each request runs as its own batch in
            worker threads of the driver, with no Spark job (milliseconds; only for a DRPC
            stream of Python operations, aggregations and state reads). ``"spark"``: each
            request is a micro-batch of a Spark query (any stream; Spark's per-batch floor,
            requests one after another). ``"auto"``: the driver when the stream allows it.
            See docs/drpc.md.
        """
        if not self._spouts:
            raise TopologyError("run(): the topology has no stream; start one with newStream(name, spout)")
        check_int(max_batch_retries, "max_batch_retries", minimum=0, where="run()", error=TopologyError)
        if drpc_path not in DRPC_PATHS:
            raise TopologyError(f"run(drpc_path={drpc_path!r}): give one of {', '.join(DRPC_PATHS)}")
        # A URI stays a string: Path("s3a://bucket/ck") would make it s3a:/bucket/ck.
        location = None if checkpoint_location is None else checkpoint_files.checkpoint_location(
            checkpoint_location)
        settings = RunSettings(location, trigger, spark, on_progress, conf,
                               max_batch_retries, retry_delay, outage_budget, progress_history,
                               accept_state_loss, py_files, drpc, drpc_path, drpc_token)
        return installed_runner().run(self.queries(), settings)

    def explain(self, spark: Any = None, mode: str = "simple") -> str:
        """The topology's queries: their Trident operations and the Spark plan of one batch.

        ``mode`` is Spark's explain mode ("simple", "extended", "formatted", "cost"). Spark's plan
        shows the spouts' options: passwords, keys and tokens in them show as ``***``.
        """
        from trident_spark.state.redaction import redact_text

        text: str = redact_text(installed_runner().explain(self.queries(), spark, mode))
        return text


def _state_identity(factory: Any) -> str:
    """What the factory stores into: its location (``memory://wc``, a SQLite path and table, a
    Redis prefix...), whatever its kind or cache settings; else its URL; else the object."""
    from trident_spark.state.source import StateSource

    if isinstance(factory, StateSource):
        try:
            where, params = factory.url_location()
            return f"{where}?{sorted(params.items())}"
        except Exception:  # a custom factory: fall back to its URL
            pass
    url = getattr(factory, "url", None)
    return str(url) if url else f"object-{id(factory)}"


def _origin(stream: Stream) -> str:
    """`` (from 'a')``: the spouts a stream reads, for messages naming stream i of a merge or join."""
    names = [s.stream_name for s in spouts_of(stream.node)]
    return f" (from {'+'.join(names)!r})" if names else ""


def _join_args(args: Sequence[Any], how: Any, mode: Any) -> tuple[list[Any], list[FieldsLike], Any, Any, Any]:
    """Split Trident's join overloads: streams and fields (as lists or pairs), the output fields,
    then optionally a JoinType (or a list of them) and a JoinOutFieldsMode. Positional options
    win over the ``how=``/``mode=`` keywords."""
    if args and isinstance(args[0], list | tuple) and all(isinstance(s, Stream) for s in args[0]):
        call = JOIN_LISTS.bind("join", args)
        streams, fields = list(call["streams"]), list(call["inputs"])
        if len(fields) != len(streams):
            raise TopologyError(f"join: {len(streams)} streams but {len(fields)} lists of join fields")
    else:
        call = JOIN_PAIRS.bind("join", args)
        streams, fields = [call["stream1"], call["stream2"]], [call["inputs1"], call["inputs2"]]
    if "extra" in call:
        rest = [call["how"], call["extra"]]
        raise TopologyError(f"join: after the output fields give a JoinType (or a list, one per stream) "
                            f"and then a JoinOutFieldsMode; got {rest!r}")
    return streams, fields, call["outputs"], call.get("how", how), call.get("mode", mode)


def _join_mode(mode: Any) -> JoinOutFieldsMode:
    if isinstance(mode, JoinOutFieldsMode):
        return mode
    if isinstance(mode, str) and mode.lower() in {m.value for m in JoinOutFieldsMode}:
        return JoinOutFieldsMode(mode.lower())
    raise TopologyError(f"join: mode must be JoinOutFieldsMode.COMPACT or JoinOutFieldsMode.PRESERVE "
                        f"(from trident_spark import JoinOutFieldsMode), got {describe(mode)}")


def _join_types(how: Any, n: int) -> list[JoinType]:
    if isinstance(how, str):  # JoinType members are strings too
        key = how.lower()
        if key not in JOIN_TYPES:
            raise TopologyError(f"join: unknown join type {how!r}; use JoinType.INNER, JoinType.OUTER, a "
                                f"list of them per stream, or one of {sorted(JOIN_TYPES)}")
        pair = JOIN_TYPES[key]
        if n == 2:
            return list(pair)
        if key in ("inner", "outer", "full"):
            return [pair[0]] * n
        raise TopologyError(f"join: {how!r} needs two streams; give a list of JoinType.INNER/OUTER per "
                            "stream")
    if not isinstance(how, list | tuple):
        raise TopologyError(f"join: the join type must be a JoinType such as JoinType.INNER, or a list of "
                            f"JoinType per stream, got {describe(how)}")
    kinds = [str(h).lower() for h in how]
    if len(kinds) != n or any(k not in ("inner", "outer") for k in kinds):
        shown = [h.value if isinstance(h, JoinType) else h for h in how]
        raise TopologyError(f"join: give one JoinType (INNER or OUTER) for each of the {n} streams, got "
                            f"{shown}")
    return [JoinType(k) for k in kinds]


def _join_output_types(streams: list[Stream], keys: list[Fields], out: Fields,
                       preserve: bool = False) -> dict[str, str]:
    source = [keys[0].types[f] for f in keys[0]]
    for stream, key in zip(streams, keys, strict=True):
        fields = stream.getOutputFields()
        source += [fields.types[f] for f in fields if preserve or f not in key]
    return {name: out.declared_types.get(name, t) for name, t in zip(out, source, strict=True)}
