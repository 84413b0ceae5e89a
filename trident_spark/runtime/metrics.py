"""Per-batch, per-stage metrics on the driver: how the counts the tasks of a batch sent become stages.

Executors add to one Spark accumulator per query (a dict summed key by key).
Two kinds of keys travel in it:

* plain names (``"store_reads"``, ``"cache_hits"`` ...): the state counters of
  ``StateStats``, summed over every state of the batch;
* ``(STAGE, kind, name, metric)`` tuples: the time a stage's own Python code took
  (``"ms"``, summed over its tasks, not wall time) and the rows it took in and gave out;
* ``(ERRORS, operator, "reported")``: errors the operator reported with
  ``collector.reportError``, and ``(ERRORS, operator, "last")`` the last one's message (a
  string: the one value that is replaced, not summed).

A stage's time is its own: the time its tasks spent waiting for the stage before
them (the Kafka read, a shuffle) is measured apart and left out, so the stages of
one Spark task add up instead of counting the same wait twice.

On the driver, :func:`split_counters` turns a batch's sum into the state counters and
the stage list of ``BatchProgress.stages``; the tasks' side (:class:`StageClock`, :func:`timed`)
is :mod:`trident_spark.executor.metrics`; :func:`batch_spark_metrics` reads what
Spark measured for the batch's jobs (executor run and CPU time, GC, shuffle bytes).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from trident_spark.executor.fused_read import SPOUT_READ
from trident_spark.executor.metrics import ERRORS, KINDS, STAGE, StageName

if TYPE_CHECKING:
    from pyspark import SparkContext


def split_counters(counters: dict[Any, float], order: list[str] | None = None
                   ) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """A batch's summed counters as (state counters, stages in pipeline order).

    ``order`` lists stage names in the order the query's operators run; stages are
    sorted by kind (source first), then by that order.

    Examples
    --------
    >>> state, stages = split_counters({"store_reads": 2, ("stage", "python", "f", "ms"): 1.5})
    >>> state, stages[0]["name"], stages[0]["ms"]
    ({'store_reads': 2}, 'f', 1.5)
    """
    state: dict[str, int] = {}
    found: dict[tuple[str, StageName], dict[str, Any]] = {}
    for key, value in counters.items():
        if isinstance(key, tuple) and len(key) == 4 and key[0] == STAGE:
            _, kind, name, metric = key
            stage = StageName.of(name)
            entry = found.setdefault((kind, stage), {"name": str(stage), "kind": kind, "ms": 0.0,
                                                     "rows_in": None, "rows_out": None, "tasks": 0})
            entry[metric] = round(value, 3) if metric == "ms" else int(value)
        elif isinstance(key, str):
            state[key] = int(value)
    _own_time_of_updates(found)
    position = {name: i for i, name in enumerate(order or [])}

    def rank(item: tuple[tuple[str, StageName], dict[str, Any]]) -> tuple[int, int, str]:
        (kind, stage), entry = item
        kind_rank = KINDS.index(kind) if kind in KINDS else len(KINDS)
        # An operator's own stages keep their kind order (get, update, put); operators keep theirs.
        return position.get(stage.label, len(position)), kind_rank, entry["name"]

    stages = [entry for _, entry in sorted(found.items(), key=rank)]
    sources = [s for s in stages if s["kind"] == "source"]
    return state, sources + [s for s in stages if s["kind"] != "source"]


def split_errors(counters: dict[Any, Any]) -> tuple[dict[str, int], dict[str, str]]:
    """A batch's reported errors: (count per operator, last message per operator).

    Examples
    --------
    >>> split_errors({("errors", "each(Parse)", "reported"): 3,
    ...               ("errors", "each(Parse)", "last"): "ValueError: no number"})
    ({'each(Parse)': 3}, {'each(Parse)': 'ValueError: no number'})
    """
    counts: dict[str, int] = {}
    last: dict[str, str] = {}
    for key, value in counters.items():
        if isinstance(key, tuple) and len(key) == 3 and key[0] == ERRORS:
            if key[2] == "reported":
                counts[key[1]] = int(value)
            elif key[2] == "last":
                last[key[1]] = str(value)
    return counts, last


def spout_reads(counters: dict[Any, Any]) -> tuple[int, int] | None:
    """What the batch's fused reads of spouts counted (``executor.fused_read``): ``(rows read,
    malformed records dropped)``, each partition once even when Spark computed its stage again;
    None when no spout was read so (Spark's progress counts the rows then).

    Examples
    --------
    >>> spout_reads({("spout_read", "words", "0.0", "rows", 7): 1,
    ...              ("spout_read", "words", "1.0", "rows", 5): 2,
    ...              ("spout_read", "words", "1.0", "malformed", 1): 2})
    (12, 1)
    >>> spout_reads({"store_reads": 3}) is None
    True
    """
    seen: dict[tuple[Any, Any, Any], int] = {}
    for key in counters:
        if isinstance(key, tuple) and len(key) == 5 and key[0] == SPOUT_READ:
            _, stream, part, metric, value = key
            seen[(stream, part, metric)] = max(int(value), seen.get((stream, part, metric), 0))
    if not seen:
        return None
    return (sum(v for k, v in seen.items() if k[2] == "rows"),
            sum(v for k, v in seen.items() if k[2] == "malformed"))


def _own_time_of_updates(found: dict[tuple[str, StageName], dict[str, Any]]) -> None:
    """A persist's task time (``<label> / update``) includes its store round trips, which are
    stages of their own (``<label> / multiGet``, ``/ multiPut``): keep only the updater's share."""
    for (kind, stage), entry in found.items():
        if kind == "aggregate" and stage.step == "update":
            store = sum(found.get((k, StageName(stage.label, op)), {}).get("ms", 0.0)
                        for k, op in (("state_get", "multiGet"), ("state_put", "multiPut")))
            entry["ms"] = round(max(0.0, entry["ms"] - store), 3)


# --- what Spark measured ---------------------------------------------------------------------
def batch_description(stream: str, txid: int) -> str:
    """The Spark job description every job of a batch runs under (shown in Spark's UI); an
    output's jobs add their operator (``stream: batch N: persistentAggregate(Count)``)."""
    return f"{stream}: batch {txid}"


def batch_spark_metrics(sc: SparkContext, run_id: str, description: str, wait_s: float = 1.0,
                        scan: int = 200) -> dict[str, float]:
    """What Spark measured of one batch's jobs: those of the query's job group (Spark names it
    after the query's run id) that ran under the batch's description; ``{}`` when Spark cannot
    tell. Called by the progress listener, after the batch: nothing on the batch's own path.

    Spark's status store is filled asynchronously: while it shows none of the batch's jobs yet,
    this asks again, for up to ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    try:
        while True:
            stage_ids = _batch_stage_ids(sc, run_id, description, scan)
            if stage_ids or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        return spark_task_metrics(sc, sorted(stage_ids), max(0.0, deadline - time.monotonic())) \
            if stage_ids else {}
    except Exception:  # metrics must never fail anything
        return {}


def _batch_stage_ids(sc: SparkContext, run_id: str, description: str, scan: int) -> set[int]:
    ids = sorted(sc.statusTracker().getJobIdsForGroup(run_id), reverse=True)[:scan]
    store = sc._jsc.sc().statusStore()  # type: ignore[union-attr]
    stage_ids: set[int] = set()
    for job_id in ids:  # newest first: the next batch's jobs, then this one's, then older ones
        try:
            job = store.job(job_id)
        except Exception:  # not in the store (yet, or any more)
            continue
        text = job.description()
        if text.isDefined() and (text.get() == description or text.get().startswith(description + ": ")):
            seq = job.stageIds()
            stage_ids.update(int(seq.apply(i)) for i in range(seq.size()))
        elif stage_ids:
            break  # past this batch's jobs
    return stage_ids


def spark_task_metrics(sc: SparkContext, stage_ids: list[int], wait_s: float = 0.3) -> dict[str, float]:
    """Executor time, CPU, GC and shuffle bytes summed over ``stage_ids`` (skipped stages add 0)."""
    store = sc._jsc.sc().statusStore()  # type: ignore[union-attr]
    totals = {"stages": 0, "tasks": 0, "executor_run_ms": 0.0, "executor_cpu_ms": 0.0, "gc_ms": 0.0,
              "shuffle_read_bytes": 0, "shuffle_write_bytes": 0}
    deadline = time.monotonic() + wait_s
    for stage_id in stage_ids:
        while True:
            attempts = store.stageData(stage_id, False, None, False, None)
            statuses = [str(attempts.apply(i).status()) for i in range(attempts.size())]
            if "ACTIVE" not in statuses or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        for i in range(attempts.size()):
            data = attempts.apply(i)
            if str(data.status()) == "SKIPPED":
                continue
            totals["stages"] += 1
            totals["tasks"] += int(data.numCompleteTasks()) + int(data.numFailedTasks())
            totals["executor_run_ms"] += float(data.executorRunTime())
            totals["executor_cpu_ms"] += float(data.executorCpuTime()) / 1e6
            totals["gc_ms"] += float(data.jvmGcTime())
            totals["shuffle_read_bytes"] += int(data.shuffleReadBytes())
            totals["shuffle_write_bytes"] += int(data.shuffleWriteBytes())
    totals["executor_cpu_ms"] = round(totals["executor_cpu_ms"], 1)
    return totals


def with_spark_rest(stages: Sequence[Mapping[str, Any]], spark: dict[str, float]) -> list[Mapping[str, Any]]:
    """Append the ``spark`` stage: executor time the measured stages do not account for (JVM
    shuffle, built-in aggregation, moving rows to and from Python)."""
    run_ms = spark.get("executor_run_ms")
    if not run_ms:
        return list(stages)
    measured = sum(s["ms"] for s in stages)
    rest = {"name": "spark", "kind": "spark", "ms": round(max(0.0, run_ms - measured), 3),
            "rows_in": None, "rows_out": None, "tasks": int(spark.get("tasks", 0))}
    return [*stages, rest]


__all__ = ["batch_description", "batch_spark_metrics", "spark_task_metrics", "split_counters", "split_errors",
           "spout_reads", "with_spark_rest"]
