"""Word count from a Kafka topic of sentences: the Trident tutorial's first topology.

Run it three ways:

* ``trident-spark run examples/wordcount.py`` (uses ``topology`` below; the broker
  comes from ``KAFKA_BOOTSTRAP_SERVERS``, the topic from ``WORDCOUNT_TOPIC``);
* ``spark-submit examples/wordcount.py --bootstrap HOST:PORT --topic sentences
  [--load-sample 5000] [--checkpoint DIR] [--output counts.json]`` (reads what is in
  the topic, then prints the top words and writes the counts);
* from Python: ``build_topology(...)``.

Each batch is counted on Spark (``groupBy(["word"]).aggregate(Count(), ["count"])``);
until state lands, the per-batch counts are added up on the driver.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections import Counter
from pathlib import Path

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import BaseFunction
from trident_spark.sink import CollectSink
from trident_spark.spout import KafkaSpout

WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*")


class Split(BaseFunction):
    """Emit each lower-cased word of the ``value`` field."""

    def execute(self, tuple, collector):  # type: ignore[no-untyped-def]
        for word in WORD.findall(tuple.getString(0).lower()):
            collector.emit([word])


def build_topology(bootstrap: str, topic: str, max_fetch_bytes: int | None = 100_000
                   ) -> tuple[TridentTopology, CollectSink]:
    """The word-count topology and the sink that gathers each batch's counts."""
    topology = TridentTopology()
    spout = KafkaSpout(bootstrap_servers=bootstrap, topics=[topic], max_fetch_bytes=max_fetch_bytes)
    counts = (topology.newStream("wordcount", spout)
              .each(["value"], Split(), ["word"]).name("split")
              .groupBy(["word"])
              .aggregate(Count(), ["count"]).name("count"))
    return topology, counts.collect()


def word_counts(sink: CollectSink) -> Counter[str]:
    """The counts of every batch so far, added up."""
    total: Counter[str] = Counter()
    for t in sink.tuples:
        total[t["word"]] += t["count"]
    return total


topology, words = build_topology(os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
                                 os.environ.get("WORDCOUNT_TOPIC", "sentences"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    parser.add_argument("--topic", default=os.environ.get("WORDCOUNT_TOPIC", "sentences"))
    parser.add_argument("--checkpoint", default="/tmp/trident-wordcount-checkpoint",
                        help="checkpoint directory (default: %(default)s)")
    parser.add_argument("--output", help="also write the counts here (JSON)")
    parser.add_argument("--max-fetch-bytes", type=int, default=100_000)
    parser.add_argument("--load-sample", type=int, metavar="N", default=0,
                        help="first create the topic (4 partitions) and load N sample sentences")
    args = parser.parse_args()
    if args.load_sample:
        from trident_spark.cli.demo import corpus
        from trident_spark.local.kafka import create_topic, produce

        create_topic(args.bootstrap, args.topic, partitions=4, exist_ok=True)
        produce(args.bootstrap, args.topic, [(None, s.encode(), i % 4)
                                             for i, s in enumerate(corpus(args.load_sample))])

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("trident-wordcount").getOrCreate()
    topo, sink = build_topology(args.bootstrap, args.topic, args.max_fetch_bytes)
    handle = topo.run(checkpoint_location=args.checkpoint, trigger="available_now", spark=spark)
    handle.awaitTermination()
    counts = word_counts(sink)
    print(f"{len(sink.batches)} batches, {sum(counts.values())} words; top words:")
    for word, count in counts.most_common(10):
        print(f"  {word:<12} {count}")
    if args.output:
        Path(args.output).write_text(json.dumps({
            "counts": dict(sorted(counts.items())),
            "batches": len(sink.batches),
            "master": spark.sparkContext.master,
        }, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
