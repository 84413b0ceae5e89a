"""A killed driver gives the waiting caller of a separate ``trident-spark drpc-server`` an error
once the server's lease passes, not a hang; a killed server gives its waiting caller an error.

The driver (``drpc_kill_driver.py``, a subprocess) takes the request; its operation sleeps. The
test SIGKILLs the driver's process group: no heartbeat reaches the server any more, and after the
lease (5 s here) the caller's ``trident-spark drpc`` exits 1 naming the function."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.driver_processes import kill_token_processes

pytestmark = [pytest.mark.integration, pytest.mark.faults]

DRIVER = Path(__file__).with_name("drpc_kill_driver.py")
REPO = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-m", "trident_spark.cli.main"]


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(path: Path, process: subprocess.Popen[bytes], what: str, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, f"{what}: the process ended ({process.returncode})"
        assert time.monotonic() < deadline, f"{what}: {path} not written in {timeout:g} s"
        time.sleep(0.2)


def test_a_killed_driver_fails_the_waiting_request_and_a_killed_server_its_caller(tmp_path: Path) -> None:
    port = free_port()
    token = uuid.uuid4().hex
    env = {**os.environ, "DRPC_KILL_TOKEN": token, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    server = subprocess.Popen(
        [*CLI, "drpc-server", "--port", str(port), "--lease", "5"], cwd=REPO, env=env, stderr=subprocess.PIPE
    )
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), f"127.0.0.1:{port}", str(tmp_path)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "driver.txt").open("w"),
        start_new_session=True,
    )
    try:
        wait_for(tmp_path / "running", driver, "the driver")
        caller = subprocess.Popen(
            [*CLI, "drpc", "slow", "hello", "--port", str(port), "--timeout", "300"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(tmp_path / "taken", driver, "the request's batch")
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        out, err = caller.communicate(timeout=120)
        assert caller.returncode == 1, (out, err)
        assert "the topology serving 'slow' stopped answering" in err
        assert err.count("\n") == 1  # one clear line
        # A killed server: its waiting caller gets an error too.
        waiting = subprocess.Popen(
            [*CLI, "drpc", "slow", "again", "--port", str(port), "--timeout", "300"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(1.0)  # not an assertion's timing: lets the request reach the server first
        server.kill()
        server.wait()
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 1 and "DRPC server 127.0.0.1" in err, (out, err)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
        if server.poll() is None:
            server.kill()
            server.wait()
        kill_token_processes("DRPC_KILL_TOKEN", token)
