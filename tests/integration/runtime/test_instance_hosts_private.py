"""The instance hosts' sockets against another local account (played by ``nobody`` with setpriv).

The account squats the hosts' directory in a shared sticky temp directory before the topology
runs, world-writable and its own, and listens where the executor's launcher is expected (it sees
Spark's Python daemon in /proc), at the socket beside any lock file, and at any host path a
launcher request names (swapping the run's directory). Earlier, it received the stage (the state
stores' passwords inside) and answered with "no rows": the counts came out short, silently.

Now the run refuses that directory, naming it (and nothing reaches the impostor); with a private
``XDG_RUNTIME_DIR`` the run uses that and ends with exact counts (and nothing reaches the
impostor either). Real Spark (local, in a driver program of its own: its workers must see the
TMPDIR the test gives), FeederBatchSpout, a cached SQLite state (a persistentAggregate's
default, which runs in instance hosts).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.driver_processes import start_driver

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
HERE = Path(__file__).parent
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(os.getuid() != 0, reason="playing another account (setpriv --reuid) needs root"),
    pytest.mark.skipif(shutil.which("setpriv") is None,
                       reason="setpriv (util-linux) is not installed: cannot play another account"),
    pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(),
                       reason=f"{SYSTEM_PYTHON} is missing: the impostor runs on the system's Python"),
]

BATCHES = [["the cat sat"] * 20] * 3
EXACT = {"cat": 60, "sat": 60, "the": 60}


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temp directory shared by all accounts, sticky and world-writable as /tmp is."""
    path = Path(tempfile.mkdtemp(prefix="shared-tmp-", dir="/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def impostor(shared: Path) -> Iterator[Callable[[], dict[str, Any]]]:
    """``nobody`` squatting the hosts' directories in ``shared``; yields what it received (once stopped)."""
    stop, log = shared / "impostor.stop", shared / "impostor.json"
    process = subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                                SYSTEM_PYTHON, str(HERE / "impostor.py"), str(shared), str(os.getuid()),
                                str(stop), str(log)])
    deadline = time.monotonic() + 60
    while not Path(f"{log}.ready").exists():
        assert process.poll() is None and time.monotonic() < deadline, "the impostor did not start"
        time.sleep(0.05)

    def received() -> dict[str, Any]:
        stop.touch()
        assert process.wait(60) == 0
        return dict(json.loads(log.read_text()))

    try:
        yield received
    finally:
        stop.touch()
        if process.poll() is None:
            process.kill()
            process.wait()


def run_word_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: Path,
                   xdg: Path | None) -> dict[str, Any]:
    monkeypatch.setenv("TMPDIR", str(shared))
    if xdg is None:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    else:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    out = tmp_path / "out"
    out.mkdir()
    code = start_driver(HERE / "private_hosts_driver.py", out, {"batches": BATCHES}, 0,
                        "TRIDENT_PRIVATE_HOSTS_TEST", timeout=400)
    assert code == 0, (out / "stderr-0.txt").read_text()[-3000:]
    return dict(json.loads((out / "result.json").read_text()))


@pytest.mark.faults
def test_a_hosts_directory_made_by_another_account_is_refused_and_it_receives_nothing(
        tmp_path, monkeypatch, shared_tmp):
    with impostor(shared_tmp) as received:
        result = run_word_count(tmp_path, monkeypatch, shared_tmp, xdg=None)
        got = received()
    squatted = shared_tmp / f"trident-spark-{os.getuid()}"
    refused = f"PrivateDirectoryError: {squatted} belongs to uid {NOBODY}, not to this account"
    assert refused in (result["error"] or ""), (result, got)
    assert "Have it removed" in result["error"]
    assert result["counts"] == {}
    # It listened where the executor's launcher is expected, and nothing reached it.
    assert any(path.startswith(f"{squatted}/hosts/launcher-") for path in got["listening"]), got
    assert (got["connections"], got["bytes"], got["stages"]) == (0, 0, 0)
    # Never changed by us: someone else's.
    assert (squatted.stat().st_uid, squatted.stat().st_mode & 0o777) == (NOBODY, 0o777)


@pytest.mark.faults
def test_with_a_private_runtime_directory_the_run_ends_exact_and_the_impostor_receives_nothing(
        tmp_path, monkeypatch, shared_tmp, request):
    # As /run/user/<uid> is: 0700, and short (a Unix socket's path has at most 107 bytes).
    xdg = Path(tempfile.mkdtemp(prefix="run-user-"))
    request.addfinalizer(lambda: shutil.rmtree(xdg, ignore_errors=True))
    with impostor(shared_tmp) as received:
        result = run_word_count(tmp_path, monkeypatch, shared_tmp, xdg=xdg)
        got = received()
    assert result == {"error": None, "counts": EXACT}, got
    assert any(path.startswith(f"{shared_tmp}/trident-spark-{os.getuid()}/hosts/launcher-")
               for path in got["listening"]), got
    assert (got["connections"], got["bytes"], got["stages"]) == (0, 0, 0)
    # The run's hosts were stopped with it: its directory is gone, and no lock file stayed behind.
    hosts = xdg / "trident-spark" / "hosts"
    assert (xdg / "trident-spark").stat().st_mode & 0o777 == hosts.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in hosts.iterdir() if p.is_dir()] == []
