"""pytest plugin: Kafka, Redis, Elasticsearch and PostgreSQL for the tests, one of each per session.

Each service is started on first use and stopped at the end of the session; a
local Kafka (Apache Kafka, a JVM: 3-6 s) and a local Elasticsearch (an OpenSearch
node, a JVM: 5-7 s) are started in the background as soon as the collected tests
show they will be needed, while the first Spark session starts. With pytest-xdist,
each worker has its own. Where each comes from (an address in the environment, a
testcontainers container, or a local process) is decided by
:func:`trident_spark.local.services.choose_provider`, shown in the session
header; the services actually started are listed in the terminal summary.
PostgreSQL comes from ``POSTGRES_URL`` or a local throwaway server; its tests
skip, saying why, only when neither can be had.

Logs of local services are removed after a passing session and kept after a
failing one (or always, with ``--keep-service-logs``); the summary prints
where they are.

Load it from a conftest with ``pytest_plugins = ["tests.servicefixtures"]``,
or on the command line with ``-p tests.servicefixtures``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.local.service_handle import ServiceHandle
from trident_spark.local.services import (
    SERVICE_NAMES,
    choose_provider,
    describe_postgres_provider,
    describe_provider,
    start_postgres,
    start_service,
)
from trident_spark.state.redaction import redact_url

_STARTED = pytest.StashKey[list[ServiceHandle]]()
_EARLY = pytest.StashKey[dict[str, "_EarlyStart"]]()

#: The JVM services started in the background at collection, by the fixture that provides each.
_EARLY_SERVICES = {"kafka": "kafka_service", "elasticsearch": "elasticsearch_service"}

#: Seconds a service may take to answer before the fixture errors.
STARTUP_TIMEOUT = 60.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--keep-service-logs",
        action="store_true",
        default=False,
        help="keep the logs of local Kafka/Redis/Elasticsearch/PostgreSQL processes after the session",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STARTED] = []


class _EarlyStart:
    """A local service started on a thread of its own, which stays until the session ends.

    The thread lives as long as the service: a local process dies with the thread that
    started it (PR_SET_PDEATHSIG), so it cannot be a thread that ends after the start.
    """

    def __init__(self, name: str, keep_logs: bool) -> None:
        self.name = name
        self.keep_logs = keep_logs
        self.handle: ServiceHandle | None = None
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"early-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.handle = start_service(self.name, timeout=STARTUP_TIMEOUT, keep_logs=self.keep_logs)
        except BaseException as error:  # handed to the fixture, which raises it in the test
            self.error = error
        finally:
            self._ready.set()
        self._release.wait()
        if self.handle is not None:
            self.handle.stop()

    def take(self) -> ServiceHandle:
        """The started service (waits for it), or the error its start raised."""
        self._ready.wait()
        if self.error is not None:
            raise self.error
        assert self.handle is not None
        return self.handle

    def stop(self) -> None:
        """Stop the service on its thread and wait for that."""
        self._release.set()
        self._thread.join(timeout=60.0)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start a local Kafka and a local Elasticsearch now if a collected test will use them (not in
    ``--collect-only``)."""
    config = session.config
    if config.option.collectonly or _EARLY in config.stash:
        return
    early: dict[str, _EarlyStart] = {}
    config.stash[_EARLY] = early
    for name, fixture in _EARLY_SERVICES.items():
        wanted = any(fixture in getattr(item, "fixturenames", ()) for item in session.items)
        if wanted and choose_provider(name) == "local":
            early[name] = _EarlyStart(name, bool(config.getoption("--keep-service-logs")))


def pytest_unconfigure(config: pytest.Config) -> None:
    for early in config.stash.get(_EARLY, {}).values():
        early.stop()


def pytest_report_header(config: pytest.Config) -> str:
    chosen = ", ".join(f"{name}={describe_provider(name)}" for name in SERVICE_NAMES)
    return f"services: {chosen}, postgres={describe_postgres_provider()}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    started = terminalreporter.config.stash.get(_STARTED, [])
    if not started:
        return
    terminalreporter.write_sep("-", "services used")
    for handle in started:
        line = f"{handle.name}: {handle.provider} at {redact_url(handle.address)}"
        if handle.log_path is not None and handle.keep_logs:
            line += f" (log: {handle.log_path})"
        terminalreporter.write_line(line)


def _provide(request: pytest.FixtureRequest, name: str) -> Iterator[ServiceHandle]:
    keep_logs = bool(request.config.getoption("--keep-service-logs"))
    early = request.config.stash.get(_EARLY, {}).get(name)
    if name == "postgres":
        try:
            handle = start_postgres(timeout=STARTUP_TIMEOUT, keep_logs=keep_logs)
        except ServiceNotInstalledError as missing:
            pytest.skip(str(missing))
    elif early is not None:
        handle = early.take()
    else:
        handle = start_service(name, timeout=STARTUP_TIMEOUT, keep_logs=keep_logs)
    request.config.stash[_STARTED].append(handle)
    try:
        yield handle
    finally:
        if request.session.testsfailed:
            handle.keep_logs = True  # the log may explain the failure
        handle.stop()


@pytest.fixture(scope="session")
def kafka_service(request: pytest.FixtureRequest) -> Iterator[ServiceHandle]:
    """The session's Kafka broker (Apache Kafka locally); ``.address`` is a bootstrap string."""
    yield from _provide(request, "kafka")


@pytest.fixture(scope="session")
def redis_service(request: pytest.FixtureRequest) -> Iterator[ServiceHandle]:
    """The session's Redis server; ``.address`` is "redis://HOST:PORT/0"."""
    yield from _provide(request, "redis")


@pytest.fixture(scope="session")
def elasticsearch_service(request: pytest.FixtureRequest) -> Iterator[ServiceHandle]:
    """The session's Elasticsearch-compatible server: locally a real OpenSearch node (one per session
    or xdist worker, data on disk; ``ServiceHandle.restart()`` keeps it)."""
    yield from _provide(request, "elasticsearch")


@pytest.fixture(scope="session")
def postgres_service(request: pytest.FixtureRequest) -> Iterator[ServiceHandle]:
    """The session's PostgreSQL (``POSTGRES_URL``, else a throwaway local server)."""
    yield from _provide(request, "postgres")


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_service: ServiceHandle) -> str:
    """Bootstrap string of the session's Kafka broker, e.g. "127.0.0.1:41235"."""
    return kafka_service.address


@pytest.fixture(scope="session")
def redis_url(redis_service: ServiceHandle) -> str:
    """URL of the session's Redis server, e.g. "redis://127.0.0.1:40121/0"."""
    return redis_service.address


@pytest.fixture(scope="session")
def elasticsearch_url(elasticsearch_service: ServiceHandle) -> str:
    """URL of the session's Elasticsearch-compatible server, e.g. "http://127.0.0.1:38211"."""
    return elasticsearch_service.address


@pytest.fixture(scope="session")
def postgres_dsn(postgres_service: ServiceHandle) -> str:
    """URL of the session's PostgreSQL database, e.g. "postgresql://postgres@127.0.0.1:40211/postgres"."""
    return postgres_service.address
