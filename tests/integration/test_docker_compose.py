"""docker/docker-compose.yml is valid for Compose and agrees with trident_spark.local.

Compose validates and normalises the file (``config``); no Docker engine is
needed. The app must get its service addresses under the same variable names
the fixtures and :mod:`trident_spark.local.services` read.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from trident_spark.local.maven import KAFKA_VERSION, OPENSEARCH_VERSION
from trident_spark.local.services import ELASTICSEARCH_ENV, ENV_VARS, KAFKA_ENV, REDIS_ENV

pytestmark = pytest.mark.integration

COMPOSE_FILE = Path(__file__).resolve().parents[2] / "docker" / "docker-compose.yml"

# docker-compose 1.x prints YAML; its own interpreter always has PyYAML.
_YAML_TO_JSON = "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"


def _compose_v2() -> list[str] | None:
    docker = shutil.which("docker")
    if docker is None:
        return None
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, check=False)
    return [docker, "compose"] if probe.returncode == 0 else None


def _python_of(script: str) -> str | None:
    with open(script, "rb") as handle:
        first = handle.readline().decode(errors="replace")
    if first.startswith("#!") and "python" in first:
        return first[2:].strip().split()[-1] if "env" in first else first[2:].strip()
    return None


def _to_json(yaml_text: str, compose_script: str) -> dict[str, Any]:
    try:
        import yaml
    except ImportError:
        python = _python_of(compose_script)
        if python is None:
            pytest.skip("cannot parse docker-compose's YAML: PyYAML is not installed")
        done = subprocess.run(
            [python, "-c", _YAML_TO_JSON],
            input=yaml_text,
            capture_output=True,
            text=True,
            check=True,
        )
        loaded: dict[str, Any] = json.loads(done.stdout)
        return loaded
    parsed: dict[str, Any] = yaml.safe_load(yaml_text)
    return parsed


@pytest.fixture(scope="module")
def compose_config() -> dict[str, Any]:
    """The compose file as Compose itself resolves it."""
    compose = shutil.which("docker-compose")
    if compose is not None:
        done = subprocess.run(
            [compose, "-f", str(COMPOSE_FILE), "config"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"docker-compose config failed:\n{done.stderr}"
        return _to_json(done.stdout, compose)
    v2 = _compose_v2()
    if v2 is None:
        pytest.skip("neither docker-compose nor `docker compose` is installed")
    done = subprocess.run(
        [*v2, "-f", str(COMPOSE_FILE), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"docker compose config failed:\n{done.stderr}"
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):  # "KEY=value" form
        env = dict(item.split("=", 1) for item in env)
    return {str(key): str(value) for key, value in env.items()}


def test_all_services_are_defined(compose_config: dict[str, Any]) -> None:
    assert set(compose_config["services"]) == {
        "kafka",
        "elasticsearch",
        "redis",
        "spark-master",
        "spark-worker",
        "app",
    }


def test_app_gets_addresses_under_the_names_the_library_reads(
    compose_config: dict[str, Any],
) -> None:
    app_env = _environment(compose_config["services"]["app"])
    assert set(ENV_VARS.values()) == {KAFKA_ENV, REDIS_ENV, ELASTICSEARCH_ENV}
    assert {name: app_env.get(name) for name in ENV_VARS.values()} == {
        KAFKA_ENV: "kafka:19092",
        REDIS_ENV: "redis://redis:6379/0",
        ELASTICSEARCH_ENV: "http://elasticsearch:9200",
    }


def test_app_submits_wordcount_to_the_compose_master(compose_config: dict[str, Any]) -> None:
    services = compose_config["services"]
    command = services["app"]["command"]
    assert command[:3] == ["spark-submit", "--master", "spark://spark-master:7077"]
    assert command[-3:] == ["examples/wordcount.py", "--load-sample", "5000"]
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]
    assert set(services["app"]["depends_on"]) == {
        "kafka",
        "elasticsearch",
        "redis",
        "spark-master",
        "spark-worker",
    }


def test_kafka_advertises_the_address_the_app_uses(compose_config: dict[str, Any]) -> None:
    kafka_env = _environment(compose_config["services"]["kafka"])
    app_env = _environment(compose_config["services"]["app"])
    assert f"//{app_env[KAFKA_ENV]}" in kafka_env["KAFKA_ADVERTISED_LISTENERS"]
    assert kafka_env["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft, no ZooKeeper


def test_elasticsearch_is_opensearch_single_node_without_security(compose_config: dict[str, Any]) -> None:
    es = compose_config["services"]["elasticsearch"]
    # The versions of the jar sets the local node and the images of `make images` are built from.
    assert es["image"] == f"opensearchproject/opensearch:{OPENSEARCH_VERSION}"
    assert _environment(es)["discovery.type"] == "single-node"
    assert _environment(es)["DISABLE_SECURITY_PLUGIN"] == "true"


def test_kafka_is_apache_kafka_of_the_jar_cache_version(compose_config: dict[str, Any]) -> None:
    assert compose_config["services"]["kafka"]["image"] == f"apache/kafka:{KAFKA_VERSION}"


def test_spark_images_are_the_app_image(compose_config: dict[str, Any]) -> None:
    services = compose_config["services"]
    images = {services[name]["image"] for name in ("spark-master", "spark-worker", "app")}
    assert images == {"trident-spark:local"}
    assert services["app"]["build"]["dockerfile"] == "docker/Dockerfile"
    assert (COMPOSE_FILE.parent / "Dockerfile").exists()


HOST_COMPOSE_FILE = COMPOSE_FILE.parent / "docker-compose.host.yml"


def test_host_file_puts_every_service_on_the_host_network_at_127_0_0_1() -> None:
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.skip("docker-compose is not installed")
    done = subprocess.run([compose, "-f", str(HOST_COMPOSE_FILE), "config"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    services = _to_json(done.stdout, compose)["services"]
    assert set(services) == {"kafka", "redis", "elasticsearch", "spark-master", "spark-worker-1",
                             "spark-worker-2", "app"}
    for name, service in services.items():
        assert service["network_mode"] == "host", name
        assert not service.get("ports"), name  # published ports mean a bridge
        assert "0.0.0.0" not in json.dumps(service), name
    # Each service on its own default port.
    for name, port in [("kafka", 9092), ("redis", 6379), ("elasticsearch", 9200), ("spark-master", 7077),
                       ("spark-master", 8080), ("spark-worker-1", 8081), ("spark-worker-2", 8082),
                       ("app", 4040)]:
        assert re.search(rf"\b{port}\b", json.dumps(services[name]["command"])), (name, port)
    # Kafka and OpenSearch are the images of the jar cache (docker/images.sh), given their second port.
    assert services["kafka"]["image"] == "trident-kafka:local"
    assert services["kafka"]["command"] == ["9092", "9093"]
    assert services["elasticsearch"]["image"] == "trident-elasticsearch:local"
    assert services["elasticsearch"]["command"] == ["9200", "9300"]
