"""The executor-side stage clock and timing wrapper, and the driver's split of a batch's counters."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from trident_spark.executor.metrics import STAGE, StageClock, timed
from trident_spark.runtime.metrics import split_counters, with_spark_rest


class FakeAccumulator:
    def __init__(self):
        self.value = {}

    def add(self, counters):
        for key, count in counters.items():
            self.value[key] = self.value.get(key, 0) + count


def batches(*sizes, pause=0.0):
    for n in sizes:
        time.sleep(pause)  # the stage before: its time is not this stage's
        yield pa.RecordBatch.from_pydict({"x": list(range(n))})


def doubling(rows):
    for batch in rows:
        time.sleep(0.02)
        yield pa.RecordBatch.from_pydict({"x": batch.column(0).to_pylist() * 2})


def test_timed_counts_own_time_and_rows_not_the_upstream_wait():
    accumulator = FakeAccumulator()
    out = list(timed(doubling, "python", "double", accumulator)(batches(3, 4, pause=0.05)))
    assert [b.num_rows for b in out] == [6, 8]
    counted = accumulator.value
    assert counted[(STAGE, "python", "double", "rows_in")] == 7
    assert counted[(STAGE, "python", "double", "rows_out")] == 14
    assert counted[(STAGE, "python", "double", "tasks")] == 1
    assert 35 <= counted[(STAGE, "python", "double", "ms")] < 90  # 2 x 20 ms, not the 100 ms upstream


def test_timed_without_an_accumulator_is_the_function_itself():
    assert timed(doubling, "python", "double", None) is doubling


def test_timed_counts_a_task_that_fails():
    accumulator = FakeAccumulator()

    def failing(rows):
        next(rows)
        raise ValueError("boom")
        yield  # pragma: no cover

    with pytest.raises(ValueError, match="boom"):
        list(timed(failing, "python", "f", accumulator)(batches(5)))
    assert accumulator.value[(STAGE, "python", "f", "rows_in")] == 5


def test_stage_clock_sums_and_sends_once():
    accumulator = FakeAccumulator()
    clock = StageClock()
    clock.add("python", "f", ms=1.0, rows_in=2, rows_out=3)
    clock.add("python", "f", ms=2.0, rows_in=2, rows_out=1)
    clock.send(accumulator)
    clock.send(accumulator)  # nothing left to send
    assert accumulator.value == {(STAGE, "python", "f", "ms"): 3.0, (STAGE, "python", "f", "rows_in"): 4,
                                 (STAGE, "python", "f", "rows_out"): 4, (STAGE, "python", "f", "tasks"): 2}


def test_split_orders_by_operator_then_kind_and_keeps_state_counters_apart():
    counters = {
        "cache_hits": 3,
        (STAGE, "state_query", "lookup", "ms"): 4.0,
        (STAGE, "python", "split", "ms"): 1.0,
        (STAGE, "state_put", "counts / multiPut", "ms"): 2.0,
        (STAGE, "state_get", "counts / multiGet", "ms"): 2.0,
        (STAGE, "aggregate", "counts / update", "ms"): 5.0,
    }
    state, stages = split_counters(counters, order=["split", "counts", "lookup"])
    assert state == {"cache_hits": 3}
    assert [(s["name"], s["kind"], s["ms"]) for s in stages] == [
        ("split", "python", 1.0), ("counts / multiGet", "state_get", 2.0),
        ("counts / update", "aggregate", 1.0), ("counts / multiPut", "state_put", 2.0),
        ("lookup", "state_query", 4.0)]


def test_spark_rest_is_what_the_measured_stages_leave_of_executor_time():
    stages = [{"name": "split", "kind": "python", "ms": 120.0}]
    assert with_spark_rest(stages, {})[-1]["name"] == "split"
    rest = with_spark_rest(stages, {"executor_run_ms": 100.0, "tasks": 4})[-1]
    assert (rest["name"], rest["ms"], rest["tasks"]) == ("spark", 0.0, 4)  # never negative
