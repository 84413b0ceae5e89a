"""The Apache Kafka node's configuration and the choice of local Kafka kind (no broker started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trident_spark.errors import InvalidArgumentError
from trident_spark.local import KAFKA_KINDS, start_kafka
from trident_spark.local.apache_kafka import KafkaNodeConfig, _existing_node


def _properties(config: KafkaNodeConfig) -> dict[str, str]:
    return dict(line.split("=", 1) for line in config.properties().splitlines())


def test_one_kraft_node_listens_on_127_0_0_1_only_with_its_logs_in_the_data_dir() -> None:
    settings = _properties(KafkaNodeConfig(41001, 41002, Path("/data")))
    assert settings["process.roles"] == "broker,controller"
    assert settings["node.id"] == "1"
    assert settings["listeners"] == "PLAINTEXT://127.0.0.1:41001,CONTROLLER://127.0.0.1:41002"
    assert settings["advertised.listeners"] == "PLAINTEXT://127.0.0.1:41001"
    assert settings["controller.quorum.bootstrap.servers"] == "127.0.0.1:41002"
    assert settings["log.dirs"] == "/data/logs"
    # One node: the internal topics (offsets, transactions) cannot have more than one replica.
    for key in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                "transaction.state.log.min.isr", "share.coordinator.state.topic.replication.factor"):
        assert settings[key] == "1", key
    assert settings["auto.create.topics.enable"] == "true"
    assert settings["group.initial.rebalance.delay.ms"] == "0"


def test_a_formatted_data_dir_gives_back_its_ports(tmp_path: Path) -> None:
    assert _existing_node(tmp_path) is None
    config = KafkaNodeConfig(41003, 41004, tmp_path)
    (tmp_path / "server.properties").write_text(config.properties())
    assert _existing_node(tmp_path) is None           # not formatted yet
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "meta.properties").write_text("node.id=1\n")
    assert _existing_node(tmp_path) == config


def test_an_unknown_kind_is_refused_naming_the_kinds() -> None:
    assert KAFKA_KINDS == ("apache", "tansu")
    with pytest.raises(InvalidArgumentError, match=r"start_kafka\(kind='kraft'\): the local Kafka is one "
                                                   r"of apache, tansu"):
        start_kafka(kind="kraft")  # type: ignore[arg-type]
