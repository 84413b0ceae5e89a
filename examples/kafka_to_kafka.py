"""Kafka to Kafka, exactly once: sentences in, each batch's updated word counts out.

The word count of ``wordcount.py``, whose new values go on to a Kafka topic: every batch
writes, for each word it touched, one record ``word -> its count after the batch`` (key and
value as UTF-8 text) with storm-kafka-client's Trident classes::

    sentences topic -> Split -> groupBy(word) -> persistentAggregate(state, Count)
                    -> newValuesStream() -> partitionPersist(TridentKafkaStateFactory, ...)

The output is exactly once: each partition of each batch is one Kafka transaction tied to the
batch's txid, so a replayed batch (a killed driver, a failed task) writes nothing twice and
drops nothing, as a ``read_committed`` consumer sees it. The counts themselves live in an
opaque SQLite state next to the checkpoint, unless ``--state`` names another one.

Run it three ways:

* ``trident-spark run examples/kafka_to_kafka.py`` (uses ``topology`` below; the broker comes
  from ``KAFKA_BOOTSTRAP_SERVERS``, the topics from ``SENTENCES_TOPIC`` and ``COUNTS_TOPIC``,
  the state from ``WORDCOUNT_STATE``);
* ``spark-submit examples/kafka_to_kafka.py --bootstrap HOST:PORT --input sentences
  --output word-counts [--state URL] [--load-sample 5000] [--checkpoint DIR]`` (reads what
  is in the input topic, then prints the output topic's last count of the top words, read
  with ``read_committed``);
* from Python: ``build_topology(...)``.

Both topics must exist (``--load-sample`` creates them); the output topic's records can be
read by any Kafka consumer with ``isolation.level=read_committed``.
"""

from __future__ import annotations

import argparse
import os
import re
import uuid
from collections import Counter
from pathlib import Path

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.kafka import (
    DefaultTopicSelector,
    FieldNameBasedTupleToKafkaMapper,
    TridentKafkaStateFactory,
    TridentKafkaStateUpdater,
)
from trident_spark.operation import BaseFunction
from trident_spark.spout import KafkaSpout
from trident_spark.state import SqliteState, StateFactory, parse_state_url

WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*")


class Split(BaseFunction):
    """Emit each lower-cased word of the ``value`` field."""

    def execute(self, tuple, collector):  # type: ignore[no-untyped-def]
        for word in WORD.findall(tuple.getString(0).lower()):
            collector.emit([word])


def word_state(url: str | None, checkpoint: str | Path) -> StateFactory:
    """The counts' state: ``url`` as ``open_state`` takes it, or an opaque SQLite file in ``checkpoint``."""
    if url:
        return parse_state_url(url)
    return SqliteState.opaque(path=str(Path(checkpoint).resolve() / "counts.db"), table="counts")


def counts_output(bootstrap: str, topic: str, *, exactly_once: bool = True) -> TridentKafkaStateFactory:
    """The Kafka output: each tuple's ``word`` as the key, its ``count`` as the value, to ``topic``."""
    return (TridentKafkaStateFactory(bootstrap_servers=bootstrap, exactly_once=exactly_once)
            .withKafkaTopicSelector(DefaultTopicSelector(topic))
            .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))


def build_topology(bootstrap: str, sentences: str, counts: str, state: StateFactory,
                   max_fetch_bytes: int | None = 100_000) -> TridentTopology:
    """Sentences from topic ``sentences`` counted per word into ``state``; each batch's new counts
    to topic ``counts``, exactly once."""
    topology = TridentTopology()
    spout = KafkaSpout(bootstrap_servers=bootstrap, topics=[sentences], max_fetch_bytes=max_fetch_bytes)
    (topology.newStream("kafka-to-kafka", spout)
     .each(["value"], Split(), ["word"]).name("split")
     .groupBy(["word"])
     .persistentAggregate(state, Count(), ["count"])
     .newValuesStream()
     .partitionPersist(counts_output(bootstrap, counts), ["word", "count"], TridentKafkaStateUpdater(), []))
    return topology


def latest_counts(bootstrap: str, topic: str, timeout: float = 60.0) -> tuple[Counter[str], int]:
    """Each word's last count in the output topic, and how many records it holds, as a
    ``read_committed`` consumer reads it (until 3 s pass without a record)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"kafka-to-kafka-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        latest: Counter[str] = Counter()
        records, idle = 0, 0
        while idle < 6:
            batch = consumer.consume(1000, timeout=0.5)
            idle = 0 if batch else idle + 1
            for message in batch:
                key, value = message.key(), message.value()
                if message.error() is None and key is not None and value is not None:
                    latest[key.decode()] = int(value)
                    records += 1
        return latest, records
    finally:
        consumer.close()


topology = build_topology(
    os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
    os.environ.get("SENTENCES_TOPIC", "sentences"),
    os.environ.get("COUNTS_TOPIC", "word-counts"),
    word_state(os.environ.get("WORDCOUNT_STATE"), Path("checkpoints") / "kafka_to_kafka"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    parser.add_argument("--input", default=os.environ.get("SENTENCES_TOPIC", "sentences"))
    parser.add_argument("--output", default=os.environ.get("COUNTS_TOPIC", "word-counts"))
    parser.add_argument("--checkpoint", default="/tmp/trident-kafka-to-kafka-checkpoint",
                        help="checkpoint directory (default: %(default)s)")
    parser.add_argument("--state", metavar="URL", default=os.environ.get("WORDCOUNT_STATE"),
                        help="the counts' state, as open_state() takes it (default: an opaque SQLite "
                             "file, CHECKPOINT/counts.db, table counts)")
    parser.add_argument("--top", type=int, default=10, help="how many top words to print (default 10)")
    parser.add_argument("--load-sample", type=int, metavar="N", default=0,
                        help="first create both topics (4 partitions) and load N sample sentences")
    args = parser.parse_args()
    if args.load_sample:
        from trident_spark.cli.demo import corpus
        from trident_spark.local.kafka import create_topic, produce

        create_topic(args.bootstrap, args.input, partitions=4, exist_ok=True)
        create_topic(args.bootstrap, args.output, partitions=4, exist_ok=True)
        produce(args.bootstrap, args.input, [(None, s.encode(), i % 4)
                                             for i, s in enumerate(corpus(args.load_sample))])

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("trident-kafka-to-kafka").getOrCreate()
    topo = build_topology(args.bootstrap, args.input, args.output, word_state(args.state, args.checkpoint))
    handle = topo.run(checkpoint_location=args.checkpoint, trigger="available_now", spark=spark)
    handle.awaitTermination()
    batches = sum(1 for p in handle.progress if p.stream == "kafka-to-kafka")
    latest, records = latest_counts(args.bootstrap, args.output)
    print(f"{batches} batches; topic {args.output!r} holds {records} records of {len(latest)} words; "
          "top words by their last count:")
    for word, count in latest.most_common(args.top):
        print(f"  {word:<12} {count}")
    spark.stop()


if __name__ == "__main__":
    main()
