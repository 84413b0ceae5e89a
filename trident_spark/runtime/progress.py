"""Per-batch progress: what each Trident batch read, how big it was and how long it took."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class BatchProgress:
    """One finished batch of one stream.

    ``bytes`` and ``record_bytes`` come from the spout's sizing (sampled record
    sizes); ``limited_by`` says which read limit cut the batch. ``state`` sums
    the counters of the batch's state tasks (``StateStats``: cache hits and
    misses, store reads and writes, keys read and written, lost races).
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
        durations = progress.get("durationMs") or {}
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
            end_offsets=end.get("offsets", {}) if isinstance(end, dict) else {},
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def line(self) -> str:
        """A one-line summary for terminals and logs."""
        size = f"{self.bytes:,} B" if self.bytes is not None else "? B"
        extra = f", limited by {self.limited_by}" if self.limited_by not in (None, "available") else ""
        bad = f", {self.malformed_records} malformed skipped" if self.malformed_records else ""
        return (f"[{self.stream}] batch {self.txid}: {self.rows:,} rows, {size}, "
                f"{self.duration_ms} ms{extra}{bad}{self._state_line()}")

    def _state_line(self) -> str:
        written = self.state.get("keys_written", 0)
        if not written:
            return ""
        hits, misses = self.state.get("cache_hits", 0), self.state.get("cache_misses", 0)
        cache = f", cache hits {hits / (hits + misses):.0%}" if hits + misses else ""
        return (f"; state: {written:,} keys written, {self.state.get('store_reads', 0)} reads, "
                f"{self.state.get('store_writes', 0)} writes{cache}")


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


ProgressCallback = Callable[[BatchProgress], None]
