"""Java Trident programs' shapes, ported as written, on a real local Spark (issue 29).

* The book's outbreak-detection shape: an ITridentSpout (coordinator + emitter), a side-effect
  Function with no output fields (``each(fields, DispatchAlert(), new Fields())``), a state factory
  with Storm's ``makeState(conf, metrics, partitionIndex, numPartitions)`` making a subclass of
  NonTransactionalMap (``super(backing)``) over the program's own IBackingMap, whose own method
  the program's StateUpdater calls with ``multiPut(keys, vals)`` (no txid).
* ``TupleCollectionGet`` into fewer fields than the state's key values plus value: the extra value
  is unaddressable (Trident's tuple view), the tuples keep the declared ones.
* An IRichSpout of 25 tuples with message ids, wrapped as Trident's RichSpoutBatchExecutor: every
  tuple arrives once, each message id is acked once.
* An ITridentSpout batch replayed from the checkpoint is initialized again with its logged
  metadata as ``currMetadata`` and emits the same tuples.
* ``MemoryMapState.Factory()`` (a fresh id) in persistentAggregate.

Expected values follow the Java sources: TridentSpoutCoordinator (initializeTransaction(txid,
prevMeta, state.getState(txid)) then emitBatch(attempt, meta)), RichSpoutBatchExecutor (nextTuple
until a call emits nothing; ack(id) of the batch's ids on success) and NonTransactionalMap.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import Fields, TridentTopology
from trident_spark.builtin import Count, MapGet, TupleCollectionGet
from trident_spark.operation import BaseFunction, StateUpdater
from trident_spark.spout import BaseRichSpout, ITridentSpout
from trident_spark.state import IBackingMap, MemoryMapState, NonTransactionalMap, StateFactory, open_state

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules

DISEASES = ["flu", "cold", "flu", "flu", "measles", "cold", "flu", "cold", "flu"]


def record(log: str, *entry: Any) -> None:
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


# -- the book's shapes --------------------------------------------------------------------------

class DiagnosisCoordinator(ITridentSpout.BatchCoordinator):
    """Three events per batch, three batches; metadata: the slice of DISEASES the batch holds."""

    def __init__(self, log: str) -> None:
        self.log = log

    def initializeTransaction(self, txid: int, prevMetadata: Any, currMetadata: Any) -> Any:
        if currMetadata is not None:
            meta = currMetadata
        else:
            start = 0 if prevMetadata is None else prevMetadata["end"]
            meta = {"start": start, "end": min(start + 3, len(DISEASES))}
        record(self.log, "init", txid, prevMetadata, currMetadata, meta)
        return meta

    def isReady(self, txid: int) -> bool:
        return txid < 3  # three batches, then none: an available_now run ends

    def success(self, txid: int) -> None:
        record(self.log, "coordinator-success", txid)


class DiagnosisEmitter(ITridentSpout.Emitter):
    def __init__(self, log: str) -> None:
        self.log = log

    def emitBatch(self, tx: Any, coordinatorMeta: Any, collector: Any) -> None:
        for i in range(coordinatorMeta["start"], coordinatorMeta["end"]):
            collector.emit([DISEASES[i], "nyc" if i % 2 else "sf"])
        record(self.log, "emit", tx.getTransactionId(), tx.getAttemptId(), coordinatorMeta)

    def success(self, tx: Any) -> None:
        record(self.log, "emitter-success", tx.getTransactionId())


class DiagnosisEventSpout(ITridentSpout):
    def __init__(self, log: str) -> None:
        self.log = log

    def getCoordinator(self, txStateId: str, conf: Any, context: Any) -> DiagnosisCoordinator:
        return DiagnosisCoordinator(self.log)

    def getEmitter(self, txStateId: str, conf: Any, context: Any) -> DiagnosisEmitter:
        return DiagnosisEmitter(self.log)

    def getOutputFields(self) -> Fields:
        return Fields("disease", "city")


class DispatchAlert(BaseFunction):
    """A side-effect Function with no output fields: records each alert, emits nothing new."""

    def __init__(self, log: str) -> None:
        self.log = log

    def execute(self, tuple: Any, collector: Any) -> None:
        record(self.log, "alert", str(tuple))
        collector.emit([])


class SqliteBacking(IBackingMap):
    """The program's own IBackingMap: JSON values in a SQLite table."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, timeout=30)
        self.db.execute("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT)")

    def multiGet(self, keys: Any) -> list[Any]:
        out = []
        for key in keys:
            row = self.db.execute("SELECT v FROM kv WHERE k = ?", (json.dumps(list(key)),)).fetchone()
            out.append(None if row is None else json.loads(row[0]))
        return out

    def multiPut(self, keys: Any, vals: Any) -> None:
        with self.db:
            rows = [(json.dumps(list(k)), json.dumps(v)) for k, v in zip(keys, vals, strict=True)]
            self.db.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?)", rows)


class OutbreakTrendState(NonTransactionalMap):
    def __init__(self, backing: IBackingMap) -> None:
        super().__init__(backing)

    def incrementCount(self, keys: list[list[Any]], counts: list[int]) -> None:
        olds = self.multiGet(keys)
        self.multiPut(keys, [(old or 0) + n for old, n in zip(olds, counts, strict=True)])


class OutbreakTrendFactory(StateFactory):
    def __init__(self, path: str) -> None:
        self.path = path

    def makeState(self, conf: Any, metrics: Any, partitionIndex: int, numPartitions: int) -> Any:
        metrics.registerMetric("outbreaks", object(), 60)
        return OutbreakTrendState(SqliteBacking(self.path))


class OutbreakTrendUpdater(StateUpdater):
    def updateState(self, state: Any, tuples: list[Any], collector: Any) -> None:
        counts = Counter((t.getStringByField("city"), t.getStringByField("disease")) for t in tuples)
        keys = sorted(counts)
        state.incrementCount([list(k) for k in keys], [counts[k] for k in keys])


def test_the_outbreak_shapes_as_written(spark: Any, tmp_path: Path):
    log, alerts = str(tmp_path / "calls.jsonl"), str(tmp_path / "alerts.jsonl")
    topology = TridentTopology()
    events = topology.newStream("events", DiagnosisEventSpout(log))
    (events.each(["disease", "city"], DispatchAlert(alerts), []).partitionBy(["city", "disease"])
     .partitionPersist(OutbreakTrendFactory(str(tmp_path / "trend.db")), ["city", "disease"],
                       OutbreakTrendUpdater()))
    counts = events.groupBy(["disease"]).persistentAggregate(MemoryMapState.Factory(), Count(), ["count"])
    whole = events.stateQuery(counts, TupleCollectionGet(), ["d"]).collect()
    run(topology, tmp_path / "ckpt", spark)

    # TridentSpoutCoordinator: prevMetadata is the last batch's, currMetadata None for new batches
    inits = [c[1:] for c in calls(Path(log)) if c[0] == "init"]
    assert inits[:3] == [[0, None, None, {"start": 0, "end": 3}],
                         [1, {"start": 0, "end": 3}, None, {"start": 3, "end": 6}],
                         [2, {"start": 3, "end": 6}, None, {"start": 6, "end": 9}]]
    assert [c[1:] for c in calls(Path(log)) if c[0] == "emit"][:3] == [
        [0, 0, {"start": 0, "end": 3}], [1, 0, {"start": 3, "end": 6}], [2, 0, {"start": 6, "end": 9}]]
    # each batch done: the emitter's success, then the coordinator's
    done = [c for c in calls(Path(log)) if c[0].endswith("success")][:2]
    assert done == [["emitter-success", 0], ["coordinator-success", 0]]
    # the side-effect Function saw every event; its str is Trident's value list
    assert sorted(c[1] for c in calls(Path(alerts))) == sorted(
        f"[{d}, {'nyc' if i % 2 else 'sf'}]" for i, d in enumerate(DISEASES))
    # the program's NonTransactionalMap subclass, with its own method and txid-less multiPut
    trend = SqliteBacking(str(tmp_path / "trend.db"))
    expected = Counter(("nyc" if i % 2 else "sf", d) for i, d in enumerate(DISEASES))
    assert dict(zip(sorted(expected), trend.multiGet([list(k) for k in sorted(expected)]), strict=True)) == \
        dict(expected)
    # TupleCollectionGet into one field: key values plus value emitted, only the declared one kept
    # (by batch 2 the state holds the diseases of batches 0 and 1: all three)
    assert {t["d"] for t in whole.batches[2]} == {"flu", "cold", "measles"}
    assert all(list(t) == ["disease", "city", "d"] for t in whole.tuples)


# -- IRichSpout -----------------------------------------------------------------------------------

class NumberSpout(BaseRichSpout):
    """25 tuples, each with its message id; ack and fail recorded (on the driver's data-source process)."""

    def __init__(self, log: str) -> None:
        self.log = log

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.next = 0
        record(self.log, "open", conf.get("topology.spout.max.batch.size"))

    def nextTuple(self) -> None:
        if self.next < 25:
            self.collector.emit([self.next, f"n{self.next}"], f"msg-{self.next}")
            self.next += 1

    def ack(self, msgId: Any) -> None:
        record(self.log, "ack", msgId)

    def fail(self, msgId: Any) -> None:
        record(self.log, "fail", msgId)

    def declareOutputFields(self, declarer: Any) -> None:
        declarer.declare(Fields("n", "name"))

    def getComponentConfiguration(self) -> dict[str, Any]:
        return {"topology.spout.max.batch.size": 10}


def test_an_irichspout_emits_25_tuples_each_arriving_once(spark: Any, tmp_path: Path):
    log = str(tmp_path / "rich.jsonl")
    topology = TridentTopology()
    sink = topology.newStream("numbers", NumberSpout(log)).collect()
    run(topology, tmp_path / "ckpt", spark)

    assert sorted(t["n"] for t in sink.tuples) == list(range(25))
    assert sorted(t["name"] for t in sink.tuples) == sorted(f"n{i}" for i in range(25))
    # batches of at most topology.spout.max.batch.size (10) nextTuple calls: 10, 10, 5, then empty
    assert [len(sink.batches.get(txid, [])) for txid in range(3)] == [10, 10, 5]
    entries = calls(Path(log))
    assert [e for e in entries if e[0] == "open"] == [["open", 10]]
    assert sorted(e[1] for e in entries if e[0] == "ack") == sorted(f"msg-{i}" for i in range(25))
    assert [e for e in entries if e[0] == "fail"] == []


# -- an ITridentSpout batch replayed from the checkpoint ------------------------------------------

def forget_last_commit(checkpoint: Path, stream: str) -> int:
    commits = checkpoint / stream / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    return last


def test_a_replayed_itridentspout_batch_is_emitted_from_its_logged_metadata(spark: Any, tmp_path: Path):
    log = str(tmp_path / "calls.jsonl")
    state = tmp_path / "counts.db"

    def build() -> TridentTopology:
        from trident_spark.state import SqliteState

        topology = TridentTopology()
        (topology.newStream("events", DiagnosisEventSpout(log)).groupBy(["disease"])
         .persistentAggregate(SqliteState.transactional(path=str(state), table="c"), Count(), ["count"]))
        return topology

    run(build(), tmp_path / "ckpt", spark)
    last = forget_last_commit(tmp_path / "ckpt", "events")
    lines = (tmp_path / "ckpt" / "events" / "offsets" / str(last)).read_text().splitlines()
    logged = json.loads(lines[-1])["meta"]
    before = len(calls(Path(log)))
    run(build(), tmp_path / "ckpt", spark)

    again = calls(Path(log))[before:]
    replay_init = next(c for c in again if c[0] == "init")
    assert replay_init[1:] == [last, json.loads((tmp_path / "ckpt" / "events" / "offsets" / str(last - 1))
                                               .read_text().splitlines()[-1])["meta"], logged, logged]
    assert next(c for c in again if c[0] == "emit")[1:] == [last, 1, logged]
    with open_state(f"sqlite:///{state}?table=c&type=transactional") as counts:
        assert dict(counts.getTuples()) == dict(Counter(DISEASES))
        assert counts.multiGet([["flu"]]) == [DISEASES.count("flu")]
    assert MapGet  # (MapGet reads these keys the same way; kept for the port guide's walk-through)
