"""The progress view shared by ``status``, ``run`` and ``demo``: numbers, stage table, bottleneck, verdict.

On a terminal, ``run`` and ``demo`` show it as a live panel updated after every
batch; piped (CI, logs) they print one line per batch instead, as before.
``status`` renders the same view from a checkpoint directory.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from trident_spark.tuning.diagnosis import DEFAULT_WINDOW, Diagnosis, Totals, diagnose, value_of

#: Batches kept per stream in memory; the totals count every batch.
KEEP = 500
VERDICT_STYLES = {"falling behind": "bold red", "keeping up": "bold green", "starved": "bold yellow"}


class StreamHistory:
    """The recent batches of one stream and the totals over all of them."""

    def __init__(self, name: str, keep: int = KEEP) -> None:
        self.name = name
        self.recent: deque[Any] = deque(maxlen=keep)
        self.count = 0
        self.rows = 0
        self.first_txid: int | None = None
        self.last_txid: int | None = None

    def append(self, batch: Any) -> None:
        txid = int(value_of(batch, "txid", -1))
        self.recent.append(batch)
        self.count += 1
        self.rows += int(value_of(batch, "rows", 0))
        self.first_txid = txid if self.first_txid is None else min(self.first_txid, txid)
        self.last_txid = txid if self.last_txid is None else max(self.last_txid, txid)

    def diagnose(self, *, trigger_ms: float | None, window: int, cores: int | None = None) -> Diagnosis:
        totals = Totals(self.count, self.rows, self.first_txid, self.last_txid)
        return diagnose(list(self.recent), trigger_ms=trigger_ms, window=window, cores=cores, totals=totals,
                        stream=self.name)


@dataclass
class StreamView:
    """What the view shows of one stream: the diagnosis, and what the checkpoint says besides."""

    diagnosis: Diagnosis
    status: str | None = None  # "running (pid 42, ...)", "finished ...", ...
    pending: str | None = None  # a batch whose offsets are logged but not committed
    notes: list[str] = field(default_factory=list)


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f} ms"


def _rate(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f} rows/s"


def numbers(d: Diagnosis) -> list[tuple[str, str]]:
    """The label/value lines above the stage table."""
    t = d.totals
    span = f" (txid {t.first_txid}..{t.last_txid})" if t.batches else ""
    lines = [("batches", f"{t.batches:,}{span}, {t.rows:,} rows")]
    if d.last:
        size = f", {d.last['bytes']:,} B" if d.last.get("bytes") is not None else ""
        limit = d.last.get("limited_by")
        cut = f", limited by {limit}" if limit not in (None, "available") else ""
        lines.append(("last batch", f"txid {d.last['txid']}: {d.last['rows']:,} rows{size}, "
                                    f"{_ms(d.last['duration_ms'])}{cut}"))
    source = {"offsets": " (arrivals, from offsets)", "spark": " (Spark's read rate)"}.get(
        d.input_rate_source or "", "")
    arriving = "not measured" if d.input_rate is None else f"{_rate(d.input_rate)}{source}"
    lines.append(("rates", f"input {arriving}, processing {_rate(d.processing_rate)}"))
    if d.backlog is None:
        lines.append(("backlog", "unknown"))
    else:
        trend = ""
        if d.backlog_trend and d.backlog_slope is not None:
            trend = f", {d.backlog_trend} ({d.backlog_slope:+,.0f} a batch)"
        lines.append(("backlog", f"{d.backlog:,} records{trend}"))
    trigger = f"; trigger {_ms(d.trigger_ms)}" if d.trigger_ms else "; no trigger interval"
    lines.append(("duration", f"last {_ms(d.duration_last)}, p50 {_ms(d.duration_p50)}, "
                              f"p95 {_ms(d.duration_p95)}{trigger}"))
    return lines


def stage_table(d: Diagnosis) -> Table | None:
    """Task time of each stage, per batch over the window, the slowest one marked."""
    if not d.stages:
        return None
    table = Table(title=f"stages: task time per batch, mean of the last {d.window} batches",
                  title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("stage")
    table.add_column("kind")
    for column in ("ms", "share", "rows in", "rows out"):
        table.add_column(column, justify="right")
    table.add_column("")
    for s in d.stages:
        table.add_row(s.name, s.kind, f"{s.ms:,.0f}", f"{s.share:.0%}",
                      "-" if s.rows_in is None else f"{s.rows_in:,}",
                      "-" if s.rows_out is None else f"{s.rows_out:,}",
                      Text("<- slowest", style="bold") if s.slowest else "",
                      style="bold" if s.slowest else None)
    return table


def render_stream(view: StreamView) -> RenderableType:
    d = view.diagnosis
    parts: list[RenderableType] = [Rule(Text(d.stream, style="bold"), align="left")]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column()
    if view.status:
        grid.add_row("status", view.status)
    if view.pending:
        grid.add_row("", view.pending)
    for label, value in numbers(d):
        grid.add_row(label, value)
    parts.append(grid)
    table = stage_table(d)
    if table is not None:
        parts.append(table)
    verdicts = Table.grid(padding=(0, 2))
    verdicts.add_column(style="dim", no_wrap=True)
    verdicts.add_column(overflow="fold")  # a note's path longer than the line is folded, never cut
    verdicts.add_row("bottleneck", d.bottleneck.line())
    verdicts.add_row("verdict", Text(d.verdict.line(), style=VERDICT_STYLES.get(d.verdict.kind, "dim")))
    for note in view.notes:
        verdicts.add_row("note", note)
    parts.append(verdicts)
    return Group(*parts)


def render(views: Iterable[StreamView]) -> RenderableType:
    """Every stream's view, one after the other."""
    shown = [render_stream(v) for v in views]
    return Group(*shown) if shown else Text("waiting for the first batch...", style="dim")


class LiveProgress:
    """Progress of a running topology: call it with each ``BatchProgress`` (``on_progress=``).

    On a terminal (``console.is_terminal``) it keeps a live view of every stream up to date;
    otherwise it prints ``prefix + batch.line()`` per batch, for logs and CI. Use it as a context
    manager around the run so the live view starts and stops with it.

    Examples
    --------
    >>> live = LiveProgress(Console(), trigger_ms=1000)       # doctest: +SKIP
    >>> with live:                                            # doctest: +SKIP
    ...     topology.run(checkpoint_location="/tmp/wc", on_progress=live).awaitTermination()
    """

    def __init__(self, console: Console, *, trigger_ms: float | None = None, prefix: str = "",
                 window: int = DEFAULT_WINDOW, interactive: bool | None = None) -> None:
        self.console = console
        self.trigger_ms = trigger_ms
        self.prefix = prefix
        self.window = window
        self.interactive = console.is_terminal if interactive is None else interactive
        self.streams: dict[str, StreamHistory] = {}
        self._lock = threading.Lock()
        self._live: Live | None = None
        self._status = "running"

    def renderable(self) -> RenderableType:
        with self._lock:
            views = [StreamView(h.diagnose(trigger_ms=self.trigger_ms, window=self.window),
                                status=self._status) for h in self.streams.values()]
        return render(views)

    def __call__(self, batch: Any) -> None:
        """Called on the driver after every batch (from Spark's listener thread)."""
        with self._lock:
            stream = str(value_of(batch, "stream", ""))
            self.streams.setdefault(stream, StreamHistory(stream)).append(batch)
        if self._live is not None:
            self._live.update(self.renderable())
        else:
            self.console.print(self.prefix + batch.line(), highlight=False, markup=False)

    def __enter__(self) -> LiveProgress:
        if self.interactive:
            self._live = Live(self.renderable(), console=self.console, refresh_per_second=4)
            self._live.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._live is not None:
            self._status = ("stopped" if kind is None or issubclass(kind, KeyboardInterrupt)
                            else f"failed: {kind.__name__}")
            self._live.update(self.renderable())
            self._live.stop()
            self._live = None
