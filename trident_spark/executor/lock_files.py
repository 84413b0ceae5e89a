"""Lock files that are removed when done: ``flock`` on a file its last user may unlink meanwhile.

One task starts an executor's launcher, or a partition's host, while the others wait on a lock
file beside its socket. Removing such a file is safe only under its own lock, and a process
that waited on it must notice it was removed (its lock is then on a file no path names): it
opens the path again. So lock files do not pile up beside sockets that are gone.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> lock = Path(tempfile.mkdtemp()) / "x.lock"
>>> with held(lock):
...     remove_unused(lock)       # held (here, by us): left alone
False
>>> remove_unused(lock), lock.exists()
(True, False)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of ``path`` (made with mode 0600 if missing) while the block runs.

    The file the lock is taken on is the one ``path`` names when it is granted: a file removed
    by :func:`remove_unused` while this waited is opened again.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        fd = os.open(path, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:
                yield
                return
        finally:
            os.close(fd)  # also releases the lock


def remove_unused(path: Path) -> bool:
    """Remove the lock file ``path`` unless someone holds it now; whether it is gone.

    Never waits: a file in use is left to its holder (who removes it, or whoever comes next).
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError:  # a symbolic link or a file we cannot open: not a lock file of ours
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            if os.stat(path, follow_symlinks=False).st_ino != os.fstat(fd).st_ino:
                return False  # made again since we opened it: someone else's now
            os.unlink(path)
        except FileNotFoundError:
            pass
        return True
    finally:
        os.close(fd)


__all__ = ["held", "remove_unused"]
