"""`trident-spark run --restart-on-failure N`: which failures restart the topology from its checkpoint,
how often, and what is printed; and what `run` and `status` show while a stream waits out an outage.

No Spark: the topology and its handle are stand-ins that fail as a real run does.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from trident_spark.cli import run as run_command
from trident_spark.cli import status
from trident_spark.cli.main import build_parser, main
from trident_spark.cli.run import run_with_restarts
from trident_spark.cli.waits import WaitWatcher
from trident_spark.errors import (
    BrokerUnavailableError,
    DataLossError,
    FailedException,
    StateConflictError,
    StateUnavailableError,
    TopologyError,
)
from trident_spark.outage import WAIT_FILE
from trident_spark.runtime.failures import StreamFailedError

#: The session the command's run gets here: no Spark, and no spark.trident.* setting in its conf.
NO_SPARK = SimpleNamespace(conf={})

DOWN = BrokerUnavailableError("Kafka at 127.0.0.1:9092 did not answer; the broker at 127.0.0.1:9092 did "
                              "not answer for 181 s, past outage_budget=180 s, so the stream stopped.")


class Runs:
    """``run_once`` for run_with_restarts: each call raises the next failure (None: the run ends)."""

    def __init__(self, *failures: Exception | None) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        failure = self.failures.pop(0)
        if failure is not None:
            raise failure


@pytest.mark.parametrize("failure", [
    DOWN, StateUnavailableError("redis://127.0.0.1:6379/0", "ConnectionError"),
    StateConflictError("sqlite:///wc.db?table=wc", ["cat"], attempts=11),
    FailedException("batch 4 of stream 'words' failed 4 times (max_batch_retries=3); last cause: flaky"),
    StreamFailedError("stream 'words' failed: Executor lost"),
])
def test_failures_a_restart_can_cure_restart_the_topology(failure):
    said: list[str] = []
    slept: list[float] = []
    runs = Runs(failure, None)
    assert run_with_restarts(runs, restarts=2, delay=30, say=said.append, sleep=slept.append) == 1
    assert runs.calls == 2 and slept == [30]
    assert said == [f"restart 1 of 2 in 30 s, from the checkpoint, after: {failure}"]


@pytest.mark.parametrize("failure", [
    DataLossError("offsets [0, 5) of t[0] are gone"), TopologyError("each(Split): unknown field 'x'"),
    ValueError("a bug"),
])
def test_failures_that_come_back_on_every_restart_end_at_once(failure):
    said: list[str] = []
    runs = Runs(failure, None)
    with pytest.raises(type(failure)):
        run_with_restarts(runs, restarts=5, delay=0, say=said.append, sleep=lambda s: None)
    assert runs.calls == 1 and said == []


def test_after_the_last_restart_the_failure_is_raised():
    said: list[str] = []
    runs = Runs(DOWN, DOWN, DOWN, None)
    with pytest.raises(BrokerUnavailableError):
        run_with_restarts(runs, restarts=2, delay=1, say=said.append, sleep=lambda s: None)
    assert runs.calls == 3
    assert [line.split(",")[0] for line in said] == ["restart 1 of 2 in 1 s", "restart 2 of 2 in 1 s",
                                                      "no restart left (2 made"]


def test_without_restarts_a_failure_is_raised_as_before():
    runs = Runs(DOWN)
    said: list[str] = []
    with pytest.raises(BrokerUnavailableError):
        run_with_restarts(runs, restarts=0, delay=1, say=said.append, sleep=lambda s: None)
    assert said == []


# --- the command ---------------------------------------------------------------------------------
class Handle:
    def __init__(self, failure: Exception | None) -> None:
        self.failure = failure
        self.stopped = False

    def awaitTermination(self, timeout: float | None = None) -> bool:
        if self.failure is not None:
            raise self.failure
        return True

    def stop(self) -> None:
        self.stopped = True


class Topology:
    """Each run() starts a run that fails with the next failure (None: it ends normally)."""

    def __init__(self, *failures: Exception | None) -> None:
        self.failures = list(failures)
        self.handles: list[Handle] = []
        self.options: list[dict] = []

    def run(self, **options):
        self.options.append(options)
        self.handles.append(Handle(self.failures.pop(0)))
        return self.handles[-1]


@pytest.fixture
def command(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("COLUMNS", "1000")  # one line per message
    monkeypatch.setattr("trident_spark.runtime.session.local_session", lambda master=None, conf=None:
                        NO_SPARK)

    def run(topology, *options):
        monkeypatch.setattr(run_command, "load_topology", lambda target: topology)
        code = main(["run", "app.py", "--checkpoint", str(tmp_path / "ckpt"), "--restart-delay", "0",
                     *options])
        return code, capsys.readouterr().err.splitlines()

    return run


def test_run_restarts_from_the_same_checkpoint_then_goes_on(command, tmp_path):
    topology = Topology(DOWN, None)
    code, lines = command(topology, "--restart-on-failure", "3", "--outage-budget", "10m")
    assert code == 0
    assert [o["checkpoint_location"] for o in topology.options] == [str(tmp_path / "ckpt")] * 2
    assert [o["outage_budget"] for o in topology.options] == [600.0, 600.0]
    assert topology.handles[0].stopped  # the failed run is stopped before the restart
    assert f"restart 1 of 3 in 0 s, from the checkpoint, after: {DOWN}" in lines


def test_run_exits_1_with_the_error_after_the_last_restart(command):
    topology = Topology(DOWN, DOWN)
    code, lines = command(topology, "--restart-on-failure", "1")
    assert code == 1
    assert lines[-2:] == ["no restart left (1 made, --restart-on-failure 1)", f"error: {DOWN}"]


def test_run_does_not_restart_unless_asked(command):
    topology = Topology(DOWN, None)
    code, lines = command(topology)
    assert (code, lines[-1], len(topology.options)) == (1, f"error: {DOWN}", 1)
    assert topology.options[0]["outage_budget"] == 180.0


@pytest.mark.parametrize(("option", "value", "why"), [
    ("--restart-on-failure", "-1", "'-1' is not a count (0, 1, 2, ...)"),
    ("--outage-budget", "soon", "cannot read 'soon' as a duration"),
])
def test_bad_option_values_are_usage_errors(option, value, why, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["run", "app.py", option, value])
    assert info.value.code == 2
    assert why in capsys.readouterr().err


# --- what run and status show while a stream waits ------------------------------------------------
def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def wait_record(used: float, updated: str) -> dict:
    return {"stream": "words", "doing": "batch 7", "kind": "broker", "address": "127.0.0.1:9092",
            "since": "2025-06-01T10:20:30+00:00", "used_s": used, "budget_s": 180.0, "next_attempt_s": 2.0,
            "updated": updated, "message": f"stream words: batch 7 waiting for broker at 127.0.0.1:9092 "
                                           f"({used:.0f} s of the 180 s outage budget used): down"}


def test_run_prints_each_wait_once_and_the_recovery(tmp_path):
    (tmp_path / "words").mkdir()
    (tmp_path / "words" / WAIT_FILE).write_text(json.dumps(wait_record(9, "2020-01-01T00:00:00+00:00")))
    watcher = WaitWatcher(tmp_path, console=None)
    assert watcher.poll() == []  # a record older than the run is a stopped run's: not shown
    (tmp_path / "words" / WAIT_FILE).write_text(json.dumps(wait_record(0, now())))
    assert watcher.poll() == ["stream words: batch 7 waiting for broker at 127.0.0.1:9092 (0 s of the 180 s "
                              "outage budget used): down"]
    assert watcher.poll() == []  # the same wait is not printed again
    (tmp_path / "words" / WAIT_FILE).write_text(json.dumps(wait_record(20.5, now())))
    assert watcher.poll() == ["stream words: batch 7 waiting for broker at 127.0.0.1:9092 (20 s of the 180 s "
                              "outage budget used): down"]
    (tmp_path / "words" / WAIT_FILE).unlink()
    assert watcher.poll() == ["stream words: broker at 127.0.0.1:9092 answers again; batch 7 goes on"]


def test_status_shows_what_a_live_stream_waits_for(tmp_path):
    directory = tmp_path / "words"
    (directory / "offsets").mkdir(parents=True)
    batch = {"stream": "words", "txid": 0, "rows": 5}
    (directory / status.PROGRESS_FILE).write_text(json.dumps(batch) + "\n")
    (tmp_path / status.RUN_FILE).write_text(json.dumps({
        "started": "2025-06-01T10:00:00", "stopped": None, "pid": os.getpid(), "host": socket.gethostname(),
        "trigger": "1 second", "trigger_ms": 1000, "streams": ["words"]}))
    (directory / WAIT_FILE).write_text(json.dumps(wait_record(61.6, now())))
    [view] = status.StatusReader(tmp_path).views()
    assert ("batch 7 waiting for broker at 127.0.0.1:9092 since 10:20:30 UTC (62 s of the 180 s outage "
            "budget used)") in view.notes
    stopped = {"started": "x", "stopped": "y", "streams": ["words"]}
    (tmp_path / status.RUN_FILE).write_text(json.dumps(stopped))
    [view] = status.StatusReader(tmp_path).views()
    assert not any("waiting for" in note for note in view.notes)  # a stopped run waits for nothing


def test_run_help_shows_the_restart_example(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "trident-spark run app.py --outage-budget 10m --restart-on-failure 5" in out


def test_the_restart_policy_example_runs():
    import doctest

    failures, attempted = doctest.testmod(run_command, optionflags=doctest.ELLIPSIS)
    assert (failures, attempted > 0) == (0, True)
