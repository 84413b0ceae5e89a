"""SIGKILL the driver inside a batch, restart from the checkpoint: the same txid, the same records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trident_spark.local.kafka import produce

pytestmark = [pytest.mark.integration, pytest.mark.faults]

DRIVER = Path(__file__).with_name("replay_driver.py")


def run_driver(args: list[str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(DRIVER), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).parents[3])


def wait_until_gone(pid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.1)


def test_batch_replayed_after_driver_sigkill_has_same_offsets_and_rows(kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=4)
    n = 2000
    produce(kafka_bootstrap, topic, [(None, f"r{i:05d}".encode(), i % 4) for i in range(n)])
    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"
    out.mkdir()
    kill_at = 2
    args = [kafka_bootstrap, topic, str(checkpoint), str(out), str(kill_at)]

    first = run_driver(args)
    assert first.returncode == -signal.SIGKILL, first.stderr[-3000:]
    first_pid = int((out / "killed").read_text())
    wait_until_gone(int((out / f"jvm-{first_pid}").read_text()))  # the orphaned JVM exits on its own
    offsets_log = checkpoint / "replay" / "offsets"
    commits_log = checkpoint / "replay" / "commits"
    assert (offsets_log / str(kill_at)).exists(), "the batch's offsets were logged before it ran"
    assert not (commits_log / str(kill_at)).exists(), "the killed batch must not be committed"

    second = run_driver(args)
    assert second.returncode == 0, second.stderr[-3000:]
    pids = {int(p.name.split("-")[1]) for p in out.glob("jvm-*")}
    (second_pid,) = pids - {first_pid}

    before = json.loads((out / f"batch-{kill_at}-{first_pid}.json").read_text())
    after = json.loads((out / f"batch-{kill_at}-{second_pid}.json").read_text())
    assert before == after and len(after) > 0  # transactional spout: same txid, same records

    # Batches before the kill are not re-run; the union is every record exactly once.
    rerun = sorted(int(p.name.split("-")[1]) for p in out.glob(f"batch-*-{second_pid}.json"))
    assert rerun[0] == kill_at
    final = {}
    for path in out.glob("batch-*.json"):
        txid = int(path.name.split("-")[1])
        final[txid] = json.loads(path.read_text())
    values = sorted(row[2] for rows in final.values() for row in rows)
    assert values == [f"r{i:05d}" for i in range(n)]
