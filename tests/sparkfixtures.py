"""pytest plugin: one local SparkSession per test session, and per-test Kafka topics."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_counter = itertools.count()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local SparkSession on 2 cores, shared by every test that runs in this process.

    Session-scoped so the JVM and the Python workers start once for the whole suite. The web UI is
    off, as in the crash and retry drivers: no test reads it, and it only costs a web server at
    start (the status store that batch metrics read is kept without it). Spark's Kafka connector
    is on its classpath (four jars from the local cache, fetched once by Maven), for
    ``KafkaSpout(engine="jvm")`` and Spark's ``kafka`` sink; where it cannot be had the session
    starts without it and the tests that need it skip (:func:`kafka_connector`).
    """
    from trident_spark.runtime.session import local_session

    session = local_session("trident-spark-tests", master="local[2]",
                            conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
                            kafka_connector=True)
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture
def kafka_connector(spark: Any) -> None:
    """Skip unless the session has Spark's Kafka connector (``format("kafka")``)."""
    jars = str(spark.sparkContext.getConf().get("spark.jars", ""))
    if "spark-sql-kafka" not in jars:
        pytest.skip("Spark's Kafka connector (spark-sql-kafka-0-10) is not on the session's classpath: "
                    "Maven could not fetch it into the jar cache (see the warning at session start)")


@pytest.fixture
def new_topic(kafka_bootstrap: str) -> Callable[..., str]:
    """Create a fresh topic: ``new_topic(partitions=4)`` returns its name; ``config=`` sets topic configs."""
    from trident_spark.local.kafka import create_topic

    def make(partitions: int = 1, prefix: str = "t", config: dict[str, str] | None = None) -> str:
        name = f"{prefix}-{os.getpid()}-{int(time.time() * 1000) % 10**8}-{next(_counter)}"
        create_topic(kafka_bootstrap, name, partitions=partitions, config=config)
        return name

    return make
