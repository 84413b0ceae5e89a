"""`trident-spark run` stopped as a terminal and a service manager stop it, and `status` into a
closed pipe: Ctrl-C (SIGINT to the whole process group, as a terminal sends it) exits 130 and
SIGTERM (to the command alone, as Kubernetes sends it) exits 143, each after one `stopping`
line and a clean stop, no traceback; a closed stdout ends `status` quietly with 141."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

APP = '''
import os

from trident_spark import Fields, TridentTopology
from trident_spark.builtin import Count
from trident_spark.spout import FixedBatchSpout
from trident_spark.state import SqliteState

spout = FixedBatchSpout(Fields("word"), 2, ["a"], ["b"], ["c"])
spout.setCycle(True)  # a batch every trigger, for ever
topology = TridentTopology()
(topology.newStream("words", spout)
 .groupBy(["word"])
 .persistentAggregate(SqliteState.opaque(path=os.environ["APP_DB"]), Count(), ["count"]))
'''


def _cli() -> str:
    return str(Path(sys.executable).with_name("trident-spark"))


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "APP_DB": str(tmp_path / "wc.db")}
    env.pop("SPARK_SUBMIT_OPTS", None)
    return env


def _run_until_first_batch(tmp_path: Path) -> tuple[subprocess.Popen[str], list[str]]:
    """`trident-spark run app.py` in a session of its own, once its first batch is reported."""
    app = tmp_path / "app.py"
    app.write_text(APP)
    argv = [_cli(), "run", str(app), "--checkpoint", str(tmp_path / "ck"), "--trigger", "1 second"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(tmp_path), cwd=tmp_path, start_new_session=True)
    lines: list[str] = []
    assert proc.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + 240
    while not any("[words] batch 0:" in line for line in list(lines)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("no first batch:\n" + "".join(lines)[-3000:])
        time.sleep(0.2)
    proc._reader = reader  # type: ignore[attr-defined]
    return proc, lines


def _finish(proc: subprocess.Popen[str], lines: list[str]) -> tuple[int, str]:
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("did not stop within 120 s:\n" + "".join(lines)[-3000:]) from None
    proc._reader.join(timeout=10)  # type: ignore[attr-defined]
    return code, "".join(lines)


def _assert_clean_stop(stderr: str, signal_name: str) -> None:
    stopping = [line for line in stderr.splitlines() if line.startswith("stopping")]
    assert stopping == [f"stopping after {signal_name} (a running batch is replayed on restart)"], stderr
    for noise in ("Traceback", "py4j", "Py4J", "KeyboardInterrupt", "Failed to cancel job group"):
        assert noise not in stderr, f"{noise!r} in stderr:\n{stderr[-4000:]}"


@pytest.mark.faults
def test_ctrl_c_stops_the_run_cleanly_and_exits_130(tmp_path):
    proc, lines = _run_until_first_batch(tmp_path)
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
    code, stderr = _finish(proc, lines)
    assert code == 130, stderr[-3000:]
    _assert_clean_stop(stderr, "SIGINT")


@pytest.mark.faults
def test_sigterm_stops_the_run_cleanly_and_exits_143_and_status_survives_a_closed_pipe(tmp_path):
    proc, lines = _run_until_first_batch(tmp_path)
    proc.send_signal(signal.SIGTERM)  # Kubernetes and `kill` signal the command alone
    code, stderr = _finish(proc, lines)
    assert code == 143, stderr[-3000:]
    _assert_clean_stop(stderr, "SIGTERM")

    # `trident-spark status CHECKPOINT | head`: the reader is gone before status writes a line
    status = subprocess.Popen([_cli(), "status", str(tmp_path / "ck")], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    assert status.stdout is not None
    status.stdout.close()
    _, err = status.communicate(timeout=120)
    assert status.returncode == 141, err
    assert err == "", err
    # and with a reader it shows the stream
    shown = subprocess.run([_cli(), "status", str(tmp_path / "ck")], capture_output=True, text=True,
                           env=_env(tmp_path), timeout=120)
    assert shown.returncode == 0 and "words" in shown.stdout, shown.stdout + shown.stderr
