"""TridentTopology: where streams start, how they combine, and how they run on Spark."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields
from trident_spark.graph import JoinNode, MergeNode, Node, PersistNode, SpoutNode, spouts_of
from trident_spark.runtime.progress import ProgressCallback
from trident_spark.sink import CollectSink
from trident_spark.stream import Stream, check_state_factory
from trident_spark.trident_state import TridentState
from trident_spark.validation import FieldsLike, as_fields, check_outputs, describe, resolve_inputs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from trident_spark.planner.query import QueryPlan
    from trident_spark.runtime.handle import TopologyHandle

_STREAM_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
JOIN_TYPES = {"inner": ("inner", "inner"), "outer": ("outer", "outer"), "full": ("outer", "outer"),
              "left": ("inner", "outer"), "right": ("outer", "inner")}


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
        self._sinks: list[tuple[Node, CollectSink]] = []
        self._states: list[TridentState] = []

    # --- building ----------------------------------------------------------------------
    def newStream(self, name: str, spout: Any) -> Stream:
        """A stream of the batches ``spout`` emits; ``name`` names its Spark query and checkpoint."""
        if not _STREAM_NAME.match(name or ""):
            raise TopologyError(f"newStream({name!r}): use letters, digits, '_', '-' or '.' in stream names")
        if name in self._spouts:
            raise TopologyError(f"newStream({name!r}): a stream with this name already exists")
        fields = getattr(spout, "fields", None)
        if not fields:
            raise TopologyError(f"newStream({name!r}): {spout!r} is not a spout (it has no fields)")
        node = SpoutNode(Fields.of(fields) if isinstance(fields, Fields) else Fields(*fields),
                         f"newStream({name})", stream_name=name, spout=spout)
        self._spouts[name] = node
        self._add(node)
        return Stream(self, node)

    def merge(self, *streams: Stream | Sequence[Stream]) -> Stream:
        """The union of ``streams`` within each batch; the output fields are the first stream's.

        Streams of different spouts merge into one Spark query, so they share batch ids.
        """
        inputs = self._streams("merge", streams)
        first = inputs[0].getOutputFields()
        for i, stream in enumerate(inputs[1:], start=1):
            if len(stream.getOutputFields()) != len(first):
                raise TopologyError(
                    f"merge: stream {i}{_origin(stream)} has {len(stream.getOutputFields())} fields "
                    f"{list(stream.getOutputFields())} but stream 0{_origin(inputs[0])} has {len(first)} "
                    f"{list(first)}; project them to the same number of fields first (the merged stream "
                    "takes stream 0's field names)")
        node = MergeNode(first, "merge", [s.node for s in inputs])
        self._add(node)
        return Stream(self, node)

    def join(self, *args: Any, how: str | Sequence[str] = "inner") -> Stream:
        """Join streams within each batch on their join fields.

        ``join(s1, ["k1"], s2, ["k2"], out[, how])`` or ``join([s1, s2], [["k1"], ["k2"]], out[, how])``.
        ``out`` names the join fields, then the other fields of each stream in order.
        ``how``: "inner", "outer" (full), "left", "right", or one of "inner"/"outer" per
        stream (Trident's JoinType list: an outer stream may be missing from a result).
        """
        streams, join_fields, out, how = _join_args(args, how)
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
        others = [[x for x in s.getOutputFields() if x not in f]
                  for s, f in zip(inputs, resolved, strict=True)]
        produced = len(resolved[0]) + sum(len(o) for o in others)
        out_fields = as_fields("join", out, "output field")
        if len(out_fields) != produced:
            parts = [f"join fields {list(resolved[0])}"] + [
                f"stream {i}'s other fields {o}" for i, o in enumerate(others)]
            raise TopologyError(f"join: {len(out_fields)} output fields {list(out_fields)} declared but the "
                                f"join produces {produced}: {', then '.join(parts)}; declare {produced} "
                                "names in that order")
        check_outputs("join", out_fields)
        field_types = _join_output_types(inputs, resolved, out_fields)
        node = JoinNode(Fields(*out_fields, types=field_types), "join", [s.node for s in inputs],
                        join_fields=resolved, join_types=types)
        self._add(node)
        return Stream(self, node)

    def newStaticState(self, state_factory: Any) -> TridentState:
        """A state this topology reads (``stateQuery``) but does not write."""
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

    def _add_sink(self, node: Node, sink: CollectSink) -> None:
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

    def queries(self) -> list[QueryPlan]:
        """How the topology runs: one Spark query per set of spouts joined or merged together."""
        from trident_spark.planner.query import plan_queries

        return plan_queries(self._nodes, self._sinks)

    # --- running -----------------------------------------------------------------------
    def run(self, checkpoint_location: str | Path, trigger: str | None = "1 second",
            spark: SparkSession | None = None, on_progress: ProgressCallback | None = None,
            conf: dict[str, Any] | None = None, max_batch_retries: int = 3,
            retry_delay: float = 0.5, outage_budget: float = 180.0, progress_history: int = 100,
            accept_state_loss: bool = False) -> TopologyHandle:
        """Start every query on Spark; returns at once with a handle.

        Parameters
        ----------
        checkpoint_location : path
            Each query keeps its offsets log and commit log in ``<path>/<query name>`` (the
            stream name; ``a+b`` for merged or joined streams). Restarting with the same path
            resumes, replaying an unfinished batch.
        trigger : str or None
            ``"1 second"`` (a processing-time interval, Trident's batch emit interval),
            ``None`` (next batch as soon as the last ends), ``"available_now"`` (read what
            is there now, in limited batches, then stop) or ``"once"``.
        spark : SparkSession, optional
            Defaults to a local session on this machine's cores.
        on_progress : callable, optional
            Called with a :class:`~trident_spark.runtime.progress.BatchProgress` after each batch.
        conf : dict, optional
            The topology configuration every operation's ``prepare(conf, context)`` receives.
        max_batch_retries, retry_delay : int, float
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
        """
        from trident_spark.runtime.launch import start_queries

        if not self._spouts:
            raise TopologyError("run(): the topology has no stream; start one with newStream(name, spout)")
        if isinstance(max_batch_retries, bool) or not isinstance(max_batch_retries, int) \
                or max_batch_retries < 0:
            raise TopologyError(f"run(): max_batch_retries must be an int >= 0, got {max_batch_retries!r}")
        return start_queries(self.queries(), Path(checkpoint_location), trigger, spark, on_progress,
                             conf or {}, max_batch_retries, retry_delay, outage_budget=outage_budget,
                             progress_history=progress_history, accept_state_loss=accept_state_loss)

    def explain(self, spark: SparkSession | None = None, mode: str = "simple") -> str:
        """The topology's queries: their Trident operations and the Spark plan of one batch.

        ``mode`` is Spark's explain mode ("simple", "extended", "formatted", "cost"). Spark's plan
        shows the spouts' options: passwords, keys and tokens in them show as ``***``.
        """
        from trident_spark.planner.explain import explain
        from trident_spark.state.redaction import redact_text

        text: str = redact_text(explain(self.queries(), spark, mode))
        return text


def _state_identity(factory: Any) -> str:
    """What the factory stores into: its location (``memory://wc``, a SQLite path and table, a
    Redis prefix...), whatever its kind or cache settings; else its URL; else the object."""
    location = getattr(factory, "url_location", None)
    if callable(location):
        try:
            where, params = location()
            return f"{where}?{sorted(params.items())}"
        except Exception:  # a custom factory: fall back to its URL
            pass
    url = getattr(factory, "url", None)
    return str(url) if url else f"object-{id(factory)}"


def _origin(stream: Stream) -> str:
    """`` (from 'a')``: the spouts a stream reads, for messages naming stream i of a merge or join."""
    names = [s.stream_name for s in spouts_of(stream.node)]
    return f" (from {'+'.join(names)!r})" if names else ""


def _join_args(args: Sequence[Any], how: str | Sequence[str]) -> tuple[list[Any], list[FieldsLike], Any,
                                                                        str | Sequence[str]]:
    if args and isinstance(args[0], list | tuple) and args and all(isinstance(s, Stream) for s in args[0]):
        if len(args) not in (3, 4):
            raise TopologyError("join: use join([s1, s2], [fields1, fields2], out_fields[, how])")
        streams, fields, out = list(args[0]), list(args[1]), args[2]
        if len(args) == 4:
            how = args[3]
        if len(fields) != len(streams):
            raise TopologyError(f"join: {len(streams)} streams but {len(fields)} lists of join fields")
        return streams, fields, out, how
    if len(args) in (5, 6):
        if len(args) == 6:
            how = args[5]
        return [args[0], args[2]], [args[1], args[3]], args[4], how
    raise TopologyError("join: use join(s1, fields1, s2, fields2, out_fields[, how])")


def _join_types(how: str | Sequence[str], n: int) -> list[str]:
    if isinstance(how, str):
        key = how.lower()
        if key not in JOIN_TYPES:
            raise TopologyError(f"join: unknown join type {how!r}; use one of {sorted(JOIN_TYPES)} or a "
                                "list of 'inner'/'outer' per stream")
        pair = JOIN_TYPES[key]
        if n == 2:
            return list(pair)
        if key in ("inner", "outer", "full"):
            return [pair[0]] * n
        raise TopologyError(f"join: {how!r} needs two streams; give a list of 'inner'/'outer' per stream")
    if not isinstance(how, list | tuple):
        raise TopologyError(f"join: how must be a join type such as 'inner' or a list of 'inner'/'outer' per "
                            f"stream, got {describe(how)}")
    kinds = [str(h).lower() for h in how]
    if len(kinds) != n or any(k not in ("inner", "outer") for k in kinds):
        raise TopologyError(f"join: give one of 'inner'/'outer' for each of the {n} streams, got {list(how)}")
    return kinds


def _join_output_types(streams: list[Stream], keys: list[Fields], out: Fields) -> dict[str, str]:
    source = [keys[0].types[f] for f in keys[0]]
    for stream, key in zip(streams, keys, strict=True):
        fields = stream.getOutputFields()
        source += [fields.types[f] for f in fields if f not in key]
    return {name: out.declared_types.get(name, t) for name, t in zip(out, source, strict=True)}
