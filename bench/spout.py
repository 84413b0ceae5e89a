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
  apart). Each round uses a fresh checkpoint;
* the spout on Spark's own source: the same with ``engine="jvm"``;
* native Spark: ``spark.readStream.format("kafka")`` with ``maxOffsetsPerTrigger``,
  key and value cast to strings, as a Spark user writes it (the spout's fields,
  no Trident in between);
* Spark's floor: the same query over a Python streaming source whose tasks
  yield ready-made Arrow batches of the spout's schema (no Kafka at all), in
  the same batches. What a source that cost nothing would score: it separates
  Spark's per-query and per-batch costs from the spout's own.

This VM's speed drifts up to 2x within an hour, so rounds interleave (odd rounds
in the order above, even rounds reversed: A B B A) and the ratio uses medians.
Results go to ``bench/results/spout-<timestamp>.json``
(and a PNG when matplotlib is installed).

Run: ``.venv/bin/python bench/spout.py`` (or ``make bench``); ``--help`` for options.
"""

from __future__ import annotations

import argparse
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_results import pyplot, save_figure, save_results
from confluent_kafka import Consumer, KafkaError, TopicPartition
from rich.console import Console
from rich.table import Table

from trident_spark.local.kafka import create_topic, produce
from trident_spark.local.services import start_kafka

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
                if p is None or p in ends:
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
                err = m.error()
                if err is None:
                    value_bytes += len(m.value())  # type: ignore[arg-type]  # values are never null here
                    seen += 1
                elif err.code() != KafkaError._PARTITION_EOF:
                    raise SystemExit(f"baseline read failed: {err}")
        seconds = time.perf_counter() - started
    finally:
        consumer.close()
    return {"records": seen, "seconds": seconds, "records_per_s": seen / seconds,
            "mb_per_s": value_bytes / seconds / 1e6, "settings": "tuned" if tuned else "defaults"}


# --- spout ---------------------------------------------------------------------------------
def start_spark(cores: int) -> tuple[Any, float]:
    from trident_spark.runtime.session import local_session

    started = time.perf_counter()
    spark = local_session("trident-spark-bench", master=f"local[{cores}]", kafka_connector=True)
    return spark, time.perf_counter() - started


def run_spout(spark: Any, bootstrap: str, topic: str, records: int, batch: int,
              spout_options: dict[str, Any], engine: str = "python") -> dict[str, Any]:
    from trident_spark.spout import KafkaSpout

    options = spout_options if engine == "python" else {}
    spout = KafkaSpout(bootstrap_servers=bootstrap, topics=[topic], starting_offsets="earliest",
                       max_offsets_per_trigger=batch, engine=engine, **options)  # type: ignore[arg-type]
    return _timed_query(spout.to_dataframe(spark))


def native_source(spark: Any, bootstrap: str, topic: str, batch: int) -> Any:
    """Spark's own Kafka source as a Spark user writes it: the spout's fields, strings cast."""
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(batch)).load()
            .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value", "topic",
                        "partition", "offset", "timestamp"))


def run_native(spark: Any, bootstrap: str, topic: str, batch: int) -> dict[str, Any]:
    return _timed_query(native_source(spark, bootstrap, topic, batch))


def _timed_query(df: Any) -> dict[str, Any]:
    """Run ``df`` into the noop sink until all available data is read; time it, batch by batch."""
    checkpoint = tempfile.mkdtemp(prefix="trident-bench-ckpt-")
    try:
        started = time.perf_counter()
        query = (df.writeStream.format("noop").trigger(availableNow=True)
                 .option("checkpointLocation", checkpoint).queryName(f"bench_{uuid.uuid4().hex[:6]}")
                 .start())
        query.awaitTermination()
        seconds = time.perf_counter() - started
        if query.exception() is not None:
            raise SystemExit(f"query failed: {query.exception()}")
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
    in_batches = sum(b["ms"] or 0 for b in batches) / 1000
    return {"records": rows, "seconds": seconds, "records_per_s": rows / seconds, "batches": batches,
            "outside_batches_s": seconds - in_batches}


class _FloorSource:
    """Factory of a Python streaming source that reads nothing: Spark's floor for the spout.

    Built lazily so that importing this module does not import pyspark.
    """

    @staticmethod
    def register(spark: Any, records: int, partitions: int, batch: int, value_bytes: int) -> str:
        from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
        from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

        from trident_spark.spout.kafka.config import KafkaSpoutConfig

        ddl = KafkaSpoutConfig("-", topics=("-",)).schema_ddl()
        batches = -(-records // batch)
        rows = batch // partitions

        class FloorReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
            def initialOffset(self) -> dict[str, int]:
                return {"batch": 0}

            def prepareForTriggerAvailableNow(self) -> None:
                pass

            def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
                return {"batch": min(start["batch"] + 1, batches)}

            def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
                return [InputPartition(p) for p in range(partitions)] if end != start else []

            def read(self, partition: InputPartition) -> Iterator[Any]:
                yield _floor_batch(rows, partition.value, value_bytes)

            def commit(self, end: dict[str, int]) -> None:
                pass

        class FloorSource(DataSource):  # type: ignore[misc]
            @classmethod
            def name(cls) -> str:
                return "trident_bench_floor"

            def schema(self) -> str:
                return ddl

            def streamReader(self, schema: Any) -> DataSourceStreamReader:
                return FloorReader()

        spark.dataSource.register(FloorSource)
        return "trident_bench_floor"


def _floor_batch(rows: int, partition: int, value_bytes: int) -> Any:
    """One task's records as an Arrow batch, built from buffers (no Python code per record)."""
    import numpy as np
    import pyarrow as pa

    text = np.frombuffer(make_value(0, value_bytes), np.uint8)
    values = pa.StringArray.from_buffers(
        rows, pa.py_buffer(np.arange(0, (rows + 1) * len(text), len(text), dtype=np.int32)),
        pa.py_buffer(np.tile(text, rows)))
    millis = np.full(rows, int(time.time() * 1000), np.int64)
    return pa.RecordBatch.from_arrays(
        [pa.nulls(rows, pa.string()), values, pa.repeat(pa.scalar("floor"), rows),
         pa.repeat(pa.scalar(partition, pa.int32()), rows), pa.array(np.arange(rows, dtype=np.int64)),
         pa.array(millis, pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC"))],
        names=["key", "value", "topic", "partition", "offset", "timestamp"])


def run_floor(spark: Any, records: int, partitions: int, batch: int, value_bytes: int) -> dict[str, Any]:
    """The spout's query shape over a source that reads nothing (see _FloorSource)."""
    name = _FloorSource.register(spark, records, partitions, batch, value_bytes)
    return _timed_query(spark.readStream.format(name).load())


def run_contender(what: str, spark: Any, bootstrap: str, topic: str, args: argparse.Namespace,
                  spout_options: dict[str, Any]) -> dict[str, Any]:
    """One timed run of contender ``what`` (one of :data:`CONTENDERS`)."""
    if what == "baseline":
        return run_baseline(bootstrap, topic, args.partitions, args.records, tuned=True)
    if what == "spout":
        return run_spout(spark, bootstrap, topic, args.records, args.batch, spout_options)
    if what == "jvm_spout":
        return run_spout(spark, bootstrap, topic, args.records, args.batch, spout_options, engine="jvm")
    if what == "native":
        return run_native(spark, bootstrap, topic, args.batch)
    return run_floor(spark, args.records, args.partitions, args.batch, args.value_bytes)


def warm_up(spark: Any, bootstrap: str, topic: str, args: argparse.Namespace) -> float:
    """Untimed queries first: small ones (load classes, register the sources, start the
    Python workers), then one of each at full size (the first large batches of a fresh
    JVM run well below speed)."""
    small = f"bench-warmup-{uuid.uuid4().hex[:6]}"
    fill_topic(bootstrap, small, 20_000, args.partitions, args.value_bytes)
    wait_readable(bootstrap, small, args.partitions, 20_000)
    started = time.perf_counter()
    for _ in range(2):
        run_spout(spark, bootstrap, small, 20_000, 5_000, {})
        run_spout(spark, bootstrap, small, 20_000, 5_000, {}, engine="jvm")
        run_native(spark, bootstrap, small, 5_000)
        if not args.no_floor:
            run_floor(spark, 20_000, args.partitions, 5_000, args.value_bytes)
    run_spout(spark, bootstrap, topic, args.records, args.batch, {})
    run_spout(spark, bootstrap, topic, args.records, args.batch, {}, engine="jvm")
    run_native(spark, bootstrap, topic, args.batch)
    if not args.no_floor:
        run_floor(spark, args.records, args.partitions, args.batch, args.value_bytes)
    return time.perf_counter() - started


# --- report ---------------------------------------------------------------------------------
def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def batch_profile(runs: list[dict[str, Any]]) -> dict[str, float | None]:
    """Median milliseconds of a micro-batch and of its parts, over ``runs``."""
    batches = [b for run in runs for b in run["batches"]]
    return {part: _median([b[part] for b in batches if b.get(part) is not None])
            for part in ("ms", "latest_offset_ms", "add_batch_ms", "wal_commit_ms", "planning_ms")} | {
        "outside_batches_s": _median([run["outside_batches_s"] for run in runs]),
        # What a long-running stream sees: records per second of one micro-batch,
        # without the query's one-time start and stop.
        "records_per_s": _median([b["rows"] * 1000 / b["ms"] for b in batches if b.get("ms")])}


#: The contenders of a round, in the order of odd rounds (even rounds run them reversed).
CONTENDERS = ("baseline", "spout", "jvm_spout", "native", "floor")
LABELS = {"baseline": "raw consumer", "spout": "spout (python)", "jvm_spout": "spout (jvm)",
          "native": "native Spark", "floor": "Spark floor"}


def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    def rate(what: str) -> float:
        return float(statistics.median(r[what]["records_per_s"] for r in rounds))

    def ratios(what: str, of: str) -> list[float]:
        return [r[what]["records_per_s"] / r[of]["records_per_s"] for r in rounds]

    base, spout = rate("baseline"), rate("spout")
    summary: dict[str, Any] = {
        "baseline_records_per_s": base, "spout_records_per_s": spout,
        "ratio_of_medians": spout / base,
        "round_ratios": ratios("spout", "baseline"),
        "spout_batch": batch_profile([r["spout"] for r in rounds]),
    }
    summary["median_round_ratio"] = statistics.median(summary["round_ratios"])
    summary["steady_ratio"] = (summary["spout_batch"]["records_per_s"] or 0.0) / base
    for what in ("jvm_spout", "native"):
        if all(what in r for r in rounds):
            summary[f"{what}_records_per_s"] = rate(what)
            summary[f"{what}_batch"] = batch_profile([r[what] for r in rounds])
            summary[f"{what}_of_baseline"] = statistics.median(ratios(what, "baseline"))
    if all("native" in r for r in rounds):
        native_steady = summary["native_batch"]["records_per_s"] or 0.0
        for what in ("spout", "jvm_spout"):
            if all(what in r for r in rounds):
                summary[f"{what}_of_native"] = statistics.median(ratios(what, "native"))
                summary[f"{what}_of_native_rounds"] = ratios(what, "native")
                steady = summary[f"{what}_batch"]["records_per_s"] or 0.0
                summary[f"{what}_of_native_steady"] = steady / native_steady if native_steady else None
    if all("floor" in r for r in rounds):
        floor = rate("floor")
        summary |= {"floor_records_per_s": floor, "floor_ratio": floor / base,
                    "spout_of_floor": spout / floor,
                    "floor_batch": batch_profile([r["floor"] for r in rounds])}
    return summary


def plot(result: dict[str, Any], path: Path) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    rounds = result["rounds"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    xs = list(range(1, len(rounds) + 1))
    labels = {"baseline": "raw consumer (tuned)", "spout": "KafkaSpout -> noop",
              "jvm_spout": "KafkaSpout(engine='jvm') -> noop", "native": "native Spark kafka source -> noop",
              "floor": "Spark floor (source reads nothing)"}
    for what, marker in (("baseline", "o-"), ("spout", "s-"), ("jvm_spout", "d-"), ("native", "v-"),
                         ("floor", "^:")):
        if all(what in r for r in rounds):
            left.plot(xs, [r[what]["records_per_s"] / 1e3 for r in rounds], marker, label=labels[what])
    if result.get("baseline_defaults"):
        left.axhline(result["baseline_defaults"]["records_per_s"] / 1e3, ls="--", c="grey",
                     label="raw consumer (librdkafka defaults)")
    setup = result["setup"]
    left.set(xlabel="round", ylabel="thousand records/s", xticks=xs,
             title=f"{setup['records']:,} records of {setup['value_bytes']} B, "
                   f"{setup['partitions']} partitions")
    left.set_ylim(bottom=0)
    left.legend(fontsize=8)
    parts = [("latest_offset_ms", "latestOffset (driver probe)"), ("add_batch_ms", "addBatch (tasks)"),
             ("wal_commit_ms", "offset + commit logs")]
    names = [w for w in ("spout", "jvm_spout", "native", "floor") if f"{w}_batch" in result["summary"]]
    bottom = [0.0] * len(names)
    for key, label in parts:
        heights = [result["summary"][f"{w}_batch"][key] or 0 for w in names]
        right.bar(names, heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    right.set(ylabel="median ms per micro-batch", title=f"one micro-batch of {setup['batch']:,} records")
    right.legend(fontsize=8)
    return save_figure(fig, path)


def print_summary(result: dict[str, Any]) -> None:
    setup, summary, rounds = result["setup"], result["summary"], result["rounds"]
    present = [c for c in CONTENDERS if all(c in r for r in rounds)]
    native = "native" in present
    table = Table(title=f"{setup['records']:,} records x {setup['value_bytes']} B, {setup['partitions']} "
                        f"partitions, batches of {setup['batch']:,}, local[{setup['cores']}]")
    table.add_column("round")
    for c in present:
        table.add_column(f"{LABELS[c]} rec/s", justify="right")
    ratio_columns = [("spout", "baseline"), *(
        [("jvm_spout", "baseline"), ("native", "baseline"), ("spout", "native"), ("jvm_spout", "native")]
        if native else []), *([("spout", "floor")] if "floor" in present else [])]
    ratio_columns = [(a, b) for a, b in ratio_columns if a in present and b in present]
    for a, b in ratio_columns:
        table.add_column(f"{LABELS[a]} / {LABELS[b]}", justify="right")
    for n, r in enumerate(rounds, 1):
        table.add_row(str(n), *(f"{r[c]['records_per_s']:,.0f}" for c in present),
                      *(f"{r[a]['records_per_s'] / r[b]['records_per_s']:.2f}" for a, b in ratio_columns))
    medians = {c: statistics.median(r[c]["records_per_s"] for r in rounds) for c in present}
    median_ratios = [statistics.median(r[a]["records_per_s"] / r[b]["records_per_s"] for r in rounds)
                     for a, b in ratio_columns]
    table.add_row("median", *(f"{medians[c]:,.0f}" for c in present),
                  *(f"[bold]{ratio:.2f}[/]" for ratio in median_ratios))
    console.print(table)
    if "baseline_defaults" in result:
        d = result["baseline_defaults"]["records_per_s"]
        console.print(f"raw consumer with librdkafka defaults: {d:,.0f} records/s "
                      f"(tuned is {summary['baseline_records_per_s'] / d:.1f}x faster)")
    for what in ("spout", "jvm_spout", "native", "floor"):
        p = summary.get(f"{what}_batch")
        if p:
            console.print(f"{LABELS[what]:15s} median micro-batch {p['ms']:.0f} ms = latestOffset "
                          f"{p['latest_offset_ms']:.0f} + addBatch {p['add_batch_ms']:.0f} + logs "
                          f"{p['wal_commit_ms']:.0f} + planning {p['planning_ms']:.0f} (+ other); "
                          f"{p['outside_batches_s']:.2f} s per query outside batches (start, stop); "
                          f"steady {p['records_per_s'] or 0:,.0f} records/s")
    steady = summary["spout_batch"]["records_per_s"]
    console.print(f"steady state (per micro-batch, without the query's start and stop): spout "
                  f"{steady:,.0f} records/s = [bold]{summary['steady_ratio']:.2f}[/] of the raw consumer")
    for what in ("spout", "jvm_spout"):
        if summary.get(f"{what}_of_native_steady") is not None:
            ratio = summary[f"{what}_of_native_steady"]
            console.print(f"steady state: {LABELS[what]} = [bold]{ratio:.2f}[/] of native Spark")
    console.print(f"JVM start {result['jvm_start_s']:.1f} s, warm-up {result['warmup_s']:.1f} s "
                  "(not timed above)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=200_000, help="max_offsets_per_trigger (default 200000)")
    parser.add_argument("--value-bytes", type=int, default=65)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="local[N] for Spark")
    parser.add_argument("--min-partitions", type=int, default=None, help="KafkaSpout(min_partitions=)")
    parser.add_argument("--no-defaults-run", action="store_true",
                        help="skip the baseline run with librdkafka's default settings")
    parser.add_argument("--no-floor", action="store_true",
                        help="skip Spark's floor (the same query over a source that reads nothing)")
    args = parser.parse_args(argv)

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    result: dict[str, Any] = {"setup": {
        "records": args.records, "partitions": args.partitions, "batch": args.batch,
        "value_bytes": args.value_bytes, "cores": args.cores, "cpu_count": os.cpu_count(),
        "machine": platform.platform(), "python": sys.version.split()[0],
        "min_partitions": args.min_partitions,
        "load_average_at_start": os.getloadavg(), "started": stamp}, "rounds": []}
    spout_options = {"min_partitions": args.min_partitions} if args.min_partitions else {}

    with ExitStack() as stack:
        kafka = stack.enter_context(start_kafka())
        bootstrap = kafka.address
        result["setup"]["kafka"] = f"{kafka.provider} {bootstrap}"
        console.print(f"[bold]Kafka spout benchmark[/] - broker {bootstrap} ({kafka.provider}), "
                      f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")

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
        with console.status("warming up Spark (untimed queries) ..."):
            warm_s = warm_up(spark, bootstrap, topic, args)
        console.print(f"warm-up: {warm_s:.1f} s")
        result["jvm_start_s"] = jvm_s
        result["warmup_s"] = warm_s

        if not args.no_defaults_run:
            with console.status("baseline with librdkafka defaults (fetch.queue.backoff.ms=1000) ..."):
                defaults = run_baseline(bootstrap, topic, args.partitions, args.records, tuned=False)
            result["baseline_defaults"] = defaults
            console.print(f"baseline, librdkafka defaults: {defaults['records_per_s']:>10,.0f} records/s "
                          f"({defaults['seconds']:.2f} s)")

        for n in range(1, args.rounds + 1):
            this: dict[str, Any] = {}
            order = [c for c in CONTENDERS if c != "floor" or not args.no_floor]
            for what in order if n % 2 else reversed(order):  # A B B A: drift hits every contender alike
                with console.status(f"round {n}/{args.rounds}: {LABELS[what]} ..."):
                    this[what] = run = run_contender(what, spark, bootstrap, topic, args, spout_options)
                if what not in ("baseline", "floor") and run["records"] != args.records:
                    raise SystemExit(f"{LABELS[what]} read {run['records']} records, expected {args.records}")
                batches = f"; batches ms {[b['ms'] for b in run['batches']]}" if "batches" in run else ""
                console.print(f"round {n}: {LABELS[what]:15s} {run['records_per_s']:>10,.0f} records/s "
                              f"({run['seconds']:.2f} s{batches})")
            result["rounds"].append(this)

    result["summary"] = summarise(result["rounds"])
    print_summary(result)
    save_results(result, "spout", stamp, plot, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
