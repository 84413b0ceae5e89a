"""Apache Kafka 4.x on this machine: one KRaft node (broker and controller) from Maven Central's jars.

The jars come from the cache of :mod:`trident_spark.local.maven` (:data:`KAFKA_BROKER`,
fetched once by ``make setup``). The node's log directory is formatted with Kafka's
storage tool, then ``kafka.Kafka`` serves it on two free ports of 127.0.0.1: the
client listener (the handle's address) and the controller's. Its data is on disk, so
:meth:`ServiceHandle.restart` brings it back at the same address with every topic,
committed offset and transaction it had.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from trident_spark.local.java import JavaVersionError, find_java, require_java
from trident_spark.local.launchers import _PORT_ATTEMPTS, _PORT_TAKEN, _Logs
from trident_spark.local.maven import KAFKA_BROKER, classpath, resolve_jars
from trident_spark.local.probes import kafka_answers
from trident_spark.local.process import LocalProcess, ServiceStartError, free_port, wait_until
from trident_spark.local.service_handle import ServiceHandle

__all__ = ["JVM_OPTIONS", "KafkaNodeConfig", "start_apache_kafka"]

JVM_OPTIONS: tuple[str, ...] = (
    "-Xms128m", "-Xmx512m",
    # A test broker is short-lived: with C1 alone it answered in 2.7 s here (medians of 3
    # starts, formatting included), against 4.2 s with the JVM's defaults and 3.3 s with the
    # serial collector added.
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
)
"""The broker's JVM options: a small heap and a quick start."""

_SHUTDOWN_GRACE_S = 30.0
_FORMAT_TIMEOUT_S = 120.0

_LOG4J = """\
log4j.rootLogger=WARN, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.BrokerServer=INFO
log4j.logger.kafka.server.ControllerServer=INFO
"""
# Kafka logs through slf4j (bound to reload4j: the file above); log4j2, which the broker's
# own log-level controller loads, only needs telling to stay quiet.
_LOG4J2 = "status = error\nrootLogger.level = warn\n"


@dataclass(frozen=True)
class KafkaNodeConfig:
    """One combined broker+controller node: its ports and log directory.

    Examples
    --------
    >>> config = KafkaNodeConfig(9092, 9093, Path("/tmp/kafka-data"))
    >>> config.address
    '127.0.0.1:9092'
    >>> "process.roles=broker,controller" in config.properties()
    True
    """

    port: int
    controller_port: int
    data_dir: Path

    @property
    def address(self) -> str:
        """The bootstrap string clients use."""
        return f"127.0.0.1:{self.port}"

    def properties(self) -> str:
        """The node's ``server.properties``: KRaft, one node, everything on 127.0.0.1.

        Topics are created on first use (``auto.create.topics.enable``, Kafka's default, as
        tests and examples that produce to a new topic expect), with one partition unless
        created explicitly; the internal topics have one replica.
        """
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir / "logs"),
            "auto.create.topics.enable": "true",
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        return "".join(f"{key}={value}\n" for key, value in settings.items())


def _cluster_id() -> str:
    """A new KRaft cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's form)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _java() -> str:
    require_java(17)
    java = find_java()
    if java is None:  # require_java has raised already
        raise JavaVersionError("kafka: no java found")
    return str(java)


def _jvm(java: str, jars: Sequence[Path], config_dir: Path) -> list[str]:
    return [java, *JVM_OPTIONS,
            f"-Dlog4j.configuration=file:{config_dir / 'log4j.properties'}",
            f"-Dlog4j2.configurationFile={config_dir / 'log4j2.properties'}",
            "-cp", classpath(jars)]  # fmt: skip


def _format(jvm: list[str], config: Path, log: Path, timeout: float) -> None:
    """Format the node's log directory (once: a formatted directory is left as it is)."""
    command = [*jvm, "kafka.tools.StorageTool", "format", f"--cluster-id={_cluster_id()}", "-c", str(config),
               "--standalone", "--ignore-formatted"]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise ServiceStartError(f"kafka: formatting its log directory took over {timeout:g} s") from None
    log.write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
        raise ServiceStartError(
            f"kafka: the storage tool could not format the log directory in {config.parent} "
            f"(exit {done.returncode}); log: {log}\n{tail}")


def _existing_node(data: Path) -> KafkaNodeConfig | None:
    """The node formatted in ``data`` before (its ports from its ``server.properties``), if any."""
    properties = data / "server.properties"
    if not (data / "logs" / "meta.properties").is_file() or not properties.is_file():
        return None
    settings = dict(line.split("=", 1) for line in properties.read_text(encoding="utf-8").splitlines()
                    if "=" in line)
    port = int(settings["advertised.listeners"].rpartition(":")[2])
    controller = int(settings["controller.quorum.bootstrap.servers"].rpartition(":")[2])
    return KafkaNodeConfig(port, controller, data)


class _Node:
    """The broker process of one node, started again on the same ports by :meth:`restart`."""

    def __init__(self, argv: list[str], logs: _Logs, address: str, timeout: float) -> None:
        self.argv = argv
        self.logs = logs
        self.address = address
        self.timeout = timeout
        self.process: LocalProcess | None = None

    def start(self, *, append: bool) -> None:
        process = LocalProcess("kafka", self.argv, log_path=self.logs.path, append=append)
        self.process = process
        wait_until(partial(kafka_answers, self.address, timeout=2.0), timeout=self.timeout,
                   process=process, what=f"kafka (Apache Kafka) at {self.address}")

    def stop(self, *, clean: bool) -> None:
        """``clean``: SIGTERM (Kafka's controlled shutdown, its logs flushed) before SIGKILL."""
        process, self.process = self.process, None
        if process is None:
            return
        process.stop(grace=_SHUTDOWN_GRACE_S if clean else 0.0)

    def restart(self) -> None:
        self.stop(clean=True)
        try:
            self.start(append=True)
        except ServiceStartError as error:
            raise ServiceStartError(
                f"kafka at {self.address} did not come back after a restart: {error}") from None


def start_apache_kafka(
    *,
    timeout: float = 60.0,
    log_dir: Path | None = None,
    keep_logs: bool = False,
    data_dir: Path | None = None,
) -> ServiceHandle:
    """Start an Apache Kafka 4.x node (KRaft, broker and controller) on a free port of 127.0.0.1.

    Parameters
    ----------
    timeout
        Seconds for the node to answer a metadata request (each start and restart).
    log_dir
        Directory for the node's log (``kafka.log``); default: a new temporary directory.
    keep_logs
        Keep the log after a clean :meth:`ServiceHandle.stop`.
    data_dir
        Where the node keeps its configuration and topic logs; kept after ``stop()``, and a
        node started again on it comes back on its old ports with its data. Default: a
        temporary directory that ``stop()`` removes.

    Returns
    -------
    ServiceHandle
        ``address`` is the bootstrap string; ``restart()`` stops the node (a controlled
        shutdown) and starts it again on the same ports with the same data.

    Raises
    ------
    ServiceNotInstalledError
        The broker's jars are neither cached nor fetchable (Maven missing): run ``make setup``.
    ServiceStartError
        The node did not answer in time; the message has the log's last lines.

    Examples
    --------
    >>> with start_apache_kafka() as kafka:  # doctest: +SKIP
    ...     kafka.address
    '127.0.0.1:41235'
    """
    jars = resolve_jars(KAFKA_BROKER)
    java = _java()
    keep_data = data_dir is not None
    data = (Path(data_dir) if data_dir is not None
            else Path(tempfile.mkdtemp(prefix="trident-spark-kafka-data-")))
    data.mkdir(parents=True, exist_ok=True)
    (data / "log4j.properties").write_text(_LOG4J, encoding="utf-8")
    (data / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")
    jvm = _jvm(java, jars, data)
    logs = _Logs("kafka", log_dir)

    def discard_data() -> None:
        if not keep_data:
            shutil.rmtree(data, ignore_errors=True)

    previous = _existing_node(data)
    node: _Node | None = None
    try:
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            config = previous or KafkaNodeConfig(free_port(), free_port(), data)
            properties = data / "server.properties"
            if previous is None:
                # A new node each attempt: the controller's address is in the formatted log.
                shutil.rmtree(data / "logs", ignore_errors=True)
                properties.write_text(config.properties(), encoding="utf-8")
                _format(jvm, properties, logs.dir / "kafka-format.log", timeout)
            node = _Node([*jvm, "kafka.Kafka", str(properties)], logs, config.address, timeout)
            try:
                node.start(append=False)
                break
            except ServiceStartError:
                tail = node.process.tail(50).lower() if node.process is not None else ""
                node.stop(clean=False)
                port_taken = any(word in tail for word in _PORT_TAKEN)
                if not (port_taken and previous is None and attempt < _PORT_ATTEMPTS):
                    raise
    except BaseException:
        discard_data()
        raise
    assert node is not None and node.process is not None
    started = node

    def stop() -> None:
        # Its data goes with it unless kept: no need to wait for a controlled shutdown then.
        started.stop(clean=keep_data)
        discard_data()

    handle = ServiceHandle("kafka", started.address, "local", logs.path, pid=node.process.pid,
                           keep_logs=keep_logs, _stopper=stop, _discard_logs=logs.discard)

    def restart() -> None:
        started.restart()
        assert started.process is not None
        handle.pid = started.process.pid

    handle._restarter = restart
    return handle

