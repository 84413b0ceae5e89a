"""Where a stream's time goes, and whether it keeps up: the tuning notes' diagnosis of batch progress.

The Storm+Trident tuning notes start from the First Rule: *every stage is
always ready to accept records, and every processed record is delivered
promptly*. This module reads the per-batch progress a stream writes
(``BatchProgress``, or the same dicts read back from ``trident-progress.jsonl``)
and answers the notes' three questions:

* the numbers: batches, rows, input vs processing rate, batch durations,
  the backlog and its trend, the time of each stage;
* the principal bottleneck, in the notes' terms: IO (the source read, or
  store round trips), CPU, concurrency (idle cores), a remote rate limit,
  memory (GC) or bookkeeping (per-batch overhead outside the tasks);
* a verdict against the First Rule: falling behind, keeping up or starved.

Pure Python: no pyspark. The thresholds are module constants; each says why.

Examples
--------
>>> batches = [{"stream": "wc", "txid": i, "rows": 1000, "duration_ms": 300,
...             "limited_by": "available", "backlog": 0} for i in range(5)]
>>> diagnose(batches, trigger_ms=1000).verdict.kind
'keeping up'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

#: Batches the diagnosis looks at (the most recent ones): enough to see a trend, recent enough
#: to follow a change of load.
DEFAULT_WINDOW = 20

#: The backlog grows (or drains) when its least-squares slope over the window exceeds this fraction
#: of a mean batch per batch: below that, the sampled offsets' noise (a partition's newest offset is
#: read once per trigger) looks like growth.
BACKLOG_TREND = 0.1
#: A trend needs at least this many batches with a known backlog.
TREND_MIN_BATCHES = 3

#: Batches count as "cut by the read limit" when at least this share of the window was limited.
LIMITED_SHARE = 0.5
#: Processing below this fraction of the input rate cannot keep up (10% is measurement slack: the
#: input rate comes from offsets sampled once per trigger).
RATE_SLACK = 0.9
#: Starved: the median batch takes less than this fraction of the trigger interval while reading
#: everything available -- the stages spend most of each interval waiting for input.
STARVED_DURATION = 0.25
#: Starved, whatever the trigger: at least this share of the window's batches were empty.
EMPTY_SHARE = 0.5

#: Bookkeeping is the principal bottleneck when at least this share of batch time is outside the
#: executors' tasks (driver planning, offset and commit logs, job scheduling): half the time spent on
#: overhead means the batches are too small to amortize it.
BOOKKEEPING_SHARE = 0.5
#: Memory: GC takes at least this share of the executors' run time (the JVM's own advice is to keep
#: it under ~10%; at 20% collection is a stage of its own).
GC_SHARE = 0.2
#: Concurrency: the tasks keep, on average, less than this share of the cores busy while the batch
#: runs. On 2 cores one task at a time is 50%: below 60% a core sits idle most of the batch.
BUSY_CORES_SHARE = 0.6
#: A stage group dominates when it takes at least this share of the task time.
DOMINANT_SHARE = 0.5
#: Spark's own work is CPU-bound when executor CPU time is at least this share of run time; below
#: it the executors wait (shuffle, disk, the network).
SPARK_CPU_SHARE = 0.7
#: Remote rate limit: store time per round trip rises with the batch size -- the correlation of the
#: two over the window is at least RATE_LIMIT_CORRELATION and a round trip of the largest batch
#: takes RATE_LIMIT_RATIO times one of the smallest (a latency-bound store stays flat).
RATE_LIMIT_CORRELATION = 0.8
RATE_LIMIT_RATIO = 1.5
RATE_LIMIT_MIN_BATCHES = 3

#: Stage kinds (the contract of ``BatchProgress.stages``) grouped as the tuning notes see them.
STAGE_GROUPS = {
    "source": "source",
    "python": "python", "aggregate": "python",
    "state_get": "store", "state_put": "store", "state_query": "store",
    "spark": "spark",
}
STORE_KINDS = ("state_get", "state_put", "state_query")

FALLING_BEHIND, KEEPING_UP, STARVED, UNKNOWN = "falling behind", "keeping up", "starved", "unknown"


def value_of(batch: Any, name: str, default: Any = None) -> Any:
    """A field of a ``BatchProgress`` or of its JSON dict; ``default`` when missing or null."""
    found = batch.get(name) if isinstance(batch, Mapping) else getattr(batch, name, None)
    return default if found is None else found


@dataclass(frozen=True)
class StageTime:
    """One stage over the window: mean task time per batch, share of all stages, mean rows."""

    name: str
    kind: str
    ms: float
    share: float
    rows_in: int | None
    rows_out: int | None
    slowest: bool = False


@dataclass(frozen=True)
class Finding:
    """The principal bottleneck: its kind, a title in the notes' words, why, and the numbers."""

    kind: str  # io | cpu | concurrency | rate_limit | memory | bookkeeping | none | unknown
    title: str
    explanation: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return f"{self.title}: {self.explanation}"


@dataclass(frozen=True)
class Verdict:
    """The First Rule's verdict: ``kind`` is falling behind, keeping up, starved or unknown."""

    kind: str
    reason: str

    def line(self) -> str:
        return f"{self.kind}: {self.reason}"


@dataclass(frozen=True)
class Totals:
    """Counts over every batch of a stream (the window may hold only the recent ones)."""

    batches: int
    rows: int
    first_txid: int | None
    last_txid: int | None


@dataclass(frozen=True)
class Diagnosis:
    """What :func:`diagnose` found for one stream."""

    stream: str
    totals: Totals
    window: int
    last: dict[str, Any]
    trigger_ms: float | None
    input_rate: float | None
    input_rate_source: str | None  # "offsets" (arrivals) or "spark" (Spark's inputRowsPerSecond)
    processing_rate: float | None
    duration_last: int | None
    duration_mean: float | None
    duration_p50: float | None
    duration_p95: float | None
    backlog: int | None
    backlog_slope: float | None
    backlog_trend: str | None  # growing | stable | draining | None (unknown)
    limited_share: float
    empty_share: float
    cores: int | None
    stages: list[StageTime]
    bottleneck: Finding
    verdict: Verdict

    @property
    def slowest(self) -> StageTime | None:
        return next((s for s in self.stages if s.slowest), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``json.dumps(d.to_dict())``)."""
        return asdict(self)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..1): a value that occurred, never an interpolation.

    >>> percentile([10, 20, 30, 40], 0.5), percentile([10, 20, 30, 40], 0.95)
    (20, 40)
    """
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Least-squares slope of ``(x, y)`` points; None for fewer than two distinct x."""
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def correlation(points: Sequence[tuple[float, float]]) -> float | None:
    """Pearson correlation; None when either coordinate is constant."""
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    syy = sum((y - my) ** 2 for _, y in points)
    if sxx == 0 or syy == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / math.sqrt(sxx * syy)


def totals_of(batches: Sequence[Any]) -> Totals:
    txids = [int(value_of(b, "txid", -1)) for b in batches]
    return Totals(len(batches), sum(int(value_of(b, "rows", 0)) for b in batches),
                  min(txids) if txids else None, max(txids) if txids else None)


def diagnose(batches: Sequence[Any], *, trigger_ms: float | None = None, window: int = DEFAULT_WINDOW,
             cores: int | None = None, totals: Totals | None = None, stream: str | None = None) -> Diagnosis:
    """Diagnose one stream from its batches (oldest first), looking at the last ``window`` of them.

    ``trigger_ms`` is the trigger interval (``trident-run.json``'s ``trigger_ms``; None for
    available-now or unknown); ``cores`` the fallback when the batches do not say; ``totals`` the
    counts over all batches when ``batches`` holds only the recent ones.
    """
    recent = list(batches)[-window:] if window > 0 else list(batches)
    totals = totals or totals_of(batches)
    name = stream or (str(value_of(recent[-1], "stream", "")) if recent else "")
    if not recent:
        return Diagnosis(name, totals, 0, {}, trigger_ms, None, None, None, None, None, None, None, None,
                         None, None, 0.0, 0.0, cores,
                         [], Finding("unknown", "no batches", "the stream has not finished a batch yet"),
                         Verdict(UNKNOWN, "no finished batch yet"))
    cores = next((int(c) for b in reversed(recent) if (c := value_of(b, "cores")) is not None), cores)
    # A run's first batch starts Spark's Python workers (seconds to tens of seconds): it says
    # nothing of the steady state, so durations and stage times leave it out when others exist.
    steady = [b for b in recent if not value_of(b, "warmup", False)] or recent
    durations = [int(value_of(b, "duration_ms", 0)) for b in steady]
    steady_rows = [int(value_of(b, "rows", 0)) for b in steady]
    rows = [int(value_of(b, "rows", 0)) for b in recent]
    last = recent[-1]
    input_rate, source = _input_rate(recent)
    busy_s = sum(d for d, r in zip(durations, steady_rows, strict=True) if r) / 1000
    backlog = value_of(last, "backlog")
    trend_slope, trend = _backlog_trend(recent, rows)
    limited = [b for b in recent if value_of(b, "limited_by", "available") != "available"]
    stages = _stages(steady)
    diagnosis = Diagnosis(
        stream=name, totals=totals, window=len(recent),
        last={key: value_of(last, key) for key in ("txid", "rows", "bytes", "duration_ms", "limited_by",
                                                   "timestamp", "backlog")},
        trigger_ms=trigger_ms, input_rate=input_rate, input_rate_source=source,
        processing_rate=sum(steady_rows) / busy_s if busy_s else None,
        duration_last=durations[-1], duration_mean=sum(durations) / len(durations),
        duration_p50=percentile(durations, 0.5), duration_p95=percentile(durations, 0.95),
        backlog=None if backlog is None else int(backlog), backlog_slope=trend_slope, backlog_trend=trend,
        limited_share=len(limited) / len(recent), empty_share=rows.count(0) / len(recent), cores=cores,
        stages=stages, bottleneck=Finding("unknown", "", ""), verdict=Verdict(UNKNOWN, ""),
    )
    return _with(diagnosis, bottleneck=bottleneck(steady, stages, cores),
                 verdict=verdict(diagnosis, limited))


def _with(diagnosis: Diagnosis, **changes: Any) -> Diagnosis:
    from dataclasses import replace

    return replace(diagnosis, **changes)


# --- rates and trends -----------------------------------------------------------------------------
def _total_offset(offsets: Any) -> int | None:
    if not isinstance(offsets, Mapping) or not offsets:
        return None
    total = 0
    for partitions in offsets.values():
        if not isinstance(partitions, Mapping):
            return None
        total += sum(int(o) for o in partitions.values())
    return total


def _when(batch: Any) -> float | None:
    text = str(value_of(batch, "timestamp", ""))
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _input_rate(recent: Sequence[Any]) -> tuple[float | None, str | None]:
    """Records arriving per second: the growth of the newest offsets over time when known (what
    producers write), else the mean of Spark's inputRowsPerSecond (what the batches read)."""
    seen = []
    for batch in recent:
        newest = _total_offset(value_of(batch, "latest_offsets"))
        if newest is None and value_of(batch, "backlog") is not None:
            end = _total_offset(value_of(batch, "end_offsets"))
            newest = None if end is None else end + int(value_of(batch, "backlog"))
        when = _when(batch)
        if newest is not None and when is not None:
            seen.append((when, newest))
    if len(seen) >= 2 and seen[-1][0] > seen[0][0]:
        return (seen[-1][1] - seen[0][1]) / (seen[-1][0] - seen[0][0]), "offsets"
    # Spark says 0 rows/s for a batch that read rows when it has no earlier trigger to divide by
    # (a run's first batch, an available-now run): no rate, not a stream with no input.
    spark = [float(r) for b in recent if (r := value_of(b, "input_rows_per_second")) is not None
             and (r > 0 or not value_of(b, "rows"))]
    return (sum(spark) / len(spark), "spark") if spark else (None, None)


def _backlog_trend(recent: Sequence[Any], rows: list[int]) -> tuple[float | None, str | None]:
    points = [(float(i), float(b)) for i, batch in enumerate(recent)
              if (b := value_of(batch, "backlog")) is not None]
    if len(points) < TREND_MIN_BATCHES:
        return None, None
    per_batch = slope(points)
    if per_batch is None:
        return None, None
    threshold = BACKLOG_TREND * max(sum(rows) / len(rows), 1.0)
    if per_batch > threshold and points[-1][1] > 0:
        return per_batch, "growing"
    if per_batch < -threshold:
        return per_batch, "draining"
    return per_batch, "stable"


# --- stages ---------------------------------------------------------------------------------------
def _stages(recent: Sequence[Any]) -> list[StageTime]:
    """Mean per batch of each stage over the window's batches that report stages, in pipeline order."""
    timed = [value_of(b, "stages", []) for b in recent]
    timed = [stages for stages in timed if stages]
    if not timed:
        return []
    order: dict[tuple[str, str], dict[str, Any]] = {}
    for stages in reversed(timed):  # pipeline order of the latest batch, older-only stages after
        for stage in stages:
            key = (str(stage.get("name", "?")), str(stage.get("kind", "?")))
            order.setdefault(key, {"ms": 0.0, "in": [], "out": []})
    for stages in timed:
        for stage in stages:
            entry = order[(str(stage.get("name", "?")), str(stage.get("kind", "?")))]
            entry["ms"] += float(stage.get("ms") or 0.0)
            if stage.get("rows_in") is not None:
                entry["in"].append(int(stage["rows_in"]))
            if stage.get("rows_out") is not None:
                entry["out"].append(int(stage["rows_out"]))
    total = sum(e["ms"] for e in order.values())
    slowest = max(order, key=lambda k: order[k]["ms"]) if total > 0 else None
    return [StageTime(name, kind, e["ms"] / len(timed), e["ms"] / total if total else 0.0,
                      round(sum(e["in"]) / len(e["in"])) if e["in"] else None,
                      round(sum(e["out"]) / len(e["out"])) if e["out"] else None,
                      (name, kind) == slowest)
            for (name, kind), e in order.items()]


# --- the principal bottleneck ---------------------------------------------------------------------
def bottleneck(recent: Sequence[Any], stages: list[StageTime], cores: int | None) -> Finding:
    """The principal bottleneck over the window, checked in this order: bookkeeping (time outside
    the tasks), memory (GC), concurrency (idle cores), then the stage group taking most task time."""
    n = len(recent)
    spark = [value_of(b, "spark", {}) for b in recent]
    task_ms = [sum(float(s.get("ms") or 0) for s in value_of(b, "stages", [])) or
               float(sp.get("executor_run_ms") or 0) for b, sp in zip(recent, spark, strict=True)]
    duration = [float(value_of(b, "duration_ms", 0)) for b in recent]
    add = [float(value_of(b, "durations_ms", {}).get("addBatch", d)) for b, d in zip(recent, duration,
                                                                                     strict=True)]
    if not any(task_ms):
        return Finding("unknown", "unknown",
                       "the progress has no stage or executor timings (written by an older trident-spark, "
                       "or the batches were empty)")
    rows = sum(int(value_of(b, "rows", 0)) for b in recent) / n
    driver = sum(d - a for d, a in zip(duration, add, strict=True))
    waiting = sum(max(0.0, a - t) for a, t in zip(add, task_ms, strict=True))
    overhead = (driver + waiting) / sum(duration) if sum(duration) else 0.0
    if overhead >= BOOKKEEPING_SHARE:
        return Finding("bookkeeping", "bookkeeping (per-batch overhead)",
                       f"{overhead:.0%} of batch time is outside executor tasks ({driver / n:,.0f} ms on the "
                       f"driver outside addBatch, {waiting / n:,.0f} ms of addBatch with no task running) "
                       f"for {rows:,.0f} rows a batch: larger batches amortize it",
                       {"overhead_share": overhead, "driver_ms": driver / n, "scheduling_ms": waiting / n,
                        "rows_per_batch": rows, "durations_ms": _mean_durations(recent)})
    run_ms = sum(float(sp.get("executor_run_ms") or 0) for sp in spark)
    gc_ms = sum(float(sp.get("gc_ms") or 0) for sp in spark)
    if run_ms and gc_ms / run_ms >= GC_SHARE:
        return Finding("memory", "memory (GC)",
                       f"GC takes {gc_ms / run_ms:.0%} of executor run time ({gc_ms / n:,.0f} of "
                       f"{run_ms / n:,.0f} ms a batch): smaller batches or more executor memory",
                       {"gc_share": gc_ms / run_ms, "gc_ms": gc_ms / n, "executor_run_ms": run_ms / n})
    if cores and cores >= 2 and sum(add):
        busy = sum(task_ms) / sum(add)
        if busy / cores < BUSY_CORES_SHARE:
            parts = [len(p) for b in recent if (p := value_of(b, "partition_rows", {}))]
            tasks = [int(sp["tasks"]) for sp in spark if sp.get("tasks")]
            why = (f"; {max(parts)} partitions had data" if parts and max(parts) < cores else "")
            return Finding("concurrency", "concurrency (idle cores)",
                           f"tasks keep {busy:.1f} of {cores} cores busy while a batch runs "
                           f"({busy / cores:.0%}){why}: more partitions (or repartition) to use every core",
                           {"busy_cores": busy, "cores": cores, "busy_share": busy / cores,
                            "partitions": max(parts) if parts else None,
                            "tasks_per_batch": sum(tasks) / len(tasks) if tasks else None})
    return _stage_bottleneck(recent, stages, spark)


def _stage_bottleneck(recent: Sequence[Any], stages: list[StageTime],
                      spark: list[dict[str, Any]]) -> Finding:
    if not stages:  # executor time known, stage split unknown
        return Finding("unknown", "unknown",
                       "the progress has executor times but no per-stage timings")
    groups: dict[str, float] = {}
    for stage in stages:
        group = STAGE_GROUPS.get(stage.kind, "python")
        groups[group] = groups.get(group, 0.0) + stage.share
    group = max(groups, key=lambda g: groups[g])
    share = groups[group]
    dominates = "dominates" if share >= DOMINANT_SHARE else "is the largest share, none dominates"
    names = [s for s in stages if STAGE_GROUPS.get(s.kind, "python") == group]
    ms = sum(s.ms for s in names)
    numbers: dict[str, Any] = {"group": group, "share": share, "ms": ms,
                               "stages": [s.name for s in names]}
    label = "+".join(s.name for s in names)
    if group == "store":
        limit = _rate_limit(recent)
        if limit is not None:
            return limit
        trips = _mean([_round_trips(b) for b in recent])
        per_trip = f", {trips:,.0f} round trips of {ms / trips:,.1f} ms" if trips else ""
        return Finding("io", "IO (store round trips)",
                       f"{label} {dominates}: {share:.0%} of task time ({ms:,.0f} ms a batch{per_trip}); "
                       "a bigger cache or larger multiGet/multiPut batches cut round trips",
                       {**numbers, "round_trips": trips})
    if group == "source":
        return Finding("io", "IO (source read)",
                       f"{label} {dominates}: {share:.0%} of task time ({ms:,.0f} ms a batch): reading and "
                       "decoding records; more partitions read in parallel, or a faster broker link", numbers)
    if group == "python":
        return Finding("cpu", "CPU (Python operators)",
                       f"{label} {dominates}: {share:.0%} of task time ({ms:,.0f} ms a batch): the Python "
                       "code itself; cheaper operators or more cores", numbers)
    run = sum(float(sp.get("executor_run_ms") or 0) for sp in spark)
    cpu = sum(float(sp.get("executor_cpu_ms") or 0) for sp in spark)
    numbers["cpu_share"] = cpu / run if run and cpu else None
    if run and cpu and cpu / run < SPARK_CPU_SHARE:
        return Finding("io", "IO (Spark shuffle or disk)",
                       f"{label} {dominates}: {share:.0%} of task time ({ms:,.0f} ms a batch) but executors "
                       f"use the CPU {cpu / run:.0%} of their run time: they wait on shuffle or disk",
                       numbers)
    cpu_note = f", CPU {cpu / run:.0%} of run time" if run and cpu else ""
    return Finding("cpu", "CPU (Spark)",
                   f"{label} {dominates}: {share:.0%} of task time ({ms:,.0f} ms a batch{cpu_note}): "
                   "shuffle, built-in aggregation and serialization", numbers)


def _round_trips(batch: Any) -> float:
    state = value_of(batch, "state", {})
    return float(state.get("store_reads", 0) or 0) + float(state.get("store_writes", 0) or 0)


def _rate_limit(recent: Sequence[Any]) -> Finding | None:
    points = []
    for batch in recent:
        store = sum(float(s.get("ms") or 0) for s in value_of(batch, "stages", [])
                    if s.get("kind") in STORE_KINDS)
        trips = _round_trips(batch)
        if store and trips and value_of(batch, "rows", 0):
            points.append((float(value_of(batch, "rows")), store / trips))
    if len(points) < RATE_LIMIT_MIN_BATCHES:
        return None
    r = correlation(points)
    smallest, largest = min(points), max(points)
    ratio = largest[1] / smallest[1] if smallest[1] else 0.0
    if r is None or r < RATE_LIMIT_CORRELATION or ratio < RATE_LIMIT_RATIO:
        return None
    return Finding("rate_limit", "remote rate limit",
                   f"a store round trip takes {smallest[1]:,.1f} ms at {smallest[0]:,.0f} rows a batch and "
                   f"{largest[1]:,.1f} ms at {largest[0]:,.0f} (correlation {r:.2f}): the store slows with "
                   "load, so bigger batches will not help; raise the store's limit or spread the keys",
                   {"ms_per_round_trip_small": smallest[1], "ms_per_round_trip_large": largest[1],
                    "rows_small": smallest[0], "rows_large": largest[0], "correlation": r})


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _mean_durations(recent: Sequence[Any]) -> dict[str, float]:
    sums: dict[str, float] = {}
    for batch in recent:
        for key, ms in value_of(batch, "durations_ms", {}).items():
            sums[key] = sums.get(key, 0.0) + float(ms)
    return {k: v / len(recent) for k, v in sums.items()}


# --- the First Rule's verdict ---------------------------------------------------------------------
def verdict(d: Diagnosis, limited: Sequence[Any]) -> Verdict:
    """Falling behind, keeping up or starved; the thresholds are the module constants."""
    trigger = d.trigger_ms
    p50, p95 = d.duration_p50 or 0.0, d.duration_p95 or 0.0
    limit = (str(value_of(limited[-1], "limited_by")) if limited else "")
    backlog = f"{d.backlog:,}" if d.backlog is not None else "?"
    if d.backlog_trend == "growing":
        return Verdict(FALLING_BEHIND, f"the backlog grows by {d.backlog_slope or 0:,.0f} records a batch "
                                       f"(now {backlog}){_cut(d, limit)}")
    slow = d.processing_rate is not None and d.input_rate is not None and d.input_rate_source == "offsets" \
        and d.processing_rate < RATE_SLACK * d.input_rate
    if d.backlog_trend != "draining":
        if slow:
            return Verdict(FALLING_BEHIND, f"processing {d.processing_rate or 0:,.0f} rows/s is below the "
                                           f"input rate {d.input_rate or 0:,.0f} rows/s{_cut(d, limit)}")
        if d.limited_share >= LIMITED_SHARE and trigger and p50 > trigger:
            return Verdict(FALLING_BEHIND, f"{d.limited_share:.0%} of batches are cut by {limit} and take "
                                           f"{p50:,.0f} ms (p50), over the {trigger:,.0f} ms trigger")
    if d.empty_share >= EMPTY_SHARE:
        return Verdict(STARVED, f"{d.empty_share:.0%} of the last {d.window} batches were empty: the stages "
                                "wait for input")
    if (trigger and d.limited_share < LIMITED_SHARE and p50 < STARVED_DURATION * trigger
            and d.backlog_trend != "growing" and not d.backlog):
        return Verdict(STARVED, f"batches take everything available and finish in {p50:,.0f} ms (p50) of a "
                                f"{trigger:,.0f} ms trigger: the stages wait for input "
                                f"{1 - p50 / trigger:.0%} of the time")
    if d.backlog_trend == "draining":
        backlog_text = f"backlog draining by {-(d.backlog_slope or 0):,.0f} records a batch (now {backlog})"
    elif d.backlog is not None:
        backlog_text = f"backlog {'stable at ' if d.backlog_trend == 'stable' else ''}{backlog}"
    else:
        backlog_text = "backlog unknown"
    if trigger:
        if p95 <= trigger:
            within = f"batches finish in {p95:,.0f} ms (p95) within the {trigger:,.0f} ms trigger"
        else:
            within = (f"batches take {p95:,.0f} ms (p95), over the {trigger:,.0f} ms trigger, "
                      "but read everything that arrives")
        return Verdict(KEEPING_UP, f"{backlog_text}; {within}")
    return Verdict(KEEPING_UP, f"{backlog_text}; batches take {p50:,.0f} ms (p50), no trigger interval")


def _cut(d: Diagnosis, limit: str) -> str:
    if d.limited_share >= LIMITED_SHARE and limit:
        return f"; {d.limited_share:.0%} of batches are cut by {limit}"
    return ""
