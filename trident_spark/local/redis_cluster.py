"""Start a Redis Cluster on 127.0.0.1 from Debian's redis-server: N primaries, optional replicas.

Each node is ``redis-server --cluster-enabled yes`` in a private temporary
directory (its ``nodes.conf`` and log there), bound to 127.0.0.1 with protected
mode on and no persistence; ``redis-cli --cluster create ... --cluster-yes``
then joins them and spreads the 16384 hash slots evenly over the primaries.
Ports are chosen free below the ephemeral range and below 55536, with port +
10000 (the cluster bus, which Redis derives from the client port) free too.
``node_timeout`` is Redis's ``cluster-node-timeout``: how long a primary may be
unreachable before its replica takes over (a failover takes about this plus a
second here). Faults for tests: :meth:`RedisClusterHandle.kill_node`,
``restart_node`` (same port and ``nodes.conf``: a killed primary comes back as
a replica of the node that took over), ``pause_node``/``resume_node``
(SIGSTOP/SIGCONT) and ``roles`` (who serves, who replicates whom, now).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from trident_spark.errors import InvalidArgumentError
from trident_spark.local.containers import host_ports
from trident_spark.local.launchers import redis_server_binary
from trident_spark.local.probes import redis_answers
from trident_spark.local.process import LocalProcess, ServiceStartError, tail_lines, wait_until
from trident_spark.local.service_handle import ServiceHandle

__all__ = ["RedisClusterHandle", "start_redis_cluster"]

#: The cluster bus of a node listens on its client port + this.
BUS_OFFSET = 10000
#: Client ports stay below this so that the bus port stays a valid port.
_PORT_LIMIT = 65536 - BUS_OFFSET


@dataclass(repr=False)
class RedisClusterHandle(ServiceHandle):
    """A local Redis Cluster: ``address`` (and ``url``) is its first primary, ``nodes`` every node.

    Examples
    --------
    >>> with start_redis_cluster(primaries=3) as cluster:  # doctest: +SKIP
    ...     cluster.url, len(cluster.primaries)
    ('redis://127.0.0.1:27001/0', 3)
    """

    nodes: list[str] = field(default_factory=list)
    primaries: list[str] = field(default_factory=list)
    processes: dict[str, LocalProcess] = field(default_factory=dict)
    directory: Path | None = None

    @property
    def url(self) -> str:
        """The URL a client starts from (any node would do): the first primary's."""
        return self.address

    def kill_node(self, url: str) -> None:
        """SIGKILL the node at ``url`` (a fault for tests)."""
        self.processes[url].stop(grace=0.0)

    def restart_node(self, url: str, timeout: float = 30.0) -> None:
        """Start the node at ``url`` again after :meth:`kill_node`: same port, same ``nodes.conf``.

        It has no data (no persistence) and rejoins the cluster; a primary that was
        replaced meanwhile comes back as a replica of the node that took over.
        """
        old = self.processes[url]
        old.stop(grace=0.0)
        process = LocalProcess(old.name, old.argv, log_path=old.log_path, append=True)
        self.processes[url] = process
        wait_until(functools.partial(redis_answers, url), timeout=timeout, process=process,
                   what=f"redis cluster node at {url}")

    def pause_node(self, url: str) -> None:
        """SIGSTOP the node at ``url``: it holds its connections and answers nothing (a fault for tests)."""
        os.kill(self.processes[url].pid, signal.SIGSTOP)

    def resume_node(self, url: str) -> None:
        """SIGCONT a node :meth:`pause_node` stopped."""
        os.kill(self.processes[url].pid, signal.SIGCONT)

    def roles(self) -> dict[str, str | None]:
        """Each live node's URL -> None for a primary that serves slots, else its primary's URL.

        Each node is asked about itself (``CLUSTER NODES``, its ``myself`` line), so this is
        the cluster's state now, not one node's gossip (after a failover: the replica that took
        over is a primary). A node that does not answer within 5 s (paused, down) is left out,
        and so is a primary that serves no slot (one just restarted that has not yet learned it
        became a replica).
        """
        views: dict[str, list[list[str]]] = {}
        for url, process in self.processes.items():
            if not process.alive():
                continue
            port = url.rsplit(":", 1)[1].split("/")[0]
            try:
                out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", port, "CLUSTER", "NODES"],
                                     capture_output=True, text=True, timeout=5, check=True).stdout
            except (OSError, subprocess.SubprocessError):
                continue
            views[url] = [line.split() for line in out.splitlines() if line.strip()]
        by_id = {row[0]: f"redis://127.0.0.1:{row[1].split('@')[0].rsplit(':', 1)[1]}/0"
                 for rows in views.values() for row in rows}
        found: dict[str, str | None] = {}
        for url, rows in views.items():
            for row in rows:
                flags = row[2].split(",")
                if "myself" not in flags:
                    continue
                if "master" in flags and len(row) > 8:
                    found[url] = None
                elif "slave" in flags and row[3] in by_id:
                    found[url] = by_id[row[3]]
        return found


def _cluster_ports(count: int) -> list[int]:
    """``count`` free client ports whose bus ports (port + 10000) are free too."""
    chosen: list[int] = []
    for _ in range(20):
        for port in host_ports(count * 3):
            if port >= _PORT_LIMIT or port in chosen or port + BUS_OFFSET in chosen:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port + BUS_OFFSET))
                except OSError:
                    continue
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    raise ServiceStartError(f"no {count} free port pairs (port, port + {BUS_OFFSET}) below {_PORT_LIMIT} "
                            "on 127.0.0.1: stop some services")


def _cluster_ok(port: int) -> bool:
    try:
        out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "CLUSTER", "INFO"],
                             capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "cluster_state:ok" in out


def _replicas_online(port: int, count: int) -> bool:
    """Whether the primary at ``port`` has ``count`` replicas in sync (``state=online``)."""
    try:
        out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "INFO", "replication"],
                             capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return sum(1 for line in out.splitlines() if line.startswith("slave") and "state=online" in line) >= count


def start_redis_cluster(*, primaries: int = 3, replicas: int = 0, timeout: float = 60.0,
                        keep_logs: bool = False, node_timeout: int = 5000) -> RedisClusterHandle:
    """Start a Redis Cluster of ``primaries`` primaries, each with ``replicas`` replicas, on 127.0.0.1.

    Parameters
    ----------
    primaries : int, default 3
        Primaries (Redis Cluster needs at least 3).
    replicas : int, default 0
        Replicas per primary.
    timeout : float, default 60.0
        Seconds to wait for the nodes and then for ``cluster_state:ok``.
    keep_logs : bool, default False
        Keep the temporary directory (node logs, ``nodes-PORT.conf``) after ``stop()``.
    node_timeout : int, default 5000
        ``cluster-node-timeout`` in milliseconds: how long a node may be unreachable before
        the cluster fails it over (its replica is promoted). At least 100.

    Returns
    -------
    RedisClusterHandle
        ``url`` is ``redis://127.0.0.1:PORT/0`` of the first primary; ``primaries``
        and ``nodes`` list every node's URL; ``stop()`` stops every node.

    Raises
    ------
    InvalidArgumentError
        Fewer than 3 primaries or a negative number of replicas.
    ServiceStartError
        A node did not start, or the cluster did not form (the message has the log's tail).

    Examples
    --------
    >>> with start_redis_cluster(primaries=3, replicas=1) as cluster:  # doctest: +SKIP
    ...     len(cluster.nodes)
    6
    """
    if isinstance(primaries, bool) or not isinstance(primaries, int) or primaries < 3:
        raise InvalidArgumentError(f"start_redis_cluster(primaries={primaries!r}): Redis Cluster needs "
                                   "at least 3 primaries")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise InvalidArgumentError(f"start_redis_cluster(replicas={replicas!r}): a number >= 0")
    if isinstance(node_timeout, bool) or not isinstance(node_timeout, int) or node_timeout < 100:
        raise InvalidArgumentError(f"start_redis_cluster(node_timeout={node_timeout!r}): milliseconds, "
                                   "a whole number >= 100")
    binary = str(redis_server_binary())
    cli = shutil.which("redis-cli")
    if cli is None:
        raise ServiceStartError("redis-cli is not on PATH: install redis-tools (Debian: it comes with "
                                "redis-server)")
    count = primaries * (1 + replicas)
    directory = Path(tempfile.mkdtemp(prefix="trident-spark-redis-cluster-"))
    ports = _cluster_ports(count)
    processes: dict[str, LocalProcess] = {}

    def stop_all() -> None:
        for process in processes.values():
            process.stop(grace=5.0)

    def discard() -> None:
        shutil.rmtree(directory, ignore_errors=True)

    try:
        for port in ports:
            node_dir = directory / str(port)
            node_dir.mkdir()
            argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--protected-mode", "yes",
                    "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                    "--cluster-node-timeout", str(node_timeout), "--save", "", "--appendonly", "no",
                    # a replica (re)joining syncs at once, not after the default 5 s of waiting for others
                    "--repl-diskless-sync-delay", "0",
                    "--dir", str(node_dir), "--logfile", ""]
            url = f"redis://127.0.0.1:{port}/0"
            processes[url] = LocalProcess(f"redis-cluster-{port}", argv, log_path=node_dir / "redis.log")
        deadline = time.monotonic() + timeout
        for url, process in processes.items():
            wait_until(functools.partial(redis_answers, url), timeout=max(1.0, deadline - time.monotonic()),
                       process=process, what=f"redis cluster node at {url}")
        create = subprocess.run(
            [cli, "--cluster", "create", *(f"127.0.0.1:{port}" for port in ports),
             "--cluster-replicas", str(replicas), "--cluster-yes"],
            capture_output=True, text=True, timeout=max(5.0, deadline - time.monotonic()))
        if create.returncode != 0:
            raise ServiceStartError(f"redis-cli --cluster create failed ({create.returncode}): "
                                    f"{(create.stdout + create.stderr)[-2000:]}")
        for port in ports:
            wait_until(functools.partial(_cluster_ok, port), timeout=max(1.0, deadline - time.monotonic()),
                       what=f"redis cluster node 127.0.0.1:{port} (cluster_state:ok)", interval=0.2)
        # redis-cli assigns the first `primaries` ports as primaries; their replicas sync after the
        # create: wait for them so that a first write with WAIT finds them.
        for port in ports[:primaries]:
            wait_until(functools.partial(_replicas_online, port, replicas),
                       timeout=max(1.0, deadline - time.monotonic()),
                       what=f"the {replicas} replica(s) of redis cluster node 127.0.0.1:{port} (in sync)",
                       interval=0.1)
    except BaseException as exc:
        logs = "".join(f"\n{url}: {tail_lines(p.log_path, 5)}" for url, p in processes.items())
        stop_all()
        if not keep_logs:
            discard()
        if isinstance(exc, ServiceStartError):
            raise ServiceStartError(f"{exc}{logs}") from None
        raise
    urls = list(processes)
    return RedisClusterHandle(
        "redis", urls[0], "local", log_path=directory, pid=processes[urls[0]].pid, keep_logs=keep_logs,
        _stopper=stop_all, _discard_logs=discard, nodes=urls, primaries=urls[:primaries],
        processes=processes, directory=directory)
