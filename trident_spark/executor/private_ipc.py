"""Local sockets private to this account: a directory only we made and can open, and a peer that is us.

An instance host and the tasks that use it talk over Unix sockets; what goes over them is the
stage (cloudpickled, with the state factories and their passwords) one way and a pickle the other
way. Another account on the machine must neither listen where a task connects nor connect to a
host, so both guards hold on every use:

* the sockets live in a directory made by this account with mode 0700 (its parents too, as far
  as we make them), and each use checks with ``lstat`` that it is still a real directory (not a
  symbolic link), owned by this account's uid, with no group or other permission bits. A
  directory that fails the check is refused (:class:`PrivateDirectoryError`), never repaired:
  someone else may have made it;
* before anything is sent or unpickled, the process at the other end of a connection is asked
  for its uid (``SO_PEERCRED``), and a connection from or to another uid is refused
  (:class:`ForeignPeerError`). On a system without ``SO_PEERCRED`` (not Linux) the private
  directory is the guard.

Examples
--------
>>> import tempfile
>>> from pathlib import Path
>>> base = Path(tempfile.mkdtemp())
>>> oct(private_directory(base / "hosts").lstat().st_mode & 0o777)
'0o700'
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
import tempfile
from pathlib import Path

from trident_spark.errors import TridentSparkError

#: The directory under ``$XDG_RUNTIME_DIR`` (or, without one, ``$TMPDIR/trident-spark-<uid>``).
RUNTIME_NAME = "trident-spark"
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class PrivateDirectoryError(TridentSparkError):
    """A directory that must be this account's alone is not: another owner, group or other
    permission bits, a symbolic link, or not a directory. Never repaired: someone else may have
    made it.

    Examples
    --------
    >>> raise PrivateDirectoryError("/tmp/trident-spark-0 belongs to uid 65534, not to this account")
    Traceback (most recent call last):
    ...
    trident_spark.executor.private_ipc.PrivateDirectoryError: /tmp/trident-spark-0 belongs to uid 65534, ...
    """


class ForeignPeerError(TridentSparkError):
    """The process at the other end of a local socket runs as another account: nothing was sent
    to it and nothing it sent was read.

    Examples
    --------
    >>> raise ForeignPeerError("/tmp/trident-spark-0/hosts/launcher-7.sock is served by uid 65534")
    Traceback (most recent call last):
    ...
    trident_spark.executor.private_ipc.ForeignPeerError: /tmp/trident-spark-0/hosts/launcher-7.sock ...
    """


def runtime_directory() -> Path:
    """This account's directory for trident-spark's local sockets (not made here).

    ``$XDG_RUNTIME_DIR/trident-spark`` when ``$XDG_RUNTIME_DIR`` is set and is a private
    directory of this account (as the login manager makes it), else
    ``$TMPDIR/trident-spark-<uid>``. Derived the same way in every process of the account on a
    machine, so a task finds the host another task started; on a cluster each executor derives
    its own.

    Examples
    --------
    >>> runtime_directory().name in (RUNTIME_NAME, f"{RUNTIME_NAME}-{os.getuid()}")
    True
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg) and _problem(Path(xdg)) is None:
        return Path(xdg) / RUNTIME_NAME
    return Path(tempfile.gettempdir()) / f"{RUNTIME_NAME}-{os.getuid()}"


def private_directory(path: Path) -> Path:
    """``path``, made with mode 0700 if it does not exist, then checked (:func:`check_private`).

    Its parent must exist; the parent is not checked here (a caller that made it checks it first).

    Raises
    ------
    PrivateDirectoryError
        ``path`` exists but is not a private directory of this account.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> made = private_directory(Path(tempfile.mkdtemp()) / "run")
    >>> made.is_dir(), private_directory(made) == made
    (True, True)
    """
    if not check_private(path):
        with contextlib.suppress(FileExistsError):  # made by another process meanwhile: checked below
            os.mkdir(path, 0o700)  # the mode is set as it is made: no moment with wider access
        check_private(path)
    return path


def check_private(path: Path) -> bool:
    """Whether ``path`` exists; when it does, that it is a real directory (not a symbolic link),
    owned by this account, with no group or other permission bits.

    Raises
    ------
    PrivateDirectoryError
        ``path`` exists and is not such a directory; the message says what is wrong and what to do.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> check_private(Path(tempfile.mkdtemp()) / "missing")
    False
    """
    problem = _problem(path)
    if problem is None:
        return True
    if problem == "":
        return False
    raise PrivateDirectoryError(
        f"{path} {problem}. trident-spark keeps the instance hosts' sockets there (they carry the "
        f"stages and the state stores' passwords) and uses it only when it is a directory of this "
        f"account (uid {os.getuid()}) with mode 0700. {_remedy(problem)}")


def _problem(path: Path) -> str | None:
    """What is wrong with ``path`` as a private directory: None (nothing), "" (it does not exist)."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return ""
    if stat.S_ISLNK(found.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(found.st_mode):
        return "is not a directory"
    if found.st_uid != os.getuid():
        return f"belongs to uid {found.st_uid}, not to this account"
    if found.st_mode & 0o077:
        return f"has mode {found.st_mode & 0o7777:04o}: its group or others may use it"
    return None


def _remedy(problem: str) -> str:
    if problem.startswith("has mode"):
        return ("Check what it holds, then remove it (trident-spark makes it again, private) or "
                "`chmod 700` it; trident-spark never changes the mode of a directory it did not just make.")
    return ("Another account may have put it there to intercept the hosts: do not use it. Have it "
            "removed (by its owner or an administrator), or point TMPDIR (on a cluster: "
            "spark.executorEnv.TMPDIR) or XDG_RUNTIME_DIR at a directory only this account can write.")


def foreign_peer(conn: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of the Unix socket ``conn`` when it runs as
    another account; None when it runs as this one (or the system cannot tell: not Linux).

    Examples
    --------
    >>> left, right = socket.socketpair()
    >>> foreign_peer(left) is None
    True
    >>> left.close(); right.close()
    """
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    pid, uid, _ = _PEERCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, option, _PEERCRED.size))
    return None if uid == os.getuid() else (pid, uid)


def check_peer(conn: socket.socket, path: Path) -> None:
    """Refuse (close ``conn`` and raise) a connection to ``path`` served by another account.

    Called right after ``connect``, before anything is sent or read.

    Raises
    ------
    ForeignPeerError
        The process listening at ``path`` runs as another uid; the message names the path and both uids.

    Examples
    --------
    >>> left, right = socket.socketpair()
    >>> check_peer(left, Path("pair"))
    >>> left.close(); right.close()
    """
    found = foreign_peer(conn)
    if found is None:
        return
    conn.close()
    pid, uid = found
    raise ForeignPeerError(
        f"refused the instance host socket {path}: the process listening there (pid {pid}) runs as "
        f"uid {uid}, not as this account (uid {os.getuid()}); nothing was sent to it. Another account "
        f"may be impersonating the instance host: find it with `ss -xlp | grep {path.name}` and "
        f"make sure {path.parent} is this account's alone (mode 0700).")


__all__ = ["RUNTIME_NAME", "ForeignPeerError", "PrivateDirectoryError", "check_peer", "check_private",
           "foreign_peer", "private_directory", "runtime_directory"]
