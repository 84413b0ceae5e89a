"""Fixtures of the container tests: docker/docker-compose.host.yml brought up on free ports.

These tests need a Docker engine in ``DOCKER_HOST``, docker-compose and the local images; ``make
test-containers`` provides all three (docker/dockerd.sh, docker/images.sh). Otherwise every test here
skips, saying which is missing. Each fixture's cluster has its own compose project, ports and shared
directory, and is taken down with its volumes at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trident_spark.local.containers import docker_available, host_ports
from trident_spark.local.probes import kafka_answers, redis_answers, tcp_answers

ROOT = Path(__file__).resolve().parents[3]
COMPOSE_FILE = ROOT / "docker" / "docker-compose.host.yml"
# Debian's client (docker.io), whose API matches the engine docker/dockerd.sh starts.
DOCKER = "/usr/bin/docker" if Path("/usr/bin/docker").exists() else (shutil.which("docker") or "docker")
IMAGES = ("trident-spark:local", "trident-kafka:local", "trident-redis:local", "trident-elasticsearch:local")
SPARK_SERVICES = ("spark-master", "spark-worker-1", "spark-worker-2")


def explain(output: str, limit: int = 6000) -> str:
    """The part of a failed app's output that says why: from its last Python traceback (Spark's
    INFO lines of the shutdown come after it), else its end."""
    start = output.rfind("Traceback (most recent call last)")
    if start < 0:
        return output[-limit:]
    return output[start:start + limit]


def _skip_reason() -> str | None:
    unavailable = os.environ.get("TRIDENT_DOCKER_UNAVAILABLE")
    if unavailable:
        return unavailable  # docker/dockerd.sh run says "docker unavailable: <why>"
    if not os.environ.get("DOCKER_HOST") or not docker_available():
        return ("no Docker engine answers at DOCKER_HOST="
                f"{os.environ.get('DOCKER_HOST', '(unset)')}; `make test-containers` starts one")
    if shutil.which("docker-compose") is None:
        return "docker-compose is not installed (apt-get install docker-compose; make test-containers does)"
    missing = [image for image in IMAGES if subprocess.run(
        [DOCKER, "image", "inspect", image], capture_output=True, check=False).returncode != 0]
    if missing:
        return f"images missing: {', '.join(missing)} (make images)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    mine = [item for item in items if here in Path(str(item.fspath)).parents]
    if not mine:
        return
    reason = _skip_reason()
    if reason is not None:
        for item in mine:
            item.add_marker(pytest.mark.skip(reason=reason))


class ComposeCluster:
    """One compose project of docker-compose.host.yml: its ports, environment and shared directory."""

    def __init__(self, shared: Path, env: dict[str, str] | None = None) -> None:
        self.project = f"tridentct{os.getpid()}x{int(time.time() * 1000) % 100000}"
        self.shared = shared
        # Below the ephemeral range: the JVMs bind them seconds after this, and meanwhile a port of
        # that range can become the local end of any connection on the machine (Kafka then exits
        # with "Address already in use", and Spark moves its master to the next port).
        names = ("KAFKA_PORT", "KAFKA_CONTROLLER_PORT", "REDIS_PORT", "ELASTICSEARCH_PORT",
                 "ELASTICSEARCH_TRANSPORT_PORT", "SPARK_MASTER_PORT", "SPARK_MASTER_WEBUI_PORT",
                 "SPARK_WORKER_1_WEBUI_PORT", "SPARK_WORKER_2_WEBUI_PORT", "SPARK_UI_PORT")
        self.ports = dict(zip(names, host_ports(len(names)), strict=True))
        self.env = {**os.environ, **{k: str(v) for k, v in self.ports.items()},
                    "TRIDENT_SHARED_DIR": str(shared), "COMPOSE_PROJECT_NAME": self.project, **(env or {})}

    @property
    def kafka(self) -> str:
        return f"127.0.0.1:{self.ports['KAFKA_PORT']}"

    @property
    def redis(self) -> str:
        return f"redis://127.0.0.1:{self.ports['REDIS_PORT']}/0"

    @property
    def master(self) -> str:
        return f"spark://127.0.0.1:{self.ports['SPARK_MASTER_PORT']}"

    def compose(self, *args: str, timeout: float = 300, check: bool = True,
                extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``docker-compose -f docker-compose.host.yml ARGS`` for this project."""
        done = subprocess.run(["docker-compose", "-f", str(COMPOSE_FILE), *args],
                              env={**self.env, **(extra_env or {})}, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"docker-compose {' '.join(args)} exited {done.returncode}:\n"
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    def docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([DOCKER, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def container(self, service: str) -> str:
        """The container id of ``service``."""
        return self.compose("ps", "-q", service).stdout.strip()

    def json(self, port_name: str) -> dict[str, Any]:
        """The JSON status page of the Spark master or worker whose web UI is on ``port_name``."""
        url = f"http://127.0.0.1:{self.ports[port_name]}/json/"
        with urllib.request.urlopen(url, timeout=5) as response:
            loaded: dict[str, Any] = json.load(response)
        return loaded

    def state(self, container: str) -> str:
        """``running``, ``exited (status N)`` and so on: the state of a container (by id)."""
        if not container:
            return "no container"
        done = self.docker("inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", container)
        status, _, code = done.stdout.strip().partition(" ")
        return f"{status} (status {code})" if status in ("exited", "dead") else status or done.stderr.strip()

    def wait(self, what: str, ready: Any, timeout: float = 120, service: str | None = None) -> None:
        """Wait until ``ready()``; fail with ``service``'s own logs (or all of them) when its container
        exits or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        container = self.container(service) if service else ""
        while not ready():
            state = self.state(container) if service else "running"
            if state != "running" or time.monotonic() > deadline:
                why = f"its container is {state}" if state != "running" else f"not ready in {timeout:.0f} s"
                logs = self.compose("logs", "--no-color", "--tail", "80", *([service] if service else []),
                                    check=False).stdout
                raise AssertionError(f"{what}: {why}; logs:\n{logs[-8000:]}")
            time.sleep(0.5)

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.json("SPARK_MASTER_WEBUI_PORT")["workers"] if w["state"] == "ALIVE")
        except OSError:
            return 0

    def up(self) -> None:
        """Start the broker, Redis, the master and both workers, and wait until all answer."""
        self.compose("up", "-d", "kafka", "redis", *SPARK_SERVICES, timeout=300)
        self.wait("kafka", lambda: kafka_answers(self.kafka), service="kafka")
        self.wait("redis", lambda: redis_answers(self.redis), service="redis")
        self.wait("spark master", lambda: tcp_answers("127.0.0.1", self.ports["SPARK_MASTER_PORT"]))
        self.wait("two spark workers", lambda: self.alive_workers() == 2)

    def start_app(self, name: str, extra_env: dict[str, str] | None = None) -> str:
        """Start the app (the word count's driver) detached, as container ``<project>-<name>``."""
        container = f"{self.project}-{name}"
        self.compose("run", "-d", "--no-deps", "--name", container, "app", extra_env=extra_env)
        return container

    def wait_app(self, container: str, timeout: float = 480) -> tuple[int, str]:
        """Wait for the app container to exit; its exit status and the end of its output."""
        waited = self.docker("wait", container, timeout=timeout)
        logs = self.docker("logs", container)
        self.docker("rm", "-f", container)
        status = int(waited.stdout.strip() or "-1")
        return status, explain(f"{logs.stdout}\n{logs.stderr}")

    def committed_batches(self) -> int:
        """How many batches the checkpoint on the shared volume has committed."""
        commits = self.shared / "checkpoint" / "wordcount" / "commits"  # the stream's own query
        return sum(1 for f in commits.iterdir() if f.name.isdigit()) if commits.is_dir() else 0

    def logs(self, *services: str) -> str:
        return self.compose("logs", "--no-color", "--tail", "60", *services, check=False).stdout

    def down(self) -> None:
        self.compose("down", "-v", "--remove-orphans", "-t", "5", timeout=180, check=False)


@pytest.fixture
def compose_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ComposeCluster]:
    """A broker, Redis, a Spark master and two workers, each in its own container (host network).

    Indirect parametrisation passes extra compose variables, e.g. ``{"REDIS_APPENDONLY": "yes"}``.
    """
    shared = tmp_path / "shared"
    shared.mkdir()
    for attempt in (1, 2):
        cluster = ComposeCluster(shared, getattr(request, "param", None))
        try:
            cluster.up()
            break
        except BaseException as error:
            cluster.down()
            # Another process named one of the ports first: once more, on new ones.
            if attempt == 2 or "address already in use" not in str(error).lower():
                raise
    try:
        yield cluster
    finally:
        cluster.down()
