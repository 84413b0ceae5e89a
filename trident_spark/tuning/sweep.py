"""Batch-size sweep: run a topology on one replayable slice of its topics at a series of sizes.

The tuning notes' experiment: keep the input fixed, vary Trident's per-partition *max fetch
bytes*, and watch batch latency and throughput. Here each size is one ``availableNow`` run of
the topology, in the caller's SparkSession, on the same offsets of every Kafka topic it
reads, with a fresh checkpoint under the report directory. The first batch of each run is
the warm-up (Python workers start, plans compile): it is kept in the data and left out of
the statistics. Before the first size, one short warm-up run at the smallest size (not
measured) starts the session's Python workers: the first query of a session stays slow for
several batches.

What is fixed for a sweep:

* the slice: per partition, from the earliest offsets (or ``start``) to the high watermark
  seen when the sweep starts, capped at ``records`` in all, spread evenly over the
  partitions (a partition with fewer records gives its share to the others);
* per size, a run reads at most ``max_batches`` batches' worth of the slice (small sizes
  would otherwise run hundreds of batches): every run starts at the slice's start;
* the spouts' other limits are switched off (``max_offsets_per_trigger``, adaptive
  batching), so ``max_fetch_bytes`` alone sizes the batches.

State: a sweep must not write into the user's state (it would mix the sweep's txids, which
restart at 0 for each run, into the real ones). Every state the topology writes is pointed
at a scratch copy for each run, started empty:

* ``SqliteState``: a new file under the run's directory (same table);
* ``MemoryState``: a new name;
* ``RedisState`` / ``ElasticsearchState``: only with ``allow_state_writes=True``
  (``--allow-state-writes``), which gives each run its own key prefix / index in the same
  store (``<prefix>-tune-<stamp>-<run>``); they are listed in the results and left in place
  for the user to delete. Without it the sweep refuses, naming the state.
* any other factory: refused, naming it.

States the topology only reads (``newStaticState``) are read as they are.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark.errors import TridentSparkError
from trident_spark.graph import SpoutNode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from trident_spark.runtime.progress import BatchProgress
    from trident_spark.topology import TridentTopology

Offsets = dict[tuple[str, int], int]

#: Default batches per run: one warm-up and nine measured.
DEFAULT_MAX_BATCHES = 10
#: Batches of the warm-up run before the sweep (the session's first query pays for starting
#: Python workers and imports well past its first batch); it is not measured.
WARMUP_BATCHES = 2
#: ``--sweep auto``: sizes, a factor of 2 apart, the largest giving at least this many batches.
AUTO_SIZES = 8
AUTO_MIN_BATCHES = 4
#: Bytes read from each partition to learn its record sizes.
SAMPLE_BYTES = 64 * 1024

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
          "g": 1024**3, "gb": 1024**3}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_RANGE = re.compile(r"^\s*([^.]+?)\s*\.\.\s*([^:]+?)\s*(?::\s*(\d+))?\s*$")


class SweepError(TridentSparkError):
    """The sweep cannot run as asked; the message says what and what to do."""


# --- sizes --------------------------------------------------------------------------------------
def parse_size(text: str) -> int:
    """Bytes in ``"16k"``, ``"1m"``, ``"1.5m"``, ``"4096"`` (k = 1024).

    >>> parse_size("16k"), parse_size("1m"), parse_size("1500")
    (16384, 1048576, 1500)
    """
    match = _SIZE.match(text)
    if not match or match.group(2).lower() not in _UNITS:
        raise SweepError(f"--sweep: {text!r} is not a size; write bytes as 4096, 16k, 1.5m or 1g")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value <= 0:
        raise SweepError(f"--sweep: size {text!r} must be positive")
    return value


def parse_sweep(text: str) -> list[int] | None:
    """The sizes of ``--sweep``: a list ``16k,32k,64k``, a geometric range ``8k..1m:8`` (8 sizes,
    both ends included; without ``:n`` a factor of 2 apart), or ``auto`` (None: chosen from the
    slice, see :func:`auto_sizes`).

    >>> [size_label(s) for s in parse_sweep("8k..1m:8")]
    ['8k', '16k', '32k', '64k', '128k', '256k', '512k', '1m']
    >>> parse_sweep("64k,16k,32k,16k")
    [16384, 32768, 65536]
    """
    if text.strip().lower() == "auto":
        return None
    ranged = _RANGE.match(text)
    if ranged:
        low, high = parse_size(ranged.group(1)), parse_size(ranged.group(2))
        if high <= low:
            raise SweepError(f"--sweep {text!r}: the range must grow "
                             f"({size_label(low)} .. {size_label(high)})")
        count = int(ranged.group(3)) if ranged.group(3) else round(math.log2(high / low)) + 1
        if count < 2:
            raise SweepError(f"--sweep {text!r}: a range needs at least 2 sizes")
        ratio = (high / low) ** (1 / (count - 1))
        sizes = [round(low * ratio**i) for i in range(count)]
    else:
        sizes = [parse_size(part) for part in text.split(",") if part.strip()]
    if not sizes:
        raise SweepError("--sweep: give sizes, e.g. 16k,32k,64k or 8k..1m:8 or auto")
    return sorted(set(sizes))


def size_label(size: int) -> str:
    """``16384`` -> ``"16k"``, ``1048576`` -> ``"1m"``; other sizes in bytes or with one decimal."""
    for unit, factor in (("g", 1024**3), ("m", 1024**2), ("k", 1024)):
        if size >= factor:
            value = size / factor
            return f"{value:.0f}{unit}" if value == int(value) or value >= 100 else f"{value:.1f}{unit}"
    return str(size)


def auto_sizes(partition_bytes: float, record_bytes: float, count: int = AUTO_SIZES) -> list[int]:
    """Sizes for ``--sweep auto``: powers of two of 1k, a factor of 2 apart, the largest leaving
    at least :data:`AUTO_MIN_BATCHES` batches in the slice (``partition_bytes`` per partition),
    the smallest holding a few records.

    >>> [size_label(s) for s in auto_sizes(4 * 1024 * 1024, 100)]
    ['8k', '16k', '32k', '64k', '128k', '256k', '512k', '1m']
    """
    top = partition_bytes / AUTO_MIN_BATCHES
    floor = max(1024, 4 * record_bytes)
    if top < 2 * floor:
        raise SweepError(
            f"--sweep auto: the slice holds about {partition_bytes:,.0f} bytes per partition, too few for "
            f"a sweep of batch sizes; give a larger slice (--records) or the sizes (--sweep 4k,8k,16k)")
    largest = 1024 * 2 ** int(math.log2(top / 1024))
    sizes = [largest // 2**i for i in range(count)]
    return sorted(s for s in sizes if s >= floor)


# --- the slice ----------------------------------------------------------------------------------
def bound_slice(start: Offsets, high: Offsets, records: int | None) -> Offsets:
    """End offsets: every partition to its high watermark, or ``records`` in all, spread evenly
    over the partitions (water-filling: a short partition's unused share goes to the others).

    >>> bound_slice({("t", 0): 0, ("t", 1): 0}, {("t", 0): 100, ("t", 1): 10}, 60)
    {('t', 0): 50, ('t', 1): 10}
    """
    avail = {tp: max(0, high[tp] - start[tp]) for tp in start}
    if records is None or records >= sum(avail.values()):
        return {tp: start[tp] + n for tp, n in avail.items()}
    take = dict.fromkeys(avail, 0)
    left = records
    open_ = sorted((tp for tp in avail if avail[tp] > 0), key=lambda tp: avail[tp])
    while left > 0 and open_:
        share = left // len(open_)
        if share == 0:  # fewer records left than partitions: one each, in partition order
            for tp in sorted(open_)[:left]:
                take[tp] += 1
            break
        tp = open_[0]
        if avail[tp] - take[tp] <= share:
            left -= avail[tp] - take[tp]
            take[tp] = avail[tp]
            open_.pop(0)
            continue
        for tp in open_:
            take[tp] += share
        left -= share * len(open_)
    return {tp: start[tp] + take[tp] for tp in start}


@dataclass
class StreamSlice:
    """One Kafka stream's slice: offsets per partition and the mean record size per partition."""

    stream: str
    start: Offsets
    end: Offsets
    record_bytes: dict[tuple[str, int], float]

    @property
    def records(self) -> int:
        return sum(self.end[tp] - self.start[tp] for tp in self.end)

    def partition_bytes(self) -> float:
        """Bytes of the largest partition's share of the slice."""
        return max(((self.end[tp] - self.start[tp]) * self.record_bytes.get(tp, 1.0) for tp in self.end),
                   default=0.0)

    def mean_record_bytes(self) -> float:
        total = self.records
        if not total:
            return 1.0
        return sum((self.end[tp] - self.start[tp]) * self.record_bytes.get(tp, 1.0)
                   for tp in self.end) / total

    def run_end(self, size: int, max_batches: int) -> Offsets:
        """Where a run at ``size`` bytes per partition stops: ``max_batches`` batches, or the slice."""
        end = {}
        for tp, stop in self.end.items():
            per_batch = max(1, int(size // max(self.record_bytes.get(tp, 1.0), 1.0)))
            end[tp] = min(stop, self.start[tp] + per_batch * max_batches)
        return end

    def to_dict(self) -> dict[str, Any]:
        return {"stream": self.stream, "records": self.records, "start": _encode(self.start),
                "end": _encode(self.end),
                "record_bytes": {f"{t}[{p}]": round(b, 1) for (t, p), b in sorted(self.record_bytes.items())}}


def kafka_spouts(topology: TridentTopology) -> list[SpoutNode]:
    """The topology's spout nodes; every one must be a KafkaSpout (a sweep replays Kafka offsets)."""
    from trident_spark.spout.kafka.spout import KafkaSpout

    nodes = list(topology._spouts.values())
    others = [n for n in nodes if not isinstance(n.spout, KafkaSpout)]
    if others:
        names = ", ".join(f"{n.stream_name!r} ({type(n.spout).__name__})" for n in others)
        raise SweepError(f"tune replays Kafka offsets, but stream {names} does not read a KafkaSpout; "
                         "sweep a topology whose streams all read Kafka")
    if not nodes:
        raise SweepError("the topology has no stream; start one with newStream(name, KafkaSpout(...))")
    jvm = [n.stream_name for n in nodes if getattr(n.spout, "engine", "python") != "python"]
    if jvm:
        raise SweepError(f"stream {', '.join(map(repr, jvm))} reads Kafka with engine='jvm', which cannot "
                         "stop at a slice's end (ending_offsets); sweep with engine='python'")
    return nodes


def measure_slice(node: SpoutNode, start: dict[str, dict[str, int]] | None,
                  records: int | None) -> StreamSlice:
    """Ask the broker for the slice of ``node``'s spout: start offsets (``start``, else the
    earliest), high watermarks, and record sizes sampled at the start."""
    from trident_spark.spout.kafka.client import KafkaBrokerClient

    config = node.spout.config
    client = KafkaBrokerClient(config)
    try:
        partitions = client.topic_partitions()
        begin = client.earliest_offsets(partitions)
        topics = {t for t, _ in partitions}
        wanted = {tp: o for tp, o in _decode(start or {}).items() if tp[0] in topics}
        if wanted:
            unknown = sorted(set(wanted) - set(partitions))
            if unknown:
                raise SweepError(f"--from names partitions that stream {node.stream_name!r} does not read: "
                                 + ", ".join(f"{t}[{p}]" for t, p in unknown))
            for tp, offset in wanted.items():
                if offset < begin[tp]:
                    raise SweepError(f"--from: {tp[0]}[{tp[1]}] offset {offset} is gone; the partition now "
                                     f"starts at {begin[tp]}")
                begin[tp] = offset
        probes = client.probe(begin, SAMPLE_BYTES)
    finally:
        client.close()
    high = {tp: max(begin[tp], p.high_watermark) for tp, p in probes.items()}
    sizes = {tp: p.sample.average_record_bytes or 1.0 for tp, p in probes.items()}
    per_stream = None if records is None else records
    return StreamSlice(node.stream_name, begin, bound_slice(begin, high, per_stream), sizes)


# --- running ------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """One run of the topology at one size: every batch of the measured stream, as dicts."""

    size: int
    repeat: int
    records: int
    wall_s: float
    checkpoint: str
    batches: list[dict[str, Any]]
    other_streams: dict[str, int] = field(default_factory=dict)  # stream -> batches
    scratch_states: list[str] = field(default_factory=list)


class SweepObserver:
    """What a sweep reports while it runs (the CLI draws a progress bar); all no-ops here."""

    def warmup_started(self, size: int, records: int) -> None:
        """The warm-up run starts (not measured: it starts Spark's Python workers and compiles)."""

    def run_started(self, index: int, total: int, size: int, repeat: int, records: int) -> None:
        """Run ``index`` of ``total`` starts: ``records`` to read at ``size`` bytes per partition."""

    def batch_done(self, batch: BatchProgress) -> None:
        """A batch of any stream finished (called on the driver, from Spark's listener thread)."""

    def run_finished(self, result: RunResult) -> None:
        """A run ended."""


@dataclass
class SweepSettings:
    """How to sweep: sizes (None: auto), the slice, repeats and where runs keep their files."""

    sizes: list[int] | None
    out_dir: Path
    records: int | None = None
    start: dict[str, dict[str, int]] | None = None
    repeat: int = 1
    max_batches: int = DEFAULT_MAX_BATCHES
    stream: str | None = None
    allow_state_writes: bool = False
    run_timeout_s: float = 600.0
    warmup: bool = True


@dataclass
class Sweep:
    """Everything measured: the slices, the sizes and every run (statistics: :mod:`.report`)."""

    stream: str
    slices: list[StreamSlice]
    sizes: list[int]
    runs: list[RunResult]
    scratch_states: list[str]
    partitions: int
    cores: int | None


def run_sweep(topology: TridentTopology, spark: SparkSession, settings: SweepSettings,
              observer: SweepObserver | None = None) -> Sweep:
    """Run ``topology`` once per size (and repeat) on the same slice; return every batch measured.

    Runs are interleaved by repeat (all sizes, then all sizes again) so drift of the machine's
    speed spreads over the sizes instead of favouring some.
    """
    observer = observer or SweepObserver()
    if settings.repeat < 1 or settings.max_batches < 2:
        raise SweepError("--repeat must be >= 1 and --max-batches >= 2 (one warm-up and one measured)")
    nodes = kafka_spouts(topology)
    slices = [measure_slice(n, settings.start, settings.records) for n in nodes]
    measured = _measured_stream(slices, settings.stream)
    if measured.records == 0:
        raise SweepError(f"stream {measured.stream!r}: the slice is empty (no records between the start "
                         f"offsets and the high watermarks); produce data first or move --from")
    sizes = settings.sizes or auto_sizes(measured.partition_bytes(), measured.mean_record_bytes())
    settings.out_dir.mkdir(parents=True, exist_ok=True)
    plan = [(repeat, size) for repeat in range(settings.repeat) for size in sizes]
    stamp = time.strftime("%Y%m%d%H%M%S")

    def ends_for(size: int, batches: int) -> tuple[dict[str, Offsets], int]:
        ends = {s.stream: s.run_end(size, batches) for s in slices}
        return ends, sum(ends[measured.stream][tp] - measured.start[tp] for tp in measured.start)

    def execute(name: str, size: int, repeat: int, ends: dict[str, Offsets], records: int) -> RunResult:
        run_dir = settings.out_dir / "runs" / name
        tag = f"tune-{stamp}-{name}"
        with sized_spouts(nodes, slices, ends, size), \
                scratch_states(topology, run_dir, tag, settings.allow_state_writes) as names:
            result = _run_once(topology, spark, run_dir / "checkpoint", measured.stream, observer,
                               settings.run_timeout_s, size, repeat, records)
        result.scratch_states = names
        return result

    if settings.warmup:
        ends, records = ends_for(sizes[0], WARMUP_BATCHES)
        observer.warmup_started(sizes[0], records)
        execute("warmup", sizes[0], -1, ends, records)
    runs: list[RunResult] = []
    for index, (repeat, size) in enumerate(plan):
        ends, records = ends_for(size, settings.max_batches)
        observer.run_started(index, len(plan), size, repeat, records)
        result = execute(f"{size_label(size)}-r{repeat}", size, repeat, ends, records)
        runs.append(result)
        observer.run_finished(result)
    scratch = [name for r in runs for name in r.scratch_states]
    cores = _cores(spark)
    return Sweep(measured.stream, slices, sizes, runs, scratch, len(measured.start), cores)


def _measured_stream(slices: list[StreamSlice], stream: str | None) -> StreamSlice:
    if stream is None:
        return max(slices, key=lambda s: s.records)
    for s in slices:
        if s.stream == stream:
            return s
    raise SweepError(f"--stream {stream!r}: the topology's Kafka streams are "
                     f"{', '.join(repr(s.stream) for s in slices)}")


def _run_once(topology: TridentTopology, spark: SparkSession, checkpoint: Path, stream: str,
              observer: SweepObserver, timeout: float, size: int, repeat: int, records: int) -> RunResult:
    began = time.monotonic()
    progress: list[BatchProgress] = []  # every batch (handle.progress keeps only the last ones)

    def batch_done(batch: BatchProgress) -> None:
        progress.append(batch)
        observer.batch_done(batch)

    try:
        handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark,
                              on_progress=batch_done)
        try:
            if not handle.awaitTermination(timeout):
                raise SweepError(f"the run at {size_label(size)} did not finish within {timeout:g} s "
                                 f"(checkpoint {checkpoint}); raise --run-timeout or sweep smaller slices")
        finally:
            handle.stop()
    except SweepError:
        raise  # a SweepError is a TridentSparkError too: it says what failed already
    except TridentSparkError as exc:
        raise SweepError(f"the run at {size_label(size)} failed (checkpoint {checkpoint}): {exc}") from exc
    wall = time.monotonic() - began
    batches = [asdict(p) for p in progress if p.stream == stream]
    others: dict[str, int] = {}
    for p in progress:
        if p.stream != stream:
            others[p.stream] = others.get(p.stream, 0) + 1
    return RunResult(size, repeat, records, wall, str(checkpoint), batches, others)


def _cores(spark: SparkSession) -> int | None:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        return None


@contextmanager
def sized_spouts(nodes: Sequence[SpoutNode], slices: Sequence[StreamSlice], ends: dict[str, Offsets],
                 size: int) -> Iterator[None]:
    """Point every spout at its slice, limited to ``size`` bytes per partition per batch;
    the user's spouts are restored afterwards."""
    by_stream = {s.stream: s for s in slices}
    original = [(node, node.spout) for node in nodes]
    try:
        for node in nodes:
            part = by_stream[node.stream_name]
            spout = copy.copy(node.spout)
            spout.config = sized_config(spout.config, size, part.start, ends[node.stream_name])
            node.spout = spout
        yield
    finally:
        for node, spout in original:
            node.spout = spout


def sized_config(config: Any, size: int, start: Offsets, end: Offsets) -> Any:
    """The spout's settings for one run: the slice's offsets, ``size`` bytes per partition, and
    no other read limit (so ``max_fetch_bytes`` alone sizes the batches)."""
    names = {f.name for f in dataclasses.fields(config)}
    if "ending_offsets" not in names:
        raise SweepError("this trident-spark's KafkaSpout has no ending_offsets: a sweep cannot stop "
                         "its runs at the slice's end")
    changes: dict[str, Any] = {"max_fetch_bytes": size, "starting_offsets": _encode(start),
                               "ending_offsets": _encode(end), "max_offsets_per_trigger": None,
                               "min_offsets_per_trigger": None}
    if "adaptive_target_ms" in names:
        changes["adaptive_target_ms"] = None
    return dataclasses.replace(config, **changes)


@contextmanager
def scratch_states(topology: TridentTopology, run_dir: Path, tag: str,
                   allow_writes: bool) -> Iterator[list[str]]:
    """Point every state the topology writes at an empty scratch copy for one run (see the
    module's docstring); yields the scratch states' URLs and restores the user's afterwards."""
    written = [s for s in topology._states if s.node is not None]
    originals = [(s, s.factory, s.node.state if s.node is not None else None) for s in written]
    names: list[str] = []
    try:
        for i, state in enumerate(written):
            assert state.node is not None
            scratch = scratch_state(state.factory, run_dir / "state", f"{tag}-{i}", allow_writes,
                                    state.node.label)
            state.factory = scratch
            state.node.state = scratch
            names.append(str(getattr(scratch, "url", scratch)))
        yield names
    finally:
        for state, factory, node_state in originals:
            state.factory = factory
            if state.node is not None:
                state.node.state = node_state


def scratch_state(factory: Any, directory: Path, tag: str, allow_writes: bool, writer: str) -> Any:
    """An empty stand-in for ``factory`` (same kind and settings) that a sweep run may write."""
    kind = type(factory).__name__
    url = getattr(factory, "url", None) or repr(factory)
    if kind == "SqliteState":
        directory.mkdir(parents=True, exist_ok=True)
        return dataclasses.replace(factory, path=str((directory / f"{tag}.db").resolve()))
    if kind == "MemoryState":
        return dataclasses.replace(factory, name=f"{factory.name}-{tag}")
    namespace = {"RedisState": "key_prefix", "ElasticsearchState": "index"}.get(kind)
    if namespace is None:
        raise SweepError(f"{writer} writes state {url} ({kind}); tune cannot make a scratch copy of it "
                         "and will not write into it. Point the topology at a scratch state for the "
                         "sweep, e.g. SqliteState.opaque(path='/tmp/tune.db')")
    if not allow_writes:
        raise SweepError(f"{writer} writes state {url}; tune will not write into it. Pass "
                         f"--allow-state-writes to let each run write a scratch {namespace} in the same "
                         f"store ('{getattr(factory, namespace)}-{tag}', left for you to delete), or point "
                         "the topology at a scratch state, e.g. SqliteState.opaque(path='/tmp/tune.db')")
    value = f"{getattr(factory, namespace)}-{tag}"
    return dataclasses.replace(factory, **{namespace: value.lower() if namespace == "index" else value})


# --- helpers ------------------------------------------------------------------------------------
def _encode(offsets: Offsets) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def _decode(encoded: dict[str, dict[str, int]]) -> Offsets:
    return {(t, int(p)): int(o) for t, parts in encoded.items() for p, o in parts.items()}

