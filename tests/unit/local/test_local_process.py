"""Child processes of local services: logs, readiness errors, stopping the group."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from trident_spark.local import launchers
from trident_spark.local.probes import http_answers, kafka_answers, redis_answers
from trident_spark.local.process import LocalProcess, ServiceStartError, wait_until
from trident_spark.local.service_handle import ServiceHandle


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_output_goes_to_the_log(tmp_path: Path) -> None:
    process = LocalProcess(
        "echo", ["sh", "-c", "echo out; echo err >&2"], log_path=tmp_path / "x.log"
    )
    wait_until(lambda: not process.alive(), timeout=10, what="echo")
    assert sorted(process.tail().splitlines()) == ["err", "out"]


def test_stop_ends_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    process = LocalProcess(
        "parent",
        ["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"],
        log_path=tmp_path / "parent.log",
    )
    wait_until(
        lambda: pid_file.exists() and pid_file.read_text().strip() != "", timeout=10, what="sh"
    )
    grandchild = int(pid_file.read_text())
    process.stop(grace=5)
    process.stop()  # idempotent
    deadline = time.monotonic() + 5
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(grandchild)
    assert not process.alive()


def test_sigterm_ignorer_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    process = LocalProcess(
        "stubborn",
        ["sh", "-c", "trap '' TERM; echo ready; while true; do sleep 0.1; done"],
        log_path=tmp_path / "stubborn.log",
    )
    wait_until(lambda: "ready" in process.tail(), timeout=10, what="stubborn")
    started = time.monotonic()
    process.stop(grace=0.5)
    assert not process.alive()
    assert time.monotonic() - started < 5


def test_timeout_error_names_the_service_log_and_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "svc.log"
    process = LocalProcess("svc", ["sh", "-c", "echo booting; sleep 30"], log_path=log)
    try:
        wait_until(lambda: "booting" in process.tail(), timeout=10, what="svc")
        with pytest.raises(ServiceStartError) as caught:
            wait_until(lambda: False, timeout=0.3, process=process, what="svc at 127.0.0.1:1")
    finally:
        process.stop()
    message = str(caught.value)
    assert message.startswith("svc at 127.0.0.1:1 was not ready within 0.3 s; log: ")
    assert str(log) in message
    assert message.endswith("last log lines:\n    booting")


def test_early_exit_fails_fast_with_status(tmp_path: Path) -> None:
    process = LocalProcess("crash", ["sh", "-c", "echo boom; exit 3"], log_path=tmp_path / "c.log")
    started = time.monotonic()
    with pytest.raises(
        ServiceStartError, match="crash at x exited with status 3 before it was ready"
    ):
        wait_until(lambda: False, timeout=30, process=process, what="crash at x")
    assert time.monotonic() - started < 10


def test_local_service_that_dies_keeps_its_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'fatal: cannot start'\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(launchers, "redis_server_binary", lambda: fake)
    logs = tmp_path / "logs"
    with pytest.raises(ServiceStartError) as caught:
        launchers.start_local_redis(timeout=10, log_dir=logs)
    message = str(caught.value)
    assert "redis at redis://127.0.0.1:" in message
    assert "exited with status 1 before it was ready" in message
    assert "fatal: cannot start" in message
    assert (logs / "redis.log").read_text() == "fatal: cannot start\n"


def test_handle_stop_is_idempotent_and_removes_logs(tmp_path: Path) -> None:
    calls: list[str] = []
    log = tmp_path / "svc.log"
    log.write_text("x")
    handle = ServiceHandle(
        "redis",
        "redis://127.0.0.1:1/0",
        "local",
        log,
        _stopper=lambda: calls.append("stop"),
        _discard_logs=lambda: log.unlink(),
    )
    with handle:
        pass
    handle.stop()
    assert calls == ["stop"]
    assert not log.exists()


def test_handle_keeps_logs_when_asked(tmp_path: Path) -> None:
    log = tmp_path / "svc.log"
    log.write_text("x")
    handle = ServiceHandle("kafka", "127.0.0.1:1", "local", log, _discard_logs=log.unlink)
    handle.keep_logs = True
    handle.stop()
    assert log.exists()


@pytest.mark.parametrize(
    "answers",
    [
        lambda: kafka_answers("127.0.0.1:1", timeout=0.5),
        lambda: redis_answers("redis://127.0.0.1:1/0", timeout=0.5),
        lambda: http_answers("http://127.0.0.1:1", timeout=0.5),
        lambda: http_answers("http://user:secret@127.0.0.1:1", timeout=0.5),
    ],
)
def test_probes_say_no_for_a_closed_port(answers: object) -> None:
    assert callable(answers)
    assert answers() is False
