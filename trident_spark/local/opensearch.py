"""A real OpenSearch node (or a small cluster) on this machine, from Maven Central's jars.

The jars come from the cache of :mod:`trident_spark.local.maven` (:data:`OPENSEARCH_NODE`,
fetched once by ``make setup``). OpenSearch's own launcher (``org.opensearch.bootstrap.OpenSearch``)
refuses to run as root and installs a security manager that needs the distribution's
policy files; a node for tests needs neither. So a 40-line Java class (:data:`LAUNCHER_SOURCE`,
compiled once into the same cache by the Java runtime's own compiler module) builds the node's
environment from its ``opensearch.yml`` and starts ``org.opensearch.node.Node`` with the
netty4 transport (``Netty4Plugin``) as a classpath plugin, as OpenSearch's test framework
does. SIGTERM closes the node cleanly (a shutdown hook); its data is on disk, so a node
started again on the same directory comes back with every index it had.

Each node has a home directory (``config/opensearch.yml``, ``log4j2.properties``,
``data/``, empty ``modules/`` and ``plugins/``) and two free ports of 127.0.0.1: HTTP (the
address clients use) and transport. One node runs as ``discovery.type: single-node``;
three form a cluster over their transport ports (``discovery.seed_hosts``,
``cluster.initial_cluster_manager_nodes``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trident_spark.errors import InvalidArgumentError
from trident_spark.local.java import JavaVersionError, find_java, require_java
from trident_spark.local.launchers import _PORT_TAKEN, ServiceNotInstalledError
from trident_spark.local.maven import OPENSEARCH_NODE, OPENSEARCH_VERSION, cache_root, classpath, resolve_jars
from trident_spark.local.process import LocalProcess, ServiceStartError, free_port, tail_lines
from trident_spark.local.service_handle import ServiceHandle

__all__ = [
    "JVM_OPTIONS",
    "LAUNCHER_SOURCE",
    "OpenSearchHandle",
    "OpenSearchNode",
    "OpenSearchNodeConfig",
    "launcher_classes",
    "start_opensearch",
]

JVM_OPTIONS: tuple[str, ...] = (
    "-Xss1m",
    # One GC thread and C1 only: a test node is small and short-lived, and the 2 cores here are
    # Spark's. (A benchmark wanting a warmed-up node passes its own options.)
    "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8", "-XX:-OmitStackTraceInFastThrow",
    # What OpenSearch's own launcher always sets (its SystemJvmOptions): netty without Unsafe
    # tricks, log4j's shutdown hook off (the node's hook logs while closing), the COMPAT
    # locale data its date formats are written against.
    "-Dio.netty.noUnsafe=true", "-Dio.netty.noKeySetOptimization=true",
    "-Dio.netty.recycler.maxCapacityPerThread=0", "-Dio.netty.allocator.numDirectArenas=0",
    "-Dlog4j.shutdownHookEnabled=false", "-Dlog4j2.disable.jmx=true",
    "-Djava.locale.providers=SPI,COMPAT",
    "-Dopensearch.networkaddress.cache.ttl=60", "-Dopensearch.networkaddress.cache.negative.ttl=10",
)  # fmt: skip
"""The node's JVM options besides the heap (``heap=`` of :func:`start_opensearch`)."""

DEFAULT_HEAP = "512m"

_CLASS = "TridentOpenSearchNode"

LAUNCHER_SOURCE = """\
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.transport.Netty4Plugin;

/** An OpenSearch node with the netty4 transport, started from its opensearch.yml; SIGTERM closes it. */
public final class TridentOpenSearchNode extends Node {
    private TridentOpenSearchNode(Environment environment) {
        super(environment, List.of(Netty4Plugin.class), true);
    }

    public static void main(String[] args) {
        try {
            Path home = Paths.get(System.getProperty("opensearch.path.home"));
            Path conf = Paths.get(System.getProperty("opensearch.path.conf"));
            LogConfigurator.registerErrorListener();
            Settings initial = Settings.builder().put("path.home", home.toString()).build();
            Environment environment = InternalSettingsPreparer.prepareEnvironment(
                initial, Map.of(), conf, () -> "node");
            LogConfigurator.setNodeName(Node.NODE_NAME_SETTING.get(environment.settings()));
            LogConfigurator.configure(environment);
            Node node = new TridentOpenSearchNode(environment);
            CountDownLatch closed = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    node.close();
                    node.awaitClose(20, TimeUnit.SECONDS);
                } catch (Exception e) {
                    e.printStackTrace();
                } finally {
                    closed.countDown();
                }
            }, "trident-opensearch-shutdown"));
            node.start();
            closed.await();
        } catch (Throwable t) {
            t.printStackTrace();
            Runtime.getRuntime().halt(1);
        }
    }
}
"""
"""The Java launcher: ``org.opensearch.node.Node`` with ``Netty4Plugin``, closed on SIGTERM."""

_LOG4J2 = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
logger.node.name = org.opensearch.node.Node
logger.node.level = info
logger.deprecation.name = org.opensearch.deprecation
logger.deprecation.level = error
logger.dangling.name = org.opensearch.gateway.DanglingIndicesState
logger.dangling.level = error
"""

_STOP_GRACE_S = 30.0
_PORT_ATTEMPTS = 3
_CLUSTER_FILE = "cluster.json"


@dataclass(frozen=True)
class OpenSearchNodeConfig:
    """One node: its name, ports, home directory and the cluster it belongs to.

    Parameters
    ----------
    name
        The node's name, e.g. "node-0".
    http_port, transport_port
        Its ports on 127.0.0.1.
    home
        Its home directory (``config/``, ``data/``, ``modules/``, ``plugins/``).
    cluster_name
        The cluster's name (unique per start: two clusters never join).
    transport_ports
        Every node's transport port; one port: a single-node cluster.
    node_names
        Every node's name (the cluster's first cluster managers).

    Examples
    --------
    >>> config = OpenSearchNodeConfig("node-0", 9200, 9300, Path("/tmp/os/node-0"), "c", (9300,), ("node-0",))
    >>> config.address
    'http://127.0.0.1:9200'
    >>> config.settings()["discovery.type"]
    'single-node'
    """

    name: str
    http_port: int
    transport_port: int
    home: Path
    cluster_name: str
    transport_ports: tuple[int, ...]
    node_names: tuple[str, ...]

    @property
    def address(self) -> str:
        """The node's HTTP address, the one clients use."""
        return f"http://127.0.0.1:{self.http_port}"

    def settings(self) -> dict[str, Any]:
        """The node's ``opensearch.yml``: loopback only, data on disk, no disk watermarks.

        Indices keep OpenSearch's one replica per shard: in a cluster a node can be lost without
        losing data; on a single node the replicas stay unassigned (health "yellow").
        """
        settings: dict[str, Any] = {
            "cluster.name": self.cluster_name,
            "node.name": self.name,
            "network.host": "127.0.0.1",
            "http.port": self.http_port,
            "transport.port": self.transport_port,
            "path.data": str(self.home / "data"),
            "path.logs": str(self.home / "logs"),
            # A test machine's disk may be fuller than OpenSearch's 85/90/95 % watermarks:
            # past them it stops allocating shards and makes indices read-only.
            "cluster.routing.allocation.disk.threshold_enabled": False,
            # Every test makes its own indices: allow many shards per node.
            "cluster.max_shards_per_node": 10_000,
        }
        if len(self.transport_ports) == 1:
            settings["discovery.type"] = "single-node"
        else:
            settings["discovery.seed_hosts"] = [f"127.0.0.1:{port}" for port in self.transport_ports]
            settings["cluster.initial_cluster_manager_nodes"] = list(self.node_names)
        return settings

    def write(self) -> None:
        """Create the home directory and write the node's configuration files."""
        for sub in ("config", "data", "logs", "modules", "plugins", "tmp"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        # JSON values are YAML: one "key: value" line per setting.
        text = "".join(f"{key}: {json.dumps(value)}\n" for key, value in self.settings().items())
        (self.home / "config" / "opensearch.yml").write_text(text, encoding="utf-8")
        (self.home / "config" / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")
        (self.home / "config" / "jvm.options").write_text("", encoding="utf-8")


def _java() -> str:
    require_java(17)
    java = find_java()
    if java is None:  # require_java has raised already
        raise JavaVersionError("elasticsearch: no java found")
    return str(java)


def launcher_classes(java: str, jars: Sequence[Path], *, root: Path | None = None) -> Path:
    """The directory holding the compiled :data:`LAUNCHER_SOURCE`, compiling it once into the cache.

    The compiler is the Java runtime's own ``jdk.compiler`` module (``java -m
    jdk.compiler/com.sun.tools.javac.Main``), which a JRE has too: no JDK needed.

    Raises
    ------
    ServiceNotInstalledError
        This Java has no ``jdk.compiler`` module (a trimmed runtime); the message says what to install.
    ServiceStartError
        The compiler failed; its output is in the message.

    Examples
    --------
    >>> launcher_classes("java", resolve_jars(OPENSEARCH_NODE)).name  # doctest: +SKIP
    'opensearch-launcher-3f2a...'
    """
    digest = hashlib.sha256(f"{LAUNCHER_SOURCE}\n{OPENSEARCH_VERSION}".encode()).hexdigest()[:12]
    base = root or cache_root()
    final = base / f"opensearch-launcher-{digest}"
    if (final / f"{_CLASS}.class").is_file():
        return final
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    work = Path(tempfile.mkdtemp(prefix=".opensearch-launcher-", dir=base))
    try:
        source = work / f"{_CLASS}.java"
        source.write_text(LAUNCHER_SOURCE, encoding="utf-8")
        classes = work / "classes"
        command = [java, "-m", "jdk.compiler/com.sun.tools.javac.Main", "--release", "11", "-nowarn",
                   "-d", str(classes), "-cp", classpath(jars), str(source)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        output = (done.stdout + done.stderr).strip()
        if done.returncode != 0 and "jdk.compiler not found" in output:
            raise ServiceNotInstalledError(
                f"elasticsearch: the local OpenSearch node is started by a small Java class compiled "
                f"once with the Java runtime's compiler, and {java} has no jdk.compiler module (a "
                "trimmed runtime): install a full Java 17 (Debian/Ubuntu: `sudo apt-get install "
                "openjdk-17-jre-headless`) or point JAVA_HOME at one, or set ELASTICSEARCH_URL to a "
                "running OpenSearch or Elasticsearch")
        if done.returncode != 0:
            raise ServiceStartError(
                f"elasticsearch: the OpenSearch launcher did not compile (exit {done.returncode}) "
                f"against {OPENSEARCH_NODE.name}'s jars:\n{output[-2000:]}")
        try:
            classes.rename(final)
        except OSError:
            if not (final / f"{_CLASS}.class").is_file():  # another process won the race: take its copy
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _http_json(url: str, timeout: float) -> tuple[int, Any]:
    """``(status, parsed body)`` of a GET; status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        try:
            body = json.loads(error.read() or b"null")
        except ValueError:
            body = None
        return int(error.code), body
    except (urllib.error.URLError, OSError, ValueError):
        return 0, None


def cluster_ready(address: str, nodes: int, timeout: float = 2.0) -> bool:
    """Whether the cluster behind ``address`` has ``nodes`` nodes and every primary shard active.

    Examples
    --------
    >>> cluster_ready("http://127.0.0.1:1", 1, timeout=0.2)
    False
    """
    status, _ = _http_json(
        f"{address}/_cluster/health?wait_for_status=yellow&wait_for_nodes={nodes}&timeout=1s", timeout)
    return status == 200


class OpenSearchNode:
    """One node's process: started, stopped (SIGTERM: a clean close), killed, restarted.

    A node stopped or killed keeps its ports and data; :meth:`start` brings it back on them.

    Parameters
    ----------
    config
        The node's name, ports and home.
    argv
        The JVM command line that runs it.
    log_path
        Its log (stdout and stderr; the log of an earlier run is appended to ``LOG.previous``).
    timeout
        Seconds :meth:`start` waits for the cluster to be ready.

    Examples
    --------
    >>> es = start_opensearch(nodes=3)  # doctest: +SKIP
    >>> es.nodes[2].kill(); es.nodes[2].start()  # doctest: +SKIP
    """

    def __init__(self, config: OpenSearchNodeConfig, argv: list[str], log_path: Path, timeout: float) -> None:
        self.config = config
        self.argv = argv
        self.log_path = log_path
        self.timeout = timeout
        self._process: LocalProcess | None = None
        self._runs = 0

    def __repr__(self) -> str:
        return f"OpenSearchNode(name={self.config.name!r}, address={self.address!r}, pid={self.pid!r})"

    @property
    def name(self) -> str:
        """The node's name."""
        return self.config.name

    @property
    def address(self) -> str:
        """The node's HTTP address."""
        return self.config.address

    @property
    def pid(self) -> int | None:
        """The JVM's process id while it runs."""
        return self._process.pid if self._process is not None and self._process.alive() else None

    def alive(self) -> bool:
        """Whether the node's process runs."""
        return self._process is not None and self._process.alive()

    def spawn(self) -> None:
        """Start the node's process without waiting for it (see :meth:`wait_ready`)."""
        if self.alive():
            return
        if self._runs and self.log_path.exists():
            with self.log_path.open("rb") as old, \
                    self.log_path.with_name(self.log_path.name + ".previous").open("ab") as kept:
                shutil.copyfileobj(old, kept)
        self._runs += 1
        self._process = LocalProcess(f"opensearch {self.name}", self.argv, log_path=self.log_path,
                                     cwd=self.config.home)

    def wait_ready(self, nodes: int) -> None:
        """Wait until this node answers and its cluster has ``nodes`` nodes and its primaries.

        Raises
        ------
        ServiceStartError
            The process exited, or time ran out; the message has the log's last lines.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            process = self._process
            if process is None or not process.alive():
                code = None if process is None else process.returncode
                raise ServiceStartError(
                    f"opensearch {self.name} at {self.address} exited with status {code} before it was "
                    f"ready; log: {self.log_path}\n{tail_lines(self.log_path, 20)}")
            if cluster_ready(self.address, nodes):
                return
            if time.monotonic() >= deadline:
                raise ServiceStartError(
                    f"opensearch {self.name} at {self.address} was not ready (a cluster of {nodes} "
                    f"node(s), every primary shard active) within {self.timeout:g} s; log: "
                    f"{self.log_path}\n{tail_lines(self.log_path, 20)}")
            time.sleep(0.2)

    def start(self) -> None:
        """Start the node again (same ports, same data) and wait until its cluster is ready."""
        self.spawn()
        self.wait_ready(len(self.config.node_names))

    def stop(self) -> None:
        """Stop the node cleanly: SIGTERM (the node closes its indices), SIGKILL after 30 s."""
        process, self._process = self._process, None
        if process is not None:
            process.stop(grace=_STOP_GRACE_S)

    def kill(self) -> None:
        """SIGKILL the node: no clean close (acknowledged writes are in its translog)."""
        process, self._process = self._process, None
        if process is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30.0)
            process.stop(grace=0.0)

    def wipe_data(self) -> None:
        """Remove the node's data (only while it is stopped): it comes back empty."""
        if self.alive():
            raise ServiceStartError(f"opensearch {self.name}: stop it before wiping its data")
        data = self.config.home / "data"
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True, exist_ok=True)

    def restart(self, *, wipe_data: bool = False) -> None:
        """Stop the node cleanly and start it again on its ports; ``wipe_data``: empty."""
        self.stop()
        if wipe_data:
            self.wipe_data()
        self.start()


@dataclass(repr=False)
class OpenSearchHandle(ServiceHandle):
    """A local OpenSearch node or cluster: a :class:`ServiceHandle` with its nodes.

    ``address`` is the first node's HTTP address; :attr:`hosts` lists every node's (for
    ``ElasticsearchState(hosts=...)``). ``restart()`` stops every node cleanly and starts
    them again on the same ports with the same data; ``restart_empty()`` brings them back
    with no data (a store that lost everything).

    Examples
    --------
    >>> with start_opensearch(nodes=3) as es:  # doctest: +SKIP
    ...     len(es.hosts), es.nodes[0].address == es.address
    (3, True)
    """

    nodes: tuple[OpenSearchNode, ...] = field(default=(), compare=False)

    @property
    def hosts(self) -> list[str]:
        """Every node's HTTP address."""
        return [node.address for node in self.nodes]

    def restart_empty(self) -> None:
        """Stop every node, remove their data, start them again on the same ports: empty."""
        if self.stopped:
            self.restart()  # raises the handle's own "was stopped" error
        _restart_all(self.nodes, wipe=True)
        self.pid = self.nodes[0].pid


def _restart_all(nodes: Sequence[OpenSearchNode], *, wipe: bool) -> None:
    for node in nodes:
        node.stop()
    for node in nodes:
        if wipe:
            node.wipe_data()
        node.spawn()
    for node in nodes:
        node.wait_ready(len(nodes))


def _read_cluster(base: Path) -> dict[str, Any] | None:
    saved = base / _CLUSTER_FILE
    if not saved.is_file():
        return None
    cluster: dict[str, Any] = json.loads(saved.read_text(encoding="utf-8"))
    return cluster


def _configs(base: Path, cluster: dict[str, Any]) -> list[OpenSearchNodeConfig]:
    names = tuple(f"node-{i}" for i in range(len(cluster["http_ports"])))
    transport = tuple(int(port) for port in cluster["transport_ports"])
    return [OpenSearchNodeConfig(name, int(http), tport, base / name, str(cluster["cluster_name"]),
                                 transport, names)
            for name, http, tport in zip(names, cluster["http_ports"], transport, strict=True)]


def start_opensearch(
    *,
    nodes: int = 1,
    timeout: float = 60.0,
    log_dir: Path | None = None,
    keep_logs: bool = False,
    data_dir: Path | None = None,
    heap: str = DEFAULT_HEAP,
    jvm_options: Sequence[str] = (),
) -> OpenSearchHandle:
    """Start an OpenSearch node (or ``nodes`` of them, one cluster) on free ports of 127.0.0.1.

    Parameters
    ----------
    nodes
        1 (``discovery.type: single-node``) or more (a cluster; OpenSearch's one replica per
        shard).
    timeout
        Seconds for the cluster to be ready (every node joined, every primary active), at each
        start and restart.
    log_dir
        Directory for the nodes' logs (``opensearch.log``; with several nodes
        ``opensearch-node-N.log``); default: a new temporary directory.
    keep_logs
        Keep the logs after a clean :meth:`ServiceHandle.stop`.
    data_dir
        Where the nodes keep their homes and data; kept after ``stop()``, and a cluster
        started again on it comes back on its old ports with its indices. Default: a
        temporary directory that ``stop()`` removes.
    heap
        Each node's JVM heap (``-Xms``/``-Xmx``).
    jvm_options
        More JVM options, after :data:`JVM_OPTIONS`.

    Returns
    -------
    OpenSearchHandle
        ``address`` is the first node's HTTP address, ``hosts`` every node's; ``restart()``
        stops the nodes (a clean close) and starts them again on the same ports with the
        same data; ``nodes[i]`` restarts or kills one node.

    Raises
    ------
    ServiceNotInstalledError
        The jars are neither cached nor fetchable (Maven missing: run ``make setup``), or
        the Java runtime has no compiler module to compile the launcher with.
    ServiceStartError
        The cluster was not ready in time; the message has the log's last lines.

    Examples
    --------
    >>> with start_opensearch() as es:  # doctest: +SKIP
    ...     es.address
    'http://127.0.0.1:38211'
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise InvalidArgumentError(f"start_opensearch(nodes={nodes!r}): a number of nodes >= 1")
    jars = resolve_jars(OPENSEARCH_NODE)
    java = _java()
    classes = launcher_classes(java, jars)
    keep_data = data_dir is not None
    base = (Path(data_dir) if data_dir is not None
            else Path(tempfile.mkdtemp(prefix="trident-spark-opensearch-")))
    base.mkdir(parents=True, exist_ok=True)
    owned_logs = log_dir is None
    logs = (Path(tempfile.mkdtemp(prefix="trident-spark-opensearch-logs-")) if log_dir is None
            else Path(log_dir))
    logs.mkdir(parents=True, exist_ok=True)
    log_paths = [logs / ("opensearch.log" if nodes == 1 else f"opensearch-node-{i}.log")
                 for i in range(nodes)]

    def discard_logs() -> None:
        if owned_logs:
            shutil.rmtree(logs, ignore_errors=True)
        else:
            for path in log_paths:
                path.unlink(missing_ok=True)
                path.with_name(path.name + ".previous").unlink(missing_ok=True)

    def discard_data() -> None:
        if not keep_data:
            shutil.rmtree(base, ignore_errors=True)

    previous = _read_cluster(base)
    if previous is not None and len(previous["http_ports"]) != nodes:
        raise InvalidArgumentError(
            f"start_opensearch(nodes={nodes}, data_dir={str(base)!r}): that directory holds a cluster of "
            f"{len(previous['http_ports'])} node(s); start it with that many, or use another directory")

    def jvm(config: OpenSearchNodeConfig) -> list[str]:
        return [java, f"-Xms{heap}", f"-Xmx{heap}", *JVM_OPTIONS, *jvm_options,
                f"-Djava.io.tmpdir={config.home / 'tmp'}",
                f"-Dopensearch.path.home={config.home}", f"-Dopensearch.path.conf={config.home / 'config'}",
                "-cp", classpath([classes, *jars]), _CLASS]  # fmt: skip

    started: list[OpenSearchNode] = []
    try:
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            cluster = previous or {
                "cluster_name": f"trident-{uuid.uuid4().hex[:12]}",
                "http_ports": [free_port() for _ in range(nodes)],
                "transport_ports": [free_port() for _ in range(nodes)],
            }
            configs = _configs(base, cluster)
            for config in configs:
                config.write()
            (base / _CLUSTER_FILE).write_text(json.dumps(cluster), encoding="utf-8")
            started = [OpenSearchNode(config, jvm(config), path, timeout)
                       for config, path in zip(configs, log_paths, strict=True)]
            try:
                for node in started:
                    node.spawn()
                for node in started:
                    node.wait_ready(nodes)
                break
            except ServiceStartError:
                tails = " ".join(tail_lines(node.log_path, 50).lower() for node in started)
                for node in started:
                    node.kill()
                port_taken = any(word in tails for word in _PORT_TAKEN) or "bindexception" in tails
                if not (port_taken and previous is None and attempt < _PORT_ATTEMPTS):
                    raise
                for config in configs:
                    shutil.rmtree(config.home, ignore_errors=True)
    except BaseException:
        for node in started:
            node.kill()
        discard_data()
        raise
    lock = threading.Lock()

    def stop() -> None:
        with lock:
            for node in started:
                if keep_data:
                    node.stop()
                else:  # its data goes with it: no need to wait for a clean close
                    node.kill()
            discard_data()

    handle = OpenSearchHandle("elasticsearch", started[0].address, "local", log_paths[0],
                              pid=started[0].pid, keep_logs=keep_logs, _stopper=stop,
                              _discard_logs=discard_logs, nodes=tuple(started))

    def restart() -> None:
        with lock:
            _restart_all(started, wipe=False)
            handle.pid = started[0].pid

    handle._restarter = restart
    return handle
