"""Driver program of the ITridentSpout kill test: a count of events from an ITridentSpout, killed where told.

Usage: trident_spout_kill_driver.py CONFIG_JSON

CONFIG_JSON holds ``checkpoint``, ``out`` (a directory for markers and the call log
``calls.jsonl``), ``run`` (this start's number) and ``kill_batch`` (None, or the batch in which the
driver is killed: on an executor, right after a partition of that batch wrote its keys to the
transactional SQLite state, the filter downstream of ``newValuesStream()`` SIGKILLs the driver,
whose pid comes in the environment variable SPOUT_DRIVER_PID). A marker ``killed-<run>`` makes
the kill happen once. The coordinator's metadata is a slice of EVENTS; each call it gets and each
batch the emitter emits are recorded.

Classes are defined here (``__main__``) so that they are pickled by value.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.driver_processes import run_to_the_end
from tests.integration.spout.user_spout_kill_driver import KillAfterWrite, record
from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.runtime.session import local_session
from trident_spark.spout import ITridentSpout
from trident_spark.state import SqliteState

EVENTS = ["flu", "cold", "flu", "measles", "flu", "cold", "cold", "flu", "mumps", "flu", "cold", "flu"]
PER_BATCH = 3


class EventCoordinator(ITridentSpout.BatchCoordinator):
    def __init__(self, log: str) -> None:
        self.log = log

    def initializeTransaction(self, txid: int, prevMetadata: Any, currMetadata: Any) -> Any:
        if currMetadata is not None:
            meta = currMetadata
        else:
            start = 0 if prevMetadata is None else prevMetadata["end"]
            meta = {"start": start, "end": min(start + PER_BATCH, len(EVENTS))}
        record(self.log, "init", txid, prevMetadata, currMetadata, meta, os.getpid())
        return meta

    def isReady(self, txid: int) -> bool:
        return txid * PER_BATCH < len(EVENTS)


class EventEmitter(ITridentSpout.Emitter):
    def __init__(self, log: str) -> None:
        self.log = log

    def emitBatch(self, tx: Any, coordinatorMeta: Any, collector: Any) -> None:
        words = EVENTS[coordinatorMeta["start"]:coordinatorMeta["end"]]
        for word in words:
            collector.emit([word])
        record(self.log, "emit", tx.getTransactionId(), tx.getAttemptId(), coordinatorMeta, words)


class EventSpout(ITridentSpout):
    def __init__(self, log: str) -> None:
        self.log = log

    def getCoordinator(self, txStateId: str, conf: Any, context: Any) -> EventCoordinator:
        return EventCoordinator(self.log)

    def getEmitter(self, txStateId: str, conf: Any, context: Any) -> EventEmitter:
        return EventEmitter(self.log)

    def getOutputFields(self) -> list[str]:
        return ["word"]


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    out, run = Path(config["out"]), int(config["run"])
    os.environ["SPOUT_DRIVER_PID"] = str(os.getpid())  # before the JVM and its workers start
    spark = local_session("trident-spout-kill-driver", master="local[2]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    topology = TridentTopology()
    state = SqliteState.transactional(path=str(out / "counts.db"), table="counts")
    (topology.newStream("events", EventSpout(str(out / "calls.jsonl"))).groupBy(["word"])
     .persistentAggregate(state, Count(), ["count"]).newValuesStream()
     .each(["word", "count"], KillAfterWrite(str(out), run, config["kill_batch"])).collect())
    run_to_the_end(topology, config["checkpoint"], spark, f"ITridentSpout kill driver run {run}")


if __name__ == "__main__":
    main()
