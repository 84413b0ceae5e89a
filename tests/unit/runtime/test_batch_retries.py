"""Which failures replay a batch, and what is raised when replays run out (no Spark needed)."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark.errors import FailedException, StateConflictError, StateUnavailableError, TopologyError
from trident_spark.planner.query import QueryPlan
from trident_spark.runtime.batch import BatchRunner


class Scripted(BatchRunner):
    """A runner whose attempts raise the given errors in turn, then succeed."""

    def __init__(self, failures: list[Exception], max_retries: int = 3) -> None:
        super().__init__(QueryPlan([], [], [], {}, {}), {}, max_retries, retry_delay=0.0)
        self.failures = list(failures)
        self.attempts = 0

    def run_once(self, df: Any, batch_id: int) -> None:
        self.attempts += 1
        if self.failures:
            raise self.failures.pop(0)


def unavailable() -> StateUnavailableError:
    return StateUnavailableError("redis://127.0.0.1:6379/0?prefix=wc", "ConnectionError: reset by peer")


def test_a_store_that_does_not_answer_replays_the_batch_like_failed_exception():
    runner = Scripted([unavailable(), FailedException("flaky"), unavailable()])
    runner(None, 4)
    assert runner.attempts == 4


def test_a_store_still_down_after_the_outage_budget_fails_with_its_own_error_and_address():
    # A store that does not answer is bounded by outage_budget, not max_batch_retries (see
    # test_outages.py for the waits); a budget of 0 fails at the first attempt.
    runner = Scripted([unavailable()] * 5, max_retries=2)
    runner.outage_budget = 0
    with pytest.raises(StateUnavailableError) as caught:
        runner(None, 4)
    assert runner.attempts == 1
    assert str(caught.value).startswith("cannot use the state store at redis://127.0.0.1:6379/0?prefix=wc")


def test_lost_conditional_writes_replay_the_batch():
    runner = Scripted([StateConflictError("sqlite:///tmp/wc.db?table=wc", ["cat"], attempts=11)])
    runner(None, 0)
    assert runner.attempts == 2


def test_other_errors_fail_at_once():
    runner = Scripted([TopologyError("bad")])
    with pytest.raises(TopologyError):
        runner(None, 0)
    assert runner.attempts == 1
