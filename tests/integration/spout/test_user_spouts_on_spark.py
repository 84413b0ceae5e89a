"""Spouts of your own on a real local Spark: an IBatchSpout, a transactional partitioned spout (the
DB-polling example on SQLite) and an opaque one, each into a word count; a batch replayed from the
checkpoint (its commit removed, as a driver killed before Spark's commit log leaves it) is emitted
again from the logged metadata, and the states stay exact."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from examples.db_polling_spout import DbPollingSpout, RangeEmitter, Split, load_sentences, word_counts
from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.spout import IBatchSpout, IOpaquePartitionedTridentSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules


def record(log: str, *entry: Any) -> None:
    """Append one call to the JSON-lines file ``log`` (written by the data source's process or a task)."""
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


def calls(log: Path) -> list[list[Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def run(topology: TridentTopology, checkpoint: Path, spark: Any) -> None:
    handle = topology.run(checkpoint_location=str(checkpoint), trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(180), "the available_now run did not end in 180 s"
        assert handle.exception() is None, handle.exception()
    finally:
        handle.stop()


def forget_last_commit(checkpoint: Path, stream: str) -> int:
    """Remove the last batch from Spark's commit log, as a driver killed before writing it leaves it:
    the next start runs that batch again from its logged offsets. Returns the batch id."""
    commits = checkpoint / stream / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    return last


def logged_offset(checkpoint: Path, stream: str, batch: int) -> dict[str, Any]:
    lines = (checkpoint / stream / "offsets" / str(batch)).read_text().splitlines()
    return dict(json.loads(lines[-1]))


class Sentences(IBatchSpout):
    """Batch k is ``BATCHES[k]``: the same tuples whenever k is asked again."""

    BATCHES = [["the cat sat"], ["the dog", "a cat ran"], []]

    def __init__(self, log: str) -> None:
        self.log = log

    def open(self, conf: dict[str, Any], context: Any) -> None:
        record(self.log, "open", conf, context.stream)

    def emitBatch(self, batch_id: int, collector: Any) -> None:
        record(self.log, "emit", batch_id)
        for sentence in self.BATCHES[batch_id] if batch_id < len(self.BATCHES) else []:
            collector.emit([sentence])

    def ack(self, batch_id: int) -> None:
        record(self.log, "ack", batch_id)

    def getOutputFields(self) -> list[str]:
        return ["sentence"]

    def getComponentConfiguration(self) -> dict[str, Any]:
        return {"source": "memory"}


def test_an_ibatchspout_emits_one_batch_per_txid_and_is_acked(spark: Any, tmp_path: Path):
    log = tmp_path / "calls.jsonl"
    topology = TridentTopology()
    sink = (topology.newStream("sentences", Sentences(str(log)))
            .each(["sentence"], Split(), ["word"]).collect())
    run(topology, tmp_path / "ckpt", spark)
    batches = {txid: [t["word"] for t in tuples] for txid, tuples in sink.batches.items() if tuples}
    assert batches == {0: ["the", "cat", "sat"], 1: ["the", "dog", "a", "cat", "ran"]}
    seen = calls(log)
    assert seen[0] == ["open", {"source": "memory"}, "sentences"]
    assert [c[1] for c in seen if c[0] == "emit"] == [0, 1, 2]   # ends after the first empty batch
    assert {0, 1} <= {c[1] for c in seen if c[0] == "ack"}


class RecordingEmitter(RangeEmitter):
    """The example's emitter, recording each call (driver or task) to a file."""

    def __init__(self, db_path: str, max_rows: int, log: str) -> None:
        super().__init__(db_path, max_rows)
        self.log = log

    def emitPartitionBatchNew(self, tx: Any, collector: Any, partition: Any, last_partition_meta: Any) -> Any:
        meta = super().emitPartitionBatchNew(tx, collector, partition, last_partition_meta)
        record(self.log, "new", tx.getTransactionId(), partition.getId(), last_partition_meta, meta)
        return meta

    def emitPartitionBatch(self, tx: Any, collector: Any, partition: Any, partition_meta: Any) -> None:
        if tx.getAttemptId():  # the first emission's own call is inside emitPartitionBatchNew
            record(self.log, "again", tx.getTransactionId(), partition.getId(), partition_meta)
        super().emitPartitionBatch(tx, collector, partition, partition_meta)


class RecordingDbSpout(DbPollingSpout):
    def __init__(self, db_path: str, log: str, max_rows: int) -> None:
        super().__init__(db_path, max_rows=max_rows)
        self.log = log

    def getEmitter(self, conf: dict[str, Any], context: Any) -> RecordingEmitter:
        return RecordingEmitter(self.db_path, self.max_rows, self.log)


def db_topology(spout: Any, state: Any) -> TridentTopology:
    topology = TridentTopology()
    (topology.newStream("db", spout).each(["sentence"], Split(), ["word"])
     .groupBy(["word"]).persistentAggregate(state, Count(), ["count"]))
    return topology


def expected_words(sentences: list[str]) -> Counter[str]:
    return Counter(w for s in sentences for w in s.split())


def test_a_transactional_batch_replays_from_its_logged_metadata(spark: Any, tmp_path: Path):
    db, log, checkpoint = tmp_path / "source.db", tmp_path / "calls.jsonl", tmp_path / "ckpt"
    first = [f"{('ant', 'bee', 'cow')[i % 3]} {('dog', 'eel')[i % 2]}" for i in range(10)]
    load_sentences(db, first)                      # 5 rows in each of two tables: 3 batches of <= 2 rows
    state = SqliteState.transactional(path=str(tmp_path / "counts.db"), table="counts")
    run(db_topology(RecordingDbSpout(str(db), str(log), max_rows=2), state), checkpoint, spark)
    assert word_counts(state) == expected_words(first)

    replayed = forget_last_commit(checkpoint, "db")
    more = ["ant late", "late again"]
    load_sentences(db, more)                       # new rows after the replayed batch: batches after it
    run(db_topology(RecordingDbSpout(str(db), str(log), max_rows=2), state), checkpoint, spark)

    logged = logged_offset(checkpoint, "db", replayed)["partitions"]
    again = sorted(c[1:] for c in calls(log) if c[0] == "again")   # partitions replay side by side
    assert again == sorted([replayed, pid, meta] for pid, meta in logged.items())
    news = [c for c in calls(log) if c[0] == "new" and c[1] > replayed]
    assert news and all(c[3] == logged[c[2]] for c in news if c[1] == replayed + 1)  # chained from the log
    assert word_counts(state) == expected_words(first + more)  # the replay was not counted twice


class Words(IOpaquePartitionedTridentSpout):
    """Partitions of words; a batch takes 3 words of each, 4 when emitted again (attempt 1)."""

    def __init__(self, rows: dict[str, list[str]]) -> None:
        self.rows = rows

    def getCoordinator(self, conf: dict[str, Any], context: Any) -> Any:
        return WordsLister(sorted(self.rows))

    def getEmitter(self, conf: dict[str, Any], context: Any) -> Any:
        return WordsEmitter(self.rows)

    def getOutputFields(self) -> list[str]:
        return ["word"]


class WordsLister(IOpaquePartitionedTridentSpout.Coordinator):
    def __init__(self, names: list[str]) -> None:
        self.names = names

    def getPartitionsForBatch(self) -> list[str]:
        return self.names


class Side:
    def __init__(self, name: str) -> None:
        self.name = name

    def getId(self) -> str:
        return self.name


class WordsEmitter(IOpaquePartitionedTridentSpout.Emitter):
    def __init__(self, rows: dict[str, list[str]]) -> None:
        self.rows = rows

    def getOrderedPartitions(self, all_partition_info: list[str]) -> list[Side]:
        return [Side(name) for name in all_partition_info]

    def emitPartitionBatch(self, tx: Any, collector: Any, partition: Side, last_partition_meta: Any) -> int:
        start = last_partition_meta or 0
        end = min(start + (4 if tx.getAttemptId() else 3), len(self.rows[partition.name]))
        for word in self.rows[partition.name][start:end]:
            collector.emit([word])
        return end


def opaque_counts(spout: Words, state: Any) -> tuple[TridentTopology, Any]:
    topology = TridentTopology()
    sink = (topology.newStream("words", spout).groupBy(["word"])
            .persistentAggregate(state, Count(), ["count"]).newValuesStream().collect())
    return topology, sink


def test_an_opaque_replay_with_other_tuples_keeps_the_opaque_state_exact(spark: Any, tmp_path: Path):
    checkpoint = tmp_path / "ckpt"
    state = SqliteState.opaque(path=str(tmp_path / "counts.db"), table="counts")
    rows = {"left": list("abcdefghi"), "right": list("pqrstu")}
    topology, sink = opaque_counts(Words(rows), state)
    run(topology, checkpoint, spark)
    assert word_counts(state) == Counter(w for words in rows.values() for w in words)
    assert {t["word"] for t in sink.batches[2]} == {"g", "h", "i"}

    replayed = forget_last_commit(checkpoint, "words")
    assert replayed == 2
    rows["left"] += ["j", "k", "l"]                 # more words came: the replay of batch 2 takes 4
    topology, sink = opaque_counts(Words(rows), state)
    run(topology, checkpoint, spark)
    assert {t["word"] for t in sink.batches[2]} == {"g", "h", "i", "j"}   # other tuples than the first time
    assert {t["word"] for t in sink.batches[3]} == {"k", "l"}   # from where the replay ended, not the log
    assert word_counts(state) == Counter(w for words in rows.values() for w in words)   # each word once
    assert (checkpoint / "words" / "user-spout-words").is_dir()


class Broken(IBatchSpout):
    """Batch 0 is fine; batch 1 emits a tuple of the wrong width."""

    def open(self, conf: dict[str, Any], context: Any) -> None:
        pass

    def emitBatch(self, batch_id: int, collector: Any) -> None:
        collector.emit(["fine"] if batch_id == 0 else ["too", "wide"])

    def ack(self, batch_id: int) -> None:
        pass

    def getOutputFields(self) -> list[str]:
        return ["word"]


def test_a_spout_error_on_the_driver_comes_back_naming_the_spout_and_batch(spark: Any, tmp_path: Path):
    from trident_spark.errors import SpoutError

    topology = TridentTopology()
    topology.newStream("broken", Broken()).collect()
    handle = topology.run(checkpoint_location=str(tmp_path / "ckpt"), trigger="available_now", spark=spark)
    try:
        with pytest.raises(SpoutError, match=r"spout Broken \(stream 'broken'\), batch 1: emitted "
                                             r"\['too', 'wide'\] \(2 values\)"):
            handle.awaitTermination(180)
    finally:
        handle.stop()
