"""Word count into exactly-once state: ``persistentAggregate`` per backend vs Spark's own state.

Not a test: it prints ratios. One topic of ``--sentences`` sentences (4-20 words drawn
from a Zipf distribution over ``--vocabulary`` pseudo-words) over 4 partitions is
counted, in alternating rounds in one SparkSession, by:

* **native** (the baseline): ``explode(array_remove(split(value, <Split()'s regex>), ''))
  .groupBy("word").count()`` as a Structured Streaming aggregation, state in Spark's
  ``RocksDBStateStoreProvider``, ``outputMode("update")`` into ``noop``;
* **sqlite**, **redis**, **es**: ``each(["value"], Split(), ["word"]).groupBy(["word"])
  .persistentAggregate(<Backend>State.opaque(...), Count(), ["count"])`` run with
  ``topology.run(trigger="available_now")``: Spark aggregates the batch, then one task
  per shuffle partition folds its words into the store (multiGet -> opaque rule ->
  conditional multiPut, through the per-worker LRU cache). ``es`` is osmem-server, an
  in-memory Elasticsearch-compatible server.

A contender may carry state settings, to compare them within one invocation:
``redis[cache_size=10000]``, ``sqlite[synchronous=NORMAL,max_multi_get_batch_size=none]``.

Every contender reads through the same ``KafkaSpout`` options
(``max_offsets_per_trigger``), so all see identical batches; each run gets a fresh
checkpoint and a fresh state (new SQLite file, Redis key prefix, ES index), so the
first batch of every run starts with an empty store and cold caches. Before timing,
each contender counts a smaller topic untimed (warm-up) and its totals are checked
against ``collections.Counter``; after every timed run the store's final counts are
read back and checked again.

Reported per contender: sentences/s (end to end, and per micro-batch without the
first ``--warm-batches``), the ratio to native, store round trips per batch, keys
touched per batch (the distinct words of the batch), cache hit rate, and keys read
from the store as a share of keys touched with a warm cache; also CPU seconds of the
process tree (JVM, Python workers, driver, Kafka broker, the store's server) and the
wall time of the batch's two Spark stages (read + split + partial count; shuffle +
final count + state), from Spark's REST API. After the rounds, each backend's state task
(the executor's ``persist()`` on one shuffle partition's rows of each batch) also runs
outside Spark in this process, timed with its store round trips, in the scenarios of
``TASK_SCENARIOS`` of bench/state_tasks.py (the same Python worker every batch or
alternating ones; cache sizes);
``--no-task-profile`` skips it.

This VM's speed drifts up to 2x within an hour: contenders interleave, each round
starting with another one, and ratios use medians. Results go to
``bench/results/state-<timestamp>.json`` (and a PNG when matplotlib is installed).

Run: ``.venv/bin/python bench/state.py`` (``--quick`` for a smoke run); ``--help`` for options.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_results import save_results
from dsl import fill_topic, settle, wait_readable
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from state_tasks import print_tasks, profile_tasks
from tree_cpu import cpu_bars
from tree_cpu import cpu_since as spent_since
from tree_cpu import tree_cpu as tree_cpu_of

console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)

BACKENDS = ("sqlite", "redis", "es")
LABELS = {"native": "Spark native (RocksDB)", "sqlite": "SqliteState", "redis": "RedisState",
          "es": "ElasticsearchState (osmem)"}
TARGETS = {"sqlite": 0.8, "redis": 0.8, "es": 0.5}
#: With a warm cache, keys read from the store per batch at most this share of keys touched.
READ_SHARE_TARGET = 0.05
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PARTITIONS = 4
#: State settings a contender may carry (``redis[cache_size=10000]``), with their parsers.
SETTINGS: dict[str, Callable[[str], Any]] = {
    "cache_size": int,
    "max_multi_get_batch_size": lambda v: None if v.lower() == "none" else int(v),
    "max_multi_put_batch_size": lambda v: None if v.lower() == "none" else int(v),
    "synchronous": str.upper,  # SQLite only
}


# --- contenders --------------------------------------------------------------------------
@dataclass(frozen=True)
class Contender:
    """``native``, or a backend with optional state settings: ``redis[cache_size=10000]``."""

    kind: str
    settings: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        if not self.settings:
            return self.kind
        return f"{self.kind}[" + ",".join(f"{k}={'none' if v is None else v}" for k, v in self.settings) + "]"

    @property
    def label(self) -> str:
        base = LABELS[self.kind]
        if not self.settings:
            return base
        return f"{base} " + ", ".join(f"{k}={'none' if v is None else v}" for k, v in self.settings)

    @property
    def target(self) -> float | None:
        return TARGETS.get(self.kind) if not self.settings else None


def parse_contenders(text: str) -> list[Contender]:
    """``native,sqlite,redis[cache_size=10000,max_multi_get_batch_size=none],es``."""
    found = []
    for spec in re.findall(r"[a-z]+(?:\[[^\]]*\])?", text):
        match = re.fullmatch(r"([a-z]+)(?:\[([^\]]*)\])?", spec)
        assert match is not None
        kind, body = match.group(1), match.group(2)
        if kind not in ("native", *BACKENDS):
            raise SystemExit(f"unknown contender {kind!r}: one of native, {', '.join(BACKENDS)}")
        settings = []
        for item in filter(None, (body or "").split(",")):
            key, _, value = item.partition("=")
            if key not in SETTINGS or (key == "synchronous" and kind != "sqlite") or kind == "native":
                raise SystemExit(f"{spec}: unknown setting {key!r}; one of {', '.join(SETTINGS)}")
            settings.append((key, SETTINGS[key](value)))
        found.append(Contender(kind, tuple(settings)))
    if not found or found[0].kind != "native" or sum(c.kind == "native" for c in found) != 1:
        raise SystemExit("--backends: list native first, then backends, e.g. native,sqlite,redis,es")
    if len({c.name for c in found}) != len(found):
        raise SystemExit("--backends: a contender is listed twice")
    return found


# --- data --------------------------------------------------------------------------------
def make_vocabulary(size: int, seed: int = 11) -> list[str]:
    """``size`` distinct lowercase pseudo-words of 2-4 syllables (4-12 letters)."""
    rng = random.Random(seed)
    onsets = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
              "br", "ch", "cl", "dr", "fl", "gr", "pl", "sh", "st", "th", "tr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.choice((2, 2, 3, 4))))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def make_sentences(count: int, vocabulary: list[str], zipf: float, seed: int = 7) -> list[str]:
    """``count`` sentences of 4-20 words; word of rank r drawn with probability ~ 1 / r**zipf."""
    rng = random.Random(seed)
    weights = list(itertools.accumulate(1 / (rank ** zipf) for rank in range(1, len(vocabulary) + 1)))
    lengths = [rng.randint(4, 20) for _ in range(count)]
    words = rng.choices(vocabulary, cum_weights=weights, k=sum(lengths))
    sentences = []
    at = 0
    for length in lengths:
        sentences.append(" ".join(words[at:at + length]))
        at += length
    return sentences


def batch_keys(sentences: list[str], batch: int) -> list[int]:
    """Distinct words of each batch: fill_topic's round-robin puts sentence i at offset i // 4
    of partition i % 4, so a batch taking the same count from each partition is a slice."""
    return [len({w for s in sentences[at:at + batch] for w in s.split()})
            for at in range(0, len(sentences), batch)]


# --- CPU accounting ------------------------------------------------------------------------
CPU_PARTS = ("jvm", "python_workers", "driver", "broker", "store")


def _kind(command: bytes) -> str:
    program = command.split(b"\0")[0]
    if b"java" in program:
        return "jvm"
    if b"pyspark" in command:
        return "python_workers"
    return "store" if b"redis-server" in program or b"osmem" in program else "broker"


def tree_cpu() -> dict[str, float]:
    """CPU seconds so far of this process and its descendants, by kind (see bench/dsl.py):
    ``store`` is redis-server and osmem-server, ``broker`` Tansu."""
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


# --- runs ----------------------------------------------------------------------------------
@dataclass
class Services:
    bootstrap: str
    redis: str | None = None
    es: str | None = None
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="trident-bench-state-")))


def spout_for(bootstrap: str, topic: str, batch: int) -> Any:
    from trident_spark.spout import KafkaSpout

    return KafkaSpout(bootstrap_servers=bootstrap, topics=[topic], starting_offsets="earliest",
                      max_offsets_per_trigger=batch)


def state_factory(contender: Contender, services: Services, run_id: str) -> Any:
    """A fresh, empty state of the contender's backend."""
    from trident_spark.state import ElasticsearchState, RedisState, SqliteState

    settings = dict(contender.settings)
    if contender.kind == "sqlite":
        return SqliteState.opaque(path=str(services.workdir / f"wc-{run_id}.db"), table="wc", **settings)
    if contender.kind == "redis":
        return RedisState.opaque(url=services.redis, key_prefix=f"wc-{run_id}", **settings)
    return ElasticsearchState.opaque(hosts=[services.es], index=f"wc-{run_id}", **settings)


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


def _batch(p: dict[str, Any]) -> dict[str, Any]:
    durations = p.get("durationMs") or {}
    return {"batch_id": p["batchId"], "rows": p["numInputRows"], "ms": durations.get("triggerExecution"),
            "add_batch_ms": durations.get("addBatch"), "latest_offset_ms": durations.get("latestOffset"),
            "planning_ms": durations.get("queryPlanning"),
            "logs_ms": durations.get("walCommit", 0) + durations.get("commitOffsets", 0)}


def run_native(spark: Any, spout: Any, tick: Callable[[int], None] | None = None,
               collect: dict[str, int] | None = None) -> dict[str, Any]:
    """Spark's own stateful word count (RocksDB state store), into noop (or ``collect``)."""
    from pyspark.sql import functions as F

    from trident_spark.builtin.functions import PYTHON_WHITESPACE_REGEX

    name = f"bench_native_{uuid.uuid4().hex[:6]}"
    counts = (spout.to_dataframe(spark)
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
                tick: Callable[[int], None] | None = None) -> dict[str, Any]:
    """``persistentAggregate(factory, Count())`` of the words, ``run(trigger="available_now")``."""
    from trident_spark import TridentTopology
    from trident_spark.builtin import Count, Split

    name = f"bench_state_{uuid.uuid4().hex[:6]}"
    topology = TridentTopology()
    (topology.newStream(name, spout).each(["value"], Split(), ["word"])
     .groupBy(["word"]).persistentAggregate(factory, Count(), ["count"]))
    checkpoint = tempfile.mkdtemp(prefix="trident-bench-ckpt-")
    try:
        started = time.perf_counter()
        handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
        try:
            query = handle.queries[name]
            _poll(query, handle.awaitTermination, tick)
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
        b["state"] = dict(mine.state) if mine is not None else {}
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
        result = run_backend(spark, spout, factory, tick)
        result["cpu_s"] = cpu_since(before)
        check_store(factory, vocabulary, expected)
        if contender.kind == "sqlite":
            for leftover in services.workdir.glob(f"{Path(factory.path).name}*"):
                leftover.unlink(missing_ok=True)
    result.setdefault("cpu_s", cpu_since(before))
    result["records_per_s"] = result["records"] / result["seconds"]
    result["cpu_us_per_record"] = result["cpu_s"]["total"] * 1e6 / max(1, result["records"])
    stages = stage_times(spark, result["marker"])
    for b in result["batches"]:
        b.update(stages.get(b["batch_id"], {}))
    return result


# --- report ---------------------------------------------------------------------------------
def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def state_profile(runs: list[dict[str, Any]], keys: list[int], warm: int) -> dict[str, Any]:
    """State counters per batch: means over the warm batches of every run (the first ``warm`` of
    each run left out), and the first batch apart. Means, not medians: when a shuffle partition's
    task lands on another Python worker than last batch, that batch reads (and rewrites) every
    key, so the counters are bimodal."""
    sums: Counter[str] = Counter()
    batches = lost = 0
    for run in runs:
        for i, b in enumerate(run["batches"]):
            s = b.get("state") or {}
            if i < warm or not s:
                continue
            batches += 1
            sums.update({k: v for k, v in s.items() if isinstance(v, int)})
            sums["keys_touched"] += keys[i] if i < len(keys) else 0
            lost += s.get("write_conflicts", 0) > 0
    looked = sums["cache_hits"] + sums["cache_misses"]
    first = [run["batches"][0].get("state") or {} for run in runs if run["batches"]]
    per_batch = {k: sums[k] / batches if batches else None for k in
                 ("keys_touched", "store_reads", "store_writes", "keys_read", "keys_written",
                  "write_conflicts", "cache_hits", "cache_misses")}
    return per_batch | {
        "warm_batches": batches, "batches_with_lost_writes": lost,
        "cache_hit_rate": sums["cache_hits"] / looked if looked else None,
        "read_share": sums["keys_read"] / sums["keys_touched"] if sums["keys_touched"] else None,
        "first_batch": {k: _median([f.get(k, 0) for f in first]) for k in
                        ("store_reads", "store_writes", "keys_read", "keys_written", "cache_misses")}}


def batch_profile(runs: list[dict[str, Any]], warm: int) -> dict[str, float | None]:
    batches = [b for run in runs for b in run["batches"][warm:]]
    return {part: _median([b.get(part) for b in batches]) for part in
            ("ms", "add_batch_ms", "latest_offset_ms", "logs_ms", "planning_ms", "read_ms", "state_ms",
             "read_task_ms", "state_task_ms")} | {
        "records_per_s": _median([b["rows"] * 1000 / b["ms"] for b in batches if b.get("ms")])}


def summarise(result: dict[str, Any], contenders: list[Contender]) -> dict[str, Any]:
    rounds, keys, warm = result["rounds"], result["setup"]["keys_per_batch"], result["setup"]["warm_batches"]
    summary: dict[str, Any] = {}
    for c in contenders:
        runs = [r[c.name] for r in rounds]
        summary[c.name] = {
            "label": c.label, "records_per_s": statistics.median(r["records_per_s"] for r in runs),
            "batches": statistics.median(len(r["batches"]) for r in runs),
            "batch": batch_profile(runs, warm),
            "cpu_us_per_record": statistics.median(r["cpu_us_per_record"] for r in runs),
            "cpu_s": {k: statistics.median(r["cpu_s"][k] for r in runs) for k in (*CPU_PARTS, "total")}}
        if c.kind != "native":
            summary[c.name]["state"] = state_profile(runs, keys, warm)
        else:
            ops = [b["native_state"] for r in runs for b in r["batches"][warm:]]
            summary[c.name]["native_state"] = {
                k: _median([o.get(k) for o in ops]) for k in ("numRowsUpdated", "allUpdatesTimeMs",
                                                             "commitTimeMs", "numRowsTotal")}
    base = summary["native"]
    for c in contenders[1:]:
        this = summary[c.name]
        this["round_ratios"] = [r[c.name]["records_per_s"] / r["native"]["records_per_s"] for r in rounds]
        this["ratio"] = statistics.median(this["round_ratios"])
        steady, base_steady = this["batch"]["records_per_s"], base["batch"]["records_per_s"]
        this["steady_ratio"] = steady / base_steady if steady and base_steady else None
        this["cpu_ratio"] = base["cpu_us_per_record"] / this["cpu_us_per_record"]
        this["target"] = c.target
    return summary


def print_summary(result: dict[str, Any], contenders: list[Contender]) -> None:
    setup, summary, rounds = result["setup"], result["summary"], result["rounds"]
    table = Table(title=f"word count into state: {setup['sentences']:,} sentences ({setup['words']:,} words, "
                        f"{setup['vocabulary']:,}-word vocabulary), batches of {setup['batch']:,}, "
                        f"{setup['shuffle_partitions']} shuffle partitions - sentences/s")
    table.add_column("run")
    for c in contenders:
        table.add_column(escape(c.name), justify="right", overflow="fold")
    for c in contenders[1:]:
        table.add_column(escape(f"{c.name} / native"), justify="right", overflow="fold")
    for n, r in enumerate(rounds, 1):
        base = r["native"]["records_per_s"]
        table.add_row(str(n), *(f"{r[c.name]['records_per_s']:,.0f}" for c in contenders),
                      *(f"{r[c.name]['records_per_s'] / base:.2f}" for c in contenders[1:]))
    table.add_row("median", *(f"{summary[c.name]['records_per_s']:,.0f}" for c in contenders),
                  *(f"[bold]{summary[c.name]['ratio']:.2f}[/]" for c in contenders[1:]))
    table.add_row("steady", *(f"{summary[c.name]['batch']['records_per_s'] or 0:,.0f}" for c in contenders),
                  *(f"{summary[c.name]['steady_ratio'] or 0:.2f}" for c in contenders[1:]))
    table.add_row("CPU us/sent.", *(f"{summary[c.name]['cpu_us_per_record']:.1f}" for c in contenders),
                  *(f"{summary[c.name]['cpu_ratio']:.2f}" for c in contenders[1:]))
    console.print(table)
    console.print(f"median: whole query per run (median of the runs' ratios); steady: one micro-batch, "
                  f"the first {setup['warm_batches']} of each run left out")

    state = Table(title=f"state per warm batch (means over batches {setup['warm_batches']}+ of every run; "
                        "keys touched = distinct words of the batch)")
    for column in ("contender", "keys touched", "store reads", "store writes", "keys read", "keys written",
                   "lost writes", "batches with lost writes", "cache hit rate", "keys read / touched",
                   "first batch reads/writes"):
        state.add_column(column, justify="left" if column == "contender" else "right", overflow="fold")
    for c in contenders[1:]:
        s = summary[c.name]["state"]
        first = s["first_batch"]
        state.add_row(escape(c.name), f"{s['keys_touched'] or 0:,.0f}", f"{s['store_reads'] or 0:.1f}",
                      f"{s['store_writes'] or 0:.1f}", f"{s['keys_read'] or 0:,.0f}",
                      f"{s['keys_written'] or 0:,.0f}", f"{s['write_conflicts'] or 0:,.0f}",
                      f"{s['batches_with_lost_writes']} of {s['warm_batches']}",
                      "-" if s["cache_hit_rate"] is None else f"{s['cache_hit_rate']:.1%}",
                      "-" if s["read_share"] is None else f"{s['read_share']:.1%}",
                      f"{first['store_reads']:.0f}/{first['store_writes']:.0f}")
    console.print(state)

    parts = Table(title="one micro-batch, medians (ms): Spark's stages from its REST API")
    for column in ("contender", "batch", "addBatch", "read+split+partial", "(task ms)", "shuffle+count+state",
                   "(task ms)", "logs", "CPU JVM/py/driver/broker/store s per run"):
        parts.add_column(column, justify="left" if column == "contender" else "right", overflow="fold")
    for c in contenders:
        p, cpu = summary[c.name]["batch"], summary[c.name]["cpu_s"]
        parts.add_row(escape(c.name), *(f"{p[k]:,.0f}" if p[k] is not None else "-" for k in
                                ("ms", "add_batch_ms", "read_ms", "read_task_ms", "state_ms", "state_task_ms",
                                 "logs_ms")),
                      "/".join(f"{cpu[k]:.1f}" for k in CPU_PARTS))
    console.print(parts)
    n = summary["native"].get("native_state", {})
    console.print(f"native state operator per batch: {n.get('numRowsUpdated') or 0:,.0f} rows updated, "
                  f"updates {n.get('allUpdatesTimeMs') or 0:,.0f} ms, "
                  f"commit {n.get('commitTimeMs') or 0:,.0f} ms (task time, summed over partitions)")
    for c in contenders[1:]:
        s = summary[c.name]
        share = s["state"]["read_share"]
        line = (f"{c.label} / native: {s['ratio']:.2f} end to end, {s['steady_ratio'] or 0:.2f} per batch, "
                f"{s['cpu_ratio']:.2f} in CPU")
        if s["target"] is not None:
            line += f"; target >= {s['target']}: " + ("[green]meets[/]" if s["ratio"] >= s["target"]
                                                      else "[red]below[/]")
        if share is not None:
            line += (f"; warm reads {share:.1%} of keys touched (<= {READ_SHARE_TARGET:.0%}: "
                     + ("[green]meets[/]" if share <= READ_SHARE_TARGET else "[red]above[/]") + ")")
        console.print(line)


def plot(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rounds, summary = result["rounds"], result["summary"]
    names = list(summary)
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(18, 4.8))
    xs = list(range(1, len(rounds) + 1))
    for name in names:
        left.plot(xs, [r[name]["records_per_s"] / 1e3 for r in rounds], "o-", label=name)
    left.set(xlabel="round", ylabel="thousand sentences/s", xticks=xs, title="word count into state, per run")
    left.set_ylim(bottom=0)
    left.legend(fontsize=7)
    bottom = [0.0] * len(names)
    for key, label in (("read_ms", "read + split + partial count"), ("state_ms", "shuffle + count + state"),
                       ("logs_ms", "offset + commit logs")):
        heights = [summary[n]["batch"][key] or 0 for n in names]
        middle.bar(names, heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    middle.set(ylabel="median ms per micro-batch", title="one warm micro-batch")
    middle.tick_params(axis="x", labelrotation=20, labelsize=7)
    middle.legend(fontsize=7)
    cpu_bars(right, names, [summary[n]["cpu_s"] for n in names], CPU_PARTS, result["setup"]["sentences"])
    right.tick_params(axis="x", labelrotation=20, labelsize=7)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# --- main ---------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=320_000, help="sentences in the topic (320000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the contenders (3)")
    parser.add_argument("--backends", default="native,sqlite,redis,es",
                        help="contenders, native first; a backend may carry state settings: "
                             "'native,sqlite,redis,redis[cache_size=10000],es' (settings: "
                             + ", ".join(SETTINGS) + ")")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=40_000,
                        help="sentences per batch for every contender (40000)")
    parser.add_argument("--vocabulary", type=int, default=5_000, help="distinct words (5000)")
    parser.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent of word ranks (1.0)")
    parser.add_argument("--warm-batches", type=int, default=2,
                        help="first batches of each run left out of per-batch medians (2)")
    parser.add_argument("--shuffle-partitions", type=int, default=None,
                        help="spark.sql.shuffle.partitions (default: local_session's, the core count)")
    parser.add_argument("--cores", type=int, default=2, help="local[N] for Spark (2)")
    parser.add_argument("--no-task-profile", action="store_true",
                        help="skip the state task outside Spark (persist() timed in this process)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 100,000 sentences in batches of 20,000, one round")
    args = parser.parse_args(argv)
    if args.quick:
        args.sentences, args.max_offsets_per_trigger, args.rounds = 100_000, 20_000, 1
    if args.max_offsets_per_trigger % PARTITIONS:
        parser.error(f"--max-offsets-per-trigger must be a multiple of {PARTITIONS} (equal batches)")
    args.contenders = parse_contenders(args.backends)
    return args


def code_version() -> str:
    """Where trident_spark was imported from, and its git commit when that is a checkout."""
    import subprocess

    import trident_spark

    where = Path(trident_spark.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = (where / "COMMIT").read_text().strip()[:7] if (where / "COMMIT").exists() else "?"
    return f"{where} @ {commit}"


def start_services(stack: ExitStack, kinds: set[str]) -> Services:
    from trident_spark.local.services import start_elasticsearch, start_kafka, start_redis

    kafka = stack.enter_context(start_kafka())
    services = Services(bootstrap=kafka.address)
    stack.callback(shutil.rmtree, services.workdir, True)
    described = [f"kafka {kafka.provider} {kafka.address}"]
    if "redis" in kinds:
        redis = stack.enter_context(start_redis())
        services.redis = redis.address
        described.append(f"redis {redis.provider} {redis.address}")
    if "es" in kinds:
        es = stack.enter_context(start_elasticsearch())
        services.es = es.address
        described.append(f"elasticsearch {es.provider} {es.address}")
    console.print("services: " + ", ".join(described))
    return services


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    contenders: list[Contender] = args.contenders
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    result: dict[str, Any] = {"setup": {
        "sentences": args.sentences, "batch": args.max_offsets_per_trigger, "rounds": args.rounds,
        "partitions": PARTITIONS, "vocabulary": args.vocabulary, "zipf": args.zipf,
        "warm_batches": args.warm_batches, "contenders": [c.name for c in contenders], "cores": args.cores,
        "cpu_count": os.cpu_count(), "machine": platform.platform(), "python": sys.version.split()[0],
        "load_average_at_start": os.getloadavg(), "started": stamp, "state_provider": ROCKSDB_PROVIDER,
        "code": code_version()},
        "rounds": []}

    with ExitStack() as stack:
        names = escape(", ".join(c.name for c in contenders))
        console.print(f"[bold]State benchmark[/] - {os.cpu_count()} cores, load average "
                      f"{os.getloadavg()[0]:.1f}; contenders: {names}; code {result['setup']['code']}")
        services = start_services(stack, {c.kind for c in contenders})

        vocabulary = make_vocabulary(args.vocabulary)
        sentences = make_sentences(args.sentences, vocabulary, args.zipf)
        expected = Counter(w for s in sentences for w in s.split())
        warmup_sentences = sentences[:2 * args.max_offsets_per_trigger]
        warmup_expected = Counter(w for s in warmup_sentences for w in s.split())
        keys = batch_keys(sentences, args.max_offsets_per_trigger)
        topic, warmup_topic = (f"bench-state-{uuid.uuid4().hex[:6]}",
                               f"bench-state-warm-{uuid.uuid4().hex[:6]}")
        words = sum(expected.values())
        with console.status(f"producing {args.sentences:,} sentences ({words:,} words) ..."):
            produce_s = fill_topic(services.bootstrap, topic, sentences, PARTITIONS)
            fill_topic(services.bootstrap, warmup_topic, warmup_sentences, PARTITIONS)
            wait_readable(services.bootstrap, topic, PARTITIONS, len(sentences))
            wait_readable(services.bootstrap, warmup_topic, PARTITIONS, len(warmup_sentences))
        console.print(f"produced in {produce_s:.1f} s: {words / len(sentences):.1f} words per sentence, "
                      f"{len(expected):,} distinct words used; distinct words per batch "
                      f"{min(keys):,}-{max(keys):,} (median {statistics.median(keys):,.0f}); top word "
                      f"{expected.most_common(1)[0][1] / words:.1%} of all")
        result["setup"] |= {"words": words, "distinct_words": len(expected), "keys_per_batch": keys,
                            "produce_s": produce_s}

        with console.status("starting Spark (JVM) ..."):
            from trident_spark.runtime.session import local_session

            conf = {"spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
                    "spark.ui.retainedStages": "10000", "spark.ui.retainedJobs": "10000"}
            if args.shuffle_partitions:
                conf["spark.sql.shuffle.partitions"] = str(args.shuffle_partitions)
            started = time.perf_counter()
            spark = local_session("trident-spark-bench-state", master=f"local[{args.cores}]", conf=conf)
            result["jvm_start_s"] = time.perf_counter() - started
        stack.callback(spark.stop)
        result["setup"]["shuffle_partitions"] = int(spark.conf.get("spark.sql.shuffle.partitions") or 0)
        result["setup"]["spark_conf"] = {k: spark.conf.get(k, None) for k in (
            "spark.sql.streaming.stateStore.providerClass",
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
            "spark.sql.streaming.stateStore.rocksdb.formatVersion", "spark.sql.adaptive.enabled",
            "spark.python.worker.reuse")}
        console.print(f"SparkSession start {result['jvm_start_s']:.1f} s; state store "
                      f"{result['setup']['spark_conf']['spark.sql.streaming.stateStore.providerClass']}, "
                      f"{result['setup']['shuffle_partitions']} shuffle partitions")

        with console.status("warm-up and check: each contender counts the first two batches untimed ..."):
            started = time.perf_counter()
            for c in contenders:
                if c.kind == "native":
                    counts: dict[str, int] = {}
                    spout = spout_for(services.bootstrap, warmup_topic, args.max_offsets_per_trigger)
                    run_native(spark, spout, collect=counts)
                    if counts != warmup_expected:
                        raise SystemExit(f"native counted {len(counts)} words differently from Counter")
                else:
                    run_contender(c, spark, services, warmup_topic, args.max_offsets_per_trigger, vocabulary,
                                  warmup_expected)
            result["warmup_s"] = time.perf_counter() - started
        console.print(f"warm-up: {result['warmup_s']:.1f} s; every contender's totals equal Python's Counter "
                      "(and are checked again after every run)")

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            overall = progress.add_task("all runs", total=args.rounds * len(contenders) * args.sentences)
            for n in range(1, args.rounds + 1):
                this: dict[str, Any] = {}
                first = (n - 1) % len(contenders)
                for c in contenders[first:] + contenders[:first]:
                    current = progress.add_task(escape(f"round {n}/{args.rounds}: {c.name}"),
                                                total=args.sentences)

                    def tick(rows: int, current: Any = current) -> None:
                        progress.advance(current, rows)
                        progress.advance(overall, rows)

                    batch = args.max_offsets_per_trigger
                    this[c.name] = got = run_contender(c, spark, services, topic, batch, vocabulary, expected,
                                                       tick)
                    if got["records"] != args.sentences:
                        raise SystemExit(f"{c.name} read {got['records']} sentences, "
                                         f"expected {args.sentences}")
                    progress.update(current, completed=args.sentences)
                    line = (f"round {n}: {escape(f'{c.name:28s}')} {got['records_per_s']:>9,.0f} sentences/s "
                            f"({got['seconds']:.2f} s, CPU {got['cpu_us_per_record']:.1f} us/sentence; "
                            f"batches ms {[b['ms'] for b in got['batches']]})")
                    if c.kind != "native":
                        s = [b.get("state") or {} for b in got["batches"]]
                        line += (f" reads/batch {[x.get('keys_read', 0) for x in s]}, conflicts "
                                 f"{sum(x.get('write_conflicts', 0) for x in s)}")
                    progress.console.print(line)
                    progress.remove_task(current)
                result["rounds"].append(this)

        if not args.no_task_profile:
            with console.status("one state task outside Spark, per backend and scenario ..."):
                def factory_for(kind: str, settings: dict[str, Any]) -> Any:
                    return state_factory(Contender(kind, tuple(settings.items())), services,
                                         f"task-{uuid.uuid4().hex[:8]}")

                kinds = list(dict.fromkeys(c.kind for c in contenders[1:]))
                result["tasks"] = profile_tasks(kinds, factory_for, sentences, args.max_offsets_per_trigger,
                                                args.warm_batches)

    result["summary"] = summarise(result, contenders)
    print_summary(result, contenders)
    if "tasks" in result:
        print_tasks(console, result["tasks"], args.warm_batches)
    save_results(result, "state", stamp, plot, console)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
