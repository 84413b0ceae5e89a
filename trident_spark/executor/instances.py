"""Trident's operation lifecycle on Spark: one instance per run, operator and partition, prepared once.

Trident prepares an operation once per task and keeps it while the topology
runs, so what ``prepare`` sets up (counters, caches, connections) lasts from
batch to batch; ``cleanup`` runs when it stops. Spark does not keep a
partition on one Python worker: it hands each task to the first idle worker of
its pool, in turn, so the worker that ran partition 0 last batch is usually
not the one that runs it now. An operation kept in a worker would be prepared
again on each worker and its attributes split between them.

So a stage whose operations have a lifecycle (they override ``prepare`` or
``cleanup``) runs in an *instance host*: a Python process per run, Python
worker pool (executor) and partition slot, started by the first task that
needs it (forked by the executor's *launcher*, a process started once per worker pool that
has imported what hosts run, so a run's hosts start in milliseconds). The task's worker
hands the host the stage (pickled) and its input
rows (Arrow), the host runs the stage with the instances it keeps for
(stage, partition), and the worker passes the output rows and the counters on
to Spark. Stages of operations without a lifecycle run in the worker as they
always did, with no extra hop.

A host ends, after calling ``cleanup()`` on every instance it keeps, when the
run stops (``handle.stop()`` runs a small Spark job that asks each executor's
hosts to stop; a task of a later run does the same for every stopped run it
is told of), when its executor's Python worker pool goes away (the executor or
application ends), after :data:`IDLE_EXIT_S` seconds without a batch, or on
SIGTERM. A host that is killed (SIGKILL, the machine lost) ends without
``cleanup``, as a Storm worker killed by its supervisor does.

The sockets are this account's alone (:mod:`trident_spark.executor.private_ipc`): they live in
a directory made with mode 0700 and checked on every use, and each side asks the other's uid
(``SO_PEERCRED``) before it sends or unpickles anything. The lock files that let one task start
a host while the others wait are removed with the sockets (:mod:`.lock_files`).

This module is the task's side (starting a host, handing it a stage, stopping a run's hosts);
the instances a task runs are :mod:`trident_spark.executor.kept_instances`, the wire both sides
speak :mod:`trident_spark.executor.host_wire`, the host process and the launcher
:mod:`trident_spark.executor.instance_host`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trident_spark.errors import TridentSparkError
from trident_spark.executor.host_wire import BATCH, DONE, END, ERROR, HEADER, STOP, arrow_ipc, receive, send
from trident_spark.executor.kept_instances import TaskInstances, host_partition, task_instances
from trident_spark.executor.lock_files import held, remove_unused
from trident_spark.executor.private_ipc import (
    PrivateDirectoryError,
    check_peer,
    check_private,
    private_directory,
    runtime_directory,
)
from trident_spark.worker_gc import settle_imports

log = logging.getLogger(__name__)

#: Seconds a host waits for its next batch before it cleans up and ends (a stream whose trigger
#: is longer than this prepares its operations again at each batch).
IDLE_EXIT_S = 3600.0
#: Seconds a task waits for a host it started to listen.
START_WAIT_S = 60.0
#: Partition slots per run and executor: partitions ``p`` and ``p + SLOTS`` share a host process.
SLOTS = max(2, os.cpu_count() or 2)

#: The module a host and a launcher run as (``python -m``): :mod:`.instance_host`.
HOST_MODULE = "trident_spark.executor.instance_host"


def hosts_root() -> Path:
    """Where hosts listen: one directory per run, one Unix socket per host (the launchers' sockets
    beside them); in this account's runtime directory (:func:`.private_ipc.runtime_directory`).
    Derived, not made: :func:`hosts_directory` makes and checks it."""
    return runtime_directory() / _HOSTS


_HOSTS = "hosts"


def hosts_directory(run_id: str | None = None) -> Path:
    """:func:`hosts_root` (or the run's directory in it), each directory on the way made private
    (mode 0700) if missing and checked on this use.

    Raises
    ------
    PrivateDirectoryError
        One of them is not a private directory of this account (another owner, a symbolic link,
        group or other bits): nothing is made in it, nothing is sent through it.
    """
    root = private_directory(private_directory(runtime_directory()) / _HOSTS)
    return private_directory(root / run_id) if run_id is not None else root


def _existing_hosts_directory(run_id: str) -> Path | None:
    """The run's directory if it and its parents exist and are private; None if one is missing."""
    root = hosts_root()
    for directory in (root.parent, root, root / run_id):
        if not check_private(directory):
            return None
    return root / run_id


@dataclass(frozen=True)
class InstanceScope:
    """Which kept instances a stage's tasks use (made on the driver, shipped with the stage).

    ``run_id``: the topology run (``BatchRunner.run_id``); ``stage``: the stage, unique in the
    run (query, operator position, mode); ``stopped``: runs the driver has stopped, whose hosts
    a task cleans up when it finds them.
    """

    run_id: str
    stage: str
    stopped: tuple[str, ...] = ()


def has_lifecycle(operation: object) -> bool:
    """Whether ``operation`` overrides ``prepare`` or ``cleanup`` (its instance is then kept).

    A wrapper that only passes ``prepare``/``cleanup`` on (``Negate``) names what it wraps
    with ``wrapped_operations()``: it has a lifecycle only if one of those has.

    Examples
    --------
    >>> from trident_spark.builtin import Equals, Negate
    >>> has_lifecycle(Negate(lambda t: True)), has_lifecycle(Negate(Equals()))
    (False, False)
    """
    from trident_spark.operation import Operation

    wrapped = getattr(operation, "wrapped_operations", None)
    if callable(wrapped):
        return any(has_lifecycle(inner) for inner in wrapped())
    kind = type(operation)
    return any(getattr(kind, name, None) not in (None, getattr(Operation, name))
               for name in ("prepare", "cleanup"))


# --- worker side: a stage run in its host ------------------------------------------------
class InstanceHostError(TridentSparkError):
    """The traceback of an error raised in an instance host (the cause of the error re-raised), or
    why no host can be reached (its socket's path is too long)."""


class Recorder:
    """Stands for the batch's accumulator in a host: sums what the stage adds, sent back after."""

    def __init__(self) -> None:
        self.counters: dict[Any, Any] = {}

    def add(self, counters: dict[Any, Any]) -> None:
        for name, value in counters.items():
            if isinstance(value, str):
                self.counters[name] = value
            else:
                self.counters[name] = self.counters.get(name, 0) + value


StageFunction = Callable[[Any, Iterator[Any]], Iterator[Any]]


def hosted(scope: InstanceScope, fn: StageFunction, metrics: Any) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function that runs ``fn(metrics, batches)`` in the partition's host.

    ``metrics`` (the batch's accumulator, or None) stays in the task; the host's stage adds to a
    :class:`Recorder`, whose sums the task adds to it. Registered on the driver: the run's hosts
    are stopped with it (:func:`stop_run`).
    """
    import functools

    _HOSTED_RUNS.add(scope.run_id)
    return functools.partial(_run_hosted, scope, fn, metrics)


def _run_hosted(scope: InstanceScope, fn: StageFunction, metrics: Any,
                batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa
    from pyspark import TaskContext, cloudpickle

    settle_imports()
    task = TaskContext.get()
    partition = task.partitionId() if task else 0
    retire_stopped(scope.stopped)
    # The task's TaskContext (stage, partition, attempt, local properties) goes along: operations
    # that read TaskContext.get() in the host see the task they run for.
    payload = cloudpickle.dumps({"stage": scope.stage, "partition": partition,  # type: ignore[no-untyped-call]
                                 "task": dict(vars(task)) if task is not None else None, "fn": fn})
    with _connect(scope.run_id, partition) as conn:
        stream = conn.makefile("rwb")
        send(stream, HEADER, payload)
        for batch in batches:
            send(stream, BATCH, arrow_ipc(batch))
        send(stream, DONE, b"")
        stream.flush()
        while True:
            tag, body = receive(stream)
            if tag == BATCH:
                yield pa.ipc.open_stream(body).read_next_batch()
            elif tag == END:
                counters = pickle.loads(body)
                if counters and metrics is not None:
                    metrics.add(counters)
                return
            elif tag == ERROR:
                error, text = cloudpickle.loads(body)
                raise error from InstanceHostError(text)
            else:
                raise RuntimeError(f"instance host of run {scope.run_id}: unexpected answer {tag!r}")


def _socket_path(run_id: str, partition: int) -> Path:
    """Per run, executor (this worker's pool: its parent process) and partition slot; the run's
    directory made private or checked (:func:`hosts_directory`)."""
    return _short_enough(hosts_directory(run_id) / f"{os.getppid()}-{partition % SLOTS}.sock")


#: The longest path a Unix socket may have (Linux: ``sun_path`` is 108 bytes with its NUL).
MAX_SOCKET_PATH = 107


def _short_enough(path: Path) -> Path:
    """``path``, if a Unix socket can have it (else a host could never listen there)."""
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH:
        raise InstanceHostError(
            f"the instance host socket {path} would be {size} bytes long, over the {MAX_SOCKET_PATH} a Unix "
            "socket's path may have: point XDG_RUNTIME_DIR or TMPDIR (on a cluster: "
            "spark.executorEnv.TMPDIR) at a shorter directory")
    return path


def _try_connect(path: Path) -> socket.socket | None:
    """A connection to the process listening at ``path`` (None if none does), once it is known to
    run as this account (:func:`.private_ipc.check_peer` raises ForeignPeerError if not)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    check_peer(conn, path)
    return conn


def _connect(run_id: str, partition: int) -> socket.socket:
    """A connection to the partition's host, started if none listens."""
    path = _socket_path(run_id, partition)
    conn = _try_connect(path)
    if conn is not None:
        return conn
    with _host_lock(path, run_id):  # one task starts the host; the others wait for it
        conn = _try_connect(path)
        if conn is not None:
            return conn
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a host that ended (killed) left its socket file
        _start_host(path)
        deadline = time.monotonic() + START_WAIT_S
        while time.monotonic() < deadline:
            conn = _try_connect(path)
            if conn is not None:
                return conn
            time.sleep(0.02)
    raise RuntimeError(f"the instance host for {path.name} in {path.parent} did not start within "
                       f"{START_WAIT_S:.0f} s; see the executor's log for its error")


@contextlib.contextmanager
def _host_lock(path: Path, run_id: str) -> Iterator[None]:
    """Held while a task starts the host at ``path``. The run's directory is made again when the
    run's last host removed it (ending idle) just as this task came."""
    lock = contextlib.ExitStack()
    for _ in range(10):
        try:
            lock.enter_context(held(path.with_suffix(".lock")))
            break
        except FileNotFoundError:
            hosts_directory(run_id)
    else:
        raise RuntimeError(f"the instance host directory {path.parent} keeps disappearing; is another "
                           "process of this account removing it?")
    with lock:
        yield


def _start_host(path: Path) -> None:
    """Have the executor's launcher fork a host listening at ``path`` (the launcher started first
    if none runs): a fork of a process that has imported what hosts run starts in milliseconds,
    where a new interpreter takes 1-2 s of CPU to import pyarrow, pyspark and this package."""
    pool_pid = os.getppid()
    launcher = _launcher_path(pool_pid)
    conn = _try_connect(launcher)
    if conn is None:
        with held(launcher.with_suffix(".lock")):  # one worker starts the launcher; the others wait
            conn = _try_connect(launcher)
            if conn is None:
                with contextlib.suppress(FileNotFoundError):
                    launcher.unlink()  # a launcher that ended (killed) left its socket file
                _sweep_ended_pools(launcher.parent, pool_pid)
                _spawn("--launcher", str(launcher), str(pool_pid))
                deadline = time.monotonic() + START_WAIT_S
                while conn is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                    conn = _try_connect(launcher)
    if conn is None:
        raise RuntimeError(f"the instance host launcher {launcher} did not start within "
                           f"{START_WAIT_S:.0f} s; see the executor's log for its error")
    with conn:
        stream = conn.makefile("rwb")
        # The worker's path as it is now (a later run may have shipped files with addPyFile):
        # the host imports the run's operations from it, not from the launcher's.
        send(stream, HEADER, pickle.dumps({"path": str(path), "sys_path": list(sys.path)}))
        stream.flush()
        receive(stream)  # forked: the host listens by the time the answer comes


def _launcher_path(pool_pid: int) -> Path:
    """One launcher per executor (its Python worker pool), for every run."""
    return _short_enough(hosts_directory() / f"launcher-{pool_pid}.sock")


def _sweep_ended_pools(root: Path, pool_pid: int) -> None:
    """Remove what hosts and launchers of worker pools that have ended left behind (they were
    killed, or ended while a task held a lock file): their sockets, lock files, empty run
    directories. Called when a pool starts its launcher, once per executor."""
    from trident_spark.local.process import pid_alive

    def ended(path: Path) -> bool:
        owner = path.stem.removeprefix("launcher-").split("-", 1)[0]
        return owner.isdigit() and int(owner) != pool_pid and not pid_alive(int(owner))

    for directory in [root, *(d for d in root.iterdir() if d.is_dir() and not d.is_symlink())]:
        with contextlib.suppress(OSError):
            for path in directory.iterdir():
                if path.suffix == ".sock" and ended(path):
                    path.unlink()
                elif path.suffix == ".lock" and ended(path):
                    remove_unused(path)
            if directory != root:
                directory.rmdir()  # only when empty


def _spawn(*args: str) -> None:
    env = dict(os.environ)
    # The worker's path: Spark's own, files shipped with addPyFile, the user's PYTHONPATH.
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    # Started in the background by a shell that ends at once: nobody's child to reap.
    process = subprocess.Popen(
        ["/bin/sh", "-c", '"$@" &', "sh", sys.executable, "-m", HOST_MODULE, *args],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
    process.wait()


# --- stopping a run's hosts --------------------------------------------------------------
_HOSTED_RUNS: set[str] = set()
STOPPED: deque[str] = deque(maxlen=32)
_RETIRED: set[str] = set()


def stopped_runs() -> tuple[str, ...]:
    """Runs this driver stopped after hosting instances (their hosts may still be about)."""
    return tuple(STOPPED)


def stop_hosts(run_id: str) -> tuple[int, int]:
    """Ask every host of ``run_id`` on this machine to clean up and end: (hosts, instances).

    A hosts directory that is not this account's alone holds no host of ours: it is named in a
    warning and left alone (the run's tasks refused it with the same message).
    """
    try:
        directory = _existing_hosts_directory(run_id)
    except PrivateDirectoryError as refused:
        log.warning("the instance hosts of run %s were not stopped: %s", run_id, refused)
        return 0, 0
    if directory is None:
        return 0, 0
    hosts = instances = 0
    for path in sorted(directory.glob("*.sock")):
        conn = _try_connect(path)
        if conn is None:
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        with conn:
            stream = conn.makefile("rwb")
            try:
                send(stream, STOP, b"")
                stream.flush()
                tag, body = receive(stream)
            except OSError:
                continue
            if tag == END:
                hosts += 1
                instances += int(pickle.loads(body).get("cleaned", 0))
    with contextlib.suppress(OSError):
        for leftover in directory.glob("*.lock"):
            remove_unused(leftover)
        directory.rmdir()
    return hosts, instances


def retire_stopped(stopped: Iterable[str]) -> None:
    """Stop the hosts of runs the driver has stopped (once per worker process and run)."""
    for run_id in stopped:
        if run_id not in _RETIRED:
            _RETIRED.add(run_id)
            with contextlib.suppress(Exception):  # best effort: the run is over
                stop_hosts(run_id)


def stop_run(spark: Any, run_id: str) -> tuple[int, int]:
    """After ``handle.stop()``: clean up the run's kept instances on the executors.

    One small Spark job of ``defaultParallelism`` tasks, each of which stops every host of the
    run on its machine. Best effort: an executor the job does not reach keeps its hosts until a
    task of a later run (told of this one) stops them, its worker pool ends, or they sit idle
    :data:`IDLE_EXIT_S` seconds. Returns (hosts stopped, instances cleaned up).
    """
    import functools

    if run_id not in _HOSTED_RUNS:
        return 0, 0
    _HOSTED_RUNS.discard(run_id)
    STOPPED.append(run_id)
    context = spark.sparkContext
    if context.master.startswith("local"):
        return stop_hosts(run_id)  # the executors are this machine
    tasks = max(1, int(context.defaultParallelism))
    rows = (spark.range(0, tasks, 1, tasks)
            .mapInArrow(functools.partial(_stop_task, run_id), "hosts long, instances long").collect())
    return sum(int(r.hosts) for r in rows), sum(int(r.instances) for r in rows)


def _stop_task(run_id: str, batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    for _ in batches:
        pass
    hosts, instances = stop_hosts(run_id)
    yield pa.RecordBatch.from_pydict({"hosts": [hosts], "instances": [instances]})


__all__ = ["IDLE_EXIT_S", "InstanceHostError", "InstanceScope", "Recorder", "TaskInstances", "has_lifecycle",
           "host_partition", "hosted", "hosts_directory", "hosts_root", "retire_stopped", "stop_hosts",
           "stop_run", "stopped_runs", "task_instances"]
