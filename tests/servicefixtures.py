"""pytest plugin: Kafka, Redis, Elasticsearch and PostgreSQL for the tests, one of each per session.

Each service is started on first use and stopped at the end of the session.
Where it comes from (an address in the environment, a testcontainers
container, or a local binary) is decided by
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

from collections.abc import Iterator

import pytest

from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.local.service_handle import ServiceHandle
from trident_spark.local.services import (
    SERVICE_NAMES,
    describe_postgres_provider,
    describe_provider,
    start_postgres,
    start_service,
)
from trident_spark.state.redaction import redact_url

_STARTED = pytest.StashKey[list[ServiceHandle]]()

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
    if name == "postgres":
        try:
            handle = start_postgres(timeout=STARTUP_TIMEOUT, keep_logs=keep_logs)
        except ServiceNotInstalledError as missing:
            pytest.skip(str(missing))
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
    """The session's Kafka broker (Tansu locally); ``.address`` is a bootstrap string."""
    yield from _provide(request, "kafka")


@pytest.fixture(scope="session")
def redis_service(request: pytest.FixtureRequest) -> Iterator[ServiceHandle]:
    """The session's Redis server; ``.address`` is "redis://HOST:PORT/0"."""
    yield from _provide(request, "redis")


@pytest.fixture(scope="session")
def elasticsearch_service(request: pytest.FixtureRequest) -> Iterator[ServiceHandle]:
    """The session's Elasticsearch-compatible server (osmem-server locally)."""
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
