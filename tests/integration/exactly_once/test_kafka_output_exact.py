"""The Kafka output (trident_spark.kafka) exactly once on Spark: what a read_committed consumer reads
equals one clean run, after driver SIGKILLs and Spark task retries.

The topology: sentences from Kafka, split, counted per word into a transactional SQLite state,
and the state's ``newValuesStream()`` (each batch's updated words with their new counts)
``partitionPersist``-ed into an output topic by ``TridentKafkaStateFactory(exactly_once=True)``.
One clean run writes, for every batch, one record ``word -> count after the batch`` per word
the batch touched: the truth is computed from the sentences and Spark's offsets log
(``exactly_once_support``). The output topic, read to its end with ``isolation.level =
read_committed``, must hold exactly that multiset of records: no duplicate, no gap.

(a) One run in this process: exactly once and at least once side by side, the markers of every
    partition at the last batch, and an unknown output topic failing the run by its name before
    any query starts.
(b) Driver SIGKILLs (``kafka_output_driver.py``, one driver per start): inside a partition's open
    transaction, its records on the broker (Apache Kafka: the replay's producer aborts them, and
    the broker hides aborted records from read_committed readers); right after one
    partition committed its transaction (the other may not have), right after every partition
    of a batch committed (Spark has not logged the batch as committed). Each killed batch is replayed; the
    partitions that had committed it skip it (their marker says so).
(c) Spark task retries (``local[2,3]``): a task that fails right after its partition committed
    is retried and sends nothing again; one that fails after making its records (before the
    transaction) is retried and sends them once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from exactly_once_support import batch_sentences, committed, load_topic, make_sentences, unique_tag
from kafka_output_support import expected_records, marker_txids, read_committed

from tests.driver_processes import kill_token_processes
from trident_spark import TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.errors import StateConfigError
from trident_spark.kafka import (
    DefaultTopicSelector,
    FieldNameBasedTupleToKafkaMapper,
    TridentKafkaStateFactory,
    TridentKafkaStateUpdater,
)
from trident_spark.local.kafka import create_topic
from trident_spark.spout import KafkaSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("kafka_output_driver.py")
SENTENCES = 600
PER_TRIGGER = 150            # 4 batches (5 when the spout's per-partition shares round up)
BATCHES = SENTENCES // PER_TRIGGER
OUT_PARTITIONS = 2
RUN_TIMEOUT = 240.0


def output(bootstrap: str, topic: str, **settings: Any) -> TridentKafkaStateFactory:
    return (TridentKafkaStateFactory(bootstrap, **settings)
            .withKafkaTopicSelector(DefaultTopicSelector(topic))
            .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))


# -- (a) one run in this process -------------------------------------------------------------------

def test_one_run_writes_every_new_value_once_in_both_modes(spark, kafka_bootstrap, tmp_path):
    tag = unique_tag()
    topic, exact_topic, plain_topic = f"ko-in-{tag}", f"ko-exact-{tag}", f"ko-plain-{tag}"
    records = load_topic(kafka_bootstrap, topic, make_sentences(SENTENCES, seed=11), partitions=2)
    create_topic(kafka_bootstrap, exact_topic, OUT_PARTITIONS)
    create_topic(kafka_bootstrap, plain_topic, OUT_PARTITIONS)
    exact = output(kafka_bootstrap, exact_topic, exactly_once=True)
    plain = output(kafka_bootstrap, plain_topic)

    topology = TridentTopology()
    spout = KafkaSpout(kafka_bootstrap, [topic], starting_offsets="earliest",
                       max_offsets_per_trigger=PER_TRIGGER)
    new_values = (topology.newStream("sentences", spout)
                  .each(["value"], Split(), ["word"])
                  .groupBy(["word"])
                  .persistentAggregate(SqliteState.opaque(path=str(tmp_path / "wc.db"), table="wc"), Count(),
                                       ["count"])
                  .newValuesStream())
    new_values.partitionPersist(exact, ["word", "count"], TridentKafkaStateUpdater(), [])
    new_values.partitionPersist(plain, ["word", "count"], TridentKafkaStateUpdater(), [])
    checkpoint = tmp_path / "checkpoint"
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    try:
        handle.awaitTermination()
        assert handle.exception() is None
    finally:
        handle.stop()

    batches = batch_sentences(checkpoint / "sentences", records)
    assert sorted(batches) == list(range(BATCHES))
    want = expected_records(batches)
    assert read_committed(kafka_bootstrap, exact_topic, OUT_PARTITIONS) == want
    assert read_committed(kafka_bootstrap, plain_topic, OUT_PARTITIONS) == want   # nothing failed: once too
    # Each state partition's marker: the last batch (every batch touches words of both partitions).
    assert marker_txids(kafka_bootstrap, exact.transactionalId(), 2) == {0: BATCHES - 1, 1: BATCHES - 1}


def test_an_unknown_output_topic_fails_the_run_naming_topic_and_broker(spark, kafka_bootstrap, tmp_path):
    tag = unique_tag()
    topic = f"ko-in-{tag}"
    load_topic(kafka_bootstrap, topic, ["a b", "c d"], partitions=1)
    topology = TridentTopology()
    (topology.newStream("sentences", KafkaSpout(kafka_bootstrap, [topic], starting_offsets="earliest"))
     .each(["value"], Split(), ["word"])
     .partitionPersist(output(kafka_bootstrap, f"ko-missing-{tag}", exactly_once=True, transactional_id=tag)
                       .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper(None, "word")),
                       ["word"], TridentKafkaStateUpdater(), []))
    with pytest.raises(StateConfigError) as caught:  # before any query starts (check_available)
        topology.run(checkpoint_location=tmp_path / "checkpoint", trigger="available_now", spark=spark)
    assert f"topic 'ko-missing-{tag}' does not exist on {kafka_bootstrap}" in str(caught.value)
    assert not spark.streams.active


# -- (b), (c): driver programs ---------------------------------------------------------------------

class Driver:
    """Starts of the driver program on one topic, checkpoint and output."""

    def __init__(self, tmp_path: Path, bootstrap: str, master: str = "local[2]") -> None:
        self.tag = unique_tag()
        self.bootstrap, self.master = bootstrap, master
        self.topic, self.out_topic = f"ko-in-{self.tag}", f"ko-out-{self.tag}"
        self.records = load_topic(bootstrap, self.topic, make_sentences(SENTENCES, seed=5), partitions=4)
        create_topic(bootstrap, self.out_topic, OUT_PARTITIONS)
        self.out = tmp_path / "out"
        self.out.mkdir()
        self.checkpoint = tmp_path / "checkpoint"
        self.state_path = tmp_path / "counts.db"
        self.runs = 0

    def start(self, plans: list[dict[str, Any]]) -> int:
        run, self.runs = self.runs, self.runs + 1
        config = self.out / f"config-{run}.json"
        config.write_text(json.dumps({
            "bootstrap": self.bootstrap, "topic": self.topic, "out_topic": self.out_topic,
            "state_path": str(self.state_path), "checkpoint": str(self.checkpoint), "out": str(self.out),
            "run": run, "master": self.master, "max_offsets_per_trigger": PER_TRIGGER, "plans": plans}))
        token = uuid.uuid4().hex
        with (self.out / f"stderr-{run}.txt").open("w+") as log:
            driver = subprocess.Popen([sys.executable, str(DRIVER), str(config)], cwd=REPO,
                                      env={**os.environ, "KO_TOKEN": token, "PYTHONPATH": str(REPO)},
                                      stdout=subprocess.DEVNULL,
                                      stderr=log, start_new_session=True)
            try:
                code = driver.wait(timeout=RUN_TIMEOUT)
            finally:
                if driver.poll() is None:
                    os.killpg(driver.pid, signal.SIGKILL)
                    driver.wait()
                kill_token_processes("KO_TOKEN", token)
            log.seek(0)
            self.stderr = log.read()
        return code

    def query_dir(self) -> Path:
        return self.checkpoint / "sentences"

    def check_output(self) -> None:
        batches = batch_sentences(self.query_dir(), self.records)
        assert len(batches) >= BATCHES and committed(self.query_dir()) == sorted(batches)
        got = read_committed(self.bootstrap, self.out_topic, OUT_PARTITIONS)
        want = expected_records(batches)
        assert got == want, (f"duplicates {dict(got - want)}, missing {dict(want - got)}")

    def skipped(self, txid: int, partition: int, run: int) -> bool:
        return (self.out / f"skipped-{txid}-{partition}-{run}").exists()


@pytest.mark.faults
def test_driver_sigkills_around_the_kafka_transactions_leave_the_output_exact(kafka_bootstrap, tmp_path):
    driver = Driver(tmp_path, kafka_bootstrap)
    # (A failure inside updateState, before anything is sent, is the retry test's "fail-in-update".)
    kills = [{"mode": "commit", "batch": 1, "partition": 0},    # batch 1: partition 0 committed
             {"mode": "all", "batch": 2}]                        # batch 2: both committed
    for run, plan in enumerate(kills):
        code = driver.start([plan])
        assert code == -signal.SIGKILL, f"start {run} {plan}: rc {code}\n{driver.stderr[-3000:]}"
        assert (driver.out / "done-0").exists()
        assert committed(driver.query_dir()) == list(range(plan["batch"])), plan   # killed inside it
        (driver.out / "done-0").unlink()
    code = driver.start([])
    assert code == 0, driver.stderr[-5000:]
    driver.check_output()
    # The replays skipped what had been committed: batch 1 in partition 0 (start 1), batch 2 in
    # both partitions (start 2). (The other partition of a killed batch runs on side by side until
    # every process of the driver is killed: it may have committed, or not.)
    assert driver.skipped(1, 0, 1)
    assert driver.skipped(2, 0, 2) and driver.skipped(2, 1, 2)


@pytest.mark.faults
def test_a_driver_killed_inside_an_open_transaction_leaves_each_record_once_for_read_committed(
        kafka_bootstrap, tmp_path):
    driver = Driver(tmp_path, kafka_bootstrap)
    code = driver.start([{"mode": "in-transaction", "batch": 1, "partition": 0}])
    assert code == -signal.SIGKILL, f"rc {code}\n{driver.stderr[-3000:]}"
    assert committed(driver.query_dir()) == [0]                 # killed inside batch 1
    left_open = int((driver.out / "open-1-0").read_text())
    assert left_open > 0                                         # on the broker, uncommitted
    code = driver.start([])
    assert code == 0, driver.stderr[-5000:]
    driver.check_output()                                        # read_committed: each record once
    assert not driver.skipped(1, 0, 1)                           # nothing of the killed attempt committed
    # The killed attempt's records are in the topic's log all the same, aborted: a
    # read_uncommitted reader sees them on top of the committed ones.
    everything = sum(read_committed(kafka_bootstrap, driver.out_topic, OUT_PARTITIONS,
                                    isolation="read_uncommitted").values())
    assert everything >= sum(read_committed(kafka_bootstrap, driver.out_topic, OUT_PARTITIONS).values()) \
        + left_open


@pytest.mark.faults
def test_task_retries_after_and_before_the_transaction_leave_the_output_exact(kafka_bootstrap, tmp_path):
    driver = Driver(tmp_path, kafka_bootstrap, master="local[2,3]")
    plans = [{"mode": "fail-after-commit", "batch": 1, "partition": 0},
             {"mode": "fail-in-update", "batch": 2, "partition": 1}]
    code = driver.start(plans)
    assert code == 0, driver.stderr[-5000:]
    assert (driver.out / "done-0").exists() and (driver.out / "done-1").exists()   # both failed once
    driver.check_output()
    assert driver.skipped(1, 0, 0)              # the retry found batch 1 committed in partition 0
    assert not driver.skipped(2, 1, 0)          # batch 2's retry in partition 1 sent it
