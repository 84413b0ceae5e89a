"""How a long-running command stops: Ctrl-C (SIGINT) and SIGTERM ask it to stop, a second one forces it.

A signal's default behaviour, ``KeyboardInterrupt`` raised wherever the main thread is, lands
in the middle of a py4j call to Spark's JVM and leaves pages of tracebacks while the command
exits; SIGTERM (what systemd and Kubernetes send) kills it without stopping the streams. Within
:class:`StopSignals` the first signal only records itself: the command notices at its next
check, stops its streams cleanly and exits with ``128 + signal`` (130 for SIGINT, 143 for
SIGTERM), as shells report a process ended by that signal. A second signal raises
``KeyboardInterrupt`` at once, for a command stuck somewhere.

Examples
--------
>>> import os, signal
>>> with StopSignals() as stops:
...     os.kill(os.getpid(), signal.SIGTERM)
...     stops.wait(1.0), stops.exit_status
(True, 143)
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

#: The signals that ask a command to stop.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """Record SIGINT and SIGTERM while the block runs (main thread only); restore the handlers after.

    Examples
    --------
    >>> with StopSignals() as stops:
    ...     stops.received is None
    True
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self._event = threading.Event()
        self._previous: dict[int, Any] = {}

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self.received is not None:  # the second one: stop waiting for a clean stop
            raise KeyboardInterrupt
        self.received = number
        self._event.set()

    @property
    def requested(self) -> bool:
        """Whether a stop was asked for."""
        return self.received is not None

    @property
    def exit_status(self) -> int:
        """``128 + signal`` of the first signal received (130, 143); 0 if none was."""
        return 0 if self.received is None else 128 + self.received

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a stop request; whether one came."""
        return self._event.wait(timeout)

    def __enter__(self) -> StopSignals:
        for number in STOP_SIGNALS:
            self._previous[number] = signal.signal(number, self._handle)
        return self

    def take_back(self) -> None:
        """Handle the signals here again: call it after a SparkContext starts, which installs a
        SIGINT handler of its own (cancel every job, raise ``KeyboardInterrupt``)."""
        for number in STOP_SIGNALS:
            signal.signal(number, self._handle)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
