"""FailedException on real Spark: the whole batch is replayed (bounded), then the query fails.

Operations run in Python workers, so they count their attempts in a file: the
attempt counter must survive the worker process and be visible to the test.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import FailedException, TridentTopology
from trident_spark.errors import OperatorError
from trident_spark.operation import Aggregator, BaseFunction
from trident_spark.runtime.failures import StreamFailedError
from trident_spark.runtime.handle import TopologyHandle
from trident_spark.sink import CollectSink
from trident_spark.spout import FeederBatchSpout

pytestmark = pytest.mark.integration

# pytest imports this file from a path the executors do not have: ship its classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

LONG = "x" * 400
BATCHES = [
    [["the cat"], ["a dog"]],
    [["flaky cat " + LONG], ["the end"], ["cat"]],  # batch 1 holds the tuple that fails
    [["dog days"]],
]
EXPECTED_WORDS = {
    0: ["the", "cat", "a", "dog"],
    1: ["flaky", "cat", LONG, "the", "end", "cat"],
    2: ["dog", "days"],
}


def record_attempt(path: str) -> int:
    """Append one line to ``path`` and return how many there are (this attempt's number)."""
    with open(path, "a", encoding="utf-8") as out:
        out.write("attempt\n")
    with open(path, encoding="utf-8") as counted:
        return len(counted.read().splitlines())


def attempts(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


class FlakySplit(BaseFunction):
    """Split words; on the tuple starting with "flaky" in batch ``txid``, raise ``error`` the
    first ``fails`` times."""

    def __init__(self, path: Path, fails: int, error: type[Exception] = FailedException,
                 cause: str = "store down", txid: int = 1) -> None:
        self.path, self.fails, self.error, self.cause, self.fail_txid = str(path), fails, error, cause, txid

    def prepare(self, conf, context):
        self.context = context  # prepared once per run: its txid follows the batch being run

    def execute(self, tuple, collector):
        sentence = tuple.getString(0)
        failing = self.context.txid == self.fail_txid and sentence.startswith("flaky")
        if failing and record_attempt(self.path) <= self.fails:
            raise self.error(self.cause)
        for word in sentence.split():
            collector.emit([word])


class FlakyCount(Aggregator):
    """Count the tuples of each group; on the word "flaky" in batch 1, raise FailedException
    the first ``fails`` times (runs in the Python aggregation stage, executor.aggregate_stage)."""

    def __init__(self, path: Path, fails: int) -> None:
        self.path, self.fails = str(path), fails

    def init(self, batch_id, collector):
        return {"batch": batch_id, "n": 0}

    def aggregate(self, state, tuple, collector):
        failing = state["batch"] == 1 and tuple.getString(0) == "flaky"
        if failing and record_attempt(self.path) <= self.fails:
            raise FailedException("counts store down")
        state["n"] += 1

    def complete(self, state, collector):
        collector.emit([state["n"]])


def feeder() -> FeederBatchSpout:
    spout = FeederBatchSpout(["sentence"])
    for tuples in BATCHES:
        spout.feed(tuples)
    return spout


def run(spark: Any, checkpoint: Path, name: str, spout: FeederBatchSpout, build: Callable[[Any], Any],
        trigger: str | None = "available_now", **options: Any) -> tuple[TopologyHandle, CollectSink]:
    """Start ``build(newStream(name, spout)).collect()``; the caller waits and stops the handle."""
    topology = TridentTopology()
    sink = build(topology.newStream(name, spout)).collect()
    handle = topology.run(checkpoint_location=checkpoint, trigger=trigger, spark=spark, **options)
    return handle, sink


def finish(handle: TopologyHandle) -> None:
    try:
        assert handle.awaitTermination(120), "the available_now run did not end in 120 s"
    finally:
        handle.stop()


def sorted_batches(sink: CollectSink) -> dict[int, list[tuple[Any, ...]]]:
    return {txid: sorted(tuple(sorted(t.items())) for t in tuples) for txid, tuples in sink.batches.items()}


def txids(handle: TopologyHandle, stream: str) -> list[int]:
    return [p.txid for p in handle.progress if p.stream == stream]


# --- replay, then success -----------------------------------------------------------------------
def test_a_failed_batch_is_replayed_and_leaves_the_result_of_one_clean_run(spark, tmp_path, caplog):
    spout = feeder()
    counter = tmp_path / "attempts"
    caplog.set_level(logging.WARNING, logger="trident_spark.runtime.batch")

    handle, sink = run(spark, tmp_path / "flaky", "flaky", spout,
                       lambda s: s.each(["sentence"], FlakySplit(counter, fails=2), ["word"]),
                       max_batch_retries=3, retry_delay=0.05)
    finish(handle)
    clean, clean_sink = run(spark, tmp_path / "clean", "clean", spout,
                            lambda s: s.each(["sentence"], FlakySplit(tmp_path / "unused", fails=0),
                                             ["word"]))
    finish(clean)

    assert attempts(counter) == 3  # two FailedExceptions, then the attempt that succeeded
    assert {txid: [t["word"] for t in tuples] for txid, tuples in sink.batches.items()} == EXPECTED_WORDS
    assert sink.batches == clean_sink.batches  # no tuple of a failed attempt is left over
    assert txids(handle, "flaky") == [0, 1, 2]  # each batch id once: the replays are inside batch 1
    assert [p.rows for p in clean.progress] == [2, 3, 1]
    # the replayed batch counts its rows once, and says it took three attempts
    assert [(p.txid, p.rows, p.attempts) for p in handle.progress] == [(0, 2, 1), (1, 3, 3), (2, 1, 1)]
    assert re.match(r"\[flaky\] batch 1: 3 rows, \d+ ms, 3 attempts(;|$)", handle.progress[1].line())
    replays = [r.getMessage() for r in caplog.records if "asked to be replayed" in r.getMessage()]
    assert len(replays) == 2, replays
    for n, line in enumerate(replays, start=1):
        assert line.startswith("stream flaky: batch 1 asked to be replayed (store down"), line
        assert f"retry {n} of 3" in line, line


def test_a_failed_exception_from_an_aggregator_replays_the_batch(spark, tmp_path):
    spout = feeder()
    counter = tmp_path / "attempts"

    def count_words(fails: int, path: Path) -> Callable[[Any], Any]:
        return lambda s: (s.each(["sentence"], FlakySplit(tmp_path / "unused", fails=0), ["word"])
                          .groupBy(["word"]).aggregate(["word"], FlakyCount(path, fails), ["count:bigint"]))

    handle, sink = run(spark, tmp_path / "agg", "agg", spout, count_words(2, counter),
                       max_batch_retries=2, retry_delay=0.05)
    finish(handle)
    clean, clean_sink = run(spark, tmp_path / "agg-clean", "aggclean", spout,
                            count_words(0, tmp_path / "unused-agg"))
    finish(clean)

    assert attempts(counter) == 3
    assert sorted_batches(sink) == sorted_batches(clean_sink)
    # Each attempt read the batch before its aggregation failed (Spark counted 9 rows for the 3):
    # the progress counts them once
    assert [(p.txid, p.rows, p.attempts) for p in handle.progress] == [(0, 2, 1), (1, 3, 3), (2, 1, 1)]
    assert [p.rows for p in clean.progress] == [2, 3, 1]
    assert sorted((t["word"], t["count"]) for t in sink.batches[1]) == sorted([
        ("cat", 2), ("end", 1), ("flaky", 1), (LONG, 1), ("the", 1)])
    assert txids(handle, "agg") == [0, 1, 2]


def test_a_failed_exception_raised_on_the_driver_replays_the_batch(spark, tmp_path):
    """The same retry loop serves a failure in driver-side code of the batch (here the sink)."""
    spout = feeder()
    calls: list[int] = []

    def build(stream: Any) -> Any:
        return stream.each(["sentence"], FlakySplit(tmp_path / "unused", fails=0), ["word"])

    topology = TridentTopology()
    sink = build(topology.newStream("driver", spout)).collect()
    record = sink.record

    def flaky_record(txid: int, tuples: list[dict[str, Any]]) -> None:
        calls.append(txid)
        if txid == 1 and calls.count(1) <= 2:
            raise FailedException("driver-side store down")
        record(txid, tuples)

    sink.record = flaky_record  # type: ignore[method-assign]
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark,
                          max_batch_retries=2, retry_delay=0.01)
    finish(handle)

    assert calls == [0, 1, 1, 1, 2]
    assert {txid: [t["word"] for t in tuples] for txid, tuples in sink.batches.items()} == EXPECTED_WORDS
    assert txids(handle, "driver") == [0, 1, 2]
    assert [(p.rows, p.attempts) for p in handle.progress] == [(2, 1), (3, 3), (1, 1)]  # read 3 times


# --- retries exhausted ---------------------------------------------------------------------------
def exhaust(spark: Any, tmp_path: Path, name: str, retries: int, wait: str) -> tuple[str, Path, Any, Any]:
    """Run a stream whose batch 1 always raises FailedException("store down"); the error raised."""
    counter = tmp_path / "attempts"
    trigger = None if wait == "processAllAvailable" else "available_now"
    handle, sink = run(spark, tmp_path / "ckpt", name, feeder(),
                       lambda s: s.each(["sentence"], FlakySplit(counter, fails=10**6), ["word"]),
                       trigger=trigger, max_batch_retries=retries, retry_delay=0.01)
    try:
        with pytest.raises(FailedException) as info:
            if wait == "processAllAvailable":
                handle.processAllAvailable()
            else:
                handle.awaitTermination(120)
        assert isinstance(handle.exception(), FailedException)
    finally:
        handle.stop()
    return str(info.value), counter, handle, sink


@pytest.mark.parametrize("wait", ["processAllAvailable", "awaitTermination"])
def test_retries_exhausted_fail_the_query_naming_batch_stream_attempts_and_cause(spark, tmp_path, wait):
    message, counter, handle, sink = exhaust(spark, tmp_path, "exhausted", 2, wait)

    assert attempts(counter) == 3  # the first attempt and two retries
    assert message.startswith("batch 1 of stream 'exhausted' failed 3 times (max_batch_retries=2); "
                              "last cause: store down")
    assert sorted(sink.batches) == [0]  # batch 0 finished; batch 1 recorded nothing
    assert txids(handle, "exhausted") == [0]


def test_no_retries_fails_at_once(spark, tmp_path):
    message, counter, handle, sink = exhaust(spark, tmp_path, "atonce", 0, "processAllAvailable")

    assert attempts(counter) == 1
    assert txids(handle, "atonce") == [0]
    assert re.match(r"batch 1 of stream 'atonce' failed 1 times? \(max_batch_retries=0\); last cause: "
                    r"store down", message), message
    assert sorted(sink.batches) == [0]


def test_retry_exhaustion_message_is_exact(spark, tmp_path):
    message, _, _, _ = exhaust(spark, tmp_path, "exact", 2, "processAllAvailable")
    assert message == ("batch 1 of stream 'exact' failed 3 times (max_batch_retries=2); last cause: "
                       "store down")
    message, _, _, _ = exhaust(spark, tmp_path / "once", "exactonce", 0, "processAllAvailable")
    assert message == ("batch 1 of stream 'exactonce' failed 1 time (max_batch_retries=0); last cause: "
                       "store down")


# --- other exceptions: no retry ------------------------------------------------------------------
def test_any_other_exception_fails_the_query_without_retry(spark, tmp_path):
    counter = tmp_path / "attempts"
    handle, sink = run(spark, tmp_path / "ckpt", "broken", feeder(),
                       lambda s: s.each(["sentence"], FlakySplit(counter, fails=10**6, error=ValueError,
                                                                 cause="not a sentence"), ["word"])
                       .name("split words"),
                       trigger=None, max_batch_retries=3, retry_delay=0.01)
    try:
        with pytest.raises(OperatorError) as info:
            handle.processAllAvailable()
    finally:
        handle.stop()

    assert attempts(counter) == 1  # never replayed
    shown = repr({"sentence": "flaky cat " + LONG})[:300] + "...(truncated)"
    assert str(info.value) == (
        f"split words failed on tuple {shown}: ValueError: not a sentence (stream 'broken')")
    assert sorted(sink.batches) == [0]


def test_an_error_in_driver_side_code_fails_without_retry(spark, tmp_path):
    calls: list[int] = []
    topology = TridentTopology()
    sink = topology.newStream("driverbug", feeder()).collect()

    def broken_record(txid: int, tuples: list[dict[str, Any]]) -> None:
        calls.append(txid)
        raise RuntimeError("sink broke")

    sink.record = broken_record  # type: ignore[method-assign]
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark,
                          max_batch_retries=3, retry_delay=0.01)
    try:
        with pytest.raises(StreamFailedError) as info:
            handle.awaitTermination(120)
    finally:
        handle.stop()

    assert calls == [0]
    assert str(info.value).startswith("stream 'driverbug' failed: ")


def test_an_error_in_driver_side_code_names_its_cause(spark, tmp_path):
    topology = TridentTopology()
    sink = topology.newStream("driverbug2", feeder()).collect()

    def broken_record(txid: int, tuples: list[dict[str, Any]]) -> None:
        raise RuntimeError("sink broke")

    sink.record = broken_record  # type: ignore[method-assign]
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        with pytest.raises(StreamFailedError) as info:
            handle.awaitTermination(120)
    finally:
        handle.stop()
    assert str(info.value) == "stream 'driverbug2' failed: RuntimeError: sink broke"
