"""SIGKILL the driver of a windowed topology, then start it again on the same checkpoint.

A driver program (``window_kill_driver.py``) in a subprocess runs a tumbling count window and a
processing-time sliding window on a SQLite windows store, each
window's result counted into an opaque SQLite state keyed by the window's numbers. An executor
kills the driver right after batch 2 wrote its windows and their results (the batch is in
Spark's offset log, not its commit log). The next start runs batch 2 again: every window's
result is counted exactly once, and the windows are the direct computation's (count windows
from the spout's order, time windows from the batches' timestamps in the offset log, which a
replay keeps).
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.driver_processes import start_driver
from trident_spark.state import SqliteState, open_state

pytestmark = [pytest.mark.integration, pytest.mark.faults]

DRIVER = Path(__file__).with_name("window_kill_driver.py")
RUN_TIMEOUT = 240.0
KILL_BATCH = 2
NUMBERS, BATCH_SIZE = 16, 4


def start(out: Path, config: dict[str, Any], run: int, kill_batch: int | None) -> int:
    """One start of the driver; its return code (-9 when it was killed)."""
    return start_driver(DRIVER, out, {**config, "kill_batch": kill_batch}, run, "WINDOW_KILL_TOKEN",
                        RUN_TIMEOUT)


def stored(path: Path, table: str) -> Counter[str]:
    with open_state(SqliteState.opaque(path=str(path), table=table)) as state:
        return Counter({key: count for key, count in state.getTuples()})


def key(window: list[int]) -> str:
    return ",".join(str(n) for n in window)


def test_each_window_is_counted_once_after_a_driver_kill(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    config = {"checkpoint": str(tmp_path / "checkpoint")}
    killed = start(out, config, 0, KILL_BATCH)
    stderr = (out / "stderr-0.txt").read_text()[-3000:]
    assert killed == -signal.SIGKILL and (out / "killed-0").exists(), stderr
    query = tmp_path / "checkpoint" / "numbers"
    assert (query / "offsets" / str(KILL_BATCH)).exists()         # the batch was logged ...
    assert not (query / "commits" / str(KILL_BATCH)).exists()     # ... and not committed
    assert start(out, config, 1, None) == 0, (out / "stderr-1.txt").read_text()[-3000:]

    numbers = list(range(NUMBERS))
    tumbling = [numbers[end - 3:end] for end in range(3, NUMBERS + 1, 3)]
    assert stored(out / "results.db", "tumbling") == Counter(key(w) for w in tumbling)

    batches = NUMBERS // BATCH_SIZE
    stamps = [json.loads((query / "offsets" / str(b)).read_text().splitlines()[1])["batchTimestampMs"]
              for b in range(batches)]
    stamped = [(stamps[n // BATCH_SIZE], n) for n in numbers]
    until = (stamps[-1] // 200) * 200
    ends = sorted({e for ts, _ in stamped for e in range((ts // 200 + 1) * 200, ts + 400 + 1, 200)
                   if e <= until})
    windows = [[v for ts, v in stamped if e - 400 <= ts < e] for e in ends]
    assert stored(out / "results.db", "time") == Counter(key(w) for w in windows)
