"""The sweep report from synthetic runs: statistics, results.json, report.md and the PNG plots."""

from __future__ import annotations

import json

import pytest

from trident_spark.tuning.report import render_markdown, size_stats, summarize, write_report
from trident_spark.tuning.sweep import RunResult, StreamSlice, Sweep

SIZES = [2048 * 2**i for i in range(6)]  # 2k .. 64k
RECORD_BYTES = 100
PARTITIONS = 2


def latency(records: int) -> float:
    """300 ms of bookkeeping, 1 ms per record, 12 ms more per record beyond 700 records."""
    return 300 + records + 12 * max(0, records - 700)


def batch(txid: int, rows: int, duration: float, stages: bool = True) -> dict:
    spark_ms = 0.6 * duration
    b = {"stream": "words", "txid": txid, "rows": rows, "duration_ms": int(duration),
         "limited_by": "max_fetch_bytes", "record_bytes": float(RECORD_BYTES), "bytes": rows * RECORD_BYTES,
         "durations_ms": {"latestOffset": 20, "queryPlanning": 10, "walCommit": 15,
                          "addBatch": int(duration) - 60, "commitOffsets": 15,
                          "triggerExecution": int(duration)},
         "partition_rows": {f"words[{p}]": rows // PARTITIONS for p in range(PARTITIONS)},
         "cores": 2, "state": {}, "stages": [], "spark": {}}
    if stages:
        b["stages"] = [
            {"name": "source", "kind": "source", "ms": 0.1 * rows, "rows_in": None, "rows_out": rows},
            {"name": "each(Split)", "kind": "python", "ms": 2.0 * rows + 20, "rows_in": rows,
             "rows_out": rows},
            {"name": "spark", "kind": "spark", "ms": spark_ms, "rows_in": None, "rows_out": None},
        ]
    return b


def run_at(size: int, stages: bool = True, batches: int = 5) -> RunResult:
    rows = PARTITIONS * (size // RECORD_BYTES)
    warmup = batch(0, rows, 9000, stages)  # the warm-up: far slower, not counted
    counted = [batch(i, rows, latency(rows) * (1 + 0.02 * (i % 2)), stages) for i in range(1, batches)]
    partial = batch(batches, rows // 3, 250, stages)  # the slice ran out: not counted either
    all_batches = [warmup, *counted, partial]
    return RunResult(size, 0, sum(b["rows"] for b in all_batches), 30.0, f"/tmp/x/{size}/checkpoint",
                     all_batches)


def make_sweep(sizes=SIZES, stages=True) -> Sweep:
    start = {("words", p): 0 for p in range(PARTITIONS)}
    end = {("words", p): 100_000 for p in range(PARTITIONS)}
    slice_ = StreamSlice("words", start, end, dict.fromkeys(start, float(RECORD_BYTES)))
    return Sweep("words", [slice_], list(sizes), [run_at(s, stages) for s in sizes],
                 ["sqlite:///tmp/x/state/tune-0.db?table=counts"], PARTITIONS, 2)


def test_size_stats_leave_out_the_warm_up_and_a_partial_last_batch():
    stats = size_stats(8192, [run_at(8192)])
    assert stats.batches == 6 and stats.measured_batches == 4
    assert stats.records_per_batch == 162
    assert stats.latency_p50_ms == latency(162)            # 462: the even txids
    assert stats.latency_p95_ms == int(latency(162) * 1.02)
    assert stats.throughput == pytest.approx(4 * 162 / (2 * 462 + 2 * 471) * 1000)
    assert stats.stage_source == "stages"
    assert stats.stage_ms["each(Split)"] == pytest.approx(2.0 * 162 + 20)


def test_report_files_hold_the_measured_numbers(tmp_path):
    results = summarize(make_sweep(), target="app.py:topology", settings={"repeat": 1, "max_batches": 6})
    report = write_report(results, tmp_path)

    assert report == tmp_path / "report.md"
    assert json.loads((tmp_path / "results.json").read_text()) == json.loads(json.dumps(results))
    text = report.read_text()
    knee = results["knee"]
    # records per batch 40 .. 1,310: the steep cost starts above 700 records -> knee at 32k (654)
    assert knee["label"] == "32k"
    assert knee["regimes"]["sharp"] == ["64k"]
    assert "**Knee: 32k** (654 records per batch" in text
    for s in results["sizes"]:
        row = next(line for line in text.splitlines() if line.startswith(f"| {s['label']}"))
        for number in (s["records_per_batch"], s["latency_p50_ms"], s["latency_p95_ms"], s["throughput"],
                       s["wall_throughput"]):
            assert f"{number:,.0f}" in row, (number, row)
        assert s["regime"] in row
    assert "| 32k **(knee)** | growing |" in text
    assert "each(Split) " in text                          # stage shares in the table
    assert "## Principal bottleneck at the knee" in text
    assert results["bottleneck"]["title"] in text
    rec = results["recommendation"]
    assert rec["kafka_spout"] == {"max_fetch_bytes": 32768, "max_offsets_per_trigger": 654}
    assert rec["trigger"] == "1000 milliseconds"            # the knee's 954 ms, rounded up
    assert "KafkaSpout(..., max_fetch_bytes=32768, max_offsets_per_trigger=654)" in text
    assert "trigger='1000 milliseconds'" in text
    assert "Little's Law" in text
    assert "sqlite:///tmp/x/state/tune-0.db?table=counts" in text
    for name in ("throughput_latency.png", "stage_breakdown.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name


def test_too_few_sizes_still_report_the_measurements_and_say_why_there_is_no_knee(tmp_path):
    results = summarize(make_sweep(SIZES[:2]))
    write_report(results, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert "knee detection needs at least 3 batch sizes" in text
    assert "sweep more sizes" in text
    assert results["recommendation"] is None
    assert "| 2k |" in text and "| 4k |" in text
    assert (tmp_path / "throughput_latency.png").read_bytes()[:4] == b"\x89PNG"


def test_without_stage_timings_the_breakdown_shows_sparks_phases(tmp_path):
    results = summarize(make_sweep(stages=False))
    write_report(results, tmp_path)
    first = results["sizes"][0]
    assert first["stage_source"] == "phases"
    assert set(first["stage_ms"]) == {"latestOffset", "queryPlanning", "walCommit", "addBatch",
                                      "commitOffsets"}
    assert "Spark's phases of a batch" in render_markdown(results)
    assert (tmp_path / "stage_breakdown.png").stat().st_size > 10_000


def test_the_variable_sheet_takes_the_fixed_cost_from_the_flat_regime():
    from trident_spark.tuning.knee import KneePoint, find_knee
    from trident_spark.tuning.report import _fixed_cost_ms

    points = [KneePoint(s, r, lat) for s, r, lat in
              [(1, 500, 930), (2, 1000, 825), (4, 2000, 968), (8, 4000, 883), (16, 30000, 1117),
               (32, 60000, 1359), (64, 120000, 2024)]]
    analysis = find_knee(points)
    assert analysis.indices("flat") == [0, 1, 2, 3]
    assert _fixed_cost_ms(analysis) == 930  # the median of the flat latencies
    assert _fixed_cost_ms(None) is None
