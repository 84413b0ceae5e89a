"""``trident-spark demo``: word count on a local broker, from an empty machine to the top words."""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HELP = "run the word-count demo on embedded defaults (local broker, local Spark, SQLite state)"
EPILOG = """examples:
  trident-spark demo                          5,000 sentences over 4 partitions, ~100 KB batches
  trident-spark demo --sentences 50000 --max-fetch-bytes 200000
  trident-spark demo --workdir /tmp/wc        keep the state and checkpoint, then:
  trident-spark query 'sqlite:////tmp/wc/wordcount.db?table=counts' nation people
  KAFKA_BOOTSTRAP_SERVERS=host:9092 trident-spark demo     use your broker instead of a local one
"""
TOPIC = "sentences"
QUESTIONS = ("nation liberty", "people", "the dead", "unknownword")
WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*")


def register(commands: Any) -> None:
    parser = commands.add_parser("demo", help=HELP, description=HELP, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=5_000, help="sentences to load (default 5000)")
    parser.add_argument("--partitions", type=int, default=4, help="topic partitions (default 4)")
    parser.add_argument("--max-fetch-bytes", type=int, default=25_000,
                        help="Trident's per-partition fetch size per batch (default 25000)")
    parser.add_argument("--top", type=int, default=10, help="how many top words to show")
    parser.add_argument("--workdir", help="keep the state (wordcount.db) and the checkpoint here "
                        "(default: a temporary directory, removed at the end)")
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
    from trident_spark.builtin import Count, MapGet
    from trident_spark.cli.live import LiveProgress
    from trident_spark.local.kafka import create_topic, produce
    from trident_spark.operation import BaseFunction
    from trident_spark.spout import KafkaSpout
    from trident_spark.state import SqliteState, open_state

    console = Console()

    class Split(BaseFunction):
        def execute(self, tuple: Any, collector: Any) -> None:
            for word in WORD.findall(tuple.getString(0).lower()):
                collector.emit([word])

    show = LiveProgress(console, prefix="  ")  # a live view on a terminal, one line per batch otherwise

    console.rule("trident-spark demo: word count into exactly-once state")
    with _broker(console) as kafka, _workdir(args.workdir) as work:
        topic, questions = f"{TOPIC}-{int(time.time())}", f"questions-{int(time.time())}"
        create_topic(kafka.address, topic, partitions=args.partitions)
        create_topic(kafka.address, questions, partitions=1)
        sentences = corpus(args.sentences)
        produce(kafka.address, topic,
                [(None, s.encode(), i % args.partitions) for i, s in enumerate(sentences)])
        console.print(f"loaded {len(sentences):,} sentences into topic {topic!r} "
                      f"({args.partitions} partitions); max_fetch_bytes={args.max_fetch_bytes:,}")

        state = SqliteState.opaque(path=str(work / "wordcount.db"), table="counts")
        topology = TridentTopology()
        counts = (topology.newStream("wordcount", KafkaSpout(bootstrap_servers=kafka.address, topics=[topic],
                                                             max_fetch_bytes=args.max_fetch_bytes))
                  .each(["value"], Split(), ["word"]).name("split")
                  .groupBy(["word"])
                  .persistentAggregate(state, Count(), ["count"]))
        answers = (topology.newStream("questions", KafkaSpout(bootstrap_servers=kafka.address,
                                                              topics=[questions]))
                   .each(["value"], Split(), ["word"])
                   .stateQuery(counts, ["word"], MapGet(), ["count"])
                   .project(["value", "word", "count"])
                   .collect())
        checkpoint = str(work / "checkpoint")
        console.print(f"state: {state.redacted_url}\nstarting Spark (local mode)...")
        started = time.monotonic()
        handle = None
        try:
            with show:
                handle = topology.run(checkpoint_location=checkpoint, trigger="available_now",
                                      on_progress=show)
                handle.awaitTermination()
            elapsed = time.monotonic() - started
            counted = show.streams.get("wordcount")  # every batch (handle.progress keeps the last 100)
            batches, rows = (counted.count, counted.rows) if counted else (0, 0)
            console.print(f"{batches} batches, {rows:,} sentences in {elapsed:.1f} s "
                          "(including Spark start-up)")
            # DRPC-style questions: a second stream reads the state the first one wrote.
            produce(kafka.address, questions, [(None, q.encode(), 0) for q in QUESTIONS])
            console.print(f"asking {len(QUESTIONS)} questions on topic {questions!r}; the topology restarts "
                          "from its checkpoint, so the word count has nothing new to read")
            handle.stop()
            with show:
                handle = topology.run(checkpoint_location=checkpoint, trigger="available_now",
                                      spark=handle.spark, on_progress=show)
                handle.awaitTermination()
        finally:
            if handle is not None:
                handle.stop()
                handle.spark.stop()  # before the broker goes: executors hold consumers
        table = Table(title="stateQuery(MapGet) answers", min_width=44)
        for column in ("question", "word", "count"):
            table.add_column(column, justify="right" if column == "count" else "left")
        for t in answers.tuples:
            table.add_row(t["value"], t["word"], "-" if t["count"] is None else f"{t['count']:,}")
        console.print(table)
        expected = Counter(w for s in sentences for w in WORD.findall(s.lower()))
        words = sorted(expected)
        stored = open_state(state.url).multiGet([[w] for w in words])
        table = Table(title=f"top {args.top} words (open_state)", min_width=32)
        table.add_column("word")
        table.add_column("count", justify="right")
        for word, count in sorted(zip(words, stored, strict=True), key=lambda wc: -(wc[1] or 0))[:args.top]:
            table.add_row(word, f"{count:,}")
        console.print(table)
        if args.workdir:  # a temporary directory is gone when the command ends: no command on it
            console.print(f"the same from the command line: trident-spark query '{state.redacted_url}' "
                          "nation people")
        else:
            console.print("to query the state afterwards: trident-spark demo --workdir DIR")
        wrong = [w for w, c in zip(words, stored, strict=True) if c != expected[w]]
        if rows != len(sentences) or wrong:
            console.print(f"[red]expected {len(sentences)} sentences and exact counts; read {rows}, "
                          f"{len(wrong)} words wrong (e.g. {wrong[:5]})[/]")
            return 1
        console.print(f"exact: all {len(words):,} words in the state match a count of the corpus "
                      f"({sum(expected.values()):,} words)")
    return 0


@contextlib.contextmanager
def _broker(console: Any) -> Iterator[Any]:
    """The demo's Kafka: Apache Kafka (its jars from the cache ``make setup`` fills, or fetched by
    Maven); where neither is possible, Tansu (in memory, from the ``local`` extra), saying so."""
    from trident_spark.local.launchers import ServiceNotInstalledError
    from trident_spark.local.maven import MavenFetchError
    from trident_spark.local.services import start_kafka

    try:
        kafka = start_kafka(kind="apache")
        kind = "Apache Kafka"
    except (ServiceNotInstalledError, MavenFetchError) as missing:
        console.print(f"[yellow]note[/]: {missing}; using Tansu, an in-memory Kafka-compatible broker")
        kafka = start_kafka(kind="tansu")
        kind = "Tansu"
    with kafka:
        console.print(f"Kafka broker: {kafka.address} ({kafka.provider}"
                      + (f", {kind})" if kafka.provider == "local" else ")"))
        yield kafka


@contextlib.contextmanager
def _workdir(path: str | None) -> Iterator[Path]:
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        yield Path(path).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="trident-demo-") as work:
        yield Path(work)
