"""A batch replayed in the run: what Spark counted before the attempt that succeeded comes off its
progress, and the accounting travels with the task counters without touching them."""

from __future__ import annotations

import doctest
import importlib

import pytest

from trident_spark.runtime.metrics import split_counters
from trident_spark.runtime.replayed_rows import SparkReads, count_once, take_attempts, with_attempts


def test_a_batch_run_once_carries_nothing_extra():
    counters = {"store_reads": 1.0}
    assert with_attempts(counters, 1, SparkReads(10)) is counters
    assert take_attempts(dict(counters)) == (1, None)


def test_the_accounting_round_trips_and_leaves_the_task_counters_as_they_were():
    counters = {"store_reads": 2.0, ("stage", "python", "f", "ms"): 1.5}
    sent = with_attempts(counters, 4, SparkReads(12))
    assert take_attempts(sent) == (4, SparkReads(12))
    assert sent == counters
    assert split_counters(with_attempts(counters, 4, SparkReads(12))) == split_counters(counters)


def test_a_union_of_spouts_scales_each_source_and_keeps_what_spark_did_not_count_before():
    progress = {"numInputRows": 30, "inputRowsPerSecond": 60.0, "processedRowsPerSecond": "NaN",
                "sources": [{"numInputRows": 20}, {"numInputRows": 10}],
                "observedMetrics": {"a_spout": {"read_ms": 9.0}, "b_spout": {"read_ms": 4.0}}}
    counted = count_once(progress, SparkReads(20))
    assert counted["numInputRows"] == 10
    assert counted["inputRowsPerSecond"] == pytest.approx(20.0)
    assert counted["processedRowsPerSecond"] == "NaN"  # not a number: left as Spark wrote it
    assert [s["numInputRows"] for s in counted["sources"]] == [7, 3]
    # Observed metrics are one attempt's as Spark reports them (it does not add them up)
    assert counted["observedMetrics"] == {"a_spout": {"read_ms": 9.0}, "b_spout": {"read_ms": 4.0}}
    assert progress["numInputRows"] == 30  # Spark's document is not changed


def test_spark_reads_of_something_that_is_not_a_running_query_are_unknown():
    from trident_spark.runtime.replayed_rows import spark_reads_so_far

    assert spark_reads_so_far(object()) is None


@pytest.mark.parametrize("module", ["trident_spark.runtime.replayed_rows",
                                    "trident_spark.runtime.progress_log", "trident_spark.runtime.handle"])
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0
