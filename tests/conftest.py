"""Shared test setup: the service fixtures (Kafka, Redis, Elasticsearch, PostgreSQL) and a Spark session.

Every Spark JVM the suite starts (the session's, the drivers tests start as subprocesses, the
standalone master, worker and executors) runs with ``tests/spark_conf/spark-defaults.conf``'s
JVM options: set before any JVM starts, inherited by subprocesses. An environment that sets
``SPARK_CONF_DIR`` or ``SPARK_DAEMON_JAVA_OPTS`` itself keeps its own.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The JVM options of tests/spark_conf/spark-defaults.conf, for the JVMs spark-defaults does
#: not reach: the standalone master and worker, and the launcher JVM behind every spark-submit.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).with_name("spark_conf")))
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", TEST_JVM_OPTIONS)
os.environ.setdefault("SPARK_LAUNCHER_OPTS", "-XX:TieredStopAtLevel=1")

pytest_plugins = ["tests.servicefixtures", "tests.sparkfixtures"]

#: Test files that take a minute or more (a driver killed and restarted, a 60 s broker outage, the
#: conformance runs, a standalone cluster): collected first, so that with pytest-xdist
#: (``make test`` runs 2 workers) they start early and the quick files fill the other worker
#: around them, instead of one of them running alone at the end.
LONG_FIRST = (
    "tests/integration/test_docs_examples.py",  # 90 examples, minutes in one file (loadfile)
    "tests/integration/exactly_once/test_driver_crash.py",
    "tests/integration/exactly_once/test_kafka_output_exact.py",
    "tests/integration/spout/test_user_spout_driver_kill.py",
    "tests/integration/windowing/test_windows_driver_kill.py",
    "tests/integration/spout/test_kafka_broker_outage.py",
    "tests/integration/dsl/test_conformance_kafka.py",
    "tests/integration/dsl/test_conformance_feeder.py",
    "tests/integration/test_standalone_cluster.py",
    "tests/integration/runtime/test_driver_kill_replay.py",
    "tests/integration/exactly_once/test_task_retry_and_races.py",
    "tests/integration/spout/test_dead_letters_driver_kill.py",
    "tests/integration/spout/test_adaptive_batching.py",
    "tests/integration/tuning/test_sweep.py",
    "tests/integration/test_demo_command.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put the files of :data:`LONG_FIRST` first, in that order; the rest keep theirs."""
    rank = {path: i for i, path in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
