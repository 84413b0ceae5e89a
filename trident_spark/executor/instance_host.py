"""The instance host: the process that keeps a run's operation instances for one partition slot
of one executor, and the launcher that forks hosts (see :mod:`trident_spark.executor.instances`
for why a stage runs in a host, and for the task's side that starts hosts and talks to them).

Run as ``python -m trident_spark.executor.instance_host SOCKET POOL_PID`` (one host) or
``--launcher SOCKET POOL_PID`` (an executor's launcher, which forks them warm). Both read nothing
from a connection whose peer runs as another account (``SO_PEERCRED``): they close it and log it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from trident_spark.executor.host_wire import BATCH, DONE, END, ERROR, STOP, arrow_ipc, receive, send
from trident_spark.executor.instances import IDLE_EXIT_S, START_WAIT_S, Recorder
from trident_spark.executor.kept_instances import HOSTED_TASK, InstanceRegistry, KeptInstances
from trident_spark.executor.lock_files import remove_unused
from trident_spark.executor.private_ipc import foreign_peer
from trident_spark.local.process import pid_alive

log = logging.getLogger(__name__)


# --- the host process ----------------------------------------------------------------------
class _Host:
    def __init__(self, path: Path, pool_pid: int) -> None:
        self.path, self.pool_pid = path, pool_pid
        self.registry = InstanceRegistry()
        self.last_request = time.monotonic()
        self.stopping = threading.Event()
        host = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                host.last_request = time.monotonic()
                host.serve(self.rfile, self.wfile)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

            def verify_request(self, request: Any, client_address: Any) -> bool:
                return _admitted(request, path)

            def handle_error(self, request: Any, client_address: Any) -> None:
                # A task that Spark cancels (a stopped query, a killed job) closes its connection
                # mid-request: normal, and not the console's business. Anything else is logged
                # once, through logging, instead of socketserver's traceback on stderr.
                error = sys.exc_info()[1]
                if isinstance(error, (ConnectionError, EOFError)):
                    log.debug("instance host %s: a task left mid-request (%s)", path.name, error)
                else:
                    log.error("instance host %s: a request failed", path.name, exc_info=error)

        self.server = Server(str(path), Handler)

    def serve(self, rfile: Any, wfile: Any) -> None:
        tag, body = receive(rfile)
        if tag == STOP:
            cleaned = self.registry.cleanup_all()
            self.end()  # its socket gone before the answer: the caller finds the run's directory empty
            send(wfile, END, pickle.dumps({"cleaned": cleaned}))
            wfile.flush()
            return
        self.run(body, rfile, wfile)

    def run(self, header: bytes, rfile: Any, wfile: Any) -> None:
        import pyarrow as pa

        batches = []
        while True:
            tag, body = receive(rfile)
            if tag == DONE:
                break
            batches.append(pa.ipc.open_stream(body).read_next_batch())
        try:  # the stage's operations are imported here: a module the host cannot import is the task's error
            request = pickle.loads(header)
        except Exception as exc:
            send(wfile, ERROR, _pickled_error(exc))
            wfile.flush()
            return
        stage, partition, fn = request["stage"], int(request["partition"]), request["fn"]

        def task() -> None:
            recorder = Recorder()
            HOSTED_TASK.instances = KeptInstances(self.registry, stage, partition)
            HOSTED_TASK.spark_task = _task_context(request.get("task"))
            try:
                for out in fn(recorder, iter(batches)):
                    send(wfile, BATCH, arrow_ipc(out))
            except Exception as exc:
                send(wfile, ERROR, _pickled_error(exc))
                wfile.flush()
                return
            finally:
                HOSTED_TASK.instances = HOSTED_TASK.spark_task = None
            send(wfile, END, pickle.dumps(recorder.counters))
            wfile.flush()

        self.registry.thread_of(stage, partition).submit(task).result()

    def watch(self) -> None:
        """End with the executor's Python worker pool, or after :data:`IDLE_EXIT_S` idle."""
        while not self.stopping.wait(2.0):
            if not pid_alive(self.pool_pid) or time.monotonic() - self.last_request > IDLE_EXIT_S:
                self.registry.cleanup_all()
                self.end()

    def end(self) -> None:
        if self.stopping.is_set():
            return
        self.stopping.set()
        with contextlib.suppress(OSError):
            self.path.unlink()
            if not any(self.path.parent.glob("*.sock")):  # the run's last host here: leave nothing
                for lock in self.path.parent.glob("*.lock"):
                    remove_unused(lock)  # one a task holds now stays, and so does the directory
                self.path.parent.rmdir()
        threading.Thread(target=self.server.shutdown, daemon=True).start()


def _admitted(conn: socket.socket, path: Path) -> bool:
    """Whether the process that connected to ``path`` runs as this account (else logged: it is
    closed before anything is read from it or sent to it)."""
    found = foreign_peer(conn)
    if found is None:
        return True
    pid, uid = found
    log.warning("instance host %s: refused a connection from pid %d running as uid %d; only this account "
                "(uid %d) may use it. Another account is probing the instance hosts.",
                path, pid, uid, os.getuid())
    return False


def _task_context(fields: dict[str, Any] | None) -> Any:
    """The worker's TaskContext, rebuilt in the host (None outside a Spark task)."""
    if fields is None:
        return None
    from pyspark import TaskContext

    context = object.__new__(TaskContext)
    context.__dict__.update(fields)
    return context


def _thread_task_contexts() -> None:
    """In a host, ``TaskContext.get()`` answers with the task each thread runs for."""
    from pyspark import TaskContext

    TaskContext.get = classmethod(lambda cls: getattr(HOSTED_TASK, "spark_task", None))  # type: ignore[method-assign,assignment]


def _pickled_error(exc: BaseException) -> bytes:
    from pyspark import cloudpickle

    text = "".join(traceback.format_exception(exc))
    try:
        return bytes(cloudpickle.dumps((exc, text)))  # type: ignore[no-untyped-call]
    except Exception:  # an exception that does not pickle: its class name and message
        return bytes(cloudpickle.dumps(  # type: ignore[no-untyped-call]
            (RuntimeError(f"{type(exc).__name__}: {exc}"), text)))


#: What a host runs, imported once by the launcher so that the hosts it forks start warm.
_PRELOAD = ("pyarrow", "pyspark.cloudpickle", "pyspark.taskcontext", "trident_spark.executor.python_stage",
            "trident_spark.executor.state_stage", "trident_spark.executor.aggregate_stage",
            "trident_spark.executor.partial_combine", "trident_spark.state")


def launch(path: Path, pool_pid: int) -> None:
    """The launcher: forks a host for each request, until its worker pool ends.

    Single-threaded, so a fork copies a consistent process. The forked host runs in a session
    of its own and is reaped by nobody's wait (SIGCHLD ignored).
    """
    import importlib

    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    listener.settimeout(2.0)
    idle_since = time.monotonic()
    try:
        while pid_alive(pool_pid) and time.monotonic() - idle_since < IDLE_EXIT_S:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            idle_since = time.monotonic()
            with conn:
                if not _admitted(conn, path):
                    continue
                conn.settimeout(10.0)
                stream = conn.makefile("rwb")
                try:
                    _, body = receive(stream)
                    request = pickle.loads(body)
                    host_path = Path(request["path"])
                except Exception:  # a broken request: the task that sent it times out naming the host
                    traceback.print_exc()
                    continue
                if os.fork() == 0:  # the host
                    listener.close()
                    conn.close()
                    os.setsid()
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    sys.path[:] = request["sys_path"]
                    importlib.invalidate_caches()
                    code = 0
                    try:
                        main([str(host_path), str(pool_pid)])
                    except BaseException:
                        traceback.print_exc()
                        code = 1
                    finally:
                        os._exit(code)
                deadline = time.monotonic() + START_WAIT_S
                while not host_path.exists() and time.monotonic() < deadline:
                    time.sleep(0.005)
                with contextlib.suppress(OSError):
                    send(stream, END, b"")
                    stream.flush()
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        remove_unused(path.with_suffix(".lock"))  # the pool's launcher lock goes with it


def main(args: list[str]) -> None:
    """``python -m trident_spark.executor.instance_host SOCKET POOL_PID``: run one host
    (``--launcher SOCKET POOL_PID``: run the executor's launcher, which forks them)."""
    # Its warnings (a refused connection) on stderr, which is the executor's log.
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args and args[0] == "--launcher":
        launch(Path(args[1]), int(args[2]))
        return
    path, pool_pid = Path(args[0]), int(args[1])
    _thread_task_contexts()
    host = _Host(path, pool_pid)

    def on_signal(signum: int, frame: Any) -> None:
        host.registry.cleanup_all()
        host.end()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    threading.Thread(target=host.watch, daemon=True).start()
    try:
        host.server.serve_forever(poll_interval=0.5)
    finally:
        with contextlib.suppress(OSError):
            path.unlink()


if __name__ == "__main__":
    from trident_spark.executor.instance_host import main as _main  # the module's own copy, not __main__'s

    _main(sys.argv[1:])


__all__ = ["launch", "main"]
