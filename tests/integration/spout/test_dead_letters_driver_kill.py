"""A driver SIGKILLed after a batch's read tasks sent their dead letters, before the batch was
committed: restarted, it replays the batch, and the dead-letter topic still holds each malformed
record once (Kafka: Apache Kafka, Spark in a driver subprocess, the Schema Registry in this process)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import fastavro
import pytest

from tests.driver_processes import kill_token_processes
from tests.integration.spout.test_dead_letter_writes import dead_letters
from tests.schema_registry_server import schema_registry
from trident_spark.local.kafka import produce
from trident_spark.spout.formats.schema_registry import wire_format

pytestmark = [pytest.mark.integration, pytest.mark.faults]

DRIVER = Path(__file__).with_name("dead_letter_driver.py")
REPO = Path(__file__).resolve().parents[3]
CLICK = {"type": "record", "name": "Click", "fields": [{"name": "user", "type": "string"}]}


def avro(record) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(CLICK), record)
    return out.getvalue()


def start_driver(config: dict, tmp_path: Path) -> int:
    """Run the driver once to its end (or its death); its exit code."""
    path = tmp_path / f"config-{config['run']}.json"
    path.write_text(json.dumps(config))
    token = uuid.uuid4().hex
    with open(tmp_path / f"driver-{config['run']}.log", "wb") as log:
        driver = subprocess.Popen([sys.executable, str(DRIVER), str(path)], cwd=REPO,
                                  env={**os.environ, "DL_TOKEN": token, "PYTHONPATH": str(REPO)},
                                  stdout=subprocess.DEVNULL,
                                  stderr=log, start_new_session=True)
        try:
            return driver.wait(timeout=240)
        finally:
            # the killed driver's JVM and Python workers, before the next start
            kill_token_processes("DL_TOKEN", token)


def test_dead_letters_once_after_the_driver_is_killed(kafka_bootstrap, new_topic, tmp_path):
    topic, dlq = new_topic(partitions=2), new_topic(prefix="dlq")
    out = tmp_path / "out"
    out.mkdir()
    with schema_registry() as registry:
        schema_id = registry.register(f"{topic}-value", json.dumps(CLICK))
        good = [(None, wire_format(schema_id, avro({"user": u})), i % 2) for i, u in enumerate("abcdef")]
        bad = [(b"x1", b"not avro", 0), (b"x2", wire_format(schema_id, b"\x10short"), 1),
               (b"x3", wire_format(77, avro({"user": "z"})), 1)]
        produce(kafka_bootstrap, topic, [*good[:3], *bad, *good[3:]])
        config = {"bootstrap": kafka_bootstrap, "topic": topic, "dead_letter_topic": dlq,
                  "registry": registry.url, "checkpoint": str(tmp_path / "ckpt"), "out": str(out)}
        first = start_driver({**config, "run": 1}, tmp_path)
        assert first == -signal.SIGKILL, (tmp_path / "driver-1.log").read_text()[-3000:]
        assert (out / "killed").exists() and not (out / "users-1.json").exists()
        sent_before_the_kill = dead_letters(kafka_bootstrap, dlq)
        second = start_driver({**config, "run": 2}, tmp_path)
        assert second == 0, (tmp_path / "driver-2.log").read_text()[-3000:]
    assert len(sent_before_the_kill) == 3  # the read tasks sent them before the driver died
    assert json.loads((out / "users-2.json").read_text()) == list("abcdef")
    letters = dead_letters(kafka_bootstrap, dlq)
    assert sorted((key, value) for _, key, value in letters) == sorted((k, v) for k, v, _ in bad)
