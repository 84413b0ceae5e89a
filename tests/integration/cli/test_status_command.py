"""`trident-spark status` on the checkpoint a real run wrote (Kafka on Tansu, local Spark, SQLite state):
the numbers it shows are the run's own."""

from __future__ import annotations

import json
import sys

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.cli.main import main
from trident_spark.local.kafka import produce
from trident_spark.operation import BaseFunction
from trident_spark.spout import KafkaSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])

PARTITIONS = 3
SENTENCES = [f"the cat {i % 7} sat on mat {i % 5}" for i in range(900)]


class Split(BaseFunction):
    def execute(self, tuple, collector):
        for word in tuple.getString(0).split():
            collector.emit([word])


def test_status_shows_a_finished_run_from_its_checkpoint(spark, kafka_bootstrap, new_topic, tmp_path, capsys,
                                                         monkeypatch):
    topic = new_topic(partitions=PARTITIONS)
    produce(kafka_bootstrap, topic, [(None, s.encode(), i % PARTITIONS) for i, s in enumerate(SENTENCES)])
    topology = TridentTopology()
    (topology.newStream("words", KafkaSpout(kafka_bootstrap, [topic], max_fetch_bytes=2_000))
     .each(["value"], Split(), ["word"]).name("split")
     .groupBy(["word"])
     .persistentAggregate(SqliteState.opaque(path=str(tmp_path / "wc.db")), Count(), ["count"]))
    checkpoint = tmp_path / "ckpt"
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    handle.awaitTermination(180)
    handle.stop()
    batches = handle.progress
    assert len(batches) >= 3 and sum(b.rows for b in batches) == len(SENTENCES)

    monkeypatch.setenv("COLUMNS", "200")
    assert main(["status", str(checkpoint)]) == 0
    out = capsys.readouterr().out
    lines = [line.rstrip() for line in out.splitlines()]
    assert lines[0].startswith("words ─")
    assert lines[1].startswith("status      finished (started ")
    assert lines[2] == f"batches     {len(batches)} (txid 0..{len(batches) - 1}), 900 rows"
    assert not any("running now" in line or "interrupted" in line for line in lines)
    rows = {line.split()[0]: line for line in lines if line.split()[:2] in (["source", "source"],
                                                                              ["split", "python"])}
    assert set(rows) == {"source", "split"}, out
    assert sum(line.endswith("<- slowest") for line in lines) == 1
    assert any(line.startswith("bottleneck  ") for line in lines)
    # available-now reads the topic in limited batches: the backlog drains to nothing
    assert "backlog     0 records, draining" in out
    assert any(line.startswith("verdict     keeping up: backlog draining by ") for line in lines), out

    assert main(["status", str(checkpoint), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run"]["streams"] == ["words"] and shown["run"]["stopped"]
    diagnosis = shown["streams"][0]["diagnosis"]
    assert diagnosis["totals"]["rows"] == len(SENTENCES)
    assert diagnosis["verdict"]["kind"] == "keeping up"
    kinds = {"io", "cpu", "concurrency", "rate_limit", "memory", "bookkeeping"}
    assert diagnosis["bottleneck"]["kind"] in kinds
