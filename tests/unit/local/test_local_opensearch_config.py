"""The local OpenSearch node's configuration and argument checks (no JVM started)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trident_spark.errors import InvalidArgumentError
from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.local.opensearch import (
    OpenSearchNodeConfig,
    cluster_ready,
    launcher_classes,
    start_opensearch,
)
from trident_spark.local.services import ELASTICSEARCH_KINDS, start_elasticsearch


def _config(tmp_path: Path, transport_ports: tuple[int, ...], names: tuple[str, ...]) -> OpenSearchNodeConfig:
    return OpenSearchNodeConfig(names[0], 19200, transport_ports[0], tmp_path / names[0], "c1",
                                transport_ports, names)


def test_one_node_is_a_single_node_cluster_on_loopback(tmp_path: Path) -> None:
    settings = _config(tmp_path, (19300,), ("node-0",)).settings()
    assert {key: settings[key] for key in ("network.host", "http.port", "transport.port",
                                           "discovery.type")} == {
        "network.host": "127.0.0.1", "http.port": 19200, "transport.port": 19300,
        "discovery.type": "single-node"}
    assert settings["path.data"] == str(tmp_path / "node-0" / "data")
    assert settings["cluster.routing.allocation.disk.threshold_enabled"] is False


def test_three_nodes_find_each_other_on_their_transport_ports(tmp_path: Path) -> None:
    names = ("node-0", "node-1", "node-2")
    settings = _config(tmp_path, (19300, 19301, 19302), names).settings()
    assert "discovery.type" not in settings
    assert settings["discovery.seed_hosts"] == ["127.0.0.1:19300", "127.0.0.1:19301", "127.0.0.1:19302"]
    assert settings["cluster.initial_cluster_manager_nodes"] == list(names)


def test_the_written_home_has_config_data_and_empty_module_dirs(tmp_path: Path) -> None:
    config = _config(tmp_path, (19300,), ("node-0",))
    config.write()
    home = tmp_path / "node-0"
    assert sorted(p.name for p in home.iterdir()) == ["config", "data", "logs", "modules", "plugins", "tmp"]
    lines = (home / "config" / "opensearch.yml").read_text().splitlines()
    parsed = {key: json.loads(value) for key, _, value in (line.partition(": ") for line in lines)}
    assert parsed == config.settings()
    assert "rootLogger.level = warn" in (home / "config" / "log4j2.properties").read_text()


@pytest.mark.parametrize("nodes", [0, -1, True, 1.5])
def test_a_bad_number_of_nodes_is_refused(nodes: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"a number of nodes >= 1"):
        start_opensearch(nodes=nodes)  # type: ignore[arg-type]


def test_an_unknown_kind_names_the_kinds() -> None:
    assert ELASTICSEARCH_KINDS == ("opensearch", "osmem")
    with pytest.raises(InvalidArgumentError, match=r"kind='elastic'\): the local Elasticsearch is one of "
                                                   r"opensearch, osmem"):
        start_elasticsearch(kind="elastic")  # type: ignore[arg-type]


def test_osmem_is_one_server() -> None:
    with pytest.raises(InvalidArgumentError, match=r"osmem is one server: nodes=1"):
        start_elasticsearch(kind="osmem", nodes=3)


def test_a_java_without_its_compiler_module_says_what_to_install(tmp_path: Path) -> None:
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\necho 'java.lang.module.FindException: Module jdk.compiler not found' >&2\n"
                    "exit 1\n")
    java.chmod(0o755)
    with pytest.raises(ServiceNotInstalledError) as caught:
        launcher_classes(str(java), [], root=tmp_path / "cache")
    message = str(caught.value)
    assert f"{java} has no jdk.compiler module" in message
    assert "apt-get install openjdk-17-jre-headless" in message
    assert "ELASTICSEARCH_URL" in message
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []     # nothing half made is left


def test_nothing_listening_is_not_ready() -> None:
    assert cluster_ready("http://127.0.0.1:1", 1, timeout=0.2) is False
