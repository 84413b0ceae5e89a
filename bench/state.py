"""Word count into exactly-once state: ``persistentAggregate`` per backend vs Spark's own state.

Not a test: it prints ratios. One topic of ``--sentences`` sentences (4-20 words drawn
from a Zipf distribution over ``--vocabulary`` pseudo-words) over 4 partitions is
counted, in alternating rounds in one SparkSession, by:

* **native** (the baseline): Spark's own Kafka source (``spark.readStream.format("kafka")``,
  ``maxOffsetsPerTrigger``, value cast to a string, as a Spark user writes it), then
  ``explode(array_remove(split(value, <Split()'s regex>), ''))
  .groupBy("word").count()`` as a Structured Streaming aggregation, state in Spark's
  ``RocksDBStateStoreProvider``, ``outputMode("update")`` into ``noop``;
* **sqlite**, **redis**, **es**, **postgres**: ``each(["value"], Split(), ["word"]).groupBy(["word"])
  .persistentAggregate(<Backend>State.opaque(...), Count(), ["count"])`` run with
  ``topology.run(trigger="available_now")``: Spark aggregates the batch, then one task
  per shuffle partition folds its words into the store (multiGet -> opaque rule ->
  conditional multiPut, through the per-worker LRU cache). ``es`` is a local OpenSearch 2.19
  node (default index settings: one primary shard, data on disk, translog durable per
  request); ``postgres`` a local PostgreSQL with its
  default durability (fsync and synchronous commit on: a store that survives a power loss,
  like SQLite's synchronous=FULL).

A contender may carry state settings, to compare them within one invocation:
``redis[cache_size=10000]``, ``sqlite[synchronous=NORMAL,max_multi_get_batch_size=none]``; and
how it splits: ``split=python`` (a per-tuple ``BaseFunction``, bench/dsl.py's ``Split``),
``split=arrow`` (an ``ArrowFunction`` over the partition's Arrow batch, bench/arrow_split.py;
it needs ``trident_spark.arrow_operation``) or the built-in ``Split()`` (the default).

**The limit** (issue 31) runs in every round too, unless ``--no-limit``: one Python process (this
one) consuming the topic with confluent-kafka, the spout's consumer library, and counting the
words with a dict (bench/limit.py). Each contender's rate is reported as a fraction of it.

Every backend reads through the same ``KafkaSpout`` options (``max_offsets_per_trigger``;
native: the same ``maxOffsetsPerTrigger``), so all see identical batches; each run gets a fresh
checkpoint and a fresh state (new SQLite file, Redis key prefix, ES index, PostgreSQL table), so the
first batch of every run starts with an empty store and cold caches. Before timing,
each contender counts a smaller topic untimed (warm-up) and its totals are checked
against ``collections.Counter``; after every timed run the store's final counts are
read back and checked again.

Reported per contender: sentences/s (end to end, and per micro-batch without the
first ``--warm-batches``: "steady"), the ratio to native per round and its median, the fraction
of the limit, issue 31's target met or missed with the term that binds it, store round trips per
batch, keys
touched per batch (the distinct words of the batch), cache hit rate, and keys read
from the store as a share of keys touched with a warm cache; also CPU seconds of the
process tree (JVM, Python workers, driver, Kafka broker, the store's server) and the
wall time of the batch's two Spark stages (read + split + partial count; shuffle +
final count + state), from Spark's REST API; and, one table per contender, where each batch's
time goes: task time by term (read, operations, state, Spark) from the run's own metrics.
After the rounds, each backend's state task
(the executor's ``persist()`` on one shuffle partition's rows of each batch) also runs
outside Spark in this process, timed with its store round trips, in the scenarios of
``TASK_SCENARIOS`` of bench/state_tasks.py (the same Python worker every batch or
alternating ones; cache sizes);
``--no-task-profile`` skips it.

This VM's speed drifts up to 2x within an hour: contenders interleave, odd rounds in the
listed order (the limit first), even rounds reversed (two rounds: A B B A), and ratios use
medians. Results go to
``bench/results/state-<timestamp>.json`` (and a PNG when matplotlib is installed).

Run: ``.venv/bin/python bench/state.py`` (``--quick`` for a smoke run); ``--help`` for options.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import statistics
import sys
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_results import save_results
from dsl import fill_topic, settle, spout_for, wait_readable
from limit import run_limit
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from state_contenders import SETTINGS, Contender, parse_contenders, round_order
from state_report import plot, print_summary, summarise, summarise_limit
from state_runs import Services, run_contender, run_native, state_factory
from state_tasks import print_tasks, profile_tasks
from state_workload import batch_keys, make_sentences, make_vocabulary

console = Console(highlight=False, width=None if sys.stdout.isatty() else 140)
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PARTITIONS = 4


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=320_000, help="sentences in the topic (320000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the contenders (3)")
    parser.add_argument("--backends", default="native,sqlite,redis,es",
                        help="contenders, native first; a backend may carry state settings: "
                             "'native,sqlite,redis,redis[cache_size=10000],es,postgres' (settings: "
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
    parser.add_argument("--no-limit", action="store_true",
                        help="skip the limit (one Python process consuming the topic and counting in a dict)")
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
    if any(c.split == "arrow" for c in args.contenders):
        from arrow_split import ARROW_MISSING

        if ARROW_MISSING:
            parser.error(ARROW_MISSING)
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
    from trident_spark.local.services import start_elasticsearch, start_kafka, start_postgres, start_redis

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
    if "postgres" in kinds:
        postgres = stack.enter_context(start_postgres(durable=True))
        services.postgres = postgres.address
        described.append(f"postgres {postgres.provider} {postgres.address}")
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
        "limit": not args.no_limit, "order": "odd rounds as listed (limit first), even rounds reversed",
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
            spark = local_session("trident-spark-bench-state", master=f"local[{args.cores}]", conf=conf,
                                  kafka_connector=True)
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
            if not args.no_limit:
                run_limit(services.bootstrap, warmup_topic, PARTITIONS, len(warmup_sentences),
                          warmup_expected)
            result["warmup_s"] = time.perf_counter() - started
        console.print(f"warm-up: {result['warmup_s']:.1f} s; every contender's totals equal Python's Counter "
                      "(and are checked again after every run)")

        by_name = {c.name: c for c in contenders}
        runs = (["limit"] if not args.no_limit else []) + [c.name for c in contenders]

        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console) as progress:
            overall = progress.add_task("all runs", total=args.rounds * len(runs) * args.sentences)
            for n in range(1, args.rounds + 1):
                this: dict[str, Any] = {}
                for name in round_order(runs, n):
                    if name == "limit":
                        settle(spark)
                        this["limit"] = got = run_limit(services.bootstrap, topic, PARTITIONS, args.sentences,
                                                        expected)
                        progress.advance(overall, args.sentences)
                        progress.console.print(
                            f"round {n}: {'limit (one process, dict)':28s} {got['records_per_s']:>9,.0f} "
                            f"sentences/s ({got['seconds']:.2f} s, CPU {got['cpu_us_per_record']:.1f} "
                            "us/sentence)")
                        continue
                    c = by_name[name]
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
    result["limit"] = summarise_limit(result, contenders)
    print_summary(console, result, contenders)
    if "tasks" in result:
        print_tasks(console, result["tasks"], args.warm_batches)
    save_results(result, "state", stamp, plot, console)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
