"""bench/scale.py's arithmetic: the constants from the calibration runs, the steady rate of a run."""

from __future__ import annotations

import pytest
from rich.console import Console
from scale_report import constants_from, report, steady_rate


def _batch(rows, ms, read, operations, state, spark, keys):
    return {"rows": rows, "ms": ms, "state": {"keys_written": keys},
            "terms": {"read": read, "operations": operations, "state": state, "spark": spark, "other": 0.0}}


def _run(label, executors, store, batch_ms, store_cpu_s):
    warm = _batch(1000, 3000, 500, 500, 500, 500, 900)
    steady = [_batch(10_000, batch_ms, 100, 200, 50, 150, 1000) for _ in range(2)]
    return {"label": label, "executors": executors, "store": store, "records": 21_000, "seconds": 5.0,
            "store_cpu_s": store_cpu_s, "batches": [warm, *steady]}


RESULT = {
    "setup": {"warm_batches": 1, "batch": 10_000, "partitions": 2, "started": "20261129T000000Z"},
    "runs": [
        {"label": "tiny batches", "batches": [_batch(100, 900, 1, 1, 1, 1, 50)] +
         [_batch(100, ms, 1, 1, 1, 1, 50) for ms in (205, 210, 215)], "store_cpu_s": 0.1},
        _run("1 core, 1 node", 1, "single", 700, 0.29),
        _run("1 core, 1 node", 1, "single", 700, 0.29),
        _run("2 cores, 1 node", 2, "single", 500, 0.29),
        _run("2 cores, 1 node", 2, "single", 400, 0.29),
    ],
}


def test_steady_rate_leaves_the_warm_batches_out():
    assert steady_rate(RESULT["runs"][1], 1) == 20_000 * 1000 / 1400


def test_constants_from_the_calibration_runs():
    """On 1 core a batch is its task time (the per-core rate) plus the rest (the fixed cost)."""
    constants = constants_from(RESULT)
    # 40,000 steady records; 400 ms of read task time; 2,000 ms of all task time
    assert constants["read_records_per_s_per_partition"] == 100_000.0
    assert constants["records_per_s_per_core"] == 20_000.0
    # the slope of batch time on 1 core: 9,900 more records take 490 ms more than a tiny batch
    assert constants["records_per_s_per_core_slope"] == 9_900 * 1000 / 490
    assert constants["tiny_batch_ms"] == 210
    assert constants["keys_per_s_per_store_node"] == pytest.approx(2 * 2900 / 0.58)
    assert constants["keys_written_per_record"] == 0.1
    assert constants["batch_fixed_ms"] == 700 - 500  # wall time less the batch's 500 ms of task time
    assert constants["measured"].startswith("bench/scale.py 20261129T000000Z: 2 runs of 1 executor core")


def test_report_compares_each_shape_with_the_model():
    result = RESULT | {"constants": constants_from(RESULT)}
    rows = report(result, Console(file=None, quiet=True))
    assert [row["shape"] for row in rows] == ["1 core, 1 node", "2 cores, 1 node"]
    two = rows[1]
    assert two["steady_records_per_s"] == [20_000.0, 25_000.0]
    assert two["median"] == 22_500.0
    assert two["spread"] == pytest.approx(5_000 / 22_500)
    assert two["binding"] == "operations"
    assert two["predicted"] == pytest.approx(10_000 / ((200 + 10_000 / (2 * 20_000) * 1000) / 1000))
    assert two["median_terms_ms"] == {"read": 100, "operations": 200, "state": 50, "spark": 150, "other": 0.0}
