"""bench/scale.py's arithmetic: the model's constants from the calibration runs, and each cluster
shape's measured steady rate (median of its runs, with their spread) against the model's prediction."""

from __future__ import annotations

import statistics
from typing import Any

from rich.console import Console
from rich.table import Table

from trident_spark.tuning.scale_model import ClusterShape, ScaleConstants, predict

#: The shape whose runs give the constants: 1 executor core, 1 Redis node.
CALIBRATION = "1 core, 1 node"
TERMS = ("read", "operations", "state", "spark", "other")


def _steady(run: dict[str, Any], warm: int) -> list[dict[str, Any]]:
    return run["batches"][warm:]


def steady_rate(run: dict[str, Any], warm: int) -> float:
    """Records/s over a run's batches after the first ``warm``: their records over their wall time.

    Examples
    --------
    >>> steady_rate({"batches": [{"rows": 10, "ms": 900}, {"rows": 100, "ms": 500},
    ...                          {"rows": 100, "ms": 500}]}, 1)
    200.0
    """
    batches = _steady(run, warm)
    return sum(b["rows"] for b in batches) * 1000 / sum(b["ms"] for b in batches)


def constants_from(result: dict[str, Any]) -> dict[str, Any]:
    """The model's constants (a :class:`ScaleConstants` as a dict) from the calibration runs and the
    tiny-batch run, each with how it was computed.

    On one executor core a batch of ``B`` records takes ``fixed + B / per_core`` (Little's Law with
    one batch in flight), so the two batch sizes give both: ``per_core`` is the slope (records per
    second of extra batch time, the marginal rate), ``fixed`` the intercept. The task-time rate
    (records over all task time) counts Spark's per-task share, a fixed cost, per record: it is
    kept as ``records_per_s_per_core_task_time`` for comparison."""
    warm = result["setup"]["warm_batches"]
    calibration = [r for r in result["runs"] if r["label"] == CALIBRATION]
    batches = [b for r in calibration for b in _steady(r, warm)]
    rows = sum(b["rows"] for b in batches)
    read_ms = sum(b["terms"]["read"] for b in batches)
    task_ms = sum(sum(b["terms"][t] for t in TERMS) for b in batches)
    keys_steady = sum(b["state"].get("keys_written", 0) for b in batches)
    keys_all = sum(b["state"].get("keys_written", 0) for r in calibration for b in r["batches"])
    store_cpu = sum(r["store_cpu_s"] for r in calibration)
    task_rate = rows * 1000 / task_ms
    tiny = next(r for r in result["runs"] if r["label"] == "tiny batches")
    tiny_batches = _steady(tiny, warm)
    tiny_ms = statistics.median(b["ms"] for b in tiny_batches)
    tiny_rows = statistics.median(b["rows"] for b in tiny_batches)
    big_ms = statistics.median(b["ms"] for b in batches)
    big_rows = statistics.median(b["rows"] for b in batches)
    per_core = (big_rows - tiny_rows) * 1000 / (big_ms - tiny_ms) if big_ms > tiny_ms else task_rate
    fixed = max(0.0, tiny_ms - tiny_rows * 1000 / per_core)
    constants = ScaleConstants(
        read_records_per_s_per_partition=rows * 1000 / read_ms,
        records_per_s_per_core=per_core,
        keys_per_s_per_store_node=keys_all / store_cpu,
        keys_written_per_record=keys_steady / rows,
        batch_fixed_ms=fixed,
        measured=f"bench/scale.py {result['setup']['started']}: {len(calibration)} runs of 1 executor core "
                 f"into 1 Redis node, batches of {result['setup']['batch']:,} records over "
                 f"{result['setup']['partitions']} partitions")
    out = constants.to_dict()
    out["records_per_s_per_core_task_time"] = task_rate
    out["how"] = {
        "read_records_per_s_per_partition": f"{rows:,} records / {read_ms / 1000:.2f} s of the spout's read "
                                            "task time (source stage), steady batches",
        "records_per_s_per_core": (
            f"slope of batch time on 1 core: ({big_rows:,.0f} - {tiny_rows:,.0f}) records / ({big_ms:,.0f} - "
            f"{tiny_ms:,.0f}) ms (median steady batches of the calibration and tiny runs)"
            if big_ms > tiny_ms else
            f"the task-time rate: the calibration batches ({big_ms:,.0f} ms) took no longer than the tiny "
            f"ones ({tiny_ms:,.0f} ms), so the slope is noise"),
        "records_per_s_per_core_task_time": f"{rows:,} records / {task_ms / 1000:.2f} s of all task time, "
                                            "steady batches (Spark's per-task share counted per record)",
        "keys_per_s_per_store_node": f"{keys_all:,} keys written / {store_cpu:.2f} s of redis-server CPU",
        "keys_written_per_record": f"{keys_steady:,} keys written / {rows:,} records, steady batches",
        "batch_fixed_ms": f"intercept: median batch of the tiny run ({tiny_ms:.0f} ms for {tiny_rows:.0f} "
                          f"records) less the records' share at the per-core rate",
    }
    return out


def report(result: dict[str, Any], console: Console) -> list[dict[str, Any]]:
    """Each shape's measured steady rates, median and spread, against the model; printed and returned."""
    warm, setup = result["setup"]["warm_batches"], result["setup"]
    constants = ScaleConstants.from_mapping(result["constants"])
    rows: list[dict[str, Any]] = []
    labels = list(dict.fromkeys(r["label"] for r in result["runs"] if r["label"] != "tiny batches"))
    for label in labels:
        runs = [r for r in result["runs"] if r["label"] == label]
        rates = [steady_rate(r, warm) for r in runs]
        ends = [r["records"] / r["seconds"] for r in runs]
        nodes = 1 if runs[0]["store"] == "single" else 3
        shape = ClusterShape(source_partitions=setup["partitions"], executor_cores=runs[0]["executors"],
                             store_nodes=nodes)
        prediction = predict(shape, constants, batch_records=setup["batch"])
        keys = sum(b["state"].get("keys_written", 0) for r in runs for b in r["batches"])
        store_cpu = sum(r["store_cpu_s"] for r in runs)
        batches = [b for r in runs for b in _steady(r, warm)]
        task_ms = sum(sum(b["terms"][t] for t in TERMS) for b in batches)
        median = statistics.median(rates)
        rows.append({
            "shape": label, "runs": len(runs), "steady_records_per_s": rates, "median": median,
            "spread": (max(rates) - min(rates)) / median, "end_to_end_records_per_s": ends,
            "predicted": prediction.records_per_s,
            "measured_over_predicted": median / prediction.records_per_s,
            "binding": prediction.binding.name, "capacity": prediction.capacity_records_per_s,
            "records_per_s_per_core_measured": sum(b["rows"] for b in batches) * 1000 / task_ms,
            "keys_per_s_per_store_cpu_s": keys / store_cpu if store_cpu else None,
            "median_batch_ms": statistics.median(b["ms"] for b in batches)})
    table = Table(title="steady records/s: measured (median of runs, spread) vs the model")
    for column in ("shape", "runs", "measured", "spread", "predicted", "measured / predicted", "binds",
                   "per core (measured)", "batch ms"):
        table.add_column(column, justify="left" if column in ("shape", "binds") else "right")
    for row in rows:
        table.add_row(row["shape"], str(row["runs"]), f"{row['median']:,.0f}", f"{row['spread']:.0%}",
                      f"{row['predicted']:,.0f}", f"{row['measured_over_predicted']:.2f}", row["binding"],
                      f"{row['records_per_s_per_core_measured']:,.0f}", f"{row['median_batch_ms']:,.0f}")
    console.print(table)
    for name, how in result["constants"]["how"].items():
        console.print(f"{name} = {result['constants'][name]:,.4g}: {how}", highlight=False)
    return rows
