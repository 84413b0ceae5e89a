"""examples/db_polling_spout.py without Spark: the id ranges it makes and emits again, and the
topology ``trident-spark run`` finds in it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from examples.db_polling_spout import DbPollingSpout, Shard, load_sentences
from trident_spark import TridentTopology
from trident_spark.spout import SpoutCollector, SpoutContext, TransactionAttempt


def test_a_batch_is_the_next_rows_by_id_and_is_emitted_again_from_its_range(tmp_path: Path):
    db = tmp_path / "source.db"
    load_sentences(db, [f"sentence {i}" for i in range(7)], shards=1)
    spout = DbPollingSpout(str(db), max_rows=3)
    emitter = spout.getEmitter({}, SpoutContext("db"))
    assert spout.getCoordinator({}, SpoutContext("db")).getPartitionsForBatch() == ["sentences_0"]
    shard = emitter.getOrderedPartitions(["sentences_0"])[0]
    metas, batches = [], []
    last = None
    for txid in range(4):
        collector = SpoutCollector(["sentence"], f"batch {txid}")
        last = emitter.emitPartitionBatchNew(TransactionAttempt(txid), collector, shard, last)
        metas.append(last)
        batches.append([t[0] for t in collector.tuples])
    assert metas == [{"from_id": 1, "to_id": 3}, {"from_id": 4, "to_id": 6}, {"from_id": 7, "to_id": 7},
                     {"from_id": 8, "to_id": 7}]   # nothing new: an empty range, the next poll starts there
    assert batches[1] == ["sentence 3", "sentence 4", "sentence 5"] and batches[3] == []
    with sqlite3.connect(db) as conn:              # rows added later do not change a logged range
        conn.execute("INSERT INTO sentences_0 (sentence) VALUES ('late')")
    again = SpoutCollector(["sentence"], "batch 1 again")
    spout.getEmitter({}, SpoutContext("db", "executor")).emitPartitionBatch(
        TransactionAttempt(1, 1), again, Shard("sentences_0"), metas[1])
    assert [t[0] for t in again.tuples] == batches[1]


def test_trident_spark_run_finds_the_topology(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from trident_spark.cli.run import load_topology

    monkeypatch.setenv("DB_POLLING_DB", str(tmp_path / "source.db"))
    topology = load_topology(str(Path(__file__).resolve().parents[3] / "examples" / "db_polling_spout.py"))
    assert isinstance(topology, TridentTopology)
    with sqlite3.connect(tmp_path / "source.db") as conn:   # made with sample sentences
        assert sum(conn.execute(f"SELECT count(*) FROM sentences_{i}").fetchone()[0] for i in range(2)) == 500
