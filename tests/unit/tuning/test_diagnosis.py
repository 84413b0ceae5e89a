"""The tuning notes' diagnosis of batch progress: every verdict and every bottleneck kind, from
synthetic batches written as the JSON lines of ``trident-progress.jsonl``."""

from __future__ import annotations

import json

import pytest

from trident_spark.runtime.progress import BatchProgress
from trident_spark.tuning.diagnosis import diagnose, percentile

STAGES = (("kafka", "source", 300), ("split", "python", 400), ("Count", "aggregate", 200),
          ("state_get", "state_get", 100), ("state_put", "state_put", 100), ("spark", "spark", 300))


def batch(txid, *, rows=1000, duration=800, add=750, stages=STAGES, cores=2, limited="available", backlog=0,
          gc=20, cpu=1200, run=None, trips=4, latest=None, partitions=4, second=None, **extra):
    """One batch as ``BatchProgress.to_json()`` writes it (the contract's fields); a healthy default:
    two cores busy, no overhead, no stage dominating, 80% of a 1 s trigger, nothing left behind."""
    staged = [{"name": name, "kind": kind, "ms": float(ms), "rows_in": rows, "rows_out": rows}
              for name, kind, ms in stages]
    task_ms = sum(s["ms"] for s in staged)
    line = {
        "stream": "wc", "txid": txid, "rows": rows, "duration_ms": duration, "bytes": rows * 25,
        "record_bytes": 25.0, "limited_by": limited, "lost_records": 0, "malformed_records": 0,
        "input_rows_per_second": rows / 1.0, "processed_rows_per_second": rows / (duration / 1000 or 1),
        "timestamp": f"2024-05-01T10:{(second if second is not None else txid) // 60:02d}:"
                     f"{(second if second is not None else txid) % 60:02d}.000Z",
        "durations_ms": {"addBatch": add, "latestOffset": 10, "queryPlanning": 5, "walCommit": 15,
                         "commitOffsets": 10, "triggerExecution": duration},
        "end_offsets": {"t": {str(p): (txid + 1) * rows // partitions for p in range(partitions)}},
        "state": {"store_reads": trips // 2, "store_writes": trips - trips // 2, "keys_written": 300},
        "start_offsets": {"t": {str(p): txid * rows // partitions for p in range(partitions)}},
        "latest_offsets": latest,
        "partition_rows": {f"t[{p}]": rows // partitions for p in range(partitions)},
        "backlog": backlog, "read_limit_bytes": 25_000, "stages": staged,
        "spark": {"stages": 2, "tasks": 4, "executor_run_ms": run if run is not None else task_ms,
                  "executor_cpu_ms": cpu, "gc_ms": gc, "shuffle_read_bytes": 0, "shuffle_write_bytes": 0},
        "cores": cores,
    }
    line.update(extra)
    return json.loads(json.dumps(line))  # exactly what a reader of the JSON lines gets


# --- numbers --------------------------------------------------------------------------------------
def test_totals_rates_and_durations():
    batches = [batch(i, duration=d, backlog=None) for i, d in enumerate([400, 500, 600, 700, 900])]
    d = diagnose(batches, trigger_ms=1000)
    assert (d.totals.batches, d.totals.rows, d.totals.first_txid, d.totals.last_txid) == (5, 5000, 0, 4)
    assert (d.duration_last, d.duration_mean, d.duration_p50, d.duration_p95) == (900, 620, 600, 900)
    assert d.processing_rate == pytest.approx(5000 / 3.1)
    assert (d.input_rate, d.input_rate_source) == (1000.0, "spark")
    assert d.last["txid"] == 4 and d.last["rows"] == 1000


def test_the_input_rate_comes_from_offsets_when_the_newest_ones_are_known():
    # 1,500 records arrive a second; batches read 1,000 of them
    batches = [batch(i, latest={"t": {"0": 1500 * (i + 1)}}) for i in range(4)]
    d = diagnose(batches)
    assert (d.input_rate, d.input_rate_source) == (1500.0, "offsets")
    # or the end offsets and the backlog: 1,000 records a second, all read
    assert (diagnose([batch(i) for i in range(4)]).input_rate_source, d.processing_rate) == ("offsets", 1250)


def test_the_window_limits_the_diagnosis_but_not_the_totals():
    batches = [batch(i, duration=5000 if i < 10 else 500) for i in range(30)]
    d = diagnose(batches, trigger_ms=1000, window=20)
    assert d.window == 20 and d.totals.batches == 30
    assert d.duration_p95 == 500


def test_stages_are_averaged_in_pipeline_order_with_the_slowest_marked():
    d = diagnose([batch(0), batch(1, stages=[(n, k, ms * 3 if n == "kafka" else ms) for n, k, ms in STAGES])])
    rows = [(s.name, s.kind, s.ms, round(s.share, 3), s.slowest) for s in d.stages]
    assert rows == [("kafka", "source", 600.0, 0.353, True), ("split", "python", 400.0, 0.235, False),
                    ("Count", "aggregate", 200.0, 0.118, False),
                    ("state_get", "state_get", 100.0, 0.059, False),
                    ("state_put", "state_put", 100.0, 0.059, False), ("spark", "spark", 300.0, 0.176, False)]
    assert d.slowest is not None and d.slowest.name == "kafka"


def test_percentile_is_nearest_rank():
    assert percentile([], 0.5) is None
    assert [percentile([3, 1, 2], q) for q in (0.0, 0.5, 0.95, 1.0)] == [1, 2, 3, 3]


def test_progress_objects_of_today_are_read_like_their_json():
    progress = [BatchProgress(stream="wc", txid=i, rows=100, duration_ms=200, limited_by="available",
                              durations_ms={"addBatch": 150}) for i in range(3)]
    d = diagnose(progress, trigger_ms=1000)
    assert d.stream == "wc" and d.totals.rows == 300
    assert d.bottleneck.kind == "unknown"
    assert "no stage or executor timings" in d.bottleneck.explanation
    assert json.loads(json.dumps(d.to_dict()))["verdict"]["kind"] == d.verdict.kind


# --- verdicts -------------------------------------------------------------------------------------
def test_no_batches_is_unknown():
    d = diagnose([], trigger_ms=1000, stream="wc")
    assert (d.stream, d.verdict.kind, d.verdict.reason) == ("wc", "unknown", "no finished batch yet")


def test_falling_behind_when_the_backlog_grows():
    batches = [batch(i, backlog=2000 * i, limited="max_fetch_bytes", duration=1200, add=1150)
               for i in range(6)]
    d = diagnose(batches, trigger_ms=1000)
    assert (d.backlog, d.backlog_slope, d.backlog_trend) == (10_000, 2000.0, "growing")
    assert d.verdict.line() == ("falling behind: the backlog grows by 2,000 records a batch (now 10,000); "
                                "100% of batches are cut by max_fetch_bytes")


def test_falling_behind_when_cut_by_the_read_limit_and_over_the_trigger():
    batches = [batch(i, backlog=None, limited="max_offsets_per_trigger", duration=1500, add=1450)
               for i in range(4)]
    d = diagnose(batches, trigger_ms=1000)
    assert d.backlog_trend is None
    assert d.verdict.line() == ("falling behind: 100% of batches are cut by max_offsets_per_trigger and take "
                                "1,500 ms (p50), over the 1,000 ms trigger")


def test_falling_behind_when_processing_is_slower_than_arrivals():
    # 3,000 records a second arrive; batches of 1,000 rows take 800 ms: 1,250 rows/s
    batches = [batch(i, backlog=None, latest={"t": {"0": 3000 * (i + 1)}}) for i in range(4)]
    d = diagnose(batches, trigger_ms=1000)
    assert d.verdict.line() == "falling behind: processing 1,250 rows/s is below the input rate 3,000 rows/s"


def test_keeping_up_within_the_trigger():
    d = diagnose([batch(i) for i in range(5)], trigger_ms=1000)
    assert d.verdict.line() == ("keeping up: backlog stable at 0; batches finish in 800 ms (p95) within the "
                                "1,000 ms trigger")


def test_keeping_up_while_a_backlog_drains_even_over_the_trigger():
    batches = [batch(i, backlog=10_000 - 2000 * i, limited="max_fetch_bytes", duration=1500, add=1450)
               for i in range(5)]
    d = diagnose(batches, trigger_ms=1000)
    assert d.backlog_trend == "draining"
    assert d.verdict.line() == ("keeping up: backlog draining by 2,000 records a batch (now 2,000); batches "
                                "take 1,500 ms (p95), over the 1,000 ms trigger, but read everything that "
                                "arrives")


def test_keeping_up_without_a_trigger_interval():
    d = diagnose([batch(i, limited="max_fetch_bytes") for i in range(3)])
    assert d.verdict.line() == ("keeping up: backlog stable at 0; batches take 800 ms (p50), "
                                "no trigger interval")


def test_starved_when_batches_finish_far_below_the_trigger():
    small = [("kafka", "source", 10), ("split", "python", 20)]
    batches = [batch(i, rows=12, duration=40, add=30, stages=small) for i in range(5)]
    d = diagnose(batches, trigger_ms=1000)
    assert d.verdict.line() == ("starved: batches take everything available and finish in 40 ms (p50) of a "
                                "1,000 ms trigger: the stages wait for input 96% of the time")


def test_starved_when_most_batches_are_empty():
    batches = [batch(i, rows=0 if i % 4 else 50, duration=300, add=250) for i in range(8)]
    d = diagnose(batches)
    assert d.empty_share == 0.75
    assert d.verdict.line() == "starved: 75% of the last 8 batches were empty: the stages wait for input"


# --- bottlenecks ----------------------------------------------------------------------------------
def test_bookkeeping_when_most_of_the_batch_is_outside_tasks():
    small = [("kafka", "source", 20), ("split", "python", 30)]
    batches = [batch(i, rows=20, duration=500, add=200, stages=small) for i in range(3)]
    f = diagnose(batches, trigger_ms=1000).bottleneck
    assert f.kind == "bookkeeping"
    assert f.line() == ("bookkeeping (per-batch overhead): 90% of batch time is outside executor tasks "
                        "(300 ms on the driver outside addBatch, 150 ms of addBatch with no task running) "
                        "for 20 rows a batch: larger batches amortize it")
    assert f.numbers["durations_ms"]["walCommit"] == 15


def test_memory_when_gc_takes_a_large_share_of_run_time():
    f = diagnose([batch(i, gc=420) for i in range(3)]).bottleneck
    assert f.kind == "memory"
    assert f.line() == ("memory (GC): GC takes 30% of executor run time (420 of 1,400 ms a batch): smaller "
                        "batches or more executor memory")


def test_concurrency_when_cores_sit_idle():
    # 4 cores, one partition with data: tasks keep about one core busy
    batches = [batch(i, cores=4, duration=1450, add=1400, partitions=1) for i in range(3)]
    f = diagnose(batches, trigger_ms=2000).bottleneck
    assert f.kind == "concurrency"
    assert f.line() == ("concurrency (idle cores): tasks keep 1.0 of 4 cores busy while a batch runs (25%); "
                        "1 partitions had data: more partitions (or repartition) to use every core")
    assert f.numbers["busy_cores"] == 1.0 and f.numbers["tasks_per_batch"] == 4


def test_io_when_the_source_read_dominates():
    stages = [("kafka", "source", 1000), ("split", "python", 200), ("spark", "spark", 200)]
    f = diagnose([batch(i, stages=stages) for i in range(3)]).bottleneck
    assert f.kind == "io"
    assert f.line() == ("IO (source read): kafka dominates: 71% of task time (1,000 ms a batch): reading and "
                        "decoding records; more partitions read in parallel, or a faster broker link")


def test_io_when_store_round_trips_dominate():
    stages = [("kafka", "source", 100), ("state_get", "state_get", 600), ("state_put", "state_put", 400),
              ("spark", "spark", 300)]
    batches = [batch(i, stages=stages, rows=1000 * (i + 1), trips=20) for i in range(3)]
    f = diagnose(batches).bottleneck
    assert f.kind == "io"
    assert f.line() == ("IO (store round trips): state_get+state_put dominates: 71% of task time "
                        "(1,000 ms a batch, 20 round trips of 50.0 ms); a bigger cache or larger "
                        "multiGet/multiPut batches cut round trips")


def test_a_remote_rate_limit_when_a_round_trip_slows_with_batch_size():
    def stages(put):
        return [("kafka", "source", 100), ("state_put", "state_put", put), ("spark", "spark", 200)]

    batches = [batch(i, rows=rows, trips=10, stages=stages(put))
               for i, (rows, put) in enumerate([(1000, 500), (2000, 1100), (4000, 2600), (8000, 6000)])]
    f = diagnose(batches).bottleneck
    assert f.kind == "rate_limit"
    assert f.line() == ("remote rate limit: a store round trip takes 50.0 ms at 1,000 rows a batch and "
                        "600.0 ms at 8,000 (correlation 1.00): the store slows with load, so bigger batches "
                        "will not help; raise the store's limit or spread the keys")


def test_cpu_when_a_python_operator_dominates():
    stages = [("kafka", "source", 200), ("split", "python", 1200), ("spark", "spark", 200)]
    f = diagnose([batch(i, stages=stages) for i in range(3)]).bottleneck
    assert f.kind == "cpu"
    assert f.line() == ("CPU (Python operators): split dominates: 75% of task time (1,200 ms a batch): the "
                        "Python code itself; cheaper operators or more cores")


def test_cpu_when_spark_work_dominates_and_uses_the_cpu():
    stages = [("kafka", "source", 200), ("spark", "spark", 1200)]
    f = diagnose([batch(i, stages=stages, cpu=1300) for i in range(3)]).bottleneck
    assert f.kind == "cpu"
    assert f.line() == ("CPU (Spark): spark dominates: 86% of task time (1,200 ms a batch, CPU 93% of run "
                        "time): shuffle, built-in aggregation and serialization")


def test_io_when_spark_work_dominates_but_waits():
    stages = [("kafka", "source", 200), ("spark", "spark", 1200)]
    f = diagnose([batch(i, stages=stages, cpu=420) for i in range(3)]).bottleneck
    assert (f.kind, f.title) == ("io", "IO (Spark shuffle or disk)")
    assert "executors use the CPU 30% of their run time" in f.explanation


def test_no_stage_timings_but_executor_time_is_unknown():
    f = diagnose([batch(i, stages=[], run=1400) for i in range(3)]).bottleneck
    assert (f.kind, f.explanation) == ("unknown", "the progress has executor times but no per-stage timings")


def test_a_run_s_warm_up_batch_is_left_out_of_durations_and_stages():
    batches = [{"stream": "wc", "txid": 0, "rows": 1000, "duration_ms": 30_000, "warmup": True,
                "limited_by": "available", "backlog": 0,
                "stages": [{"name": "split", "kind": "python", "ms": 29_000.0}]}]
    batches += [{"stream": "wc", "txid": i, "rows": 1000, "duration_ms": 400, "limited_by": "available",
                 "backlog": 0, "stages": [{"name": "split", "kind": "python", "ms": 300.0}]}
                for i in range(1, 5)]
    d = diagnose(batches, trigger_ms=1000)
    assert (d.duration_p95, d.duration_mean) == (400, 400)
    assert d.stages[0].ms == 300.0
    assert d.totals.batches == 5 and d.totals.rows == 5000
    only_warmup = diagnose(batches[:1], trigger_ms=1000)
    assert only_warmup.duration_last == 30_000  # nothing else to judge by


def test_spark_saying_zero_rows_per_second_for_a_batch_that_read_rows_is_no_input_rate():
    # a finished available-now run's only batch: Spark had no earlier trigger to divide by
    d = diagnose([batch(0, backlog=None, input_rows_per_second=0.0)])
    assert (d.input_rate, d.input_rate_source) == (None, None)
    from trident_spark.cli.live import numbers

    assert dict(numbers(d))["rates"].startswith("input not measured, processing ")
    # an idle stream's empty batch does say 0
    assert diagnose([batch(0, rows=0, backlog=None, input_rows_per_second=0.0)]).input_rate == 0.0
