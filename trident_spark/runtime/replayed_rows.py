"""A batch run more than once in one run: count its rows once.

When a batch is replayed inside the run (``FailedException``, lost conditional writes,
an outage), every attempt reads the batch's source again, and Spark adds each attempt's
reads to the batch's ``numInputRows``. Before each replay, the batch runner takes what Spark
has counted so far (:func:`spark_reads_so_far`); the handle takes that off the batch's
progress, so a batch's rows are those of the attempt that succeeded. The observed metrics
(the spout's malformed records and read time) are not added up by Spark: they are one
attempt's already (seen: a batch of 3 malformed records replayed once reports 3 before and
after its replay), and are left as Spark reports them.

The figures travel from the batch runner to the handle with the batch's task counters
(:func:`with_attempts`, :func:`take_attempts`), under keys no task uses.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

_KEY = "replay"
ATTEMPTS = (_KEY, "attempts")
ROWS_BEFORE = (_KEY, "rows")


@dataclass
class SparkReads:
    """What Spark counted of a running batch's sources: the rows read so far."""

    rows: int


def spark_reads_so_far(query: Any) -> SparkReads | None:
    """What Spark has counted so far for the batch ``query`` (a ``StreamingQuery``) is running.

    The rows are the summed ``numOutputRows`` of the micro-batch scans of the batch's plan, from
    which Spark makes the batch's ``numInputRows``. Called on the driver between attempts of a
    batch (from inside ``foreachBatch``), never on the batch's path otherwise. None when Spark
    does not tell (Spark Connect, a source without a micro-batch scan, anything unexpected).

    Examples
    --------
    >>> spark_reads_so_far(None) is None
    True
    """
    try:
        execution = query._jsq.streamingQuery().lastExecution()
        if execution is None:
            return None
        leaves = execution.executedPlan().collectLeaves()
        rows, scans = 0, 0
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            if leaf.getClass().getSimpleName() != "MicroBatchScanExec":
                continue
            metric = leaf.metrics().get("numOutputRows")
            if metric.isDefined():
                rows += int(metric.get().value())
                scans += 1
        if not scans:
            return None
        return SparkReads(rows)
    except Exception as exc:  # counting must never fail a batch
        log.debug("cannot read what Spark counted of the running batch: %s", exc)
        return None


def with_attempts(counters: dict[Any, float], attempts: int, before: SparkReads | None) -> dict[Any, float]:
    """The batch's task counters, with how many attempts it took and what Spark had counted
    before the last one (only for a batch that took more than one).

    Examples
    --------
    >>> with_attempts({"store_reads": 2}, 3, SparkReads(6))
    {'store_reads': 2, ('replay', 'attempts'): 3, ('replay', 'rows'): 6}
    >>> take_attempts(_)
    (3, SparkReads(rows=6))
    """
    if attempts <= 1:
        return counters
    counters = {**counters, ATTEMPTS: attempts}
    if before is not None:
        counters[ROWS_BEFORE] = before.rows
    return counters


def take_attempts(counters: dict[Any, float]) -> tuple[int, SparkReads | None]:
    """Remove from ``counters`` (in place) what :func:`with_attempts` added: ``(attempts, what
    Spark had counted before the last attempt)``; ``(1, None)`` for a batch run once."""
    attempts = int(counters.pop(ATTEMPTS, 1))
    rows = counters.pop(ROWS_BEFORE, None)
    return attempts, None if rows is None else SparkReads(int(rows))


def count_once(progress: dict[str, Any], before: SparkReads) -> dict[str, Any]:
    """A batch's ``StreamingQueryProgress`` (as JSON) with the rows Spark had counted before the
    attempt that succeeded taken off (``numInputRows``, the sources' and the rates scaled to
    match). Its observed metrics are one attempt's already: left as they are.

    Examples
    --------
    >>> seen = {"numInputRows": 9, "processedRowsPerSecond": 90.0,
    ...         "observedMetrics": {"s_spout": {"malformed_records": 1, "read_ms": 4.0}}}
    >>> counted = count_once(seen, SparkReads(6))
    >>> counted["numInputRows"], counted["processedRowsPerSecond"], counted["observedMetrics"]
    (3, 30.0, {'s_spout': {'malformed_records': 1, 'read_ms': 4.0}})
    """
    read = int(progress.get("numInputRows", 0) or 0)
    rows = max(0, read - before.rows)
    scale = rows / read if read else 1.0
    counted = {**progress, "numInputRows": rows}
    for rate in ("inputRowsPerSecond", "processedRowsPerSecond"):
        if isinstance(progress.get(rate), int | float):
            counted[rate] = progress[rate] * scale
    counted["sources"] = [{**s, "numInputRows": round(s["numInputRows"] * scale)}
                          if isinstance(s, dict) and isinstance(s.get("numInputRows"), int | float) else s
                          for s in progress.get("sources") or []]
    return counted


__all__ = ["ATTEMPTS", "ROWS_BEFORE", "SparkReads", "count_once", "spark_reads_so_far", "take_attempts",
           "with_attempts"]
