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
    """The model's constants (a :class:`ScaleConstants` as a dict) from the calibration runs, each
    with how it was computed.

    On one executor core a batch takes its task time (the records' work: read, operations, state
    client, Spark's share) plus what is outside its tasks (the driver's planning and logs,
    scheduling, idle time): ``per_core`` is the records over all task time, ``fixed`` the median
    of (batch wall time - task time) over the steady batches. The tiny run's median batch is kept
    as a check of ``fixed`` (``tiny_batch_ms``), and the slope of batch time between the tiny and the
    full batches as ``records_per_s_per_core_slope``: two batch sizes whose times differ by a few
    hundred ms on a VM whose batches vary by as much make a slope too noisy to use (it moved 3x
    between two invocations)."""
    warm = result["setup"]["warm_batches"]
    calibration = [r for r in result["runs"] if r["label"] == CALIBRATION]
    batches = [b for r in calibration for b in _steady(r, warm)]
    rows = sum(b["rows"] for b in batches)
    read_ms = sum(b["terms"]["read"] for b in batches)
    task_ms = sum(sum(b["terms"][t] for t in TERMS) for b in batches)
    keys_steady = sum(b["state"].get("keys_written", 0) for b in batches)
    keys_all = sum(b["state"].get("keys_written", 0) for r in calibration for b in r["batches"])
    store_cpu = sum(r["store_cpu_s"] for r in calibration)
    per_core = rows * 1000 / task_ms
    fixed = statistics.median(b["ms"] - sum(b["terms"][t] for t in TERMS) for b in batches)
    tiny = next(r for r in result["runs"] if r["label"] == "tiny batches")
    tiny_batches = _steady(tiny, warm)
    tiny_ms = statistics.median(b["ms"] for b in tiny_batches)
    tiny_rows = statistics.median(b["rows"] for b in tiny_batches)
    big_ms = statistics.median(b["ms"] for b in batches)
    big_rows = statistics.median(b["rows"] for b in batches)
    slope = (big_rows - tiny_rows) * 1000 / (big_ms - tiny_ms) if big_ms > tiny_ms else None
    constants = ScaleConstants(
        read_records_per_s_per_partition=rows * 1000 / read_ms,
        records_per_s_per_core=per_core,
        keys_per_s_per_store_node=keys_all / store_cpu,
        keys_written_per_record=keys_steady / rows,
        batch_fixed_ms=max(0.0, fixed),
        measured=f"bench/scale.py {result['setup']['started']}: {len(calibration)} runs of 1 executor core "
                 f"into 1 Redis node, batches of {result['setup']['batch']:,} records over "
                 f"{result['setup']['partitions']} partitions")
    out = constants.to_dict()
    out["tiny_batch_ms"] = tiny_ms
    out["records_per_s_per_core_slope"] = slope
    out["how"] = {
        "read_records_per_s_per_partition": f"{rows:,} records / {read_ms / 1000:.2f} s of the spout's read "
                                            "task time (source stage), steady batches",
        "records_per_s_per_core": f"{rows:,} records / {task_ms / 1000:.2f} s of all task time (read, "
                                  "operations, state client, Spark's share), steady batches",
        "tiny_batch_ms": f"median batch of the tiny run ({tiny_rows:.0f} records): a check of batch_fixed_ms",
        "records_per_s_per_core_slope": f"({big_rows:,.0f} - {tiny_rows:,.0f}) records / ({big_ms:,.0f} - "
                                        f"{tiny_ms:,.0f}) ms: the slope of batch time, for comparison",
        "keys_per_s_per_store_node": f"{keys_all:,} keys written / {store_cpu:.2f} s of redis-server CPU",
        "keys_written_per_record": f"{keys_steady:,} keys written / {rows:,} records, steady batches",
        "batch_fixed_ms": "median over the steady batches of (batch wall time - task time on the one "
                          "core): the driver's planning and logs, scheduling, waits",
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
            "median_batch_ms": statistics.median(b["ms"] for b in batches),
            "median_terms_ms": {t: statistics.median(b["terms"][t] for b in batches) for t in TERMS},
            "keys_written_per_batch": [b["state"].get("keys_written", 0) for b in batches],
            "store_reads_per_batch": [b["state"].get("store_reads", 0) for b in batches]})
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
        value = result["constants"][name]
        console.print(f"{name} = {'-' if value is None else format(value, ',.4g')}: {how}", highlight=False)
    return rows
