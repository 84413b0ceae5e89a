"""A checkpoint given as a file:// URI or a relative path: Spark's offsets and trident-spark's own
files (trident-run.json, trident-progress.jsonl, the writes marker) land in the same directory,
``trident-spark status`` reads it, and a restart from the file:// URI goes on with exact counts.

Real Spark (local), FeederBatchSpout, a SQLite state; no HDFS or S3 here (the non-local code
path is covered by tests/unit/test_checkpoint_files.py on pyarrow filesystems)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.cli.main import main as cli_main
from trident_spark.operation import BaseFunction
from trident_spark.runtime.batch import WRITES_MARKER
from trident_spark.runtime.progress import PROGRESS_FILE, RUN_FILE
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState, open_state

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules


class Split(BaseFunction):
    def execute(self, tuple, collector):
        for word in tuple.getString(0).split():
            collector.emit([word])


def word_count(db: Path) -> tuple[TridentTopology, FeederBatchSpout]:
    topology = TridentTopology()
    # its batches kept beside the state: a restarted driver's spout goes on after them
    sentences = FeederBatchSpout(["sentence"], num_partitions=2, directory=str(db.parent / "fed"))
    (topology.newStream("sentences", sentences)
     .each(["sentence"], Split(), ["word"])
     .groupBy(["word"])
     .persistentAggregate(SqliteState.opaque(path=str(db)), Count(), ["count"]))
    return topology, sentences


def run_available(topology: TridentTopology, checkpoint: str, spark) -> object:
    with topology.run(checkpoint, trigger="available_now", spark=spark) as handle:
        handle.awaitTermination(300)
    assert handle.exception() is None
    return handle


def assert_side_by_side(stream_dir: Path, batches: int) -> None:
    """Spark's logs and trident-spark's files in the same stream directory."""
    assert sorted(p.name for p in (stream_dir / "offsets").iterdir() if p.name.isdigit()) == [
        str(b) for b in range(batches)]
    assert sorted(p.name for p in (stream_dir / "commits").iterdir() if p.name.isdigit()) == [
        str(b) for b in range(batches)]
    lines = (stream_dir / PROGRESS_FILE).read_text().splitlines()
    assert [json.loads(line)["txid"] for line in lines][-1] == batches - 1
    assert int((stream_dir / WRITES_MARKER).read_text()) == batches - 1
    assert (stream_dir.parent / RUN_FILE).is_file()


def test_a_file_uri_checkpoint_keeps_everything_together_and_restarts_exactly(
        spark, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # a relative ./file:/... would land here
    db = tmp_path / "counts.db"
    uri = f"file://{tmp_path}/ck"
    topology, sentences = word_count(db)
    sentences.feed([["the cat"], ["the dog"]])
    sentences.feed([["a cat"]])
    handle = run_available(topology, uri, spark)
    assert handle.checkpoint == uri  # the URI as given, not Path(uri)
    assert_side_by_side(tmp_path / "ck" / "sentences", 2)
    assert not list(tmp_path.glob("file:*"))

    assert cli_main(["status", uri, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [s["stream"] for s in shown["streams"]] == ["sentences"]
    assert shown["streams"][0]["diagnosis"]["totals"]["batches"] == 2
    assert shown["run"]["stopped"]

    # stopped, then run again from the same URI: it goes on after batch 1, nothing counted twice
    topology, sentences = word_count(db)
    sentences.feed([["the end"]])
    run_available(topology, uri, spark)
    assert_side_by_side(tmp_path / "ck" / "sentences", 3)
    words = ["the", "cat", "dog", "a", "end"]
    assert open_state(f"sqlite://{db}").multiGet([[w] for w in words]) == [3, 2, 1, 1, 1]


def test_a_relative_checkpoint_path_is_one_directory_for_spark_and_trident(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # Spark's JVM started elsewhere: the path is made absolute here
    topology, sentences = word_count(tmp_path / "counts.db")
    sentences.feed([["the cat"]])
    sentences.feed([["the dog"]])
    handle = run_available(topology, "ck", spark)
    assert handle.checkpoint == tmp_path / "ck"
    assert_side_by_side(tmp_path / "ck" / "sentences", 2)
