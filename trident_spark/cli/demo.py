"""``trident-spark demo``: word count on a local broker, from an empty machine to the top words."""

from __future__ import annotations

import argparse
import importlib.resources
import re
import tempfile
import time
from collections import Counter
from typing import Any

HELP = "run the word-count demo on embedded defaults (local broker, local Spark)"
EPILOG = """examples:
  trident-spark demo                          5,000 sentences over 4 partitions, ~100 KB batches
  trident-spark demo --sentences 50000 --max-fetch-bytes 200000
  KAFKA_BOOTSTRAP_SERVERS=host:9092 trident-spark demo     use your broker instead of a local one
"""
TOPIC = "sentences"
WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*")


def register(commands: Any) -> None:
    parser = commands.add_parser("demo", help=HELP, description=HELP, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=5_000, help="sentences to load (default 5000)")
    parser.add_argument("--partitions", type=int, default=4, help="topic partitions (default 4)")
    parser.add_argument("--max-fetch-bytes", type=int, default=25_000,
                        help="Trident's per-partition fetch size per batch (default 25000)")
    parser.add_argument("--top", type=int, default=10, help="how many top words to show")
    parser.set_defaults(handler=main)


def corpus(count: int) -> list[str]:
    """``count`` sentences cycled from the Gettysburg Address (public domain), numbered."""
    text = importlib.resources.files("trident_spark").joinpath("data/gettysburg.txt").read_text("utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [f"{lines[i % len(lines)]}" for i in range(count)]


def main(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from trident_spark import TridentTopology
    from trident_spark.builtin import Count
    from trident_spark.local.kafka import create_topic, produce
    from trident_spark.local.services import start_kafka
    from trident_spark.operation import BaseFunction
    from trident_spark.spout import KafkaSpout

    console = Console()

    class Split(BaseFunction):
        def execute(self, tuple: Any, collector: Any) -> None:
            for word in WORD.findall(tuple.getString(0).lower()):
                collector.emit([word])

    console.rule("trident-spark demo: word count")
    with start_kafka() as kafka, tempfile.TemporaryDirectory(prefix="trident-demo-") as work:
        console.print(f"Kafka broker: {kafka.address} ({kafka.provider})")
        topic = f"{TOPIC}-{int(time.time())}"
        create_topic(kafka.address, topic, partitions=args.partitions)
        sentences = corpus(args.sentences)
        records = [(None, s.encode(), i % args.partitions) for i, s in enumerate(sentences)]
        produce(kafka.address, topic, records)
        console.print(f"loaded {len(sentences):,} sentences into topic {topic!r} "
                      f"({args.partitions} partitions); max_fetch_bytes={args.max_fetch_bytes:,}")

        topology = TridentTopology()
        spout = KafkaSpout(bootstrap_servers=kafka.address, topics=[topic],
                           max_fetch_bytes=args.max_fetch_bytes)
        per_batch = (topology.newStream("wordcount", spout)
                     .each(["value"], Split(), ["word"]).name("split")
                     .groupBy(["word"])
                     .aggregate(Count(), ["count"]).name("count"))
        sink = per_batch.collect()
        console.print("starting Spark (local mode)...")
        started = time.monotonic()
        def show(progress: Any) -> None:
            console.print("  " + progress.line(), highlight=False, markup=False)

        handle = topology.run(checkpoint_location=f"{work}/checkpoint", trigger="available_now",
                              on_progress=show)
        try:
            handle.awaitTermination()
        finally:
            handle.stop()
            handle.spark.stop()  # before the broker goes: executors hold consumers
        elapsed = time.monotonic() - started
        counts: Counter[str] = Counter()
        for t in sink.tuples:  # each batch's counts, added up (until state keeps them)
            counts[t["word"]] += t["count"]
        rows = sum(p.rows for p in handle.progress)
        console.print(f"{len(handle.progress)} batches, {rows:,} sentences, {sum(counts.values()):,} words "
                      f"in {elapsed:.1f} s (including Spark start-up)")
        table = Table(title=f"top {args.top} words")
        table.add_column("word")
        table.add_column("count", justify="right")
        for word, count in counts.most_common(args.top):
            table.add_row(word, f"{count:,}")
        console.print(table)
        if rows != len(sentences):
            console.print(f"[red]expected {len(sentences)} sentences, read {rows}[/]")
            return 1
    return 0
