"""Services in Docker containers via testcontainers, for machines with a Docker engine.

Nothing here imports ``testcontainers`` or talks to Docker until asked:
:func:`docker_available` is a short ping, and the container classes are
imported inside :func:`start_container`.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import socket
import subprocess
from typing import Any

from trident_spark.local.service_handle import ServiceHandle, ServiceName

__all__ = [
    "ELASTICSEARCH_IMAGE",
    "KAFKA_IMAGE",
    "REDIS_IMAGE",
    "docker_available",
    "start_container",
    "testcontainers_installed",
]

KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"
"""Image for the Kafka container (testcontainers' KafkaContainer is built for it)."""

REDIS_IMAGE = "redis:7"
"""Image for the Redis container."""

ELASTICSEARCH_IMAGE = "elasticsearch:8.15.3"
"""Image for the Elasticsearch container (security off, single node)."""

_MODULES: dict[ServiceName, str] = {
    "kafka": "testcontainers.kafka",
    "redis": "testcontainers.redis",
    "elasticsearch": "testcontainers.elasticsearch",
}


def testcontainers_installed(name: ServiceName) -> bool:
    """Whether the testcontainers module for service ``name`` can be imported.

    Examples
    --------
    >>> isinstance(testcontainers_installed("redis"), bool)
    True
    """
    try:
        return importlib.util.find_spec(_MODULES[name]) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


def _ping_unix_socket(path: str, timeout: float) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            status_line = sock.recv(64).split(b"\r\n", 1)[0]
    except OSError:
        return False
    return b" 200 " in status_line + b" "


@functools.cache
def docker_available(timeout: float = 3.0) -> bool:
    """Whether a Docker engine answers (cached for the life of the process).

    Pings the engine's unix socket (``DOCKER_HOST`` or ``/var/run/docker.sock``);
    for a TCP ``DOCKER_HOST`` asks ``docker info`` with a short timeout.

    Examples
    --------
    >>> isinstance(docker_available(), bool)
    True
    """
    host = os.environ.get("DOCKER_HOST", "")
    if not host or host.startswith("unix://"):
        return _ping_unix_socket(host.removeprefix("unix://") or "/var/run/docker.sock", timeout)
    docker = shutil.which("docker")
    if docker is None:
        return False
    try:
        result = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


def start_container(name: ServiceName) -> ServiceHandle:
    """Start service ``name`` in a container and return its handle.

    ``stop()`` on the handle stops and removes the container.

    Examples
    --------
    >>> with start_container("redis") as redis:  # doctest: +SKIP
    ...     redis.provider
    'testcontainers'
    """
    container: Any
    if name == "kafka":
        from testcontainers.kafka import KafkaContainer

        container = KafkaContainer(KAFKA_IMAGE)
        container.start()
        address = str(container.get_bootstrap_server())
    elif name == "redis":
        from testcontainers.redis import RedisContainer

        container = RedisContainer(REDIS_IMAGE)
        container.start()
        host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
        address = f"redis://{host}:{port}/0"
    else:
        from testcontainers.elasticsearch import ElasticSearchContainer

        container = ElasticSearchContainer(ELASTICSEARCH_IMAGE, mem_limit="2G")
        container.with_env("ES_JAVA_OPTS", "-Xms1g -Xmx1g")
        container.start()
        host, port = container.get_container_host_ip(), container.get_exposed_port(9200)
        address = f"http://{host}:{port}"
    return ServiceHandle(name, address, "testcontainers", None, _stopper=container.stop)
