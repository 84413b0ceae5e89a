"""bench/state.py's runs: one contender counts the topic once, timed, with what the run spends
(CPU of the process tree by kind, Spark's stage times per batch, state counters) and a check
of the store's final counts."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dsl import settle, spout_for
from state_contenders import Contender
from state_stages import stage_terms
from tree_cpu import cpu_since as spent_since
from tree_cpu import tree_cpu as tree_cpu_of

# --- CPU accounting ------------------------------------------------------------------------
CPU_PARTS = ("jvm", "python_workers", "driver", "broker", "store")


def _kind(command: bytes) -> str:
    program = command.split(b"\0")[0]
    if b"java" in program:  # Spark's JVM, or the local Kafka broker's, or an OpenSearch node's
        if b"\0kafka.Kafka\0" in command:
            return "broker"
        return "store" if b"TridentOpenSearchNode" in command else "jvm"
    if b"pyspark" in command:
        return "python_workers"
    return "store" if any(name in program for name in (b"redis-server", b"osmem", b"postgres")) else "broker"


def tree_cpu() -> dict[str, float]:
    """CPU seconds so far of this process and its descendants, by kind (see bench/dsl.py):
    ``store`` is redis-server, the OpenSearch node (or osmem-server) and PostgreSQL's processes,
    ``broker`` the local Kafka broker (Apache Kafka's JVM, or Tansu)."""
    return tree_cpu_of(CPU_PARTS, _kind)


def cpu_since(before: dict[str, float]) -> dict[str, float]:
    return spent_since(before, tree_cpu())


# --- Spark's stages ------------------------------------------------------------------------
def stage_times(spark: Any, marker: str) -> dict[int, dict[str, float]]:
    """Wall and task time of each batch's stages whose job description holds ``marker``.

    By batch id: ``read_ms`` / ``state_ms`` (wall time of the stage that reads, splits and
    counts partially / of the one that shuffles, counts and updates the state) and their
    task time (``*_task_ms``). From Spark's REST API; {} when the UI is off.
    """
    url = spark.sparkContext.uiWebUrl
    if not url:
        return {}
    app = spark.sparkContext.applicationId
    try:
        with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages?status=complete",
                                    timeout=10) as answer:
            stages = json.load(answer)
    except OSError:
        return {}
    out: dict[int, dict[str, float]] = {}
    for stage in stages:
        description = stage.get("description") or ""
        if marker not in description:
            continue
        batch = re.search(r"batch[ =:]+(\d+)", description)
        if not batch or "submissionTime" not in stage or "completionTime" not in stage:
            continue
        wall = (_ts(stage["completionTime"]) - _ts(stage["submissionTime"])) * 1000
        kind = "read" if stage.get("shuffleWriteBytes", 0) > 0 else "state"
        entry = out.setdefault(int(batch.group(1)), {})
        entry[f"{kind}_ms"] = entry.get(f"{kind}_ms", 0.0) + wall
        entry[f"{kind}_task_ms"] = entry.get(f"{kind}_task_ms", 0.0) + stage.get("executorRunTime", 0)
    return out


def _ts(text: str) -> float:
    return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


# --- services and fresh state --------------------------------------------------------------
@dataclass
class Services:
    """Where the local services listen; ``workdir`` holds the SQLite files."""

    bootstrap: str
    redis: str | None = None
    es: str | None = None
    postgres: str | None = None
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="trident-bench-state-")))


def state_factory(contender: Contender, services: Services, run_id: str) -> Any:
    """A fresh, empty state of the contender's backend."""
    from trident_spark.state import ElasticsearchState, PostgresState, RedisState, SqliteState

    settings = contender.state_settings
    if contender.kind == "sqlite":
        return SqliteState.opaque(path=str(services.workdir / f"wc-{run_id}.db"), table="wc", **settings)
    if contender.kind == "redis":
        return RedisState.opaque(url=services.redis, key_prefix=f"wc-{run_id}", **settings)
    if contender.kind == "postgres":
        return PostgresState.opaque(dsn=services.postgres, table=f"wc_{run_id}", **settings)
    return ElasticsearchState.opaque(hosts=[services.es], index=f"wc-{run_id}", **settings)


# --- one run -------------------------------------------------------------------------------


def _poll(query: Any, done: Callable[[float], bool], tick: Callable[[int], None] | None) -> None:
    seen: set[int] = set()

    def advance() -> None:
        last = query.lastProgress
        if tick and last and last["batchId"] not in seen and last["numInputRows"]:
            seen.add(last["batchId"])
            tick(int(last["numInputRows"]))

    while not done(0.25):
        advance()
    advance()


def _poll_handle(handle: Any, tick: Callable[[int], None] | None) -> None:
    """As :func:`_poll`, from the run's own progress: its rows are the records read (Spark's
    ``numInputRows`` counts a spout's partitions when its read is fused with the first
    operations)."""
    seen: set[int] = set()

    def advance() -> None:
        for batch in list(handle.progress):
            if tick and batch.txid not in seen and batch.rows:
                seen.add(batch.txid)
                tick(int(batch.rows))

    while not handle.awaitTermination(0.25):
        advance()
    advance()


def _batch(p: dict[str, Any]) -> dict[str, Any]:
    durations = p.get("durationMs") or {}
    return {"batch_id": p["batchId"], "rows": p["numInputRows"], "ms": durations.get("triggerExecution"),
            "add_batch_ms": durations.get("addBatch"), "latest_offset_ms": durations.get("latestOffset"),
            "planning_ms": durations.get("queryPlanning"),
            "logs_ms": durations.get("walCommit", 0) + durations.get("commitOffsets", 0)}


def run_native(spark: Any, spout: Any, tick: Callable[[int], None] | None = None,
               collect: dict[str, int] | None = None) -> dict[str, Any]:
    """Spark's own stateful word count (RocksDB state store) over Spark's own Kafka source (with the
    spout's broker, topic and batch size, as a Spark user writes it), into noop (or ``collect``)."""
    from dsl import native_source
    from pyspark.sql import functions as F

    from trident_spark.builtin.functions import PYTHON_WHITESPACE_REGEX

    name = f"bench_native_{uuid.uuid4().hex[:6]}"
    counts = (native_source(spark, spout)
              .select(F.explode(F.array_remove(F.split(F.col("value"), PYTHON_WHITESPACE_REGEX), ""))
                      .alias("word"))
              .groupBy("word").count())
    checkpoint = tempfile.mkdtemp(prefix="trident-bench-ckpt-")
    try:
        writer = counts.writeStream.outputMode("update").trigger(availableNow=True) \
            .option("checkpointLocation", checkpoint).queryName(name)
        if collect is not None:
            def each_batch(df: Any, batch_id: int) -> None:
                collect.update({row["word"]: row["count"] for row in df.toArrow().to_pylist()})
            writer = writer.foreachBatch(each_batch)
        else:
            writer = writer.format("noop")
        started = time.perf_counter()
        query = writer.start()
        _poll(query, query.awaitTermination, tick)
        seconds = time.perf_counter() - started
        if query.exception() is not None:
            raise SystemExit(f"native query failed: {query.exception()}")
        progress = [json.loads(p.json) for p in query.recentProgress if p.numInputRows > 0]
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)
    batches = []
    for p in progress:
        b = _batch(p)
        op = (p.get("stateOperators") or [{}])[0]
        b["native_state"] = {k: op.get(k) for k in (
            "numRowsTotal", "numRowsUpdated", "allUpdatesTimeMs", "commitTimeMs", "memoryUsedBytes",
            "numShufflePartitions")}
        b["native_state"]["custom"] = op.get("customMetrics") or {}
        batches.append(b)
    return {"records": sum(b["rows"] for b in batches), "seconds": seconds, "batches": batches,
            "marker": name, "provider": spark.conf.get("spark.sql.streaming.stateStore.providerClass")}


def run_backend(spark: Any, spout: Any, factory: Any,
                tick: Callable[[int], None] | None = None, split: str = "builtin") -> dict[str, Any]:
    """``persistentAggregate(factory, Count())`` of the words, ``run(trigger="available_now")``;
    ``split``: ``builtin`` (Split(), Spark SQL), ``python`` (a BaseFunction: ``str.split()``) or
    ``arrow`` (an ArrowFunction: bench/arrow_split.py)."""
    from dsl import Split as PythonSplit
    from dsl import _pickle_this_module_by_value

    from trident_spark import TridentTopology
    from trident_spark.builtin import Count, Split

    name = f"bench_state_{uuid.uuid4().hex[:6]}"
    topology = TridentTopology()
    splitter: Any
    if split == "python":
        _pickle_this_module_by_value()  # executors cannot import bench/dsl.py
        splitter = PythonSplit()
    elif split == "arrow":
        import arrow_split

        if arrow_split.ARROW_MISSING:
            raise SystemExit(arrow_split.ARROW_MISSING)
        arrow_split.ship_by_value()  # nor bench/arrow_split.py
        splitter = arrow_split.ArrowSplit()
    else:
        splitter = Split()
    (topology.newStream(name, spout).each(["value"], splitter, ["word:string"])
     .groupBy(["word"]).persistentAggregate(factory, Count(), ["count"]))
    checkpoint = tempfile.mkdtemp(prefix="trident-bench-ckpt-")
    try:
        started = time.perf_counter()
        handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
        try:
            query = handle.queries[name]
            _poll_handle(handle, tick)
            seconds = time.perf_counter() - started
            failure = handle.exception()
            if failure is not None:
                raise SystemExit(f"{factory.url}: query failed: {failure}")
            ours = {p.txid: p for p in handle.progress}
            progress = [json.loads(p.json) for p in query.recentProgress if p.numInputRows > 0]
        finally:
            handle.stop()
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)
    batches = []
    for p in progress:
        b = _batch(p)
        mine = ours.get(p["batchId"])
        if mine is not None:
            b["rows"] = mine.rows  # the records read (Spark counts a fused spout's partitions)
        b["state"] = dict(mine.state) if mine is not None else {}
        # Where the batch's task time went, from the run's own metrics (read, operations, state).
        b["stages"] = [dict(stage) for stage in mine.stages] if mine is not None else []
        b["terms"] = stage_terms(b["stages"])
        batches.append(b)
    return {"records": sum(b["rows"] for b in batches), "seconds": seconds, "batches": batches,
            "marker": name}


def check_store(factory: Any, vocabulary: list[str], expected: Counter[str]) -> None:
    """The store's final counts equal Python's count of the topic (exactly once)."""
    with factory.with_settings(cache_size=0).open() as state:
        got = state.multiGet([[w] for w in vocabulary])
    wrong = [(w, g, expected.get(w)) for w, g in zip(vocabulary, got, strict=True) if g != expected.get(w)]
    if wrong:
        raise SystemExit(f"{factory.url}: {len(wrong)} counts differ from Python's Counter, e.g. "
                         + ", ".join(f"{w!r}: {g} != {e}" for w, g, e in wrong[:5]))


def run_contender(contender: Contender, spark: Any, services: Services, topic: str, batch: int,
                  vocabulary: list[str], expected: Counter[str],
                  tick: Callable[[int], None] | None = None) -> dict[str, Any]:
    settle(spark)
    spout = spout_for(services.bootstrap, topic, batch)
    before = tree_cpu()
    if contender.kind == "native":
        result = run_native(spark, spout, tick)
    else:
        factory = state_factory(contender, services, uuid.uuid4().hex[:10])
        result = run_backend(spark, spout, factory, tick, contender.split)
        result["cpu_s"] = cpu_since(before)
        check_store(factory, vocabulary, expected)
        if contender.kind == "sqlite":
            for leftover in services.workdir.glob(f"{Path(factory.path).name}*"):
                leftover.unlink(missing_ok=True)
        if contender.kind == "postgres":
            import psycopg

            with psycopg.connect(factory.dsn, autocommit=True) as db:
                db.execute(f'DROP TABLE "{factory.table}"')
    result.setdefault("cpu_s", cpu_since(before))
    result["records_per_s"] = result["records"] / result["seconds"]
    result["cpu_us_per_record"] = result["cpu_s"]["total"] * 1e6 / max(1, result["records"])
    stages = stage_times(spark, result["marker"])
    for b in result["batches"]:
        b.update(stages.get(b["batch_id"], {}))
    return result
