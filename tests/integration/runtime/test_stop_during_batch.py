"""``handle.stop()`` while a batch runs is quiet: no ERROR, no traceback, no StackOverflowError.

A driver program (``stop_during_batch_driver.py``) in a subprocess runs a topology whose Function
sleeps per tuple, waits until a batch's tasks run, and stops the run: 10 times in one session built
as a library user's ``topology.run(spark=None)`` builds it. Its stderr, between the lines the
program prints after each stop, holds none of what issue 29 saw in one run of three.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.driver_processes import REPO

pytestmark = [pytest.mark.integration, pytest.mark.faults]

DRIVER = Path(__file__).with_name("stop_during_batch_driver.py")
NOISE = ("ERROR", "Traceback", "StackOverflowError", "Exception")


def test_stop_during_a_batch_is_quiet_ten_times(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    env.pop("TRIDENT_SPARK_SPARK_LOGS", None)
    done = subprocess.run([sys.executable, str(DRIVER), str(tmp_path), "10"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    stops = [i for i, line in enumerate(lines) if line.startswith("cycle ") and line.endswith(" stopped")]
    assert len(stops) == 10 and lines[-1] == "all stopped", done.stderr[-3000:]
    starts = [0, *(i + 1 for i in stops[:-1])]
    for cycle, (start, end) in enumerate(zip(starts, stops, strict=True)):
        noisy = [line for line in lines[start:end] if any(word in line for word in NOISE)]
        assert noisy == [], f"cycle {cycle}: {noisy[:5]}"
