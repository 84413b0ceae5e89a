"""Services in Docker containers via testcontainers, for machines with a Docker engine.

Nothing here imports ``testcontainers`` or talks to Docker until asked:
:func:`docker_available` is a short ping, and the container classes are
imported inside :func:`start_container`.

The images are the official ones unless ``TRIDENT_KAFKA_IMAGE``, ``TRIDENT_REDIS_IMAGE`` or
``TRIDENT_ELASTICSEARCH_IMAGE`` name others. The local images of ``make images`` (``trident-*``:
Apache Kafka and OpenSearch from the jar cache, Debian's redis-server) run on the host network, on
127.0.0.1 and free ports below the ephemeral range (:func:`host_ports`): they are for engines without a
bridge network (docker/dockerd.sh), where published ports do not exist. Their handles are returned
once the service answers (Kafka's metadata, OpenSearch's cluster health, Redis' PING).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import random
import shutil
import socket
import subprocess
import time
from pathlib import Path
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
    "host_ports",
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


_READY_TIMEOUT_S = 180.0
"""Seconds a local image's service has to answer (a JVM's first start in a container, on 2 busy cores)."""


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_HOST_PORT = 20000


def _ephemeral_low() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default range is 32768-60999


def host_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports of 127.0.0.1, free a moment ago, below the kernel's ephemeral range.

    A container on the host network binds its ports seconds after they are chosen (a JVM starts
    first). A port of the ephemeral range (what binding port 0 gives) may meanwhile become the local
    end of any outgoing connection on the machine, or the port 0 of another process, and the service
    then exits with "Address already in use". Below that range only a process that names the port
    itself can take it. Ephemeral ports where that range starts at 20000 or lower.

    Examples
    --------
    >>> ports = host_ports(3)
    >>> len(set(ports)) == 3 and all(1024 <= port < 65536 for port in ports)
    True
    """
    from trident_spark.local.process import free_port

    low = _ephemeral_low()
    if low <= _LOWEST_HOST_PORT:
        chosen: set[int] = set()
        while len(chosen) < count:
            chosen.add(free_port())
        return list(chosen)
    ports: list[int] = []
    candidates = random.sample(range(_LOWEST_HOST_PORT, low), min(low - _LOWEST_HOST_PORT, 50 * count))
    for port in candidates:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        ports.append(port)
        if len(ports) == count:
            return ports
    raise OSError(f"no {count} free ports of 127.0.0.1 in {_LOWEST_HOST_PORT}-{low - 1}: "
                  "stop some services, or widen the range below /proc/sys/net/ipv4/ip_local_port_range")


def _host_network_command(name: ServiceName, port: int, second_port: int) -> list[str]:
    """The container's command: Kafka's client and controller ports, OpenSearch's HTTP and transport
    ports (the images' entrypoints take them), or redis-server's command line."""
    if name == "redis":
        return ["redis-server", "--bind", "127.0.0.1", "--port", str(port),
                "--save", "", "--appendonly", "no"]  # fmt: skip
    return [str(port), str(second_port)]


def _answers(name: ServiceName, address: str) -> bool:
    from trident_spark.local.probes import kafka_answers, redis_answers

    if name == "kafka":
        return kafka_answers(address, timeout=2.0)
    if name == "redis":
        return redis_answers(address, timeout=1.0)
    from trident_spark.local.opensearch import cluster_ready

    return cluster_ready(address, 1, timeout=3.0)


def _container_tail(container: Any, lines: int = 30) -> str:
    try:
        stdout, stderr = container.get_logs()
    except Exception as error:  # the container may be gone: say so instead
        return f"(no logs: {error})"
    text = (stdout or b"").decode(errors="replace") + (stderr or b"").decode(errors="replace")
    return "\n".join(text.strip().splitlines()[-lines:])


def _container_exited(container: Any) -> bool:
    try:
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        return str(wrapped.status) in ("exited", "dead")
    except Exception:  # a removed container has exited too
        return True


def _testcontainers(module: str, name: str) -> Any:
    """``testcontainers.<module>.<name>``, or the error naming the extra that installs testcontainers."""
    return getattr(require_extra(f"testcontainers.{module}", "a service in a Docker container"), name)


def _wait_answering(name: ServiceName, container: Any, address: str) -> str | None:
    """None once the service in ``container`` answers at ``address``; else why not, with its last
    log lines (the container is stopped then)."""
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while not _answers(name, address):
        exited = _container_exited(container)
        if exited or time.monotonic() > deadline:
            why = "exited" if exited else f"did not answer within {_READY_TIMEOUT_S:g} s"
            tail = _container_tail(container)
            container.stop()
            return f"{why} at {address}; its last log lines:\n{tail}"
        time.sleep(0.5)
    return None


def _start_on_host_network(name: ServiceName, image: str) -> ServiceHandle:
    DockerContainer = _testcontainers("core.container", "DockerContainer")  # noqa: N806

    from trident_spark.local.launchers import _PORT_ATTEMPTS, _PORT_TAKEN
    from trident_spark.local.process import ServiceStartError

    for attempt in range(1, _PORT_ATTEMPTS + 1):
        port, second_port = host_ports(2)
        container = DockerContainer(image).with_command(_host_network_command(name, port, second_port))
        container.with_kwargs(network_mode="host")
        container.start()
        address = {
            "kafka": f"127.0.0.1:{port}",
            "redis": f"redis://127.0.0.1:{port}/0",
            "elasticsearch": f"http://127.0.0.1:{port}",
        }[name]
        failure = _wait_answering(name, container, address)
        if failure is None:
            return ServiceHandle(name, address, "testcontainers", None, _stopper=container.stop)
        port_taken = failure.startswith("exited") and any(word in failure.lower() for word in _PORT_TAKEN)
        if not (port_taken and attempt < _PORT_ATTEMPTS):  # else another process took a port: new ones
            raise ServiceStartError(
                f"{name}: the container of image {image} {failure}\n"
                f"Rebuild the image with `make images`, or name another with {IMAGE_ENV[name]}.")
    raise AssertionError("unreachable: the last attempt returns or raises")


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
    module doc) runs on the host network, on a port of :func:`host_ports`; set
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
