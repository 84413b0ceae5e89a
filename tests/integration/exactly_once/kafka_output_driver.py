"""Driver program of the Kafka output's crash and retry tests: a word count whose new values go to
Kafka exactly once, killed or failed where the plan says.

Usage: kafka_output_driver.py CONFIG_JSON

CONFIG_JSON holds ``bootstrap``, ``topic`` (sentences), ``out_topic``, ``state_path`` (SQLite
file of the counts), ``checkpoint``, ``out`` (a directory for markers), ``run`` (this start's
number), ``master`` (``local[2]``, or ``local[2,3]`` for task retries),
``max_offsets_per_trigger`` and ``plans``: a list of

* ``{"mode": "update", "batch": k, "partition": i}``: SIGKILL the driver inside partition i's
  ``updateState`` of batch k (its records made, nothing sent);
* ``{"mode": "in-transaction", "batch": k, "partition": i}``: SIGKILL the driver inside
  partition i's open Kafka transaction of batch k, once its records are on the broker (flushed)
  and before the commit; the number of those records goes to ``open-<k>-<i>``;
* ``{"mode": "commit", "batch": k, "partition": i}``: SIGKILL the driver right after partition
  i committed batch k's Kafka transaction;
* ``{"mode": "all", "batch": k}``: SIGKILL the driver right after the last partition of batch
  k committed (every write of the batch is done, Spark has not logged it as committed);
* ``{"mode": "fail-after-commit", "batch": k, "partition": i}``: raise once after partition i
  committed batch k (Spark retries the task);
* ``{"mode": "fail-in-update", "batch": k, "partition": i}``: raise once in partition i's
  ``updateState`` of batch k, after its records were made.

Each kill also SIGKILLs the executor process that makes it, so that partition goes no further;
the other partitions' tasks run on until the test kills every process of the driver. A marker
file ``done-<plan index>`` (created exclusively) makes each plan happen once. Every
``beginCommit`` that finds its batch already committed writes ``skipped-<txid>-<partition>-<run>``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.driver_processes import run_to_the_end
from trident_spark import TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.kafka import (
    DefaultTopicSelector,
    FieldNameBasedTupleToKafkaMapper,
    TridentKafkaState,
    TridentKafkaStateFactory,
    TridentKafkaStateUpdater,
)
from trident_spark.runtime.session import local_session
from trident_spark.spout import KafkaSpout
from trident_spark.state import SqliteState


def claim(marker: Path, text: str) -> bool:
    """Create ``marker`` if nobody has: True for the one caller that did."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return True


class PlannedState(TridentKafkaState):
    """The Kafka output, with the plan's kills and failures around Trident's calls."""

    def __init__(self, factory: Any, partition_index: int, num_partitions: int) -> None:
        super().__init__(factory, partition_index, num_partitions)
        self.out = Path(factory.out)
        self.run, self.plans = factory.run, factory.plans

    def _act(self, txid: int, modes: tuple[str, ...]) -> None:
        for number, plan in enumerate(self.plans):
            if plan["mode"] not in modes or plan["batch"] != txid:
                continue
            if plan["mode"] == "all":
                (self.out / f"committed-{txid}-{self.partition_index}-{self.run}").touch()
                done = [p for p in self.out.glob(f"committed-{txid}-*-{self.run}")]
                if len(done) < self.num_partitions:
                    continue
            elif plan["partition"] != self.partition_index:
                continue
            if not claim(self.out / f"done-{number}", f"{plan} pid {os.getpid()}"):
                continue
            if plan["mode"].startswith("fail"):
                raise RuntimeError(f"injected failure: {plan}")
            os.kill(int(os.environ["KO_DRIVER_PID"]), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)   # and this executor process: it goes no further

    def beginCommit(self, txid: int) -> None:
        super().beginCommit(txid)
        if self._skip:
            (self.out / f"skipped-{txid}-{self.partition_index}-{self.run}").touch()

    def _commit_transaction(self, txid: int) -> None:
        if any(p["mode"] == "in-transaction" and p["batch"] == txid and p["partition"] == self.partition_index
               for p in self.plans) and not (self.out / f"open-{txid}-{self.partition_index}").exists():
            # The state's own steps up to the commit: the transaction begun, the records sent and
            # flushed to the broker (written to the partition's log, uncommitted), then the kill.
            producer = self._ensure_producer()
            producer.begin_transaction()
            self._in_transaction = True
            for record in self._pending:
                self._send(record)
            assert producer.flush(30) == 0 and not self._failures, self._failures
            (self.out / f"open-{txid}-{self.partition_index}").write_text(str(len(self._pending)))
            self._act(txid, ("in-transaction",))
        super()._commit_transaction(txid)

    def updateState(self, tuples: Any, collector: Any = None) -> None:
        super().updateState(tuples, collector)
        self._act(self._txid or 0, ("update", "fail-in-update"))

    def commit(self, txid: int) -> None:
        super().commit(txid)
        self._act(txid, ("commit", "all", "fail-after-commit"))


class PlannedFactory(TridentKafkaStateFactory):
    def __init__(self, bootstrap: str, out: str, run: int, plans: list[dict[str, Any]]) -> None:
        super().__init__(bootstrap, exactly_once=True, timeout=20)
        self.out, self.run, self.plans = out, run, plans

    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> PlannedState:
        self.check()
        return PlannedState(self, partition_index, num_partitions)


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    # Before the session starts: the JVM and its Python workers inherit the environment.
    os.environ["KO_DRIVER_PID"] = str(os.getpid())
    spark = local_session("kafka-output-driver", master=config["master"],
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    output = (PlannedFactory(config["bootstrap"], config["out"], config["run"], config["plans"])
              .withKafkaTopicSelector(DefaultTopicSelector(config["out_topic"]))
              .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))
    topology = TridentTopology()
    spout = KafkaSpout(config["bootstrap"], [config["topic"]], starting_offsets="earliest",
                       max_offsets_per_trigger=config["max_offsets_per_trigger"])
    (topology.newStream("sentences", spout)
     .each(["value"], Split(), ["word"])
     .groupBy(["word"])
     .persistentAggregate(SqliteState.transactional(path=config["state_path"], table="counts"), Count(),
                          ["count"])
     .newValuesStream()
     .partitionPersist(output, ["word", "count"], TridentKafkaStateUpdater(), []))
    run_to_the_end(topology, config["checkpoint"], spark, f"kafka output driver run {config['run']}")


if __name__ == "__main__":
    main()
