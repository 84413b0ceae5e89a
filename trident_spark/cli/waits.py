"""Print what a running topology waits for: a broker or store that does not answer (``run``).

A stream in an outage records its wait in its checkpoint directory
(:mod:`trident_spark.outage`); Spark's source process records there too, and
its logging reaches no terminal. :class:`WaitWatcher` reads those records
every second and prints each new wait, and the recovery when a record goes.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from trident_spark import checkpoint_files as files
from trident_spark.checkpoint_files import Location
from trident_spark.outage import WAIT_FILE, describe_wait, read_wait


class WaitWatcher:
    """Watch ``checkpoint/*/trident-waiting.json`` and print changes on ``console``.

    Examples
    --------
    >>> with WaitWatcher(Path("checkpoints/wordcount"), console):   # doctest: +SKIP
    ...     handle.awaitTermination()
    """

    def __init__(self, checkpoint: Location, console: Any, interval: float = 1.0) -> None:
        self.checkpoint = checkpoint
        self.console = console
        self.interval = interval
        self._seen: dict[str, dict[str, Any]] = {}
        # Older records are a stopped run's (removed when its streams start again).
        self._since = datetime.now(UTC).isoformat(timespec="seconds")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> list[str]:
        """Read the records once; the lines to print (new waits, then recoveries)."""
        current: dict[str, dict[str, Any]] = {}
        try:  # a local path or a URI (checkpoint_files)
            names = [name for name in files.list_names(self.checkpoint)
                     if files.exists(files.join(self.checkpoint, name, WAIT_FILE))]
        except OSError:
            names = []
        for name in names:
            record = read_wait(files.join(self.checkpoint, name))
            if record is not None and str(record.get("updated", "")) >= self._since:
                current[name] = record
        lines = []
        for stream, record in current.items():
            if self._seen.get(stream, {}).get("updated") != record.get("updated") \
                    or self._seen.get(stream, {}).get("message") != record.get("message"):
                lines.append(str(record.get("message") or f"stream {stream}: {describe_wait(record)}"))
        for stream, record in self._seen.items():
            if stream not in current:
                what = f"{record.get('kind', '?')} at {record.get('address', '?')}"
                lines.append(f"stream {record.get('stream', stream)}: {what} answers again; "
                             f"{record.get('doing', 'it')} goes on")
        self._seen = current
        return lines

    def _run(self) -> None:
        from rich.markup import escape

        while not self._stop.wait(self.interval):
            for line in self.poll():
                style = "green" if line.endswith(" goes on") else "yellow"
                self.console.print(f"[{style}]{escape(line)}[/]")

    def __enter__(self) -> WaitWatcher:
        self._thread = threading.Thread(target=self._run, name="trident-wait-watcher", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
