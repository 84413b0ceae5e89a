"""The instance hosts' sockets are this account's alone (executor.private_ipc): a directory made 0700
and checked on every use (a symbolic link, a file, group or other bits, another owner: refused,
never repaired), and a peer of another uid refused on both sides (SO_PEERCRED) before anything is
sent or unpickled. The other account is ``nobody``, played with setpriv."""

from __future__ import annotations

import doctest
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from trident_spark.executor import instances, private_ipc
from trident_spark.executor.host_wire import END as _END
from trident_spark.executor.host_wire import STOP as _STOP
from trident_spark.executor.host_wire import receive as _receive
from trident_spark.executor.host_wire import send as _send
from trident_spark.executor.instance_host import _Host
from trident_spark.executor.private_ipc import (
    ForeignPeerError,
    PrivateDirectoryError,
    check_private,
    private_directory,
)

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"
as_nobody = pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("setpriv") is None or not Path(SYSTEM_PYTHON).exists(),
    reason="playing another account needs root, setpriv (util-linux) and /usr/bin/python3")


def test_a_missing_directory_is_made_owner_only_and_its_chain_checked(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run = instances.hosts_directory("r1")
    assert run == tmp_path / f"trident-spark-{os.getuid()}" / "hosts" / "r1"
    for made in (run.parent.parent, run.parent, run):
        assert (made.stat().st_uid, made.stat().st_mode & 0o777) == (os.getuid(), 0o700)
    assert check_private(tmp_path / "missing") is False


def test_a_socket_path_too_long_for_a_unix_socket_is_named_before_any_host_is_started(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    with pytest.raises(instances.InstanceHostError, match=(
            rf"^the instance host socket {deep}/trident-spark-{os.getuid()}/hosts/r1/\d+-0\.sock would be "
            r"\d+ bytes long, over the 107 a Unix socket's path may have: point XDG_RUNTIME_DIR or TMPDIR")):
        instances._connect("r1", 0)


def test_a_symbolic_link_is_refused_even_to_a_private_directory_of_ours(tmp_path):
    target = private_directory(tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(PrivateDirectoryError, match=rf"^{link} is a symbolic link\. trident-spark keeps"):
        private_directory(link)


def test_a_file_is_refused(tmp_path):
    (tmp_path / "plain").write_text("")
    with pytest.raises(PrivateDirectoryError, match=rf"^{tmp_path}/plain is not a directory\."):
        private_directory(tmp_path / "plain")


def test_group_or_other_bits_are_refused_and_the_mode_is_left_alone(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    with pytest.raises(PrivateDirectoryError) as refused:
        private_directory(shared)
    assert str(refused.value) == (
        f"{shared} has mode 0755: its group or others may use it. trident-spark keeps the instance "
        "hosts' sockets there (they carry the stages and the state stores' passwords) and uses it only "
        f"when it is a directory of this account (uid {os.getuid()}) with mode 0700. Check what it holds, "
        "then remove it (trident-spark makes it again, private) or `chmod 700` it; trident-spark never "
        "changes the mode of a directory it did not just make.")
    assert shared.stat().st_mode & 0o777 == 0o755


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another account (chown) needs root")
def test_a_directory_of_another_account_is_refused_and_left_as_it_is(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    squatted = tmp_path / f"trident-spark-{os.getuid()}"
    squatted.mkdir(mode=0o700)
    os.chown(squatted, NOBODY, NOBODY)
    with pytest.raises(PrivateDirectoryError, match=(
            rf"^{squatted} belongs to uid {NOBODY}, not to this account\. .* Another account may have put it "
            r"there to intercept the hosts: do not use it\. Have it removed .*spark\.executorEnv\.TMPDIR")):
        instances.hosts_directory("r1")
    assert squatted.stat().st_uid == NOBODY and not (squatted / "hosts").exists()
    # Stopping a run finds no host of ours there: a warning, nothing sent.
    assert instances.stop_hosts("r1") == (0, 0)


def test_a_peer_of_this_account_passes():
    import socket

    left, right = socket.socketpair()
    with left, right:
        assert private_ipc.foreign_peer(left) is None


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory any account may use (under /tmp: pytest's own temp directories are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="open-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def nobody(program: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                             SYSTEM_PYTHON, "-c", program, *args], stdout=subprocess.PIPE, text=True)


LISTENER = """
import json, os, socket, sys
path, log, stop = sys.argv[1:]
server = socket.socket(socket.AF_UNIX)
server.bind(path); os.chmod(path, 0o777); server.listen(4); server.settimeout(0.05)
received = []
while not os.path.exists(stop):
    try:
        conn, _ = server.accept()
    except TimeoutError:
        continue
    conn.settimeout(5)
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    received.append(len(data))
    conn.close()
json.dump(received, open(log, "w"))
"""


@as_nobody
def test_a_listener_of_another_account_is_refused_and_receives_nothing(open_dir):
    path, log, stop = open_dir / "7-0.sock", open_dir / "received.json", open_dir / "stop"
    listener = nobody(LISTENER, str(path), str(log), str(stop))
    deadline = time.monotonic() + 30
    while not path.exists():
        assert listener.poll() is None and time.monotonic() < deadline, "the listener did not start"
        time.sleep(0.02)
    with pytest.raises(ForeignPeerError) as refused:
        instances._try_connect(path)
    assert str(refused.value).startswith(
        f"refused the instance host socket {path}: the process listening there (pid {listener.pid}) runs as "
        f"uid {NOBODY}, not as this account (uid {os.getuid()}); nothing was sent to it.")
    stop.touch()
    assert listener.wait(30) == 0
    assert json.loads(log.read_text()) == [0]  # it saw the connection (that is how its uid is known), no byte


CLIENT = """
import os, pickle, socket, struct, sys
class Run:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))
frame = struct.Struct(">cQ")
body = pickle.dumps(%s)
conn = socket.socket(socket.AF_UNIX)
conn.connect(sys.argv[1])
conn.settimeout(10)
answer = b""
try:
    conn.sendall(frame.pack(b"H", len(body)) + body + frame.pack(b"D", 0))
    while chunk := conn.recv(65536):
        answer += chunk
except OSError:
    pass
print(len(answer))
"""


@as_nobody
def test_a_host_refuses_a_connection_from_another_account_before_reading_it(open_dir, caplog):
    path, marker = open_dir / "7-0.sock", open_dir / "ran"
    host = _Host(path, os.getpid())
    threading.Thread(target=host.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        path.chmod(0o777)
        client = nobody(CLIENT % "{'stage': 's', 'partition': 0, 'fn': Run()}", str(path), str(marker))
        out, _ = client.communicate(timeout=60)
        assert (out.strip(), marker.exists()) == ("0", False)  # closed unanswered; its pickle never loaded
        assert (f"instance host {path}: refused a connection from pid {client.pid} running as uid {NOBODY}; "
                f"only this account (uid {os.getuid()}) may use it") in caplog.text
        # This account is still served.
        conn = instances._try_connect(path)
        assert conn is not None
        with conn:
            stream = conn.makefile("rwb")
            _send(stream, _STOP, b"")
            stream.flush()
            tag, body = _receive(stream)
        assert (tag, pickle.loads(body)) == (_END, {"cleaned": 0})
    finally:
        host.end()


@as_nobody
def test_the_launcher_refuses_another_account_and_removes_its_socket_and_lock_when_its_pool_ends(open_dir):
    pool = subprocess.Popen(["sleep", "600"])
    launcher, marker = open_dir / f"launcher-{pool.pid}.sock", open_dir / "ran"
    launcher.with_suffix(".lock").touch()  # as the task that starts it leaves it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    process = subprocess.Popen([sys.executable, "-m", instances.HOST_MODULE, "--launcher", str(launcher),
                                str(pool.pid)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not launcher.exists():
            assert process.poll() is None and time.monotonic() < deadline, "the launcher did not start"
            time.sleep(0.02)
        launcher.chmod(0o777)
        host_path = open_dir / "forked.sock"
        client = nobody(CLIENT % f"{{'path': {str(host_path)!r}, 'sys_path': [], 'x': Run()}}",
                        str(launcher), str(marker))
        out, _ = client.communicate(timeout=60)
        assert (out.strip(), marker.exists(), host_path.exists()) == ("0", False, False)
    finally:
        pool.kill()
        pool.wait()
    assert process.wait(60) == 0
    assert f"refused a connection from pid {client.pid} running as uid {NOBODY}" in process.stderr.read()
    assert sorted(p.name for p in open_dir.iterdir()) == []  # its socket and its lock file are gone


def test_docstring_examples():
    failures, attempted = doctest.testmod(private_ipc, optionflags=doctest.ELLIPSIS)
    assert attempted and not failures
