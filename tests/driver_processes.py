"""The process tree of a driver program a test started and SIGKILLed: found by a token in its
environment (the driver, its JVM, Spark's Python daemon and workers inherit it), and ended."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def token_processes(variable: str, token: str) -> list[int]:
    """Live processes (not zombies) whose environment carries ``variable=token``."""
    needle = f"{variable}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def kill_token_processes(variable: str, token: str, timeout: float = 60.0) -> None:
    """SIGKILL what is left of a killed driver's tree and wait until it is gone."""
    deadline = time.monotonic() + timeout
    while alive := token_processes(variable, token):
        assert time.monotonic() < deadline, f"processes {alive} of the killed driver do not go away"
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
