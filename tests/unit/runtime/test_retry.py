"""The one retry policy (runtime/retry.py) and the driver path's txids (runtime/drpc/txids.py): which
failures replay a batch, how outages are waited, the one failure text, txids never reused.

No Spark and no real waiting: attempts raise scripted errors and time is a fake clock.
"""

from __future__ import annotations

import doctest
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

import trident_spark.runtime.drpc.txids
import trident_spark.runtime.retry
from trident_spark.errors import (
    BrokerUnavailableError,
    FailedException,
    OperatorError,
    StateConflictError,
    StateUnavailableError,
    TopologyError,
)
from trident_spark.outage import Outage
from trident_spark.runtime.drpc.txids import TXIDS_FILE, TxidBlocks
from trident_spark.runtime.retry import RetryPolicy, chained_cause, exhausted

STORE = "redis://127.0.0.1:6379/0?prefix=wc"


class Clock:
    """Time that moves only when the code sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Attempts:
    """Attempts that raise the given errors in turn, then return ``"answer"``."""

    def __init__(self, failures: list[Exception]) -> None:
        self.failures = list(failures)
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        if self.failures:
            raise self.failures.pop(0)
        return "answer"


def policy(clock: Clock, max_retries: int = 3, delay: float = 0.5) -> RetryPolicy:
    return RetryPolicy("words", max_retries, delay, sleep=clock.sleep)


def outage(clock: Clock, budget: float = 60.0) -> Outage:
    return Outage(budget, "words", "batch 4", clock=lambda: clock.now, sleep=clock.sleep)


def conflict() -> StateConflictError:
    return StateConflictError("sqlite:///wc.db?table=wc", ["cat"], attempts=11)


def store_down() -> StateUnavailableError:
    return StateUnavailableError(STORE, "ConnectionError: reset by peer")


def test_failed_exception_and_state_conflicts_replay_with_doubling_delays(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    attempts = Attempts([FailedException("flaky"), conflict(), FailedException("flaky")])
    with caplog.at_level(logging.WARNING, logger="trident_spark.runtime.retry"):
        assert policy(clock).run(attempts, 4, outage(clock)) == "answer"
    assert attempts.count == 4
    assert clock.sleeps == [0.5, 1.0, 2.0]
    assert caplog.records[0].getMessage() == (
        "stream words: batch 4 asked to be replayed (flaky); retry 1 of 3 in 0.5 s")


def test_replays_used_up_on_failed_exception_fail_with_the_one_text() -> None:
    clock = Clock()
    attempts = Attempts([FailedException("flaky (stream 'words')")] * 5)
    with pytest.raises(FailedException) as caught:
        policy(clock, max_retries=2).run(attempts, 4, outage(clock))
    assert attempts.count == 3
    assert str(caught.value) == ("batch 4 of stream 'words' failed 3 times (max_batch_retries=2); "
                                 "last cause: flaky")


def test_no_replay_allowed_says_1_time() -> None:
    clock = Clock()
    with pytest.raises(FailedException) as caught:
        policy(clock, max_retries=0).run(Attempts([FailedException("flaky")]), 0, outage(clock))
    assert str(caught.value) == (
        "batch 0 of stream 'words' failed 1 time (max_batch_retries=0); last cause: flaky")
    assert clock.sleeps == []


def test_replays_used_up_on_a_state_conflict_fail_with_the_stores_own_error() -> None:
    clock = Clock()
    attempts = Attempts([conflict()] * 5)
    with pytest.raises(StateConflictError) as caught:
        policy(clock, max_retries=2).run(attempts, 4, outage(clock))
    assert attempts.count == 3
    assert caught.value.address == "sqlite:///wc.db?table=wc" and caught.value.key == ["cat"]


def test_an_outage_is_waited_out_without_using_up_replays() -> None:
    clock = Clock()
    attempts = Attempts([store_down()] * 4 + [FailedException("flaky")])
    assert policy(clock, max_retries=1).run(attempts, 4, outage(clock)) == "answer"
    assert attempts.count == 6
    assert clock.sleeps == [0.5, 1.0, 2.0, 4.0, 0.5]  # four outage waits, then one replay


def test_an_outage_past_the_budget_fails_naming_the_store_and_the_budget() -> None:
    clock = Clock()
    attempts = Attempts([store_down()] * 20)
    with pytest.raises(StateUnavailableError) as caught:
        policy(clock).run(attempts, 4, outage(clock, budget=5))
    assert caught.value.address == STORE
    assert str(caught.value).startswith(
        f"cannot use the state store at {STORE}: ConnectionError: reset by peer; the store at {STORE} "
        "did not answer for 5 s, past outage_budget=5 s, so the stream stopped.")
    assert clock.sleeps == [0.5, 1.0, 2.0, 1.5]


def test_a_store_error_wrapped_by_an_operation_is_the_stores_outage() -> None:
    clock = Clock()

    def wrapped() -> OperatorError:
        try:
            raise store_down()
        except StateUnavailableError as down:
            try:
                raise OperatorError("stateQuery(MapGet) failed: StateUnavailableError: ...") from down
            except OperatorError as exc:
                return exc

    attempts = Attempts([wrapped(), wrapped()])
    assert policy(clock, max_retries=0).run(attempts, 4, outage(clock)) == "answer"
    assert attempts.count == 3 and clock.sleeps == [0.5, 1.0]


def test_other_errors_fail_at_once_as_they_were_raised() -> None:
    clock = Clock()
    error = TopologyError("bad")
    attempts = Attempts([error])
    with pytest.raises(TopologyError) as caught:
        policy(clock).run(attempts, 4, outage(clock))
    assert caught.value is error and attempts.count == 1 and clock.sleeps == []


def test_a_translate_reads_a_foreign_failure_as_ours() -> None:
    clock = Clock()
    attempts = Attempts([RuntimeError("Spark: FailedException: flaky")])
    translate = lambda exc: FailedException("flaky") if "FailedException" in str(exc) else exc  # noqa: E731
    assert policy(clock).run(attempts, 4, outage(clock), translate=translate) == "answer"
    assert attempts.count == 2


def test_the_broker_is_named_by_the_callers_unavailable() -> None:
    clock = Clock()
    down = BrokerUnavailableError("Kafka at 127.0.0.1:9092 did not answer")
    named: list[tuple[str, str]] = []

    def unavailable(cause: BaseException) -> Any:
        named.append(("broker", "127.0.0.1:9092"))
        return named[-1]

    assert policy(clock).run(Attempts([down]), 4, outage(clock), unavailable=unavailable) == "answer"
    assert named == [("broker", "127.0.0.1:9092")]


def test_chained_cause_keeps_an_error_with_no_retryable_cause() -> None:
    error = OperatorError("each(Split) failed: ValueError: no")
    assert chained_cause(error) is error


def test_exhausted_strips_the_streams_suffix_once() -> None:
    assert str(exhausted("s", 1, 2, 1, FailedException("x (stream 's') (stream 's')"))) == (
        "batch 1 of stream 's' failed 2 times (max_batch_retries=1); last cause: x (stream 's')")


# --- txids of the DRPC driver path ----------------------------------------------------------
def test_txids_go_on_past_a_restart_and_never_repeat(tmp_path: Path) -> None:
    first = TxidBlocks(tmp_path, block=4)
    assert [first.next() for _ in range(6)] == [0, 1, 2, 3, 4, 5]
    assert (tmp_path / TXIDS_FILE).read_text() == "8"
    again = TxidBlocks(tmp_path, block=4)  # a restart: 6 and 7 were reserved, maybe used
    assert [again.next() for _ in range(2)] == [8, 9]


def test_txids_start_past_the_batches_spark_logged(tmp_path: Path) -> None:
    (tmp_path / "offsets").mkdir()
    for name in ("0", "1", "41", ".41.crc", "tmp"):
        (tmp_path / "offsets" / name).write_text("v1\n{}\n")
    assert TxidBlocks(tmp_path, block=10).next() == 42


def test_txids_without_a_checkpoint_count_in_the_process() -> None:
    blocks = TxidBlocks(None)
    assert [blocks.next() for _ in range(3)] == [0, 1, 2]


def test_txids_from_many_threads_are_all_different(tmp_path: Path) -> None:
    blocks = TxidBlocks(tmp_path, block=7)
    taken: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        mine = [blocks.next() for _ in range(50)]
        with lock:
            taken.extend(mine)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == list(range(200))


def test_an_unreadable_txid_file_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / TXIDS_FILE).write_text("lots")
    with pytest.raises(TopologyError) as caught:
        TxidBlocks(tmp_path).next()
    assert str(caught.value) == (
        f"{tmp_path / TXIDS_FILE} does not hold a txid (got 'lots'): the DRPC driver path cannot tell "
        "which txids it used. Restore the file, or write a number above every txid the stream used "
        "(its answers' batches) into it")


def test_a_block_must_hold_a_txid() -> None:
    with pytest.raises(ValueError, match="block must be >= 1, got 0"):
        TxidBlocks(None, block=0)


def test_the_module_examples_run() -> None:
    for module in (trident_spark.runtime.retry, trident_spark.runtime.drpc.txids):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0, module.__name__
