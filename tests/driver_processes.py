"""Driver programs a test starts as subprocesses and SIGKILLs: one start (:func:`start_driver`),
the run inside the program (:func:`run_to_the_end`), and the process tree of a killed one, found
by a token in its environment (the driver, its JVM, Spark's Python daemon and workers inherit
it) and ended."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

#: The repository: a driver program runs from it, importing ``tests`` and ``examples``.
REPO = Path(__file__).resolve().parents[1]


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


def start_driver(script: Path, out: Path, config: dict[str, Any], run: int, token_variable: str,
                 timeout: float) -> int:
    """One start of a driver program (``script CONFIG.json``) in its own session, its stderr in
    ``out/stderr-<run>.txt``; its return code (-9 when it was SIGKILLed). Whatever is left of its
    process tree (found by a token in ``token_variable``) is ended before this returns."""
    path = out / f"config-{run}.json"
    path.write_text(json.dumps({**config, "out": str(out), "run": run}))
    token = uuid.uuid4().hex
    env = {**os.environ, token_variable: token, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    with (out / f"stderr-{run}.txt").open("w") as stderr:
        driver = subprocess.Popen([sys.executable, str(script), str(path)], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        try:
            return driver.wait(timeout=timeout)
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait()
            kill_token_processes(token_variable, token)


def run_to_the_end(topology: Any, checkpoint: str, spark: Any, what: str) -> None:
    """In a driver program: run ``topology`` with ``trigger="available_now"`` until it has read
    everything, stop it and the session; a failed query ends the program naming ``what``."""
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    handle.awaitTermination()
    failure = handle.exception()
    handle.stop()
    spark.stop()
    if failure is not None:
        raise SystemExit(f"{what}: the query failed: {failure}")
