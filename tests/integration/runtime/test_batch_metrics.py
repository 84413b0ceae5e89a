"""Per-batch, per-stage metrics on real Kafka (Apache Kafka) and Spark: what ``handle.progress`` and the
checkpoint's JSON lines say about each batch, checked against what the batch actually held; and
``trident-spark status`` on the checkpoint that run wrote (one run serves both: Spark runs are slow)."""

from __future__ import annotations

import json
import sys
from collections import Counter

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count, MapGet
from trident_spark.cli.main import main
from trident_spark.local.kafka import produce
from trident_spark.operation import BaseFunction
from trident_spark.runtime.progress import BatchProgress
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


def test_each_batch_reports_its_stages_rows_offsets_and_spark_time(spark, kafka_bootstrap, new_topic,
                                                                   tmp_path, capsys, monkeypatch):
    topic = new_topic(partitions=PARTITIONS)
    produce(kafka_bootstrap, topic, [(None, s.encode(), i % PARTITIONS) for i, s in enumerate(SENTENCES)])
    topology = TridentTopology()
    words = (topology.newStream("metrics", KafkaSpout(kafka_bootstrap, [topic], max_fetch_bytes=2_000))
             .each(["value"], Split(), ["word"]).name("split"))
    counts = words.groupBy(["word"]).persistentAggregate(
        SqliteState.opaque(path=str(tmp_path / "wc.db")), Count(), ["count"])
    words.stateQuery(counts, ["word"], MapGet(), ["total"]).name("lookup").collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.awaitTermination(180)
    handle.stop()

    batches = handle.progress
    assert len(batches) >= 3, "max_fetch_bytes=2000 should cut the topic into several batches"
    assert sum(b.rows for b in batches) == len(SENTENCES)
    words_total = sum(len(s.split()) for s in SENTENCES)
    for b in batches:
        kinds = Counter(stage["kind"] for stage in b.stages)
        names = [stage["name"] for stage in b.stages]
        # Pipeline order: the read, the operator, the store round trips around the update, the rest.
        assert names[0] == "source" and names[-1] == "spark", names
        assert kinds["python"] == 1 and kinds["state_put"] == 1, names
        # The persist goes to the store only for keys its worker's cache missed (the counters'
        # store_reads also count the query's reads, which never use the cache).
        assert kinds["state_get"] <= 1, names
        get = next((stage for stage in b.stages if stage["kind"] == "state_get"), None)
        assert get is None or 0 < get["rows_in"] <= b.state["keys_read"], (get, b.state)
        assert kinds["state_query"] == 1 and kinds["aggregate"] >= 1, names
        by_name = {stage["name"]: stage for stage in b.stages}
        assert by_name["source"]["rows_out"] == b.rows and by_name["source"]["ms"] > 0
        split = by_name["split"]
        assert split["rows_in"] == b.rows and split["ms"] > 0
        assert by_name["lookup"]["rows_in"] == split["rows_out"]  # every word is looked up
        put = next(stage for stage in b.stages if stage["kind"] == "state_put")
        assert put["rows_in"] == b.state["keys_written"]
        assert b.spark["executor_run_ms"] > 0 and b.spark["tasks"] >= PARTITIONS
        # Our stages fit in Spark's own task time; "spark" is the rest of it.
        measured = sum(s["ms"] for s in b.stages if s["kind"] != "spark")
        assert measured <= b.spark["executor_run_ms"] * 1.05 + 5, (measured, b.spark)
        rest = by_name["spark"]["ms"]
        assert rest == pytest.approx(max(0.0, b.spark["executor_run_ms"] - measured), abs=0.01)
        # Records per partition come from the batch's offsets and add up to its rows.
        assert sum(b.partition_rows.values()) == b.rows
        assert set(b.partition_rows) <= {f"{topic}[{p}]" for p in range(PARTITIONS)}
        assert b.read_limit_bytes is None or b.read_limit_bytes == 2_000
        assert b.cores == spark.sparkContext.defaultParallelism
        assert b.slowest_stage() is not None
    assert sum(b.stages[1]["rows_out"] for b in batches) == words_total
    # The backlog shrinks to nothing as the batches catch up.
    assert batches[0].backlog == len(SENTENCES) - batches[0].rows
    assert batches[-1].backlog == 0

    lines = (tmp_path / "ckpt" / "metrics" / "trident-progress.jsonl").read_text().splitlines()
    assert [BatchProgress.from_json(line) for line in lines] == batches
    run = json.loads((tmp_path / "ckpt" / "trident-run.json").read_text())
    assert run["streams"] == ["metrics"] and run["trigger"] == "available_now" and run["trigger_ms"] is None
    assert run["stopped"] is not None and run["cores"] == spark.sparkContext.defaultParallelism

    check_status_command(tmp_path / "ckpt", batches, capsys, monkeypatch)


def check_status_command(checkpoint, batches, capsys, monkeypatch):
    """`trident-spark status` shows the finished run from its checkpoint, with the run's own numbers."""
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["status", str(checkpoint)]) == 0
    out = capsys.readouterr().out
    lines = [line.rstrip() for line in out.splitlines()]
    assert lines[0].startswith("metrics ─")
    assert lines[1].startswith("status      finished (started ")
    assert lines[2] == f"batches     {len(batches)} (txid 0..{len(batches) - 1}), {len(SENTENCES)} rows"
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
    assert shown["run"]["streams"] == ["metrics"] and shown["run"]["stopped"]
    diagnosis = shown["streams"][0]["diagnosis"]
    assert diagnosis["totals"]["rows"] == len(SENTENCES)
    assert diagnosis["verdict"]["kind"] == "keeping up"
    kinds = {"io", "cpu", "concurrency", "rate_limit", "memory", "bookkeeping"}
    assert diagnosis["bottleneck"]["kind"] in kinds
