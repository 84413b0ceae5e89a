"""Services in Docker containers via testcontainers, for machines with a Docker engine.

Nothing here imports ``testcontainers`` or talks to Docker until asked:
:func:`docker_available` is a short ping, and the container classes are
imported inside :func:`start_container`.

The images are the official ones unless ``TRIDENT_KAFKA_IMAGE``, ``TRIDENT_REDIS_IMAGE`` or
``TRIDENT_ELASTICSEARCH_IMAGE`` name others. The local images of ``make images`` (``trident-*``:
Tansu, Debian's redis-server, osmem-server) run on the host network, on 127.0.0.1 and a free port:
they are for engines without a bridge network (docker/dockerd.sh), where published ports do not exist.
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
from trident_spark.state.extras import require_extra

__all__ = [
    "ELASTICSEARCH_IMAGE",
    "IMAGE_ENV",
    "KAFKA_IMAGE",
    "REDIS_IMAGE",
    "container_image",
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

IMAGE_ENV: dict[ServiceName, str] = {
    "kafka": "TRIDENT_KAFKA_IMAGE",
    "redis": "TRIDENT_REDIS_IMAGE",
    "elasticsearch": "TRIDENT_ELASTICSEARCH_IMAGE",
}
"""The variables that name another image for each service."""

_DEFAULT_IMAGES: dict[ServiceName, str] = {
    "kafka": KAFKA_IMAGE,
    "redis": REDIS_IMAGE,
    "elasticsearch": ELASTICSEARCH_IMAGE,
}

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


def container_image(name: ServiceName) -> str:
    """The image :func:`start_container` runs for service ``name``.

    Examples
    --------
    >>> container_image("redis") == (os.environ.get("TRIDENT_REDIS_IMAGE") or REDIS_IMAGE)
    True
    """
    return os.environ.get(IMAGE_ENV[name], "").strip() or _DEFAULT_IMAGES[name]


def _is_local_image(image: str) -> bool:
    # The images docker/images.sh builds; they take their address on the command line.
    return image.split("/")[-1].startswith("trident-")


def _host_network_command(name: ServiceName, port: int) -> list[str]:
    if name == "kafka":
        url = f"tcp://127.0.0.1:{port}"
        return ["broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]  # fmt: skip
    if name == "redis":
        return ["redis-server", "--bind", "127.0.0.1", "--port", str(port),
                "--save", "", "--appendonly", "no"]  # fmt: skip
    return ["--addr", f"127.0.0.1:{port}"]


def _testcontainers(module: str, name: str) -> Any:
    """``testcontainers.<module>.<name>``, or the error naming the extra that installs testcontainers."""
    return getattr(require_extra(f"testcontainers.{module}", "a service in a Docker container"), name)


def _start_on_host_network(name: ServiceName, image: str) -> ServiceHandle:
    DockerContainer = _testcontainers("core.container", "DockerContainer")  # noqa: N806

    from trident_spark.local.process import free_port

    port = free_port()
    container = DockerContainer(image).with_command(_host_network_command(name, port))
    container.with_kwargs(network_mode="host")
    container.start()
    address = {
        "kafka": f"127.0.0.1:{port}",
        "redis": f"redis://127.0.0.1:{port}/0",
        "elasticsearch": f"http://127.0.0.1:{port}",
    }[name]
    return ServiceHandle(name, address, "testcontainers", None, _stopper=container.stop)


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

    ``stop()`` on the handle stops and removes the container. A local image (``trident-*``, see the
    module doc) runs on the host network, on a free port of 127.0.0.1; set
    ``TESTCONTAINERS_RYUK_DISABLED=true`` where testcontainers' reaper image cannot be pulled.

    Examples
    --------
    >>> with start_container("redis") as redis:  # doctest: +SKIP
    ...     redis.provider
    'testcontainers'
    """
    image = container_image(name)
    if _is_local_image(image):
        return _start_on_host_network(name, image)
    container: Any
    if name == "kafka":
        KafkaContainer = _testcontainers("kafka", "KafkaContainer")  # noqa: N806

        container = KafkaContainer(image)
        container.start()
        address = str(container.get_bootstrap_server())
    elif name == "redis":
        RedisContainer = _testcontainers("redis", "RedisContainer")  # noqa: N806

        container = RedisContainer(image)
        container.start()
        host, port = container.get_container_host_ip(), container.get_exposed_port(6379)
        address = f"redis://{host}:{port}/0"
    else:
        ElasticSearchContainer = _testcontainers("elasticsearch", "ElasticSearchContainer")  # noqa: N806

        container = ElasticSearchContainer(image, mem_limit="2G")
        container.with_env("ES_JAVA_OPTS", "-Xms1g -Xmx1g")
        container.start()
        host, port = container.get_container_host_ip(), container.get_exposed_port(9200)
        address = f"http://{host}:{port}"
    return ServiceHandle(name, address, "testcontainers", None, _stopper=container.stop)
