"""measured_inputs() and plan_from_progress(): the plan's inputs measured from finished batches."""

from __future__ import annotations

import doctest
import importlib
import json
from types import SimpleNamespace

import pytest

from trident_spark.runtime.progress import BatchProgress
from trident_spark.tuning import measured_inputs, plan_from_progress


def batch(rows=1600, stages=None, **fields):
    """A finished batch as the lead's BatchProgress will have it: attributes, nothing more."""
    return SimpleNamespace(rows=rows, stages=stages or [], **fields)


def stage(name, ms, rows_in, kind="python", rows_out=None):
    return {"name": name, "kind": kind, "ms": ms, "rows_in": rows_in, "rows_out": rows_out}


def test_the_slowest_stage_gives_per_record_ms():
    batches = [batch(stages=[stage("parse", 800.0, 1600), stage("enrich", 12_800.0, 1600)],
                     record_bytes=1000.0, cores=16,
                     partition_rows={f"events[{n}]": 100 for n in range(16)})
               for _ in range(3)]
    measured = measured_inputs(batches)
    assert measured == {"per_record_ms": 8.0, "other_stages_per_record_ms": 0.5, "record_bytes": 1000.0,
                        "kafka_partitions": 16, "cores": 16}
    p = plan_from_progress(batches, target_batch_ms=850)
    assert p.records_per_batch == 1600  # 850 / (8 + 0.5) x 16


def test_worked_numbers_from_progress():
    batches = [batch(stages=[stage("enrich", 12_800.0, 1600)], record_bytes=1000.0, cores=16,
                     partition_rows={f"events[{n}]": 100 for n in range(16)})]
    p = plan_from_progress(batches, target_batch_ms=800)
    assert (p.records_per_batch, p.max_fetch_bytes, p.throughput) == (1600, 100_000, 2000.0)


def test_fan_out_is_the_slowest_stage_rows_in_per_batch_row():
    batches = [batch(rows=100, stages=[stage("split", 50.0, 100), stage("count", 2000.0, 1000, "aggregate")])]
    measured = measured_inputs(batches)
    assert measured["per_record_ms"] == 2.0  # 2,000 ms / 1,000 words
    assert measured["fan_out"] == 10.0       # 1,000 words / 100 sentences
    assert measured["other_stages_per_record_ms"] == 0.5  # 50 ms / 100 sentences


def test_stages_are_summed_over_batches_by_name():
    batches = [batch(rows=100, stages=[stage("a", 300.0, 100), stage("b", 200.0, 100)]),
               batch(rows=100, stages=[stage("a", 100.0, 100), stage("b", 400.0, 100)])]
    measured = measured_inputs(batches)
    assert measured["per_record_ms"] == 3.0  # b: 600 ms / 200 rows
    assert measured["other_stages_per_record_ms"] == 2.0  # a: 400 ms / 200 rows


def test_record_bytes_are_weighted_by_rows_and_fall_back_to_bytes():
    assert measured_inputs([batch(rows=100, record_bytes=1000.0),
                            batch(rows=300, record_bytes=2000.0)])["record_bytes"] == 1750.0
    assert measured_inputs([batch(rows=100, bytes=50_000)])["record_bytes"] == 500.0


def test_partitions_come_from_partition_rows_or_end_offsets():
    assert measured_inputs([batch(partition_rows={"a[0]": 1, "a[1]": 2}),
                            batch(partition_rows={"a[2]": 3})])["kafka_partitions"] == 3
    assert measured_inputs([batch(end_offsets={"a": {"0": 10, "1": 12}, "b": {"0": 3}})])[
        "kafka_partitions"] == 3


def test_overhead_and_distinct_keys_are_measured():
    batches = [batch(durations_ms={"triggerExecution": 900, "addBatch": 820}, state={"keys_written": 1000}),
               batch(durations_ms={"triggerExecution": 860, "addBatch": 800}, state={"cache_hits": 700,
                                                                                       "cache_misses": 301})]
    measured = measured_inputs(batches)
    assert measured["batch_overhead_ms"] == 70.0
    assert measured["distinct_keys_per_batch"] == 1001  # mean of 1,000 and 1,001, rounded up


def test_dicts_json_lines_and_batch_progress_are_read_alike():
    fields = {"stream": "events", "txid": 3, "rows": 1600, "duration_ms": 800, "record_bytes": 1000.0,
              "end_offsets": {"events": {str(n): 100 for n in range(16)}}}
    expected = {"record_bytes": 1000.0, "kafka_partitions": 16}
    assert measured_inputs([fields]) == expected
    assert measured_inputs([json.dumps(fields)]) == expected
    assert measured_inputs([BatchProgress(**fields)]) == expected  # today's fields, no stages yet


def test_empty_batches_are_skipped():
    batches = [batch(rows=0, record_bytes=5.0), batch(record_bytes=1000.0)]
    assert measured_inputs(batches)["record_bytes"] == 1000


def test_no_records_at_all_is_an_error():
    with pytest.raises(ValueError, match="none of the batches read any records"):
        measured_inputs([batch(rows=0)])
    with pytest.raises(ValueError, match="none of the batches read any records"):
        plan_from_progress([], target_batch_ms=800)


def test_what_the_batches_do_not_show_must_be_given():
    batches = [batch(record_bytes=1000.0)]  # no stages, partitions or cores
    with pytest.raises(ValueError) as error:
        plan_from_progress(batches)
    assert str(error.value) == (
        "plan_from_progress(): the batches do not show kafka_partitions, per_record_ms, target_batch_ms, "
        "cores; give kafka_partitions=16, per_record_ms=8, target_batch_ms=800, cores=16 (your numbers)")
    p = plan_from_progress(batches, kafka_partitions=16, per_record_ms=8, target_batch_ms=800, cores=16)
    assert p.records_per_batch == 1600


def test_overrides_win_over_measurements():
    batches = [batch(stages=[stage("enrich", 12_800.0, 1600)], record_bytes=1000.0, cores=16,
                     partition_rows={f"events[{n}]": 100 for n in range(16)})]
    p = plan_from_progress(batches, target_batch_ms=800, cores=8, record_bytes=500)
    assert p.records_per_batch == 800 and p.max_fetch_bytes == 25_000
    p = plan_from_progress(batches, target_batch_ms=800, executors=2, cores_per_executor=4)
    assert p.parallelism == 8 and p.formulas["parallelism"].startswith("parallelism = executors x")


def test_docstring_examples_run():
    result = doctest.testmod(importlib.import_module("trident_spark.tuning.measured"))
    assert result.failed == 0 and result.attempted > 0
