"""BatchProgress: Spark's StreamingQueryProgress read back as one Trident batch."""

from __future__ import annotations

import json

import pytest

from trident_spark.runtime.progress import BatchProgress

END_OFFSET = {
    "offsets": {"sentences": {"0": 1200, "1": 1180}},
    "batch": {"rows": 2380, "bytes": 154_700, "record_bytes": 65.0,
              "limited_by": "max_fetch_bytes", "lost": 4},
}


def spark_progress(end_offset=None, **overrides):
    progress = {
        "id": "5b0c6d39-6a3d-4f59-9d1c-7f9c7d0b4a11",
        "runId": "0a8e1f4c-2f53-4b8e-9b4e-2f4cdd4b2a90",
        "name": "wordcount",
        "timestamp": "2024-05-01T10:00:00.000Z",
        "batchId": 3,
        "batchDuration": 1234,
        "numInputRows": 2380,
        "inputRowsPerSecond": 1000.5,
        "processedRowsPerSecond": 1928.7,
        "durationMs": {"addBatch": 1100, "getBatch": 1, "latestOffset": 20, "queryPlanning": 30,
                       "triggerExecution": 1234, "walCommit": 40},
        "stateOperators": [],
        "sources": [{
            "description": "trident_kafka",
            "startOffset": json.dumps({"offsets": {"sentences": {"0": 0, "1": 0}}}),
            "endOffset": json.dumps(END_OFFSET if end_offset is None else end_offset),
            "latestOffset": None,
            "numInputRows": 2380,
            "inputRowsPerSecond": 1000.5,
            "processedRowsPerSecond": 1928.7,
        }],
        "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
        "observedMetrics": {"wordcount_spout": {"malformed_records": 3}},
    }
    progress.update(overrides)
    return progress


def test_from_spark_reads_the_batch_document():
    p = BatchProgress.from_spark("wordcount", spark_progress())
    assert p.stream == "wordcount"
    assert p.txid == 3
    assert p.rows == 2380
    assert p.duration_ms == 1234
    assert p.bytes == 154_700
    assert p.record_bytes == 65.0
    assert p.limited_by == "max_fetch_bytes"
    assert p.lost_records == 4
    assert p.malformed_records == 3
    assert p.input_rows_per_second == 1000.5
    assert p.processed_rows_per_second == 1928.7
    assert p.timestamp == "2024-05-01T10:00:00.000Z"
    assert p.durations_ms == {"addBatch": 1100, "getBatch": 1, "latestOffset": 20, "queryPlanning": 30,
                              "triggerExecution": 1234, "walCommit": 40}
    assert p.end_offsets == {"sentences": {"0": 1200, "1": 1180}}


def test_end_offset_already_parsed():
    progress = spark_progress()
    progress["sources"][0]["endOffset"] = END_OFFSET
    p = BatchProgress.from_spark("wordcount", progress)
    assert p.bytes == 154_700
    assert p.end_offsets == {"sentences": {"0": 1200, "1": 1180}}


def test_malformed_counts_are_summed_over_observations():
    p = BatchProgress.from_spark("s", spark_progress(observedMetrics={
        "a": {"malformed_records": 2}, "b": {"malformed_records": 5}, "c": {"other": 1}}))
    assert p.malformed_records == 7


def test_source_without_batch_sizing():
    # engine='jvm' offsets: Spark's own {topic: {partition: offset}} document
    progress = spark_progress(end_offset={"sentences": {"0": 10}}, observedMetrics=None)
    p = BatchProgress.from_spark("s", progress)
    assert p.bytes is None and p.record_bytes is None and p.limited_by is None
    assert p.lost_records == 0 and p.malformed_records == 0
    assert p.end_offsets == {}


def test_empty_progress():
    p = BatchProgress.from_spark("s", {})
    assert (p.txid, p.rows, p.duration_ms, p.bytes, p.malformed_records) == (-1, 0, 0, None, 0)
    assert p.input_rows_per_second is None
    assert p.durations_ms == {} and p.end_offsets == {}


def test_rates_that_are_not_numbers_are_none():
    p = BatchProgress.from_spark("s", spark_progress(inputRowsPerSecond=None, processedRowsPerSecond="x"))
    assert p.input_rows_per_second is None and p.processed_rows_per_second is None


def test_to_json_round_trips():
    p = BatchProgress.from_spark("wordcount", spark_progress())
    assert BatchProgress(**json.loads(p.to_json())) == p


def test_line():
    p = BatchProgress.from_spark("wordcount", spark_progress())
    assert p.line() == ("[wordcount] batch 3: 2,380 rows, 154,700 B, 1234 ms, limited by max_fetch_bytes, "
                        "3 malformed skipped")


@pytest.mark.parametrize(
    ("limited_by", "suffix"),
    [(None, ""), ("available", ""), ("max_offsets_per_trigger", ", limited by max_offsets_per_trigger")],
)
def test_line_limits(limited_by, suffix):
    p = BatchProgress("s", txid=0, rows=5, duration_ms=12, bytes=None, limited_by=limited_by)
    assert p.line() == f"[s] batch 0: 5 rows, 12 ms{suffix}"


def test_line_tells_what_the_state_did():
    p = BatchProgress("wc", txid=4, rows=5, duration_ms=12, bytes=None,
                      state={"keys_written": 1200, "store_reads": 1, "store_writes": 2, "cache_hits": 1140,
                             "cache_misses": 60})
    assert p.line() == ("[wc] batch 4: 5 rows, 12 ms; state: 1,200 keys written, 1 reads, 2 writes, "
                        "cache hits 95%")


def test_line_without_cache_lookups_has_no_hit_rate():
    p = BatchProgress("wc", txid=0, rows=5, duration_ms=12, state={"keys_written": 3, "store_writes": 1})
    assert p.line().endswith("; state: 3 keys written, 0 reads, 1 writes")


def test_from_spark_reads_offsets_backlog_read_time_and_limit():
    end = {"offsets": {"sentences": {"0": 1200, "1": 1180, "2": 30}},
           "begin": {"sentences": {"2": 10}},  # a partition new in this batch
           "batch": {"rows": 2400, "limited_by": "max_fetch_bytes", "read_limit_bytes": 100_000}}
    latest = json.dumps({"offsets": {"sentences": {"0": 1500, "1": 1180, "2": 35}}})
    progress = spark_progress(end, observedMetrics={"wordcount_spout": {"malformed_records": 0,
                                                                        "read_ms": 42.5}})
    progress["sources"][0]["latestOffset"] = latest
    p = BatchProgress.from_spark("wordcount", progress)
    assert p.start_offsets == {"sentences": {"0": 0, "1": 0, "2": 10}}
    assert p.partition_rows == {"sentences[0]": 1200, "sentences[1]": 1180, "sentences[2]": 20}
    assert p.backlog == 300 + 0 + 5
    assert p.read_limit_bytes == 100_000
    assert p.stages == [{"name": "source", "kind": "source", "ms": 42.5, "rows_in": None, "rows_out": 2380,
                         "tasks": None}]


def test_the_spout_s_own_partition_rows_win_and_unknown_backlog_is_none():
    end = {**END_OFFSET, "batch": {**END_OFFSET["batch"], "partition_rows": {"sentences[0]": 7}}}
    p = BatchProgress.from_spark("wordcount", spark_progress(end))
    assert p.partition_rows == {"sentences[0]": 7}
    assert p.backlog is None and p.stages == []


def test_task_metrics_become_stages_in_pipeline_order_with_spark_s_rest():
    p = BatchProgress.from_spark("wordcount", spark_progress(
        observedMetrics={"wordcount_spout": {"read_ms": 10.0}}))
    counters = {
        "store_reads": 2, "keys_written": 5,
        ("stage", "state_put", "counts / multiPut", "ms"): 30.0,
        ("stage", "state_put", "counts / multiPut", "rows_in"): 5,
        ("stage", "aggregate", "counts / update", "ms"): 75.0,  # includes the store's 30 + 20
        ("stage", "state_get", "counts / multiGet", "ms"): 20.0,
        ("stage", "python", "split", "ms"): 100.0,
        ("stage", "python", "split", "rows_in"): 2380,
        ("stage", "python", "split", "tasks"): 2,
    }
    spark = {"executor_run_ms": 400.0, "tasks": 6}
    p.add_task_metrics(counters, spark, order=["spout", "split", "counts"])
    assert [(s["name"], s["ms"]) for s in p.stages] == [
        ("source", 10.0), ("split", 100.0), ("counts / multiGet", 20.0), ("counts / update", 25.0),
        ("counts / multiPut", 30.0), ("spark", 400.0 - 185.0)]
    assert p.state == {"store_reads": 2, "keys_written": 5}
    assert p.spark == spark
    assert p.slowest_stage()["name"] == "spark"
    assert BatchProgress.from_json(p.to_json()) == p


def test_from_json_ignores_unknown_keys_and_defaults_missing_ones():
    line = json.dumps({"stream": "s", "txid": 1, "rows": 2, "duration_ms": 3, "from_the_future": True})
    p = BatchProgress.from_json(line)
    assert (p.stream, p.txid, p.stages, p.backlog) == ("s", 1, [], None)


def test_line_names_the_slowest_stage():
    p = BatchProgress("wc", txid=2, rows=10, duration_ms=50, bytes=100,
                      stages=[{"name": "split", "kind": "python", "ms": 30.0},
                              {"name": "spark", "kind": "spark", "ms": 10.0}])
    assert p.line() == "[wc] batch 2: 10 rows, 100 B, 50 ms; slowest stage: split (75% of task time)"


def test_a_replayed_batch_shows_its_attempts():
    p = BatchProgress("s", txid=7, rows=3999, duration_ms=900, attempts=3)
    assert p.line() == "[s] batch 7: 3,999 rows, 900 ms, 3 attempts"
    assert BatchProgress.from_json(p.to_json()).attempts == 3


def test_lines_written_before_attempts_were_counted_read_as_one_attempt():
    old = json.loads(BatchProgress("s", txid=0, rows=5, duration_ms=12).to_json())
    del old["attempts"]
    assert BatchProgress.from_json(json.dumps(old)).attempts == 1


def test_to_json_writes_every_field_as_asdict_would():
    from dataclasses import asdict

    p = BatchProgress.from_spark("wordcount", spark_progress())
    p.add_task_metrics({"store_reads": 2, ("stage", "python", "f", "ms"): 1.5}, {"executor_run_ms": 9.0})
    assert json.loads(p.to_json()) == asdict(p)


def test_line_names_no_spark_stage_on_a_small_batch():
    # Spark's fixed cost per task dominates every small batch: "slowest stage: spark (95%)" said nothing
    p = BatchProgress("wc", txid=2, rows=10, duration_ms=50, bytes=100,
                      stages=[{"name": "split", "kind": "python", "ms": 3.0},
                              {"name": "spark", "kind": "spark", "ms": 57.0}])
    assert p.line() == "[wc] batch 2: 10 rows, 100 B, 50 ms"
    p.stages[1].ms = 5000.0  # a large batch's shuffle: worth naming
    assert p.line() == "[wc] batch 2: 10 rows, 100 B, 50 ms; slowest stage: spark (100% of task time)"


def test_a_batch_of_a_spout_without_sizes_shows_no_bytes():
    assert BatchProgress("s", txid=0, rows=5, duration_ms=12).line() == "[s] batch 0: 5 rows, 12 ms"


def test_repr_is_short_and_html_is_a_table():
    p = BatchProgress.from_spark("wordcount", spark_progress())
    assert repr(p) == "BatchProgress(stream='wordcount', txid=3, rows=2380, duration_ms=1234)"
    html = p._repr_html_()
    assert html.startswith("<table>") and "<th style='text-align:left'>rows</th><td>2,380</td>" in html
    assert "<th style='text-align:left'>limited by</th><td>max_fetch_bytes</td>" in html


def test_a_spout_read_in_its_first_operations_counts_the_records_not_the_partitions():
    # Spark counted the batch's 2 partitions (the spout read deferred); the read tasks counted 600
    # records and 3 malformed ones, one partition twice (its stage computed again): counted once.
    p = BatchProgress.from_spark("s", spark_progress(numInputRows=2, inputRowsPerSecond=4.0,
                                                     processedRowsPerSecond=8.0))
    p.add_task_metrics({("spout_read", "s", "0.0", "rows", 400): 2,
                        ("spout_read", "s", "1.0", "rows", 200): 1,
                        ("spout_read", "s", "1.0", "malformed", 3): 1,
                        ("stage", "source", "source", "ms"): 5.0,
                        ("stage", "source", "source", "rows_out"): 1000}, {})
    assert (p.rows, p.malformed_records) == (600, 3)
    assert (p.input_rows_per_second, p.processed_rows_per_second) == (1200.0, 2400.0)
    assert p.stages[0].name == "source" and p.stages[0].ms == 5.0
