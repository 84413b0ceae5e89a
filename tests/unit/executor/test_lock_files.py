"""Lock files removed when done (executor.lock_files), and what ended worker pools left in the hosts'
directory swept when a pool starts its launcher (executor.instances._sweep_ended_pools)."""

from __future__ import annotations

import doctest
import os
import subprocess
import threading

from trident_spark.executor import lock_files
from trident_spark.executor.instances import _sweep_ended_pools
from trident_spark.executor.lock_files import held, remove_unused


def test_a_lock_file_is_made_owner_only_and_one_in_use_is_not_removed(tmp_path):
    lock = tmp_path / "1-0.lock"
    with held(lock):
        assert lock.stat().st_mode & 0o777 == 0o600
        assert remove_unused(lock) is False and lock.exists()
    assert remove_unused(lock) is True and not lock.exists()
    assert remove_unused(lock) is True  # already gone


def test_a_waiter_whose_lock_file_was_removed_locks_the_file_the_path_names_now(tmp_path, monkeypatch):
    lock = tmp_path / "1-0.lock"
    waiting = threading.Event()
    real_flock = lock_files.fcntl.flock

    def flock(fd, operation):
        if threading.current_thread().name == "waiter":
            waiting.set()
        return real_flock(fd, operation)

    monkeypatch.setattr(lock_files.fcntl, "flock", flock)
    seen = []

    def waiter():
        with held(lock):
            seen.append(os.stat(lock).st_ino)

    with held(lock):
        thread = threading.Thread(target=waiter, name="waiter")
        thread.start()
        assert waiting.wait(30)
        os.unlink(lock)  # as its last user removes it, under the lock
    thread.join(30)
    assert len(seen) == 1 and seen[0] == os.stat(lock).st_ino
    assert lock.exists()  # the waiter made it again rather than holding a file no path names


def _ended_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_what_ended_pools_left_is_swept_and_live_pools_files_are_kept(tmp_path):
    ended, alive, me = _ended_pid(), os.getpid(), 1
    root = tmp_path / "hosts"
    (root / "run-a").mkdir(parents=True)
    (root / "run-b").mkdir()
    for name in (f"launcher-{ended}.sock", f"launcher-{ended}.lock", f"launcher-{alive}.lock",
                 f"run-a/{ended}-0.sock", f"run-a/{ended}-0.lock", f"run-a/{ended}-1.lock",
                 f"run-b/{ended}-0.lock", f"run-b/{alive}-0.sock", f"run-b/{alive}-0.lock"):
        (root / name).write_text("")
    _sweep_ended_pools(root, me)
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    assert left == [f"launcher-{alive}.lock", "run-b", f"run-b/{alive}-0.lock", f"run-b/{alive}-0.sock"]


def test_docstring_examples():
    failures, attempted = doctest.testmod(lock_files, optionflags=doctest.ELLIPSIS)
    assert attempted and not failures
