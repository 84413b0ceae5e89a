"""Waiting through an outage of a broker or store: capped backoff within a time budget, recorded.

A stream that meets a Kafka broker or a state store that does not answer does
not fail at once: it tries again, 0.5 s later, then 1 s, 2 s, ... (at most
10 s apart), until the outage has lasted ``outage_budget`` seconds, counted
from the first failed attempt; then it fails with the cause's own error,
naming the address and the budget. Each wait is logged as a warning and
written to the query's checkpoint directory (:data:`WAIT_FILE`), which
``trident-spark run`` prints and ``trident-spark status`` shows; the record is
removed when the broker or store answers again.

Both the runtime (a batch on the driver) and the Kafka spout (planning the
next batch in Spark's source process) wait this way, so this module sits
below both and imports neither.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from trident_spark import checkpoint_files as files
from trident_spark.errors import StateUnavailableError, TopologyError

log = logging.getLogger(__name__)

#: In a query's checkpoint directory while the stream waits for a broker or store: what it waits for.
WAIT_FILE = "trident-waiting.json"

#: The first wait after a failed attempt (s); each next wait doubles, up to :data:`MAX_DELAY`.
FIRST_DELAY = 0.5
MAX_DELAY = 10.0

Kind = Literal["broker", "store"]


def check_outage_budget(value: Any, where: str = "run()") -> float:
    """``value`` as seconds of outage budget, or a TopologyError saying what to give.

    Examples
    --------
    >>> check_outage_budget(180)
    180.0
    >>> check_outage_budget(-1)
    Traceback (most recent call last):
    ...
    trident_spark.errors.TopologyError: run(): outage_budget must be a number of seconds >= 0 ...
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value < 0:
        raise TopologyError(
            f"{where}: outage_budget must be a number of seconds >= 0 (how long a stream waits for a "
            f"broker or store that does not answer before it fails; 0 fails at once), got {value!r}")
    return float(value)


@dataclass
class Outage:
    """One outage met by one stream, from its first failed attempt until it answers again.

    Call :meth:`wait` after each failed attempt: it sleeps before the next one,
    or, once the outage has lasted ``budget`` seconds, raises the cause's error
    naming the address and the budget. Call :meth:`end` after the attempt that
    worked.

    Examples
    --------
    >>> from trident_spark.errors import BrokerUnavailableError
    >>> now = [0.0]
    >>> outage = Outage(budget=8, stream="words", doing="batch 3", clock=lambda: now[0],
    ...                 sleep=lambda s: now.__setitem__(0, now[0] + s + 2))  # each attempt: 2 s
    >>> down = BrokerUnavailableError("Kafka at 127.0.0.1:9092 did not answer")
    >>> for _ in range(3):
    ...     outage.wait(down, "broker", "127.0.0.1:9092")
    >>> outage.delays
    [0.5, 1.0, 2.0]
    >>> outage.wait(down, "broker", "127.0.0.1:9092")
    Traceback (most recent call last):
    ...
    trident_spark.errors.BrokerUnavailableError: Kafka at 127.0.0.1:9092 did not answer; the broker at ...
    """

    budget: float
    stream: str
    #: What the stream was doing, for the messages: "batch 7", "planning the next batch".
    doing: str
    #: The query's checkpoint directory, where the wait is recorded (None: not recorded).
    record_dir: Path | str | None = None  # a local path or a URI (checkpoint_files)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    #: Asked during a wait (about once a second): True once the stream was stopped, which ends
    #: the wait at once by raising the cause (None: never asked).
    stopped: Callable[[], bool] | None = None
    #: The waits so far, in seconds.
    delays: list[float] = field(default_factory=list)
    _started: float | None = field(default=None, init=False, repr=False)
    _since: str = field(default="", init=False, repr=False)
    _target: str = field(default="", init=False, repr=False)

    def wait(self, cause: BaseException, kind: Kind, address: str) -> None:
        """Sleep before the next attempt; past the budget, raise the cause's error naming it.

        With a budget of 0 the cause is raised as it is, at once.
        """
        if self.budget <= 0:
            raise cause
        now = self.clock()
        if self._started is None:
            self._started, self._since = now, _wall_clock()
        used = now - self._started
        self._target = f"{kind} at {address}"
        if used >= self.budget:
            self.forget()
            raise budget_spent(cause, kind, address, used, self.budget, self.stream) from cause
        delay = min(FIRST_DELAY * 2 ** len(self.delays), MAX_DELAY, self.budget - used)
        self.delays.append(delay)
        message = (f"stream {self.stream}: {self.doing} waiting for {kind} at {address} "
                   f"({used:.0f} s of the {self.budget:g} s outage budget used): "
                   f"{_reason(cause).removesuffix(f' (stream {self.stream!r})')}")
        log.warning(message)
        self._record({"stream": self.stream, "doing": self.doing, "kind": kind, "address": address,
                      "since": self._since, "used_s": round(used, 1), "budget_s": self.budget,
                      "next_attempt_s": round(delay, 1), "updated": _wall_clock(), "message": message})
        if self.stopped is None:
            self.sleep(delay)
            return
        until = now + delay
        while (left := until - self.clock()) > 0:
            if self.stopped():  # handle.stop(): the batch is replayed when the stream starts again
                self.forget()
                raise cause
            self.sleep(min(left, 1.0))

    @property
    def waiting(self) -> bool:
        """Whether an attempt failed since the last :meth:`end`."""
        return self._started is not None

    def end(self) -> float | None:
        """The attempt after a wait worked: forget the outage; returns how long it lasted (None: none)."""
        if self._started is None:
            return None
        lasted = self.clock() - self._started
        log.warning("stream %s: %s answers again after %.0f s; %s goes on", self.stream, self._target,
                    lasted, self.doing)
        self.forget()
        return lasted

    def forget(self) -> None:
        """The outage is over without a word (an attempt failed for another reason, or the stream
        stops): its record goes."""
        if self._started is not None and self.record_dir is not None:
            clear_wait(self.record_dir)
        self._started = None
        self.delays = []

    def _record(self, record: dict[str, Any]) -> None:
        if self.record_dir is None:
            return
        target = files.join(self.record_dir, WAIT_FILE)
        try:
            files.write_text(target, json.dumps(record))  # atomic
        except OSError as exc:  # the wait is still logged; a record is for watching only
            log.debug("cannot write %s: %s", files.describe(target), exc)


def budget_spent(cause: BaseException, kind: Kind, address: str, used: float, budget: float,
                 stream: str = "") -> Exception:
    """The error a stream fails with once an outage outlasted its budget: the cause's class, its
    message (without the stream's name, which the runtime adds at the end), and how long the
    stream waited for what."""
    advice = (f"the {kind} at {address} did not answer for {used:.0f} s, past outage_budget={budget:g} s, "
              "so the stream stopped. Restarted with the same checkpoint it resumes exactly where it "
              "stopped (`trident-spark run FILE --restart-on-failure N` restarts it for you); to wait "
              "longer, raise run(outage_budget=)")
    if isinstance(cause, StateUnavailableError):
        reason = str(getattr(cause, "reason", None) or cause)
        store: Exception = StateUnavailableError(str(getattr(cause, "address", None) or address),
                                                 f"{reason}; {advice}")
        return store
    text = str(cause).removesuffix(f" (stream {stream!r})").rstrip(". ")
    try:
        error = type(cause)(f"{text}; {advice}")
    except Exception:  # a class whose constructor wants more than a message
        error = None
    if isinstance(error, Exception):
        return error
    return RuntimeError(f"{type(cause).__name__}: {text}; {advice}")


def _reason(cause: BaseException) -> str:
    reason = getattr(cause, "reason", None) if isinstance(cause, StateUnavailableError) else None
    return str(reason or cause)


def _wall_clock() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_wait(stream_dir: files.Location) -> dict[str, Any] | None:
    """What a stream waits for now (the record :class:`Outage` keeps), or None.

    Examples
    --------
    >>> read_wait(Path("/no/such/checkpoint/words")) is None
    True
    """
    try:
        record = json.loads(files.read_text(files.join(stream_dir, WAIT_FILE)))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def clear_wait(stream_dir: files.Location) -> None:
    """Remove a wait record left behind by a run that stopped while it waited (a new run starts)."""
    target = files.join(stream_dir, WAIT_FILE)
    try:
        files.delete(target)
    except OSError as exc:
        log.debug("cannot remove %s: %s", files.describe(target), exc)


def describe_wait(record: dict[str, Any]) -> str:
    """One line on a wait record: what waits for what, since when, how much of the budget is used.

    Examples
    --------
    >>> describe_wait({"doing": "batch 7", "kind": "broker", "address": "127.0.0.1:9092",
    ...                "since": "2025-01-02T03:04:05+00:00", "used_s": 42.0, "budget_s": 180.0,
    ...                "message": "stream words: ... : Kafka at 127.0.0.1:9092 did not answer"})
    'batch 7 waiting for broker at 127.0.0.1:9092 since 03:04:05 UTC (42 s of the 180 s outage budget used)'
    """
    since = str(record.get("since") or "?")
    clock = since[11:19] + " UTC" if len(since) >= 19 else since
    what = f"{record.get('kind', '?')} at {record.get('address', '?')}"
    used, budget = float(record.get("used_s") or 0), float(record.get("budget_s") or 0)
    return (f"{record.get('doing', '?')} waiting for {what} since {clock} "
            f"({used:.0f} s of the {budget:g} s outage budget used)")
