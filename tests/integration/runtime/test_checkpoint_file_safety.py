"""A checkpoint another local account cannot read or steer: trident-spark's files owner-only, the
checkpoint directory it makes 0700 (Spark's own files inside keep the umask's mode, unreachable),
the SQLite state 0600, a link planted where the progress file goes never written through, and a
corrupted Spark offsets file named at the restart.

Real Spark (local), FeederBatchSpout, a SQLite state."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import BaseFunction
from trident_spark.runtime.offsets_log import MalformedOffsetsError
from trident_spark.runtime.progress import PROGRESS_FILE
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState, open_state

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules


class Split(BaseFunction):
    def execute(self, tuple, collector):
        for word in tuple.getString(0).split():
            collector.emit([word])


def word_count(base: Path) -> tuple[TridentTopology, FeederBatchSpout]:
    topology = TridentTopology()
    sentences = FeederBatchSpout(["sentence"], num_partitions=2, directory=str(base / "fed"))
    (topology.newStream("sentences", sentences)
     .each(["sentence"], Split(), ["word"])
     .groupBy(["word"])
     .persistentAggregate(SqliteState.opaque(path=str(base / "state" / "counts.db")), Count(), ["count"]))
    return topology, sentences


def run_available(topology: TridentTopology, checkpoint: Path, spark) -> None:
    with topology.run(str(checkpoint), trigger="available_now", spark=spark) as handle:
        handle.awaitTermination(300)
    assert handle.exception() is None


def mode(path: Path) -> str:
    return oct(os.lstat(path).st_mode & 0o777)


def test_a_run_to_its_end_leaves_a_private_checkpoint_and_refuses_a_corrupted_offsets_file(
        spark, tmp_path, caplog):
    checkpoint, stream = tmp_path / "ck", tmp_path / "ck" / "sentences"
    topology, sentences = word_count(tmp_path)
    sentences.feed([["the cat"], ["the dog"]])
    sentences.feed([["a cat"]])
    run_available(topology, checkpoint, spark)

    # trident-spark's own files: owner-only; the directories it made: 0700
    assert (mode(checkpoint), mode(stream)) == ("0o700", "0o700")
    ours = ["trident-progress.jsonl", "trident-state-writes", "trident-state-commits.json"]
    assert {name: mode(stream / name) for name in ours} == dict.fromkeys(ours, "0o600")
    assert mode(checkpoint / "trident-run.json") == "0o600"
    # Spark's own files keep the umask's mode (not ours to change), behind the 0700 directory
    assert mode(stream / "offsets" / "1") == oct(0o666 & ~_umask())
    # the SQLite state and its -wal and -shm: owner-only
    assert {p.name: mode(p) for p in (tmp_path / "state").iterdir()} == {
        "counts.db": "0o600", "counts.db-wal": "0o600", "counts.db-shm": "0o600"}

    # a link planted where the progress file goes: never written through, the run goes on
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not yours\n")
    (stream / PROGRESS_FILE).unlink()
    (stream / PROGRESS_FILE).symlink_to(outside)
    topology, sentences = word_count(tmp_path)
    sentences.feed([["the end"]])
    with caplog.at_level(logging.WARNING, logger="trident_spark.runtime.handle"):
        run_available(topology, checkpoint, spark)
    assert outside.read_text() == "not yours\n"
    assert (f"cannot append to {stream / PROGRESS_FILE} (beside the checkpoint): it is a symbolic link "
            f"(to {outside}), and trident-spark never writes through a link") in caplog.text
    words = ["the", "cat", "dog", "a", "end"]
    counts = open_state(f"sqlite://{tmp_path}/state/counts.db")
    assert counts.multiGet([[w] for w in words]) == [3, 2, 1, 1, 1]

    # Spark's latest offsets file corrupted (and its batch not committed): the restart names it
    latest = stream / "offsets" / "2"
    latest.write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{not json\n')
    (stream / "commits" / "2").unlink()
    topology, sentences = word_count(tmp_path)
    with pytest.raises(MalformedOffsetsError) as bad:
        topology.run(str(checkpoint), trigger="available_now", spark=spark)
    assert str(bad.value).startswith(
        f"Spark's offsets file {latest} (batch 2 of the checkpoint {stream}) is malformed: line 3 "
        "(source 1's offset) is not JSON: Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1). "
        "Spark cannot start the stream from this checkpoint. What to do: restore the checkpoint directory")
    assert not spark.streams.active


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current
