"""Child processes for local services: spawn, log, wait until ready, stop.

Every process started here

* writes its stdout and stderr to one log file;
* leads its own process group, so that stopping it also stops whatever it
  spawned (the JVMs behind ``spark-class``, Spark executors);
* dies with the Python process that started it (``PR_SET_PDEATHSIG`` on
  Linux), so a killed test run leaves no orphan broker behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from trident_spark.errors import TridentSparkError

__all__ = [
    "LocalProcess",
    "ServiceStartError",
    "die_with_parent",
    "free_port",
    "pid_alive",
    "tail_lines",
    "wait_until",
]

#: ``prctl`` option number from ``<linux/prctl.h>``.
_PR_SET_PDEATHSIG = 1


class ServiceStartError(TridentSparkError, RuntimeError):
    """A local service did not start or did not become ready.

    The message names the service, its address, the log file and the last
    lines of that log.

    Examples
    --------
    >>> raise ServiceStartError("kafka at 127.0.0.1:9092 did not answer")
    Traceback (most recent call last):
    ...
    trident_spark.local.process.ServiceStartError: kafka at 127.0.0.1:9092 did not answer
    """


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (someone else's process counts as running).

    Examples
    --------
    >>> pid_alive(os.getpid())
    True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago.

    Another process may take it before the caller binds it; starters retry
    with a new port when their process exits early.

    Examples
    --------
    >>> 1024 <= free_port() <= 65535
    True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def tail_lines(path: Path | None, lines: int = 20) -> str:
    """Return the last ``lines`` lines of a text file ('' if it is missing).

    Examples
    --------
    >>> tail_lines(None)
    ''
    """
    if path is None or not path.exists():
        return ""
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        return "".join(deque(handle, maxlen=lines)).rstrip("\n")


def _load_prctl() -> Callable[[int, int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return None
    try:
        prctl: Callable[[int, int, int, int, int], int] = ctypes.CDLL(
            libc_name, use_errno=True
        ).prctl
    except (OSError, AttributeError):
        return None
    return prctl


# Loaded once in the parent: the child, between fork and exec, then only calls
# a ready-made function and does no imports or library loading.
_PRCTL = _load_prctl()


def die_with_parent() -> None:
    """``preexec_fn`` for ``subprocess.Popen``: the child dies when its parent exits.

    Linux only (``PR_SET_PDEATHSIG``); a no-op elsewhere.

    Examples
    --------
    >>> import subprocess
    >>> subprocess.run(["true"], preexec_fn=die_with_parent, check=True).returncode
    0
    """
    # The kernel sends SIGKILL when the thread that forked us exits; SIGKILL
    # because a wedged broker may ignore SIGTERM.
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


class LocalProcess:
    """One child process with its output in ``log_path``.

    Parameters
    ----------
    name
        What the process is, for error messages ("kafka", "spark-master").
    argv
        The command line.
    log_path
        File that receives stdout and stderr (truncated first, unless ``append``).
    env
        Full environment for the child; ``None`` inherits ours.
    cwd
        Working directory for the child.
    user
        Run the child as this user id (and its group ``group``): a root parent starting a
        server that refuses to run as root (PostgreSQL). ``None``: as this process.
    group
        The group id with ``user``.
    append
        Add to ``log_path`` rather than truncate it (a service started again after a restart).

    Notes
    -----
    On Linux the child is killed when the *thread* that created this object
    exits, so create it from a long-lived thread (the main thread of a test
    session or CLI).

    Examples
    --------
    >>> import tempfile
    >>> log = Path(tempfile.mkdtemp()) / "sleep.log"
    >>> proc = LocalProcess("sleep", ["sleep", "30"], log_path=log)
    >>> proc.alive()
    True
    >>> proc.stop()
    >>> proc.alive()
    False
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        user: int | None = None,
        group: int | None = None,
        append: bool = False,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab" if append else "wb") as log:
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=None if env is None else dict(env),
                cwd=cwd,
                start_new_session=True,
                # The credentials change before preexec_fn runs (the death signal survives it).
                user=user,
                group=group,
                extra_groups=None if user is None else [],
                preexec_fn=die_with_parent,
            )

    @property
    def pid(self) -> int:
        """Process id of the child (also its process-group id)."""
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """Exit status, or ``None`` while the child runs."""
        return self._popen.poll()

    def alive(self) -> bool:
        """Whether the child is still running."""
        return self._popen.poll() is None

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the child to exit; whether it did."""
        try:
            self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the log."""
        return tail_lines(self.log_path, lines)

    def stop(self, grace: float = 10.0) -> None:
        """Stop the whole process group: SIGTERM, then SIGKILL after ``grace`` s.

        Idempotent; also reaps processes the child left in its group.
        """
        if self._popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self._popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self._popen.wait()
        # Children of the leader (executors, launchers) may outlive it.
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._popen.pid, sig)


def wait_until(
    ready: Callable[[], bool],
    *,
    timeout: float,
    process: LocalProcess | None = None,
    what: str,
    interval: float = 0.1,
) -> None:
    """Poll ``ready()`` until it is true, the process exits, or time runs out.

    Parameters
    ----------
    ready
        A check that returns quickly (its own timeouts well under ``timeout``).
    timeout
        Seconds to wait in total.
    process
        The process being waited for; its early exit fails fast.
    what
        Names the service and address in the error, e.g. "kafka at 127.0.0.1:9092".

    Raises
    ------
    ServiceStartError
        With the exit status or the timeout, the log path and its last lines.

    Examples
    --------
    >>> wait_until(lambda: True, timeout=1.0, what="nothing")
    """
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and not process.alive():
            raise ServiceStartError(
                f"{what} exited with status {process.returncode} before it was ready"
                + _log_hint(process)
            )
        if ready():
            return
        if time.monotonic() >= deadline:
            raise ServiceStartError(
                f"{what} was not ready within {timeout:g} s" + _log_hint(process)
            )
        time.sleep(interval)


def _log_hint(process: LocalProcess | None) -> str:
    if process is None:
        return ""
    tail = process.tail()
    body = "\n".join("    " + line for line in tail.splitlines()) or "    (empty)"
    return f"; log: {process.log_path}\n  last log lines:\n{body}"
