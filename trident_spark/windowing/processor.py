"""The window logic of one task, batch by batch: Trident's WindowTridentProcessor, engine-free.

:class:`WindowProcessor` adds a batch's tuples to its windows and returns the windows the
batch closes, in order. It is deterministic per txid: the windows' bookkeeping after batch
``T`` is stored under ``T`` (:class:`WindowState`), the input of batch ``T`` is the state after
the batch before it, and a replayed ``T`` overwrites what an earlier attempt stored for ``T``
with the same content. So a batch replayed any number of times (a ``FailedException``, a task
retry, a driver killed and restarted from its checkpoint) closes the same windows, once in the
batch that is committed.

Keys of one task, under its namespace ``ns`` (``<query>/<node>/<partition>``):

* ``ns/s/T``: the :class:`WindowState` after batch ``T`` (small: segments, counters);
* ``ns/t/T``: batch ``T``'s tuples (``[timestamp ms, values]``), while a window may need them;
* ``ns/head``: the last batch whose state was stored.

Batch ``T`` removes what no replay can need any more: the state its base was made from and the
tuple lists its base no longer held. Time: processing time is the batch's own timestamp (the
same on a replay); with event time it is the watermark, the largest timestamp seen minus the
allowed lateness, and a tuple older than the watermark the batch starts with is late: dropped
and counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from trident_spark.errors import TridentSparkError
from trident_spark.windowing.config import BaseWindowConfig
from trident_spark.windowing.store import WindowsStore


class WindowsStoreAheadError(TridentSparkError):
    """A windows store holds batches after the one being run: the checkpoint was reset (or two
    queries share the store's keys)."""


@dataclass
class Segment:
    """The live tuples of one batch: ``size`` tuples stored under ``t/txid``, live from ``start``."""

    txid: int
    start: int
    size: int
    min_ts: int
    max_ts: int

    @property
    def live(self) -> int:
        return self.size - self.start


@dataclass
class WindowState:
    """A task's windows after batch ``txid`` (stored as a plain dict under ``s/txid``)."""

    txid: int | None = None
    base: int | None = None  # the batch whose state this one was made from
    segments: list[Segment] = field(default_factory=list)
    since_trigger: int = 0  # count windows: tuples since the last window closed
    fired_until: int | None = None  # duration windows: every window ending at or before this closed
    watermark: int | None = None  # event time: the largest timestamp seen minus the lateness
    late: int = 0  # event time: tuples dropped as late, in all
    windows: int = 0  # windows closed, in all
    dropped: list[int] = field(default_factory=list)  # tuple lists the base held, this one not

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WindowState:
        values = dict(data)
        values["segments"] = [Segment(**s) for s in values.get("segments", [])]
        return cls(**values)


@dataclass
class BatchResult:
    """What one batch did: the windows it closed (each a list of value lists, in arrival order),
    the tuples it dropped as late, and how many it took in."""

    windows: list[list[list[Any]]]
    late: int = 0
    added: int = 0
    ends: list[int] = field(default_factory=list)  # duration windows: each window's end (ms)


class WindowProcessor:
    """One task's windows (one partition of one window stage).

    Parameters
    ----------
    store : WindowsStore
        Where the windows' tuples and bookkeeping live.
    namespace : str
        The task's key prefix: unique per window stage and partition.
    config : BaseWindowConfig
        The window.
    event_time : bool
        Whether tuples carry their own timestamps (else each batch's timestamp is its tuples').
    lateness_ms : int
        Event time: how far behind the largest timestamp seen a tuple may come.

    Examples
    --------
    >>> from trident_spark.windowing import InMemoryWindowsStore, SlidingCountWindow
    >>> p = WindowProcessor(InMemoryWindowsStore(), "q/3/0", SlidingCountWindow.of(3, 2))
    >>> p.run_batch(0, 1000, [[1], [2], [3]]).windows
    [[[1], [2]]]
    >>> p.run_batch(1, 2000, [[4], [5]]).windows
    [[[2], [3], [4]]]
    >>> p.run_batch(1, 2000, [[4], [5]]).windows   # a replay of batch 1: the same windows
    [[[2], [3], [4]]]
    """

    def __init__(self, store: WindowsStore, namespace: str, config: BaseWindowConfig,
                 event_time: bool = False, lateness_ms: int = 0) -> None:
        self.store = store
        self.ns = namespace
        self.config = config
        self.event_time = event_time
        self.lateness = lateness_ms

    # --- keys ----------------------------------------------------------------------------
    def _state_key(self, txid: int) -> str:
        return f"{self.ns}/s/{txid}"

    def _tuples_key(self, txid: int) -> str:
        return f"{self.ns}/t/{txid}"

    @property
    def _head_key(self) -> str:
        return f"{self.ns}/head"

    # --- the batch -------------------------------------------------------------------------
    def run_batch(self, txid: int, now_ms: int, values: Sequence[list[Any]],
                  timestamps: Sequence[int] | None = None) -> BatchResult:
        """Add batch ``txid``'s tuples (``values``, in order; ``timestamps`` per tuple for event
        time) and return the windows it closes. ``now_ms``: the batch's timestamp."""
        base = self._base(txid)
        state = WindowState(txid=txid, base=base.txid,
                            segments=[dataclasses.replace(s) for s in base.segments],
                            since_trigger=base.since_trigger, fired_until=base.fired_until,
                            watermark=base.watermark, late=base.late, windows=base.windows)
        if self.event_time:
            if timestamps is None:
                raise ValueError("event time: give each tuple's timestamp")
            stamped = list(zip(timestamps, values, strict=True))
            kept = [(ts, v) for ts, v in stamped if base.watermark is None or ts >= base.watermark]
            late = len(stamped) - len(kept)
        else:
            kept = [(now_ms, v) for v in values]
            late = 0
        state.late += late
        loaded: dict[int, list[list[Any]]] = {}
        if self.config.is_duration:
            windows, ends = self._duration(state, kept, now_ms, txid, loaded)
        else:
            windows, ends = self._count(state, kept, txid, loaded), []
        state.windows += len(windows)
        live = {s.txid for s in state.segments}
        state.dropped = [s.txid for s in base.segments if s.txid not in live]
        self._write(base, state, kept, txid)
        return BatchResult(windows, late, len(kept), ends)

    def _base(self, txid: int) -> WindowState:
        """The state batch ``txid`` starts from: the one after the batch before it."""
        previous, head = self.store.getMany([self._state_key(txid - 1), self._head_key])
        if previous is not None:
            return WindowState.from_dict(previous)
        if head is None:
            return WindowState()
        if head < txid:  # batches without this task in between (none normally)
            found = self.store.get(self._state_key(head))
            return WindowState() if found is None else WindowState.from_dict(found)
        if head == txid:  # a replay whose base came from further back
            own = self.store.get(self._state_key(txid))
            if own is not None and own.get("base") is not None:
                found = self.store.get(self._state_key(own["base"]))
                if found is not None:
                    return WindowState.from_dict(found)
            if own is not None and own.get("base") is None:
                return WindowState()
        raise WindowsStoreAheadError(
            f"windows store {self.store.address}: window task {self.ns!r} has stored batches up to "
            f"{head} but the stream is at batch {txid}: its checkpoint was reset or another query "
            "uses the same keys; give the windows a new table, index or key prefix, or clear the "
            "old one")

    def _write(self, base: WindowState, state: WindowState, kept: list[tuple[int, list[Any]]],
               txid: int) -> None:
        garbage = [self._tuples_key(k) for k in base.dropped]
        if base.base is not None:
            garbage.append(self._state_key(base.base))
        if garbage:
            self.store.removeAll(garbage)
        entries: list[tuple[str, Any]] = []
        if any(s.txid == txid for s in state.segments):
            entries.append((self._tuples_key(txid), [[ts, list(v)] for ts, v in kept]))
        entries.append((self._state_key(txid), state.to_dict()))
        entries.append((self._head_key, txid))
        self.store.putAll(entries)

    def _load(self, segments: list[Segment], loaded: dict[int, list[list[Any]]]) -> None:
        wanted = [s.txid for s in segments if s.txid not in loaded]
        if not wanted:
            return
        found = self.store.getMany([self._tuples_key(k) for k in wanted])
        for k, tuples in zip(wanted, found, strict=True):
            if tuples is None:
                raise WindowsStoreAheadError(
                    f"windows store {self.store.address}: the tuples of batch {k} of window task "
                    f"{self.ns!r} are missing though its state names them; the store was changed "
                    "from outside: clear it (give the windows a new table, index or key prefix)")
            loaded[k] = tuples

    # --- count windows -----------------------------------------------------------------------
    def _count(self, state: WindowState, kept: list[tuple[int, list[Any]]], txid: int,
               loaded: dict[int, list[list[Any]]]) -> list[list[list[Any]]]:
        n, slide = self.config.window_length, self.config.sliding_length
        old = state.segments
        old_n = sum(s.live for s in old)
        m = len(kept)
        ranges = []  # each closed window's [first, last] index in old tuples + this batch's
        for j in range(m):
            if (state.since_trigger + j + 1) % slide == 0:
                ranges.append((max(0, old_n + j + 1 - n), old_n + j))
        state.since_trigger = (state.since_trigger + m) % slide
        sequence: list[Any] = []
        if ranges and ranges[0][0] < old_n:
            needed, position = [], 0
            for s in old:
                if position + s.live > ranges[0][0]:
                    needed.append(s)
                position += s.live
            self._load(needed, loaded)
        for s in old:  # the old tuples, placeholders where not loaded (no window reads them)
            tuples = loaded.get(s.txid)
            sequence.extend(tuples[s.start:s.size] if tuples is not None else [None] * s.live)
        sequence.extend([ts, v] for ts, v in kept)
        windows = [[entry[1] for entry in sequence[first:last + 1]] for first, last in ranges]
        # keep what the next windows may read: from the start of the next window to close
        total = old_n + m
        keep = max(0, total + slide - state.since_trigger - n)
        state.segments = self._trimmed(old, keep, txid, kept)
        return windows

    @staticmethod
    def _trimmed(old: list[Segment], keep: int, txid: int,
                 kept: list[tuple[int, list[Any]]]) -> list[Segment]:
        """The segments holding the tuples from index ``keep`` on (old ones, then this batch's)."""
        result, position = [], 0
        for s in old:
            end = position + s.live
            if end > keep:
                result.append(Segment(s.txid, s.start + max(0, keep - position), s.size, s.min_ts, s.max_ts))
            position = end
        if kept and position + len(kept) > keep:
            stamps = [ts for ts, _ in kept]
            result.append(Segment(txid, max(0, keep - position), len(kept), min(stamps), max(stamps)))
        return result

    # --- duration windows --------------------------------------------------------------------
    def _first_end(self, ts: int) -> int:
        slide = self.config.sliding_length
        return (ts // slide + 1) * slide

    def _last_end(self, ts: int) -> int:
        slide = self.config.sliding_length
        return ((ts + self.config.window_length) // slide) * slide

    def _duration(self, state: WindowState, kept: list[tuple[int, list[Any]]], now_ms: int, txid: int,
                  loaded: dict[int, list[list[Any]]]) -> tuple[list[list[list[Any]]], list[int]]:
        slide = self.config.sliding_length
        if self.event_time:
            if kept:
                top = max(ts for ts, _ in kept) - self.lateness
                state.watermark = top if state.watermark is None else max(state.watermark, top)
            clock = state.watermark
        else:
            clock = now_ms
        if kept:
            stamps = [ts for ts, _ in kept]
            state.segments.append(Segment(txid, 0, len(kept), min(stamps), max(stamps)))
            loaded[txid] = [[ts, v] for ts, v in kept]
        if clock is None:
            return [], []
        closing = (clock // slide) * slide  # every window ending at or before this closes now
        fired = state.fired_until
        relevant = [s for s in state.segments if self._first_end(s.min_ts) <= closing
                    and (fired is None or self._last_end(s.max_ts) > fired)]
        self._load([s for s in relevant if s.txid not in loaded], loaded)
        windows: dict[int, list[list[Any]]] = {}
        for s in relevant:
            for ts, values in loaded[s.txid][s.start:s.size]:
                end = self._first_end(ts)
                if fired is not None and end <= fired:
                    end = fired + slide  # fired_until is a multiple of the slide
                last = min(self._last_end(ts), closing)
                while end <= last:
                    windows.setdefault(end, []).append(values)
                    end += slide
        state.fired_until = closing if fired is None else max(fired, closing)
        until = state.fired_until
        state.segments = [s for s in state.segments if self._last_end(s.max_ts) > until]
        ends = sorted(windows)
        return [windows[e] for e in ends], ends


__all__ = ["BatchResult", "Segment", "WindowProcessor", "WindowState", "WindowsStoreAheadError"]
