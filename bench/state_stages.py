"""bench/state.py's "where the time goes per batch": a batch's task time by term (read, operations,
state, Spark) from the run's own metrics (``BatchProgress.stages``), and the per-batch rows of
one contender's table."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

#: The terms of a batch, from the stage kinds of ``trident_spark.runtime.metrics`` (any other
#: kind, e.g. one a later version adds, is counted under ``other``).
TERMS: dict[str, tuple[str, ...]] = {
    "read": ("source",),
    "operations": ("python", "aggregate"),
    "state": ("state_get", "state_put", "state_query"),
    "spark": ("spark",),
}
TERM_NAMES = (*TERMS, "other")
#: The columns of a contender's table: wall time of the batch and its driver-side parts (from
#: Spark's progress), task time by term (``term_<term>``: summed over tasks, from the run's
#: metrics), Spark's two stages (its REST API: wall time, and task time summed over tasks).
COLUMNS: dict[str, str] = {
    "ms": "batch", "add_batch_ms": "addBatch", "latest_offset_ms": "latestOffset",
    "planning_ms": "planning", "logs_ms": "logs",
    **{f"term_{term}": term for term in TERM_NAMES},
    "read_ms": "stage 1 wall", "read_task_ms": "(task)",
    "state_ms": "stage 2 wall", "state_task_ms": "(task)",
}


def stage_terms(stages: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Task milliseconds of one batch by term, summed over its stages (``kind``, ``ms``).

    Examples
    --------
    >>> stage_terms([{"kind": "source", "ms": 120.0}, {"kind": "python", "ms": 300.0},
    ...              {"kind": "state_get", "ms": 20.0}, {"kind": "state_put", "ms": 50.0},
    ...              {"kind": "spark", "ms": 90.0}])
    {'read': 120.0, 'operations': 300.0, 'state': 70.0, 'spark': 90.0, 'other': 0.0}
    """
    by_kind = {kind: term for term, kinds in TERMS.items() for kind in kinds}
    out = dict.fromkeys(TERM_NAMES, 0.0)
    for stage in stages:
        out[by_kind.get(str(stage.get("kind")), "other")] += float(stage.get("ms") or 0.0)
    return out


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def batch_rows(runs: list[dict[str, Any]], warm: int) -> list[tuple[str, dict[str, float | None]]]:
    """A contender's rows: each of the first ``warm`` batches (median over the runs), then the
    median of the steady batches (``warm`` and later) of every run. A value a batch lacks
    (native has no Trident stages) is None.

    Examples
    --------
    >>> runs = [{"batches": [{"ms": 900, "terms": {"read": 300.0}}, {"ms": 500, "terms": {"read": 100.0}},
    ...                      {"ms": 400, "terms": {"read": 80.0}}]}]
    >>> [(label, row["ms"], row["term_read"]) for label, row in batch_rows(runs, 1)]
    [('batch 1', 900, 300.0), ('steady (median)', 450.0, 90.0)]
    """
    rows = []
    for i in range(warm):
        batches = [_flat(run["batches"][i]) for run in runs if len(run["batches"]) > i]
        rows.append((f"batch {i + 1}", {k: _median(b.get(k) for b in batches) for k in COLUMNS}))
    steady = [_flat(b) for run in runs for b in run["batches"][warm:]]
    rows.append(("steady (median)", {k: _median(b.get(k) for b in steady) for k in COLUMNS}))
    return rows


def _flat(batch: dict[str, Any]) -> dict[str, Any]:
    """A batch's record with its terms (``batch["terms"]``, when measured) as ``term_<term>``."""
    return batch | {f"term_{term}": ms for term, ms in (batch.get("terms") or {}).items()}
