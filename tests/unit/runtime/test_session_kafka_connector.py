"""The session's Kafka connector: asked for by a spout on Spark's own source, added to spark.jars,
and a session without it refused with the coordinates to add."""

from __future__ import annotations

from pathlib import Path

import pytest

from trident_spark.local import maven
from trident_spark.runtime import session
from trident_spark.spout import KafkaSpout
from trident_spark.spout.kafka.jvm import MissingConnectorError, missing_connector


def test_only_a_spout_on_sparks_own_source_asks_for_the_connector():
    python = KafkaSpout("127.0.0.1:9092", ["t"])
    jvm = KafkaSpout("127.0.0.1:9092", ["t"], engine="jvm")
    assert (python.needs_kafka_connector, jvm.needs_kafka_connector) == (False, True)
    assert session.needs_kafka_connector([python]) is False
    assert session.needs_kafka_connector([python, jvm]) is True


def test_the_connectors_jars_are_added_after_the_users_own(monkeypatch: pytest.MonkeyPatch):
    jars = [Path("/cache/kafka-clients-3.9.2.jar"), Path("/cache/spark-sql-kafka-0-10_2.13-4.2.0.jar")]
    monkeypatch.setattr(maven, "spark_kafka_connector_jars", lambda: jars)
    conf = session.kafka_connector_conf({"spark.jars": "/opt/mine.jar", "x": "1"})
    assert conf == {"spark.jars": "/opt/mine.jar,/cache/kafka-clients-3.9.2.jar,"
                                  "/cache/spark-sql-kafka-0-10_2.13-4.2.0.jar", "x": "1"}


def test_a_connector_that_cannot_be_had_leaves_the_conf_as_it_is(monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture):
    def offline() -> list[Path]:
        raise maven.MavenFetchError("no network")

    monkeypatch.setattr(maven, "spark_kafka_connector_jars", offline)
    assert session.kafka_connector_conf({"x": "1"}) == {"x": "1"}
    assert "Spark's Kafka connector could not be put on the classpath: no network" in caplog.text


def test_sparks_data_source_not_found_becomes_an_error_naming_the_coordinates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(maven.CACHE_ENV, str(tmp_path))
    (tmp_path / "spark-kafka-for-spark-4.3.0.version").write_text("4.2.0\n")
    monkeypatch.setattr(maven, "_pyspark_version", lambda: "4.3.0")
    spark_says = ("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: kafka. Make sure the provider "
                  "name is correct and the package is properly registered and compatible with your Spark "
                  "version. SQLSTATE: 42K02")
    error = missing_connector(Exception(spark_says))
    assert isinstance(error, MissingConnectorError)
    assert str(error) == (
        "KafkaSpout(engine='jvm'): this SparkSession does not have Spark's Kafka connector (Spark says: "
        "Failed to find the data source: kafka). Start the session with "
        "`.config(\"spark.jars.packages\", \"org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0\")` "
        "(spark-submit: --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0), or put its jars "
        "on spark.jars; or let run() build the session (spark=None), which fetches it into the local jar "
        "cache; or use engine='python', which needs no jar")
    other = Exception("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: avro.")
    assert missing_connector(other) is None
