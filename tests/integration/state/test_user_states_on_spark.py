"""A user's own states on Spark, in Trident's shapes (issue 16, the state API):

* an ``IBackingMap`` (plain ``multiGet``/``multiPut`` over a SQLite file, written in this module)
  wrapped by ``OpaqueMap.build`` / ``TransactionalMap.build`` inside a ``StateFactory.makeState``,
  for ``persistentAggregate`` and ``stateQuery``, exact across a batch replayed after its writes;
* a plain ``State`` (``beginCommit``/``commit``) for ``partitionPersist``: each partition of each
  batch is one begin/updates/commit, and a replayed txid is redone, not doubled;
* ``open_state`` reading the user's state through a URL scheme the user registered.

The user's connections are plain ``sqlite3`` ones, which refuse to be used from another thread
than the one that made them: a partition's state is used from one thread of its host.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import FailedException, TridentTopology
from trident_spark.builtin import Count, MapGet
from trident_spark.operation import BaseFunction, StateUpdater
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import (
    IBackingMap,
    NonTransactionalMap,
    OpaqueMap,
    Scheme,
    State,
    StateFactory,
    TransactionalMap,
    open_state,
    register_scheme,
)
from trident_spark.state.url import SCHEMES

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules

BATCHES = [["the", "cat", "the", "dog"], ["cat", "eel", "the"], ["dog", "dog", "fox"]]
KINDS = {"opaque": OpaqueMap, "transactional": TransactionalMap, "non_transactional": NonTransactionalMap}


class SqliteBlobMap(IBackingMap):
    """A user's store: each key's value pickled into a SQLite row (no versions: plain writes)."""

    def __init__(self, path: str, table: str) -> None:
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.table = table
        self.db.execute(f"CREATE TABLE IF NOT EXISTS {table} (k TEXT PRIMARY KEY, v BLOB)")

    def multiGet(self, keys: list[list[Any]]) -> list[Any]:
        found = []
        for key in keys:
            row = self.db.execute(f"SELECT v FROM {self.table} WHERE k = ?", (repr(list(key)),)).fetchone()
            found.append(None if row is None else pickle.loads(row[0]))
        return found

    def multiPut(self, keys: list[list[Any]], values: list[Any]) -> None:
        self.db.executemany(f"INSERT OR REPLACE INTO {self.table} (k, v) VALUES (?, ?)",
                            [(repr(list(k)), pickle.dumps(v)) for k, v in zip(keys, values, strict=True)])

    def close(self) -> None:
        self.db.close()


class BlobMapFactory(StateFactory):
    """Trident's StateFactory: the kind's rules over the user's store, one per partition."""

    def __init__(self, path: str, table: str, kind: str = "opaque") -> None:
        self.path, self.table, self.kind = path, table, kind

    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> Any:
        return KINDS[self.kind].build(SqliteBlobMap(self.path, self.table))


class JournalState(State):
    """A plain State: the batch's words of one partition become visible at commit, once per
    (txid, partition); a replayed txid replaces what its earlier attempt wrote."""

    def __init__(self, path: str, partition: int) -> None:
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.partition = partition
        self.db.execute("CREATE TABLE IF NOT EXISTS journal (txid INT, part INT, word TEXT)")
        self.db.execute("CREATE TABLE IF NOT EXISTS calls (pid INT, part INT, call TEXT, txid INT)")

    def beginCommit(self, txid: int) -> None:
        self.txid = txid
        self._log("begin", txid)
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("DELETE FROM journal WHERE txid = ? AND part = ?", (txid, self.partition))

    def append(self, words: list[str]) -> None:
        self.db.executemany("INSERT INTO journal VALUES (?, ?, ?)",
                            [(self.txid, self.partition, w) for w in words])

    def commit(self, txid: int) -> None:
        self.db.execute("COMMIT")
        self._log("commit", txid)

    def _log(self, call: str, txid: int) -> None:
        self.db.execute("INSERT INTO calls VALUES (?, ?, ?, ?)", (os.getpid(), self.partition, call, txid))


class JournalFactory(StateFactory):
    def __init__(self, path: str) -> None:
        self.path = path

    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> Any:
        return JournalState(self.path, partition_index)


class Journal(StateUpdater):
    """Hands the partition's words to the journal (the state knows the txid from beginCommit)."""

    def updateState(self, state: JournalState, tuples: list[Any], collector: Any) -> None:
        state.append([t["word"] for t in tuples])


class FailOnceAfterWrites(BaseFunction):
    """Asks for batch 1 to be replayed once, after its state writes (a later stage of the batch)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def execute(self, tuple: Any, collector: Any) -> None:
        if tuple["word"] == "eel" and not os.path.exists(self.marker):  # "eel" is in batch 1 only
            Path(self.marker).write_text("failed once")
            raise FailedException("replay batch 1 after its writes")
        collector.emit([1])


def expected() -> dict[str, int]:
    counts: dict[str, int] = {}
    for batch in BATCHES:
        for word in batch:
            counts[word] = counts.get(word, 0) + 1
    return counts


@pytest.fixture(scope="module")
def ran(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("user-states")
    db, journal = str(work / "user.db"), str(work / "journal.db")
    topology = TridentTopology()
    words = FeederBatchSpout(["word"], num_partitions=2)
    stream = topology.newStream("words", words)
    opaque = stream.groupBy(["word"]).persistentAggregate(BlobMapFactory(db, "opaque"), Count(), ["count"])
    stream.groupBy(["word"]).persistentAggregate(BlobMapFactory(db, "tx", "transactional"), Count(),
                                                 ["count"])
    stream.partitionBy(["word"]).partitionPersist(JournalFactory(journal), ["word"], Journal())
    questions = FeederBatchSpout(["word"], num_partitions=1)
    answers = (topology.newStream("questions", questions)
               .stateQuery(opaque, ["word"], MapGet(), ["count"]).collect())
    # In the words query, after its writes: batch 1 fails once and is replayed whole.
    (stream.groupBy(["word"]).persistentAggregate(BlobMapFactory(db, "probe"), Count(), ["count"])
        .newValuesStream().each(["word"], FailOnceAfterWrites(str(work / "failed-once")), ["one:bigint"])
        .collect())
    for batch in BATCHES:
        words.feed([[w] for w in batch])
    handle = topology.run(checkpoint_location=work / "ckpt", trigger="available_now", spark=spark)
    handle.processAllAvailable()
    handle.stop()
    questions.feed([["the"], ["dog"], ["yak"]])  # asked once every word is counted: a second run
    again = topology.run(checkpoint_location=work / "ckpt", trigger="available_now", spark=spark)
    again.processAllAvailable()
    again.stop()
    return {"db": db, "journal": journal, "answers": answers, "handle": handle}


def test_an_ibackingmap_under_opaque_and_transactional_rules_counts_exactly_through_a_replay(ran):
    want = expected()
    keys = [[w] for w in sorted(want)]
    for table, kind in (("opaque", "opaque"), ("tx", "transactional")):
        state = BlobMapFactory(ran["db"], table, kind).makeState({}, 0, 1)
        assert dict(zip(sorted(want), state.multiGet(keys), strict=True)) == want, table
    attempts = {p.txid: p.attempts for p in ran["handle"].progress if p.stream == "words"}
    assert attempts == {0: 1, 1: 2, 2: 1}   # batch 1 ran twice: its writes were applied once


def test_the_stored_values_are_trident_s_opaque_and_transactional_values(ran):
    raw = SqliteBlobMap(ran["db"], "opaque").multiGet([["the"]])[0]
    assert (raw.curr, type(raw).__name__) == (3, "OpaqueValue")
    raw = SqliteBlobMap(ran["db"], "tx").multiGet([["dog"]])[0]
    assert (raw.val, raw.txid, type(raw).__name__) == (3, 2, "TransactionalValue")


def test_state_query_reads_the_user_state(ran):
    got = {t["word"]: t["count"] for t in ran["answers"].tuples}
    assert got == {"the": 3, "dog": 3, "yak": None}


def test_a_plain_state_sees_begin_updates_commit_per_partition_and_a_replay_replaces(ran):
    db = sqlite3.connect(ran["journal"])
    words = sorted(w for (w,) in db.execute("SELECT word FROM journal"))
    assert words == sorted(w for batch in BATCHES for w in batch)
    calls = db.execute("SELECT pid, part, call, txid FROM calls ORDER BY rowid").fetchall()
    per_state: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for pid, part, call, txid in calls:
        per_state.setdefault((pid, part), []).append((call, txid))
    for sequence in per_state.values():  # each state object: begin(t), commit(t), begin(t'), commit(t')...
        assert [c for c, _ in sequence] == ["begin", "commit"] * (len(sequence) // 2)
        assert [t for _, t in sequence[0::2]] == [t for _, t in sequence[1::2]]
    committed_batches = {txid for _, _, call, txid in calls if call == "commit"}
    assert committed_batches == {0, 1, 2}


def test_open_state_reads_a_user_state_through_a_registered_scheme(ran):
    def build(url: str, parts: Any, params: dict[str, str], settings: dict[str, Any]) -> BlobMapFactory:
        return BlobMapFactory(parts.path, params["table"], settings["state_type"].value)

    register_scheme("blobmap", Scheme(("table",), build, "blobmap:///path/to.db?table=T"))
    try:
        with open_state(f"blobmap://{ran['db']}?table=opaque&type=opaque") as state:
            assert state.multiGet([["cat"], ["fox"], ["yak"]]) == [2, 1, None]
    finally:
        del SCHEMES["blobmap"]
