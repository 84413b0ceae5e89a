"""bench/state.py's verdicts: each contender's target ratio to native met or missed, and for a
miss the binding term, measured: what of the contender's steady batch bounds it."""

from __future__ import annotations

from typing import Any

from state_stages import TERMS

#: Driver-side wall time of a batch (Spark's progress): the offsets asked for, planning, logs.
DRIVER_PARTS = ("latest_offset_ms", "planning_ms", "logs_ms")


def batch_terms(steady: dict[str, float | None], cores: int) -> dict[str, float]:
    """The terms of a steady batch in wall milliseconds: each task-time term divided by
    ``cores`` (tasks of a term run side by side), the driver's parts as they are, and ``rest``:
    the batch's wall time that neither accounts for (the driver's own work inside addBatch, such
    as planning the batch's DataFrames and committing state, and cores left idle).

    Examples
    --------
    >>> terms = batch_terms({"ms": 800.0, "term_read": 200.0, "term_operations": 600.0,
    ...                      "term_state": 100.0, "term_spark": 50.0, "term_other": None,
    ...                      "latest_offset_ms": 10, "planning_ms": 30, "logs_ms": 60}, 2)
    >>> terms["read"], terms["operations"], terms["other"], terms["driver"], terms["rest"]
    (100.0, 300.0, 0.0, 100.0, 225.0)
    """
    out = {term: (steady.get(f"term_{term}") or 0.0) / cores for term in (*TERMS, "other")}
    out["driver"] = float(sum(steady.get(part) or 0.0 for part in DRIVER_PARTS))
    out["rest"] = max(0.0, (steady.get("ms") or 0.0) - sum(out.values()))
    return out


def verdict(target: float, ratio: float, steady_ratio: float | None, steady: dict[str, float | None],
            cores: int, warm: int) -> dict[str, Any]:
    """Whether ``ratio`` (end to end, median of the rounds) meets ``target``, and if not, why.

    The binding term of a miss: when the steady ratio meets the target, the query's fixed costs
    (its first ``warm`` batches, start and stop); else the largest term of the steady batch
    (:func:`batch_terms`), with the batch time the target needs at the same batch size. A term
    is named only where it was measured: ``rest`` is what no measured term accounts for.

    Examples
    --------
    >>> steady = {"ms": 1000.0, "term_read": 200.0, "term_operations": 1200.0, "term_state": 100.0,
    ...           "term_spark": 50.0, "latest_offset_ms": 10, "planning_ms": 30, "logs_ms": 60}
    >>> v = verdict(2.5, 1.1, 1.25, steady, cores=2, warm=2)
    >>> v["met"], v["binding"]
    (False, 'operations: 600 ms per core of a 1,000 ms batch; 2.5x needs a batch of <= 500 ms')
    >>> print(verdict(1.5, 1.2, 1.6, steady, cores=2, warm=2)["binding"])  # doctest: +ELLIPSIS
    per-query fixed costs: steady 1.60 meets 1.5x, end to end 1.20 does not (the first 2 batches, ...)
    >>> verdict(1.5, 1.7, 1.6, steady, cores=2, warm=2)["binding"] is None
    True
    """
    met = ratio >= target
    steady_met = steady_ratio is not None and steady_ratio >= target
    out: dict[str, Any] = {"target": target, "ratio": ratio, "steady_ratio": steady_ratio, "met": met,
                           "steady_met": steady_met, "binding": None, "terms": None}
    if met:
        return out
    if steady_met:
        out["binding"] = (f"per-query fixed costs: steady {steady_ratio:.2f} meets {target:g}x, end to end "
                          f"{ratio:.2f} does not (the first {warm} batches, the query's start and stop)")
        return out
    batch_ms = steady.get("ms")
    terms = batch_terms(steady, cores)
    out["terms"] = terms
    if not batch_ms or not steady_ratio or not any(terms[t] for t in (*TERMS, "other")):
        out["binding"] = "unmeasured: the run's metrics have no stage times for its steady batches"
        return out
    largest = max(terms, key=lambda t: terms[t])
    budget = batch_ms * steady_ratio / target
    unit = "" if largest in ("driver", "rest") else " per core"
    out["binding"] = (f"{largest}: {terms[largest]:,.0f} ms{unit} of a {batch_ms:,.0f} ms batch; "
                      f"{target:g}x needs a batch of <= {budget:,.0f} ms")
    return out
