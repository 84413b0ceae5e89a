"""A broker or store that does not answer: a batch, and the spout's planning, wait within the outage
budget (capped backoff, a warning and a record per wait), then fail naming the address and the budget.

No Spark and no real waiting: attempts raise scripted errors and time is a fake clock.
"""

from __future__ import annotations

import doctest
import json
import logging
from pathlib import Path
from typing import Any

import pytest

import trident_spark.outage
from trident_spark.errors import (
    BrokerUnavailableError,
    FailedException,
    StateConflictError,
    StateUnavailableError,
    TopologyError,
)
from trident_spark.fields import Fields
from trident_spark.graph import SpoutNode
from trident_spark.outage import WAIT_FILE, Outage, check_outage_budget, describe_wait, read_wait
from trident_spark.planner.query import QueryPlan
from trident_spark.runtime.batch import BatchRunner
from trident_spark.spout import KafkaSpout

BROKER = "127.0.0.1:9092"
STORE = "redis://127.0.0.1:6379/0?prefix=wc"


def store_down() -> StateUnavailableError:
    return StateUnavailableError(STORE, "ConnectionError: reset by peer")


def broker_down() -> BrokerUnavailableError:
    return BrokerUnavailableError(f"KafkaSpout: no records from words[0] at offset 40 for 20 s while "
                                  f"reading [40, 90) from {BROKER}. Check that the broker is up.")


class Clock:
    """Time that moves only when the code sleeps or an attempt fails."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Scripted(BatchRunner):
    """A runner whose attempts raise the given errors in turn (each failed attempt costs
    ``attempt_s`` on the clock), then succeed."""

    def __init__(self, failures: list[Exception], *, budget: float = 180.0, attempt_s: float = 20.0,
                 max_retries: int = 3, checkpoint: Path | None = None) -> None:
        spout = SpoutNode(Fields(["value"]), stream_name="words", spout=KafkaSpout(BROKER, ["words"]))
        super().__init__(QueryPlan([spout], [], [], {}, {}), {}, max_retries, retry_delay=0.0,
                         checkpoint=checkpoint, outage_budget=budget)
        self.failures = list(failures)
        self.attempts = 0
        self.attempt_s = attempt_s
        self.clock = Clock()
        self.records: list[dict[str, Any] | None] = []

    def _outage(self, batch_id: int) -> Outage:
        outage = super()._outage(batch_id)
        outage.clock = lambda: self.clock.now
        outage.sleep = self._sleep
        if self.query_active is None:  # waits in one sleep each (no query to ask between)
            outage.stopped = None
        return outage

    def _sleep(self, seconds: float) -> None:
        if self.checkpoint is not None:
            self.records.append(read_wait(self.checkpoint))
        self.clock.sleep(seconds)

    def run_once(self, df: Any, batch_id: int) -> dict[Any, float]:
        self.attempts += 1
        if self.failures:
            self.clock.now += self.attempt_s
            raise self.failures.pop(0)
        return {}


def test_a_60_s_broker_outage_is_waited_through_with_capped_backoff(caplog, tmp_path):
    # Each attempt fails after 20 s (the spout's timeout): the outage is seen at 20 s, and its
    # length counts from there.
    runner = Scripted([broker_down()] * 3, checkpoint=tmp_path)
    with caplog.at_level(logging.WARNING, logger="trident_spark.outage"):
        runner(None, 7)
    assert runner.attempts == 4
    assert runner.clock.sleeps == [0.5, 1.0, 2.0]
    waits = [r.getMessage() for r in caplog.records if "waiting for" in r.getMessage()]
    assert waits[0] == ("stream words: batch 7 waiting for broker at 127.0.0.1:9092 (0 s of the 180 s "
                        "outage budget used): " + str(broker_down()))
    assert [w.split("(")[1].split(" s of")[0] for w in waits] == ["0", "20", "42"]
    assert caplog.records[-1].getMessage() == (
        "stream words: broker at 127.0.0.1:9092 answers again after 44 s; batch 7 goes on")
    # While it waited, the checkpoint said so; once the broker answered, the record went.
    assert [(r["doing"], r["kind"], r["address"], r["used_s"], r["budget_s"], r["next_attempt_s"])
            for r in runner.records if r] == [("batch 7", "broker", BROKER, 0.0, 180.0, 0.5),
                                              ("batch 7", "broker", BROKER, 20.5, 180.0, 1.0),
                                              ("batch 7", "broker", BROKER, 41.5, 180.0, 2.0)]
    assert not (tmp_path / WAIT_FILE).exists()


def test_waits_double_up_to_10_s_and_never_past_the_budget():
    runner = Scripted([store_down()] * 20, budget=60, attempt_s=1.0)
    with pytest.raises(StateUnavailableError):
        runner(None, 0)
    # 0.5 1 2 4 8 10 10 ... capped at 10 s, the last one cut to what is left of the 60 s
    assert runner.clock.sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, 6.5]
    assert runner.attempts == 10


def test_an_outage_past_the_budget_fails_with_the_causes_error_naming_address_and_budget(tmp_path):
    runner = Scripted([broker_down()] * 20, budget=50, checkpoint=tmp_path)
    with pytest.raises(BrokerUnavailableError) as caught:
        runner(None, 3)
    # attempts fail at 20, 40.5, 61.5 and 83.5 s: the last is past 50 s from the first failure
    assert runner.attempts == 4
    assert str(caught.value) == (
        f"KafkaSpout: no records from words[0] at offset 40 for 20 s while reading [40, 90) from {BROKER}"
        f". Check that the broker is up; the broker at {BROKER} did not answer for 64 s, past "
        "outage_budget=50 s, so the stream stopped. Restarted with the same checkpoint it resumes exactly "
        "where it stopped (`trident-spark run FILE --restart-on-failure N` restarts it for you); to wait "
        "longer, raise run(outage_budget=)")
    assert not (tmp_path / WAIT_FILE).exists()  # a stopped stream waits for nothing


def test_a_store_outage_past_the_budget_keeps_the_store_error_and_its_address():
    runner = Scripted([store_down()] * 20, budget=30)
    with pytest.raises(StateUnavailableError) as caught:
        runner(None, 3)
    assert caught.value.address == STORE
    assert str(caught.value).startswith(
        f"cannot use the state store at {STORE}: ConnectionError: reset by peer; the store at {STORE} "
        "did not answer for 42 s, past outage_budget=30 s, so the stream stopped.")


def test_a_query_stopped_during_a_wait_stops_waiting_within_a_second(tmp_path):
    runner = Scripted([broker_down()] * 20, checkpoint=tmp_path)
    runner.query_active = lambda: sum(runner.clock.sleeps) < 5  # handle.stop() after 5 s of waiting
    with pytest.raises(BrokerUnavailableError) as caught:
        runner(None, 2)
    assert str(caught.value) == str(broker_down())  # the cause, as it was: the stream is stopping
    # waits of 0.5, 1, 2 and 4 s, slept a second at a time and asked between: stopped at 5.5 s
    assert runner.attempts == 4 and runner.clock.sleeps == [0.5, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert not (tmp_path / WAIT_FILE).exists()


def test_a_query_that_cannot_be_asked_is_taken_as_running():
    runner = Scripted([])
    assert runner._stopped() is False  # not started yet
    runner.query_active = lambda: 1 / 0
    assert runner._stopped() is False
    runner.query_active = lambda: False
    assert runner._stopped() is True


def test_another_failure_after_a_wait_ends_the_wait_record(tmp_path):
    runner = Scripted([broker_down(), ValueError("the query was stopped")], checkpoint=tmp_path)
    with pytest.raises(ValueError):
        runner(None, 2)
    assert runner.records[0] is not None and runner.records[0]["doing"] == "batch 2"
    assert not (tmp_path / WAIT_FILE).exists()


def test_the_outage_budget_does_not_use_up_max_batch_retries():
    # 5 waits for the store, more than max_batch_retries=1, then one replay asked for: it passes.
    runner = Scripted([store_down()] * 5 + [FailedException("flaky")], max_retries=1, attempt_s=1.0)
    runner(None, 4)
    assert runner.attempts == 7


def test_replays_are_still_bounded_by_max_batch_retries():
    runner = Scripted([StateConflictError("sqlite:///wc.db?table=wc", ["cat"], attempts=11)] * 3,
                      max_retries=2)
    with pytest.raises(StateConflictError):
        runner(None, 0)
    assert runner.attempts == 3


def test_a_budget_of_0_fails_at_the_first_outage_with_the_error_as_it_was():
    runner = Scripted([store_down()], budget=0)
    with pytest.raises(StateUnavailableError) as caught:
        runner(None, 0)
    assert str(caught.value) == f"cannot use the state store at {STORE}: ConnectionError: reset by peer"
    assert runner.attempts == 1 and runner.clock.sleeps == []


def test_an_outage_that_ends_starts_the_count_again():
    outage = Outage(100, "words", "batch 1", clock=lambda: clock.now, sleep=lambda s: clock.sleep(s))
    clock = Clock()
    for _ in range(3):
        outage.wait(broker_down(), "broker", BROKER)
    clock.now += 90
    assert outage.end() == pytest.approx(93.5)
    outage.wait(broker_down(), "broker", BROKER)  # a new outage: 0 s of its budget used
    assert clock.sleeps == [0.5, 1.0, 2.0, 0.5]


@pytest.mark.parametrize("bad", [-1, "3m", None, float("nan"), True])
def test_outage_budget_must_be_seconds_at_least_0(bad):
    with pytest.raises(TopologyError) as caught:
        check_outage_budget(bad)
    assert str(caught.value) == (
        "run(): outage_budget must be a number of seconds >= 0 (how long a stream waits for a broker or "
        f"store that does not answer before it fails; 0 fails at once), got {bad!r}")


def test_run_refuses_a_bad_outage_budget_before_anything_starts(tmp_path):
    from trident_spark import TridentTopology
    from trident_spark.spout import FeederBatchSpout

    topology = TridentTopology()
    topology.newStream("words", FeederBatchSpout(["word"])).collect()
    with pytest.raises(TopologyError, match=r"outage_budget must be a number of seconds >= 0"):
        topology.run(checkpoint_location=tmp_path, spark=None, outage_budget=-5)
    assert list(tmp_path.iterdir()) == []


def test_describe_wait_is_what_status_shows():
    record = {"doing": "planning the next batch", "kind": "broker", "address": BROKER,
              "since": "2025-06-01T10:20:30+00:00", "used_s": 61.6, "budget_s": 180.0}
    assert describe_wait(record) == ("planning the next batch waiting for broker at 127.0.0.1:9092 since "
                                     "10:20:30 UTC (62 s of the 180 s outage budget used)")


def test_the_module_examples_run():
    failures, attempted = doctest.testmod(trident_spark.outage, optionflags=doctest.ELLIPSIS)
    assert (failures, attempted > 0) == (0, True)


# --- the spout's planning on the driver -------------------------------------------------------------
class FlakyClient:
    """A broker client whose metadata request fails ``failures`` times, then answers."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def topic_partitions(self):
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise BrokerUnavailableError(f"Kafka at {BROKER} did not answer a metadata request within 20 s "
                                         "(KafkaError{code=_TRANSPORT}).")
        return [("words", 0)]

    def earliest_offsets(self, partitions):
        return {tp: 0 for tp in partitions}

    def probe(self, starts, sample_bytes):
        from trident_spark.spout.kafka.client import ProbeResult
        from trident_spark.spout.kafka.offsets import PartitionSample

        return {tp: ProbeResult(10, PartitionSample(offsets=list(range(10)), sizes=[5] * 10, complete=True))
                for tp in starts}

    def close(self):
        pass


def planning_reader(failures: int, budget: float, outage_dir: Path):
    from trident_spark.spout.kafka.config import KafkaSpoutConfig
    from trident_spark.spout.kafka.run import KafkaRun
    from trident_spark.spout.kafka.source import KafkaStreamReader

    config = KafkaSpoutConfig(BROKER, topics=("words",))
    reader = KafkaStreamReader(config, None, KafkaRun(str(outage_dir), outage_budget_s=budget))  # type: ignore[arg-type]
    client = FlakyClient(failures)
    reader._client = client  # type: ignore[assignment]
    clock = Clock()
    reader._outage.clock = lambda: clock.now
    seen: list[dict[str, Any] | None] = []

    def sleep(seconds: float) -> None:
        seen.append(read_wait(outage_dir))
        clock.sleep(seconds + 20)  # and the next attempt's 20 s

    reader._outage.sleep = sleep
    return reader, client, clock, seen


def test_planning_waits_for_the_broker_and_records_it(tmp_path):
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    stream_dir = tmp_path / "words"
    stream_dir.mkdir()
    reader, client, clock, seen = planning_reader(2, 180, stream_dir)
    document = reader.latestOffset({"offsets": {"words": {"0": 0}}}, ReadAllAvailable())
    reader.stop()
    assert document["offsets"] == {"words": {"0": 10}}
    assert client.failures == 0 and clock.sleeps == [20.5, 21.0]  # two waits, then it answered
    assert [json.dumps(r["message"]) for r in seen if r] == [json.dumps(
        f"stream words: planning the next batch waiting for broker at {BROKER} ({used} s of the 180 s outage "
        f"budget used): Kafka at {BROKER} did not answer a metadata request within 20 s "
        "(KafkaError{code=_TRANSPORT}).") for used in (0, 20)]
    assert read_wait(stream_dir) is None


def test_planning_fails_past_the_budget_naming_the_broker(tmp_path):
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    reader, client, _, _ = planning_reader(10, 30, tmp_path)
    with pytest.raises(BrokerUnavailableError) as caught:
        reader.latestOffset({"offsets": {"words": {"0": 0}}}, ReadAllAvailable())
    assert client.calls == 3  # fails at 0, 20.5 and 41.5 s
    assert f"the broker at {BROKER} did not answer for 42 s, past outage_budget=30 s" in str(caught.value)


def test_the_runtime_gives_the_kafka_spout_its_budget_and_checkpoint(tmp_path):
    from trident_spark.spout.base import SpoutRun

    spout = KafkaSpout(BROKER, ["words"])
    run = spout.for_run(SpoutRun(tmp_path / "words", 240.0)).run
    assert (run.outage_budget_s, run.checkpoint) == (240.0, str(tmp_path / "words"))
    assert spout.run.outage_budget_s == 0.0  # the user's spout is left as it was


# --- a batch's read on an executor ------------------------------------------------------------------
class PausedBrokerConsumer:
    """A pooled consumer that read events[0] up to offset 10 in an earlier task (its cached high
    watermark), assigned at 20 while the broker does not answer."""

    def assign(self, partitions):
        pass

    def unassign(self):
        pass

    def consume(self, num_messages, timeout):
        return []

    def get_watermark_offsets(self, tp, cached=False, timeout=None):
        if cached:
            return (0, 10)
        from confluent_kafka import KafkaError, KafkaException

        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))


def test_a_read_from_a_paused_broker_is_an_outage_not_data_loss():
    import pyarrow as pa

    from trident_spark.spout.kafka.config import KafkaSpoutConfig
    from trident_spark.spout.kafka.offsets import OffsetRange
    from trident_spark.spout.kafka.read import _read

    config = KafkaSpoutConfig(BROKER, topics=("events",), timeout_s=0.2)
    with pytest.raises(BrokerUnavailableError) as caught:
        list(_read(config, pa.schema([("value", pa.string())]), OffsetRange("events", 0, 20, 30),
                   PausedBrokerConsumer()))
    assert str(caught.value) == (f"KafkaSpout: no records from events[0] at offset 20 for 0.2 s while "
                                 f"reading [20, 30) from {BROKER}. Check that the broker is up.")
