"""The local Kafka and OpenSearch images: real Apache Kafka and OpenSearch from the jar cache.

Each is started by the fixtures' testcontainers provider (:func:`start_container`, host network,
free ports of 127.0.0.1), which returns once the service answers; the images hold exactly the jar
sets the local services start from; a restarted Kafka container keeps its topics and records.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from typing import Any

import pytest

from tests.integration.containers.conftest import DOCKER
from trident_spark.local.containers import host_ports, start_container
from trident_spark.local.kafka import consume, create_topic, produce
from trident_spark.local.maven import KAFKA_BROKER, OPENSEARCH_NODE, OPENSEARCH_VERSION, resolve_jars
from trident_spark.local.probes import kafka_answers

pytestmark = [pytest.mark.integration, pytest.mark.containers]


def _in_image(image: str, *command: str) -> str:
    done = subprocess.run([DOCKER, "run", "--rm", "--network", "host", "--entrypoint", command[0], image,
                           *command[1:]], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def _http(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.mark.parametrize(("image", "artifacts"), [("trident-kafka:local", KAFKA_BROKER),
                                                   ("trident-elasticsearch:local", OPENSEARCH_NODE)])
def test_image_holds_the_cached_jar_set(image: str, artifacts: Any) -> None:
    assert sorted(_in_image(image, "ls", "/opt/service/jars").split()) == sorted(
        jar.name for jar in resolve_jars(artifacts))


def test_kafka_container_round_trips_records(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("testcontainers", reason="make test-containers installs the containers extra")
    monkeypatch.setenv("TRIDENT_KAFKA_IMAGE", "trident-kafka:local")
    with start_container("kafka") as kafka:
        assert kafka.provider == "testcontainers"
        assert kafka.address.startswith("127.0.0.1:")
        create_topic(kafka.address, "roundtrip", partitions=3)
        records = [(None, f"v{i}".encode(), i % 3) for i in range(300)]
        assert produce(kafka.address, "roundtrip", records) == 300
        values = sorted(record.value or b"" for record in consume(kafka.address, "roundtrip", count=300))
    assert values == sorted(f"v{i}".encode() for i in range(300))


def test_opensearch_container_is_opensearch_without_security_as_its_own_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("testcontainers", reason="make test-containers installs the containers extra")
    assert _in_image("trident-elasticsearch:local", "id", "-un").strip() == "opensearch"
    monkeypatch.setenv("TRIDENT_ELASTICSEARCH_IMAGE", "trident-elasticsearch:local")
    with start_container("elasticsearch") as es:
        assert es.address.startswith("http://127.0.0.1:")
        root = _http("GET", es.address)
        version = root["version"]
        assert (version["distribution"], version["number"]) == ("opensearch", OPENSEARCH_VERSION)
        # The netty4 transport, a classpath plugin of the launcher, is the only one: no security plugin.
        plugins = _http("GET", f"{es.address}/_cat/plugins?format=json")
        assert [plugin["component"] for plugin in plugins] == ["org.opensearch.transport.Netty4Plugin"]
        _http("PUT", f"{es.address}/words/_doc/apple?refresh=true", {"count": 3})
        assert _http("GET", f"{es.address}/words/_doc/apple")["_source"] == {"count": 3}


def _run_detached(image: str, *command: str) -> str:
    done = subprocess.run([DOCKER, "run", "-d", "--network", "host", image, *command],
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


def _wait_until(what: str, ready: Any, container: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            logs = subprocess.run([DOCKER, "logs", "--tail", "40", container], capture_output=True, text=True,
                                  check=False)
            raise AssertionError(f"{what} within {timeout:g} s; its log:\n{logs.stdout}{logs.stderr}")
        time.sleep(0.5)


def test_kafka_container_restarted_keeps_its_topics_and_records() -> None:
    port, controller = host_ports(2)
    address = f"127.0.0.1:{port}"
    container = _run_detached("trident-kafka:local", str(port), str(controller))
    try:
        _wait_until("the broker did not answer", lambda: kafka_answers(address), container)
        create_topic(address, "kept", partitions=2)
        assert produce(address, "kept", [(None, f"v{i}".encode(), i % 2) for i in range(100)]) == 100
        # The same container again: its log directory (formatted at the first start) is kept.
        subprocess.run([DOCKER, "restart", "-t", "30", container], capture_output=True, timeout=120,
                       check=True)
        _wait_until("the restarted broker did not answer", lambda: kafka_answers(address), container)
        values = sorted(record.value or b"" for record in consume(address, "kept", count=100))
        assert values == sorted(f"v{i}".encode() for i in range(100))
    finally:
        subprocess.run([DOCKER, "rm", "-f", container], capture_output=True, timeout=120, check=False)
