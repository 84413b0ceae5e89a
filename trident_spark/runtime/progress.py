"""Per-batch progress: what each Trident batch read, how big it was and how long it took."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from trident_spark.state.redaction import redact_text

#: In each stream's checkpoint directory: one ``BatchProgress.to_json()`` line per finished batch.
PROGRESS_FILE = "trident-progress.jsonl"
#: In the checkpoint directory: when and how the topology was started, and when it stopped.
RUN_FILE = "trident-run.json"


#: A stage's keys in progress files, in the order the runtime always wrote them.
_STAGE_KEYS = ("name", "kind", "ms", "rows_in", "rows_out", "tasks")


@dataclass(eq=False)
class StageProgress(Mapping[str, Any]):
    """Where one batch's task time went in one stage: an entry of :attr:`BatchProgress.stages`.

    Read it by attribute (``stage.ms``) or by key, as the dicts it replaced
    (``stage["ms"]``, ``stage.get("rows_in")``, ``dict(stage)``); it equals a mapping of
    the same keys and values. :meth:`to_json` is the object a progress file holds, the
    same keys and values as before, so files of older and newer versions read alike.

    Attributes
    ----------
    name : str
        The stage: the operation's label (``each(Split)``), with its step for an
        operation that runs as several stages (``persistentAggregate(Count) / update``).
    kind : str
        ``source``, ``python``, ``state_get``, ``aggregate``, ``state_query``,
        ``state_put`` or ``spark`` (``runtime.metrics.KINDS``).
    ms : float
        Task time, summed over the stage's tasks.
    rows_in, rows_out : int or None
        Rows the stage read and wrote (None: not measured).
    tasks : int or None
        How many tasks ran it (None: not counted).

    Examples
    --------
    >>> stage = StageProgress("each(Split)", "python", ms=410.0, rows_in=10, rows_out=40, tasks=2)
    >>> stage.ms, stage["rows_out"], stage == {"name": "each(Split)", "kind": "python", "ms": 410.0,
    ...                                         "rows_in": 10, "rows_out": 40, "tasks": 2}
    (410.0, 40, True)
    >>> StageProgress.from_json(stage.to_json()) == stage
    True
    """

    name: str = ""
    kind: str = ""
    ms: float = 0.0
    rows_in: int | None = None
    rows_out: int | None = None
    tasks: int | None = None

    def __getitem__(self, key: str) -> Any:
        if key not in _STAGE_KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(_STAGE_KEYS)

    def __len__(self) -> int:
        return len(_STAGE_KEYS)

    def to_json(self) -> dict[str, Any]:
        """The stage as a progress file's JSON object."""
        return {key: getattr(self, key) for key in _STAGE_KEYS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StageProgress:
        """Read back a progress file's stage object (unknown keys ignored, missing ones take
        their defaults)."""
        if isinstance(data, StageProgress):
            return data
        return cls(**{key: data[key] for key in _STAGE_KEYS if key in data})

    @classmethod
    def all_of(cls, stages: Iterable[Mapping[str, Any]]) -> list[StageProgress]:
        """``stages`` as records (records are kept as they are)."""
        return [cls.from_json(stage) for stage in stages]


#: Below this task time, a batch whose slowest stage is Spark's own work (scheduling, moving rows
#: to and from Python) is small: ``line()`` names no slowest stage, it would say "spark" for all.
SPARK_FIXED_COST_MS = 1000.0


@dataclass
class BatchProgress:
    """One finished batch of one stream.

    ``bytes`` and ``record_bytes`` come from the spout's sizing (sampled record
    sizes); ``limited_by`` says which read limit cut the batch, and
    ``read_limit_bytes`` the per-partition limit it was planned with. ``state``
    sums the counters of the batch's state tasks (``StateStats``: cache hits
    and misses, store reads and writes and their time, keys read and written,
    lost races).

    ``stages`` lists where the batch's task time went, in pipeline order: one
    :class:`StageProgress` (``name``, ``kind``, ``ms``, ``rows_in``, ``rows_out``,
    ``tasks``; readable as a mapping too, as the dicts it replaced) per stage, ``kind``
    one of ``source`` (the Kafka read), ``python`` (an operator), ``aggregate``,
    ``state_get``, ``state_put``, ``state_query`` and ``spark`` (the rest of
    the executors' time: JVM shuffle, built-in aggregation, moving rows to and
    from Python). ``ms`` is summed over the stage's tasks, not wall time.
    ``spark`` holds what Spark measured of the batch's jobs (executor run and
    CPU time, GC, shuffle bytes, tasks). ``backlog`` is the records the spout
    saw waiting after this batch; ``partition_rows`` the records per Kafka
    partition. ``cores`` is Spark's default parallelism.

    Examples
    --------
    >>> batch = BatchProgress("words", txid=3, rows=1200, duration_ms=850,
    ...                       stages=[{"name": "each(Split)", "kind": "python", "ms": 410.0}])
    >>> batch.slowest_stage()["name"]
    'each(Split)'
    >>> BatchProgress.from_json(batch.to_json()) == batch
    True
    """

    stream: str
    txid: int
    rows: int
    duration_ms: int
    bytes: int | None = None
    record_bytes: float | None = None
    limited_by: str | None = None
    lost_records: int = 0
    malformed_records: int = 0
    input_rows_per_second: float | None = None
    processed_rows_per_second: float | None = None
    timestamp: str = ""
    durations_ms: dict[str, int] = field(default_factory=dict)
    end_offsets: dict[str, Any] = field(default_factory=dict)
    state: dict[str, int] = field(default_factory=dict)
    start_offsets: dict[str, Any] = field(default_factory=dict)
    latest_offsets: dict[str, Any] = field(default_factory=dict)
    partition_rows: dict[str, int] = field(default_factory=dict)
    backlog: int | None = None
    read_limit_bytes: int | None = None
    stages: list[StageProgress] = field(default_factory=list)
    spark: dict[str, float] = field(default_factory=dict)
    cores: int | None = None
    #: The first batch this process ran for the stream: it starts Spark's Python workers, so its
    #: time is not the stream's steady state (``status`` and ``tune`` leave it out).
    warmup: bool = False
    #: Times the batch ran in this process: more than 1 when it was replayed (``FailedException``,
    #: lost conditional writes, an outage). ``rows`` and the spout's counts are the last attempt's.
    attempts: int = 1
    #: Errors operations reported with ``collector.reportError`` in this batch, by operator
    #: (the batch went on), and the last message of each (secrets redacted).
    errors_reported: dict[str, int] = field(default_factory=dict)
    last_errors: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Stages given as mappings (a progress file's JSON, older callers) become records.
        self.stages = StageProgress.all_of(self.stages)

    @classmethod
    def from_spark(cls, stream: str, progress: dict[str, Any]) -> BatchProgress:
        """Build from a ``StreamingQueryProgress`` as JSON (one source: the stream's spout)."""
        source = (progress.get("sources") or [{}])[0]
        end = source.get("endOffset")
        if isinstance(end, str):
            end = json.loads(end)
        end = end or {}
        sizing = end.get("batch", {}) if isinstance(end, dict) else {}
        if not isinstance(sizing, dict):  # the Kafka spout's batch sizing; other spouts differ
            sizing = {}
        observed = progress.get("observedMetrics") or {}
        malformed = sum(int(row.get("malformed_records", 0) or 0) for row in observed.values())
        read_ms = [float(row["read_ms"]) for row in observed.values() if row.get("read_ms") is not None]
        durations = progress.get("durationMs") or {}
        start, latest = _offsets_doc(source.get("startOffset")), _offsets_doc(source.get("latestOffset"))
        end_offsets = end.get("offsets", {}) if isinstance(end, dict) else {}
        begin = {**start.get("offsets", {})}
        for topic, parts in (end.get("begin", {}) if isinstance(end, dict) else {}).items():
            begin[topic] = {**begin.get(topic, {}), **parts}  # partitions new in this batch
        rows = int(progress.get("numInputRows", 0))
        stages = [StageProgress("source", "source", ms=round(sum(read_ms), 3), rows_out=rows)] \
            if read_ms else []
        return cls(
            stream=stream,
            txid=int(progress.get("batchId", -1)),
            rows=int(progress.get("numInputRows", 0)),
            duration_ms=int(durations.get("triggerExecution", 0)),
            bytes=sizing.get("bytes"),
            record_bytes=sizing.get("record_bytes"),
            limited_by=sizing.get("limited_by"),
            lost_records=int(sizing.get("lost", 0) or 0),
            malformed_records=malformed,
            input_rows_per_second=_number(progress.get("inputRowsPerSecond")),
            processed_rows_per_second=_number(progress.get("processedRowsPerSecond")),
            timestamp=str(progress.get("timestamp", "")),
            durations_ms={k: int(v) for k, v in durations.items()},
            end_offsets=end_offsets,
            start_offsets=begin,
            latest_offsets=latest.get("offsets", {}),
            partition_rows=sizing.get("partition_rows") or _partition_rows(begin, end_offsets),
            backlog=_backlog(latest.get("offsets"), end_offsets),
            read_limit_bytes=sizing.get("read_limit_bytes"),
            stages=stages,
        )

    @classmethod
    def from_json(cls, line: str) -> BatchProgress:
        """Read back one line of ``trident-progress.jsonl`` (unknown keys ignored, missing ones
        take their defaults, so files of older and newer versions read)."""
        data = json.loads(line)
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def add_task_metrics(self, counters: dict[Any, float], spark: dict[str, float],
                         order: list[str] | None = None) -> None:
        """Join what the batch's tasks counted (``runtime.metrics``) and what Spark measured."""
        from trident_spark.runtime.metrics import split_counters, split_errors, spout_reads, with_spark_rest

        reads = spout_reads(counters)
        if reads is not None:  # a spout read in its first operations' tasks: Spark counted its partitions
            partitions, (self.rows, self.malformed_records) = self.rows, reads
            scale = self.rows / partitions if partitions else 0.0
            for rate in ("input_rows_per_second", "processed_rows_per_second"):
                value = getattr(self, rate)
                if value is not None:
                    setattr(self, rate, value * scale)
        self.state, stages = split_counters(counters, order)
        self.errors_reported, self.last_errors = split_errors(counters)
        self.spark = dict(spark)
        self.stages = StageProgress.all_of(with_spark_rest([*self.stages, *stages], self.spark))

    def slowest_stage(self) -> StageProgress | None:
        """The stage that took the most task time (None when nothing was measured)."""
        return max(self.stages, key=lambda s: s.ms or 0.0, default=None)

    def to_json(self) -> str:
        """One line of ``trident-progress.jsonl`` (every other field holds plain JSON values, so
        they are written as they are: no copy, once per batch on the driver)."""
        return json.dumps({**vars(self), "stages": [s.to_json() for s in self.stages]}, sort_keys=True)

    def line(self) -> str:
        """A one-line summary for terminals and logs."""
        size = f", {self.bytes:,} B" if self.bytes is not None else ""  # spouts other than Kafka: unsized
        extra = f", limited by {self.limited_by}" if self.limited_by not in (None, "available") else ""
        bad = f", {self.malformed_records} malformed skipped" if self.malformed_records else ""
        bad += f", {self.attempts} attempts" if self.attempts > 1 else ""
        # Stage names are operator labels, which may show a user's object: no secret gets through.
        line: str = redact_text(f"[{self.stream}] batch {self.txid}: {self.rows:,} rows{size}, "
                                f"{self.duration_ms} ms{extra}{bad}{self._state_line()}"
                                f"{self._slowest_line()}{self._errors_line()}")
        return line

    def __repr__(self) -> str:
        # The dataclass repr showed every offset and stage: 1,500 characters on one line.
        return (f"BatchProgress(stream={self.stream!r}, txid={self.txid}, rows={self.rows}, "
                f"duration_ms={self.duration_ms})")

    def _repr_html_(self) -> str:
        """The batch as a small table in Jupyter: its summary, then where its task time went."""
        from html import escape

        rows = [("stream", self.stream), ("batch (txid)", str(self.txid)), ("rows", f"{self.rows:,}"),
                ("duration", f"{self.duration_ms:,} ms")]
        if self.bytes is not None:
            rows.append(("bytes", f"{self.bytes:,}"))
        if self.limited_by not in (None, "available"):
            rows.append(("limited by", str(self.limited_by)))
        if self.backlog is not None:
            rows.append(("backlog", f"{self.backlog:,} records"))
        if self.attempts > 1:
            rows.append(("attempts", str(self.attempts)))
        total = sum(s.ms or 0.0 for s in self.stages)
        for stage in self.stages:
            share = f" ({stage.ms / total:.0%})" if total else ""
            rows.append((f"stage {stage.name}", f"{stage.ms:,.0f} ms{share}"))
        body = "".join(f"<tr><th style='text-align:left'>{escape(redact_text(k))}</th>"
                       f"<td>{escape(redact_text(v))}</td></tr>" for k, v in rows)
        return f"<table>{body}</table>"

    def _errors_line(self) -> str:
        """``; 3 errors reported by each(Parse), 1 by each(Geo)``: what ``reportError`` counted."""
        if not self.errors_reported:
            return ""
        ranked = sorted(self.errors_reported.items(), key=lambda kv: (-kv[1], kv[0]))
        (name, n), rest = ranked[0], ranked[1:]
        more = "".join(f", {count} by {other}" for other, count in rest)
        return f"; {n} error{'s' if n != 1 else ''} reported by {name}{more}"

    def _slowest_line(self) -> str:
        slowest = self.slowest_stage()
        total = sum(s.ms or 0.0 for s in self.stages)
        if slowest is None or not total:
            return ""
        if slowest.kind == "spark" and slowest.ms < SPARK_FIXED_COST_MS:
            return ""  # a small batch: Spark's fixed cost per task, nothing to tune in the topology
        return f"; slowest stage: {slowest.name} ({slowest.ms / total:.0%} of task time)"

    def _state_line(self) -> str:
        written = self.state.get("keys_written", 0)
        if not written:
            return ""
        hits, misses = self.state.get("cache_hits", 0), self.state.get("cache_misses", 0)
        cache = f", cache hits {hits / (hits + misses):.0%}" if hits + misses else ""
        return (f"; state: {written:,} keys written, {self.state.get('store_reads', 0)} reads, "
                f"{self.state.get('store_writes', 0)} writes{cache}")


def _offsets_doc(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _partition_rows(begin: dict[str, Any], end: dict[str, Any]) -> dict[str, int]:
    """Records per Kafka partition: ``{"topic[p]": end - begin}`` (partitions with records)."""
    rows = {}
    for topic, parts in end.items():
        if not isinstance(parts, dict):
            return {}
        for partition, offset in parts.items():
            start = begin.get(topic, {}).get(partition)
            if isinstance(start, int) and isinstance(offset, int) and offset > start:
                rows[f"{topic}[{partition}]"] = offset - start
    return rows


def _backlog(latest: Any, end: dict[str, Any]) -> int | None:
    """Records the spout saw waiting beyond the batch's end (None when it did not say)."""
    if not isinstance(latest, dict) or not latest:
        return None
    total = 0
    for topic, parts in latest.items():
        for partition, offset in (parts or {}).items():
            done = end.get(topic, {}).get(partition, 0)
            if isinstance(offset, int) and isinstance(done, int):
                total += max(0, offset - done)
    return total


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


ProgressCallback = Callable[[BatchProgress], None]
