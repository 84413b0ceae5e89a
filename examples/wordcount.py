"""Word count from a Kafka topic of sentences into exactly-once state: the Trident tutorial's topology.

Run it three ways:

* ``trident-spark run examples/wordcount.py`` (uses ``topology`` below; the broker
  comes from ``KAFKA_BOOTSTRAP_SERVERS``, the topic from ``WORDCOUNT_TOPIC``, the
  state from ``WORDCOUNT_STATE``: by default an opaque SQLite file next to the
  command's default checkpoint, ``checkpoints/wordcount/wordcount.db``);
* ``spark-submit examples/wordcount.py --bootstrap HOST:PORT --topic sentences
  [--state URL] [--load-sample 5000] [--checkpoint DIR] [--output counts.json]``
  (reads what is in the topic, then prints the top words read from the state and
  writes the counts);
* from Python: ``build_topology(...)``.

Each batch is counted on Spark and folded into the state with txid = the batch id
(``groupBy(["word"]).persistentAggregate(state, Count(), ["count"])``), so a
replayed batch counts once. The state is ``SqliteState.opaque(path=<checkpoint
dir>/wordcount.db, table="counts")`` unless ``--state`` names another one, as
``open_state`` takes it: ``redis://host:6379/0?prefix=wc``,
``es://host:9200/wordcount``. Read the counts at any time, outside Spark, with
``trident-spark query STATE_URL the nation`` or ``open_state(STATE_URL).multiGet``.
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
from trident_spark.spout import KafkaSpout
from trident_spark.state import SqliteState, StateFactory, open_state, parse_state_url
from trident_spark.state.url import redact

WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*")


class Split(BaseFunction):
    """Emit each lower-cased word of the ``value`` field."""

    def execute(self, tuple, collector):  # type: ignore[no-untyped-def]
        for word in WORD.findall(tuple.getString(0).lower()):
            collector.emit([word])


def word_state(url: str | None, checkpoint: str | Path) -> StateFactory:
    """The state named by ``url`` (as ``open_state`` takes it), or an opaque SQLite file in
    ``checkpoint``: kept with the checkpoint, so a new checkpoint comes with a new state."""
    if url:
        return parse_state_url(url)
    return SqliteState.opaque(path=str(Path(checkpoint).resolve() / "wordcount.db"), table="counts")


def build_topology(bootstrap: str, topic: str, state: StateFactory,
                   max_fetch_bytes: int | None = 100_000) -> TridentTopology:
    """The word-count topology: the sentences of ``topic``, counted per word into ``state``."""
    topology = TridentTopology()
    spout = KafkaSpout(bootstrap_servers=bootstrap, topics=[topic], max_fetch_bytes=max_fetch_bytes)
    (topology.newStream("wordcount", spout)
     .each(["value"], Split(), ["word"]).name("split")
     .groupBy(["word"])
     .persistentAggregate(state, Count(), ["count"]))
    return topology


def word_counts(state: StateFactory) -> Counter[str]:
    """Every word's current count, read from ``state`` outside Spark (all of its keys, with
    ``getTuples``; ``multiGet([["the"], ...])`` reads given words)."""
    with open_state(state) as store:
        return Counter({word: count for word, count in store.getTuples()})


topology = build_topology(
    os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
    os.environ.get("WORDCOUNT_TOPIC", "sentences"),
    word_state(os.environ.get("WORDCOUNT_STATE"), Path("checkpoints") / "wordcount"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    parser.add_argument("--topic", default=os.environ.get("WORDCOUNT_TOPIC", "sentences"))
    parser.add_argument("--checkpoint", default="/tmp/trident-wordcount-checkpoint",
                        help="checkpoint directory (default: %(default)s)")
    parser.add_argument("--state", metavar="URL", default=os.environ.get("WORDCOUNT_STATE"),
                        help="the state, as open_state() takes it (default: an opaque SQLite file, "
                             "CHECKPOINT/wordcount.db, table counts)")
    parser.add_argument("--top", type=int, default=10, help="how many top words to print (default 10)")
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
    state = word_state(args.state, args.checkpoint)
    topo = build_topology(args.bootstrap, args.topic, state, args.max_fetch_bytes)
    handle = topo.run(checkpoint_location=args.checkpoint, trigger="available_now", spark=spark)
    handle.awaitTermination()
    batches = sum(1 for p in handle.progress if p.stream == "wordcount")
    counts = word_counts(state)
    url = redact(state.url)
    print(f"{batches} batches; {url} holds {len(counts)} words, {counts.total()} in all; top words:")
    for word, count in counts.most_common(args.top):
        print(f"  {word:<12} {count}")
    top = " ".join(word for word, _ in counts.most_common(2))
    print(f"read them again with: trident-spark query '{url}' {top}")
    if args.output:
        Path(args.output).write_text(json.dumps({
            "counts": dict(sorted(counts.items())),
            "batches": batches,
            "state": url,
            "master": spark.sparkContext.master,
        }, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
