"""Kafka spout throughput against a plain confluent-kafka consumer, side by side.

Not a test: it prints ratios. One topic of ``--records`` records (~65-byte text
values, no keys) over ``--partitions`` partitions is read, in alternating
rounds, by

* the baseline: one ``confluent_kafka.Consumer`` that ``assign()``s every
  partition at offset 0 (a group join takes ~23 s on Tansu) and loops over
  ``consume(num_messages=...)`` touching each value, with
  ``fetch.queue.backoff.ms=10`` (librdkafka's default of 1000 ms stalls a
  consumer ~1 s whenever >100k messages are queued; one extra run with the
  defaults shows it);
* the spout: a streaming query over ``KafkaSpout(max_offsets_per_trigger=...)``
  into Spark's ``noop`` sink with ``trigger(availableNow=True)``, in a
  SparkSession started and warmed up before any timing (JVM start is reported
  apart). Each round uses a fresh checkpoint.

This VM's speed drifts up to 2x within an hour, so rounds interleave and the
ratio uses medians. Results go to ``bench/results/spout-<timestamp>.json``
(and a PNG when matplotlib is installed).

Run: ``.venv/bin/python bench/spout.py`` (or ``make bench``); ``--help`` for options.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from rich.console import Console
from rich.table import Table

from trident_spark.local.kafka import create_topic, produce
from trident_spark.local.services import start_kafka

RESULTS_DIR = Path(__file__).resolve().parent / "results"
console = Console(highlight=False)


# --- data --------------------------------------------------------------------------------
def make_value(i: int, size: int) -> bytes:
    """A text value of exactly ``size`` bytes (for size >= 16), different for every ``i``."""
    head = b"rec %010d " % i
    filler = b"the quick brown fox jumps over the lazy dog " * (1 + size // 44)
    return (head + filler)[:size]


def fill_topic(bootstrap: str, topic: str, records: int, partitions: int, value_bytes: int) -> float:
    """Create ``topic`` and produce ``records`` keyless records, spread evenly; return seconds."""
    create_topic(bootstrap, topic, partitions)
    started = time.perf_counter()

    def gen() -> Iterator[tuple[None, bytes, int]]:
        for i in range(records):
            yield None, make_value(i, value_bytes), i % partitions

    produce(bootstrap, topic, gen(), timeout=120.0)
    return time.perf_counter() - started


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """High watermarks as fetch responses report them (Tansu's ListOffsets(latest) lags)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-probe",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "fetch.wait.max.ms": 10})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        ends: dict[int, int] = {}
        deadline = time.monotonic() + 30
        while len(ends) < partitions and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=1000, timeout=0.2):
                p = m.partition()
                if p in ends:
                    continue
                consumer.pause([TopicPartition(topic, p)])
                _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)
                if high >= 0:
                    ends[p] = high
        return ends
    finally:
        consumer.close()


def wait_readable(bootstrap: str, topic: str, partitions: int, records: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        total = sum(end_offsets(bootstrap, topic, partitions).values())
        if total >= records:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"only {total} of {records} records readable in {topic!r} after {timeout:g} s")
        time.sleep(0.5)


# --- baseline ------------------------------------------------------------------------------
def run_baseline(bootstrap: str, topic: str, partitions: int, records: int, tuned: bool) -> dict[str, Any]:
    """One consumer, all partitions assigned at 0, consume() until every record was seen."""
    conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                            "enable.auto.commit": False}
    if tuned:
        conf["fetch.queue.backoff.ms"] = 10
    consumer = Consumer(conf)
    try:
        consumer.list_topics(topic, timeout=10)  # connect before the clock starts
        started = time.perf_counter()
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        seen = value_bytes = 0
        idle_since = time.monotonic()
        while seen < records:
            msgs = consumer.consume(num_messages=100_000, timeout=1.0)
            if msgs:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > 30:
                raise SystemExit(f"baseline stalled at {seen} of {records} records")
            for m in msgs:
                if m.error() is None:
                    value_bytes += len(m.value())
                    seen += 1
                elif m.error().code() != KafkaError._PARTITION_EOF:
                    raise SystemExit(f"baseline read failed: {m.error()}")
        seconds = time.perf_counter() - started
    finally:
        consumer.close()
    return {"records": seen, "seconds": seconds, "records_per_s": seen / seconds,
            "mb_per_s": value_bytes / seconds / 1e6, "settings": "tuned" if tuned else "defaults"}


# --- spout ---------------------------------------------------------------------------------
def start_spark(cores: int) -> tuple[Any, float]:
    from trident_spark.runtime.session import local_session

    started = time.perf_counter()
    spark = local_session("trident-spark-bench", master=f"local[{cores}]")
    return spark, time.perf_counter() - started


def run_spout(spark: Any, bootstrap: str, topic: str, records: int, batch: int,
              spout_options: dict[str, Any]) -> dict[str, Any]:
    from trident_spark.spout import KafkaSpout

    checkpoint = tempfile.mkdtemp(prefix="trident-bench-ckpt-")
    try:
        spout = KafkaSpout(bootstrap_servers=bootstrap, topics=[topic], starting_offsets="earliest",
                           max_offsets_per_trigger=batch, **spout_options)
        df = spout.to_dataframe(spark)
        started = time.perf_counter()
        query = (df.writeStream.format("noop").trigger(availableNow=True)
                 .option("checkpointLocation", checkpoint).queryName(f"bench_{uuid.uuid4().hex[:6]}")
                 .start())
        query.awaitTermination()
        seconds = time.perf_counter() - started
        if query.exception() is not None:
            raise SystemExit(f"spout query failed: {query.exception()}")
        progress = [p for p in query.recentProgress if p.numInputRows > 0]
    finally:
        shutil.rmtree(checkpoint, ignore_errors=True)
    rows = sum(p.numInputRows for p in progress)
    batches = [{"batch_id": p.batchId, "rows": p.numInputRows,
                "ms": p.durationMs.get("triggerExecution"),
                "latest_offset_ms": p.durationMs.get("latestOffset"),
                "add_batch_ms": p.durationMs.get("addBatch"),
                "planning_ms": p.durationMs.get("queryPlanning"),
                "wal_commit_ms": p.durationMs.get("walCommit", 0) + p.durationMs.get("commitOffsets", 0)}
               for p in progress]
    return {"records": rows, "seconds": seconds, "records_per_s": rows / seconds, "batches": batches}


def warm_up(spark: Any, bootstrap: str, partitions: int, value_bytes: int) -> float:
    """A small query first: loads classes, registers the source, starts Python workers."""
    topic = f"bench-warmup-{uuid.uuid4().hex[:6]}"
    fill_topic(bootstrap, topic, 20_000, partitions, value_bytes)
    wait_readable(bootstrap, topic, partitions, 20_000)
    started = time.perf_counter()
    for _ in range(2):
        run_spout(spark, bootstrap, topic, 20_000, 5_000, {})
    return time.perf_counter() - started


# --- report ---------------------------------------------------------------------------------
def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    base = statistics.median(r["baseline"]["records_per_s"] for r in rounds)
    spout = statistics.median(r["spout"]["records_per_s"] for r in rounds)
    ratios = [r["spout"]["records_per_s"] / r["baseline"]["records_per_s"] for r in rounds]
    batch_ms = [b["ms"] for r in rounds for b in r["spout"]["batches"] if b["ms"] is not None]
    return {"baseline_records_per_s": base, "spout_records_per_s": spout,
            "ratio_of_medians": spout / base, "median_round_ratio": statistics.median(ratios),
            "round_ratios": ratios,
            "median_batch_ms": statistics.median(batch_ms) if batch_ms else None}


def plot(result: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rounds = result["rounds"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    xs = range(1, len(rounds) + 1)
    left.plot(xs, [r["baseline"]["records_per_s"] / 1e3 for r in rounds], "o-", label="raw consumer (tuned)")
    left.plot(xs, [r["spout"]["records_per_s"] / 1e3 for r in rounds], "s-", label="KafkaSpout -> noop")
    if result.get("baseline_defaults"):
        left.axhline(result["baseline_defaults"]["records_per_s"] / 1e3, ls="--", c="grey",
                     label="raw consumer (librdkafka defaults)")
    left.set_xlabel("round")
    left.set_ylabel("thousand records/s")
    left.set_ylim(bottom=0)
    left.set_xticks(list(xs))
    left.legend(fontsize=8)
    left.set_title(f"{result['setup']['records']:,} records, {result['setup']['partitions']} partitions")
    for i, r in enumerate(rounds, 1):
        ms = [b["ms"] for b in r["spout"]["batches"]]
        right.bar([f"r{i}b{j}" for j in range(len(ms))], ms)
    right.set_ylabel("ms per micro-batch")
    right.set_title(f"spout batches of {result['setup']['batch']:,} records")
    right.tick_params(axis="x", labelrotation=90, labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=200_000, help="max_offsets_per_trigger (default 200000)")
    parser.add_argument("--value-bytes", type=int, default=65)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="local[N] for Spark")
    parser.add_argument("--min-partitions", type=int, default=None, help="KafkaSpout(min_partitions=)")
    parser.add_argument("--no-defaults-run", action="store_true",
                        help="skip the baseline run with librdkafka's default settings")
    args = parser.parse_args(argv)

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    result: dict[str, Any] = {"setup": {
        "records": args.records, "partitions": args.partitions, "batch": args.batch,
        "value_bytes": args.value_bytes, "cores": args.cores, "cpu_count": os.cpu_count(),
        "machine": platform.platform(), "python": sys.version.split()[0], "min_partitions": args.min_partitions,
        "started": stamp}, "rounds": []}
    spout_options = {"min_partitions": args.min_partitions} if args.min_partitions else {}

    with ExitStack() as stack:
        kafka = stack.enter_context(start_kafka())
        bootstrap = kafka.address
        result["setup"]["kafka"] = f"{kafka.provider} {bootstrap}"
        console.print(f"[bold]Kafka spout benchmark[/] - broker {bootstrap} ({kafka.provider}), "
                      f"{os.cpu_count()} cores")

        topic = f"bench-spout-{uuid.uuid4().hex[:6]}"
        with console.status(f"producing {args.records:,} records of {args.value_bytes} bytes to {topic} ..."):
            produce_s = fill_topic(bootstrap, topic, args.records, args.partitions, args.value_bytes)
            wait_readable(bootstrap, topic, args.partitions, args.records)
        ends = end_offsets(bootstrap, topic, args.partitions)
        console.print(f"produced in {produce_s:.1f} s; partition ends {ends}")
        result["setup"]["produce_s"] = produce_s

        with console.status("starting Spark (JVM) ..."):
            spark, jvm_s = start_spark(args.cores)
        stack.callback(spark.stop)
        console.print(f"SparkSession (JVM) start: [bold]{jvm_s:.1f} s[/] (not in any timing below)")
        with console.status("warming up Spark (2 small queries) ..."):
            warm_s = warm_up(spark, bootstrap, args.partitions, args.value_bytes)
        console.print(f"warm-up: {warm_s:.1f} s")
        result["jvm_start_s"] = jvm_s
        result["warmup_s"] = warm_s

        if not args.no_defaults_run:
            with console.status("baseline with librdkafka defaults (fetch.queue.backoff.ms=1000) ..."):
                defaults = run_baseline(bootstrap, topic, args.partitions, args.records, tuned=False)
            result["baseline_defaults"] = defaults
            console.print(f"baseline, librdkafka defaults: {defaults['records_per_s']:>12,.0f} records/s "
                          f"({defaults['seconds']:.2f} s)")

        for n in range(1, args.rounds + 1):
            with console.status(f"round {n}/{args.rounds}: baseline ..."):
                base = run_baseline(bootstrap, topic, args.partitions, args.records, tuned=True)
            console.print(f"round {n}: baseline (tuned)   {base['records_per_s']:>12,.0f} records/s "
                          f"({base['seconds']:.2f} s)")
            with console.status(f"round {n}/{args.rounds}: spout ..."):
                spout = run_spout(spark, bootstrap, topic, args.records, args.batch, spout_options)
            if spout["records"] != args.records:
                raise SystemExit(f"spout read {spout['records']} records, expected {args.records}")
            per_batch = ", ".join(f"{b['ms']}" for b in spout["batches"])
            console.print(f"round {n}: spout -> noop      {spout['records_per_s']:>12,.0f} records/s "
                          f"({spout['seconds']:.2f} s; {len(spout['batches'])} batches, ms: {per_batch}) "
                          f"ratio {spout['records_per_s'] / base['records_per_s']:.2f}")
            result["rounds"].append({"baseline": base, "spout": spout})

    result["summary"] = summary = summarise(result["rounds"])
    table = Table(title=f"{args.records:,} records x {args.value_bytes} B, {args.partitions} partitions, "
                        f"batches of {args.batch:,}, local[{args.cores}]")
    table.add_column("round")
    table.add_column("raw consumer rec/s", justify="right")
    table.add_column("spout rec/s", justify="right")
    table.add_column("spout/raw", justify="right")
    for n, r in enumerate(result["rounds"], 1):
        b, s = r["baseline"]["records_per_s"], r["spout"]["records_per_s"]
        table.add_row(str(n), f"{b:,.0f}", f"{s:,.0f}", f"{s / b:.2f}")
    table.add_row("median", f"{summary['baseline_records_per_s']:,.0f}",
                  f"{summary['spout_records_per_s']:,.0f}", f"[bold]{summary['ratio_of_medians']:.2f}[/]")
    console.print(table)
    if "baseline_defaults" in result:
        d = result["baseline_defaults"]["records_per_s"]
        console.print(f"raw consumer with librdkafka defaults: {d:,.0f} records/s "
                      f"({summary['baseline_records_per_s'] / d:.1f}x slower than tuned)")
    console.print(f"JVM start {result['jvm_start_s']:.1f} s (apart); median micro-batch "
                  f"{summary['median_batch_ms']} ms")

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"spout-{stamp}.json"
    out.write_text(json.dumps(result, indent=2))
    console.print(f"results: {out}")
    png = out.with_suffix(".png")
    if plot(result, png):
        console.print(f"plot:    {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
