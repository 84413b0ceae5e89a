"""Driver program of the spout kill tests: a word count from a spout of your own, killed where told.

Usage: user_spout_kill_driver.py CONFIG_JSON

CONFIG_JSON holds ``kind`` (``transactional``: the DB-polling example spout on ``db``, two rows
per table and batch, into a transactional SQLite state; ``opaque``: :class:`Words` over ``rows``,
into an opaque SQLite state), ``checkpoint``, ``out`` (a directory for markers and the call log
``calls.jsonl``), ``run`` (this start's number) and ``kill_batch`` (None, or the batch in which
the driver is killed: on an executor, right after a partition of that batch wrote its keys to the
state, the filter downstream of ``newValuesStream()`` SIGKILLs the driver, whose pid comes in the
environment variable SPOUT_DRIVER_PID). A marker ``killed-<run>`` makes the kill happen once.

Classes are defined here (``__main__``) so that they are pickled by value.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from examples.db_polling_spout import DbPollingSpout, RangeEmitter, Split
from tests.driver_processes import run_to_the_end
from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import BaseFilter
from trident_spark.runtime.session import local_session
from trident_spark.spout import IOpaquePartitionedTridentSpout
from trident_spark.state import SqliteState


def record(log: str, *entry: Any) -> None:
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


def claim(marker: Path) -> bool:
    """Create ``marker`` if nobody has: True for the one caller that did."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


class RecordingEmitter(RangeEmitter):
    """The example's emitter, recording each batch it makes and each it emits again."""

    def __init__(self, db_path: str, max_rows: int, log: str) -> None:
        super().__init__(db_path, max_rows)
        self.log = log

    def emitPartitionBatchNew(self, tx: Any, collector: Any, partition: Any, last_partition_meta: Any) -> Any:
        meta = super().emitPartitionBatchNew(tx, collector, partition, last_partition_meta)
        record(self.log, "new", tx.getTransactionId(), partition.getId(), meta)
        return meta

    def emitPartitionBatch(self, tx: Any, collector: Any, partition: Any, partition_meta: Any) -> None:
        if tx.getAttemptId():
            record(self.log, "again", tx.getTransactionId(), partition.getId(), partition_meta, os.getpid())
        super().emitPartitionBatch(tx, collector, partition, partition_meta)


class RecordingDbSpout(DbPollingSpout):
    def __init__(self, db_path: str, log: str) -> None:
        super().__init__(db_path, max_rows=2)
        self.log = log

    def getEmitter(self, conf: dict[str, Any], context: Any) -> RecordingEmitter:
        return RecordingEmitter(self.db_path, self.max_rows, self.log)


class Side:
    def __init__(self, name: str) -> None:
        self.name = name

    def getId(self) -> str:
        return self.name


class WordsLister(IOpaquePartitionedTridentSpout.Coordinator):
    def __init__(self, names: list[str]) -> None:
        self.names = names

    def getPartitionsForBatch(self) -> list[str]:
        return self.names


class WordsEmitter(IOpaquePartitionedTridentSpout.Emitter):
    """3 words of each partition per batch; 4 when a batch is emitted again (attempt 1)."""

    def __init__(self, rows: dict[str, list[str]], log: str) -> None:
        self.rows = rows
        self.log = log

    def getOrderedPartitions(self, all_partition_info: list[str]) -> list[Side]:
        return [Side(name) for name in all_partition_info]

    def emitPartitionBatch(self, tx: Any, collector: Any, partition: Side, last_partition_meta: Any) -> int:
        start = last_partition_meta or 0
        end = min(start + 3 + tx.getAttemptId(), len(self.rows[partition.name]))
        words = self.rows[partition.name][start:end]
        for word in words:
            collector.emit([word])
        record(self.log, "emit", tx.getTransactionId(), tx.getAttemptId(), partition.name, start, end, words)
        return end


class Words(IOpaquePartitionedTridentSpout):
    def __init__(self, rows: dict[str, list[str]], log: str) -> None:
        self.rows = rows
        self.log = log

    def getCoordinator(self, conf: dict[str, Any], context: Any) -> WordsLister:
        return WordsLister(sorted(self.rows))

    def getEmitter(self, conf: dict[str, Any], context: Any) -> WordsEmitter:
        return WordsEmitter(self.rows, self.log)

    def getOutputFields(self) -> list[str]:
        return ["word"]


class KillAfterWrite(BaseFilter):
    """Downstream of the state's newValuesStream: on the executor, after its partition's writes."""

    def __init__(self, out: str, run: int, batch: int | None) -> None:
        self.out = out
        self.run = run
        self.batch = batch

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.context = context

    def isKeep(self, tuple: Any) -> bool:
        if self.batch is not None and self.context.txid == self.batch \
                and claim(Path(self.out) / f"killed-{self.run}"):
            os.kill(int(os.environ["SPOUT_DRIVER_PID"]), signal.SIGKILL)
        return True


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    out, run = Path(config["out"]), int(config["run"])
    log = str(out / "calls.jsonl")
    os.environ["SPOUT_DRIVER_PID"] = str(os.getpid())  # before the JVM and its workers start
    spark = local_session("spout-kill-driver", master="local[2]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    counts = str(out / "counts.db")
    topology = TridentTopology()
    if config["kind"] == "transactional":
        stream = (topology.newStream("words", RecordingDbSpout(config["db"], log))
                  .each(["sentence"], Split(), ["word"]))
        state = SqliteState.transactional(path=counts, table="counts")
    else:
        stream = topology.newStream("words", Words(config["rows"], log))
        state = SqliteState.opaque(path=counts, table="counts")
    (stream.groupBy(["word"]).persistentAggregate(state, Count(), ["count"]).newValuesStream()
     .each(["word", "count"], KillAfterWrite(str(out), run, config["kill_batch"])).collect())
    run_to_the_end(topology, config["checkpoint"], spark, f"spout kill driver run {run}")


if __name__ == "__main__":
    main()
