"""storm-starter's TridentKafkaWordCount, ported line by line onto trident-spark's KafkaSpout.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentKafkaWordCount.java`` as storm-starter last held it (before STORM-2182 moved it to
storm-kafka-examples, October 2016), with its ``DebugMemoryMapState.java``. Two parts:

* the producer: storm-starter's ``RandomSentenceSpout.TimeStamped`` writes random sentences, each
  after a timestamp, to the Kafka topic ``test`` (a ``KafkaBolt``);
* the consumer, a Trident topology: an opaque Kafka spout on ``test``, starting at the latest
  offset, a ``Debug`` of every record, ``Split`` into words, and ``Count`` per word into a
  ``DebugMemoryMapState``: a MemoryMapState that logs every update and fails every fifth
  ``multiUpdate`` (the first included) with ``FailedException``, so that Trident replays the batch
  ("on retrial should replay the exact same batch"), and the counts still come out exact.

Java's third part, a DRPC stream answering the counts of "the and apple snow jumped", comes with
DRPC; until then :func:`main` reads those counts from the state.

**DebugMemoryMapState does not work on trident-spark yet.** In Storm the state lives as long as
its task, so after the failed first update the replay is its second update and goes through. Here
a state is opened in the Spark Python worker that runs the task, and a task that raises loses its
worker: the replay opens the state afresh, its update count is 0 again, and the batch fails on
every replay until the stream gives up. So what runs below counts into a plain opaque
``MemoryState``, as storm-starter's TridentKafkaWordCount did before DebugMemoryMapState was added
(``new MemoryMapState.Factory()``, July 2016); ``TridentKafkaWordCount(state=None)`` is the Java's
choice, for when states outlive a failed task.

Run it against a broker (topic ``test``, one partition):

* ``trident-spark run examples/storm_starter/trident_kafka_word_count.py``: the consumer
  (``KAFKA_BOOTSTRAP_SERVERS``, default ``127.0.0.1:9092``);
* ``python examples/storm_starter/trident_kafka_word_count.py [--bootstrap HOST:PORT]``: Java's
  ``main`` in local mode, the consumer and the producer together for a minute, printing the
  counts of "the and apple snow jumped" every second.

Differences from the Java:

* the spout is :class:`~trident_spark.spout.KafkaSpout`: one broker address instead of
  ZooKeeper's (``zkUrl``) and the broker's; its record value is the field ``value`` (``str``,
  UTF-8), where Storm's ``StringScheme`` named it ``str``; ``LatestTime()`` is
  ``starting_offsets="latest"``. It is transactional (a replayed batch reads the same offsets);
  with the opaque state the counts are exact either way. Java's unused
  ``createTransactionalKafkaSpout`` is left out;
* ``new Debug(true)`` logs each tuple at debug level in Storm; trident-spark's ``Debug`` has no
  logger form and prints it (on the executors);
* the producer is not a Storm topology (trident-spark runs Trident topologies only) but the same
  steps in Python: :class:`RandomSentenceSpout` (seeded, one task instead of two, no 100 ms
  sleep between sentences unless asked) into a Kafka producer with the same properties;
  ``TimeStamped`` takes a clock, so a test can fix the timestamps;
* ``DebugMemoryMapState`` is an opaque map over a ``MemoryState`` (Trident's MemoryMapState is
  opaque), made by ``DebugMemoryMapState.Factory``; Java's ``getArg()`` of the
  CombinerValueUpdater is the updater's value for a new key;
* the topic (``test``) and the state are parameters; ``getConsumerConfig`` (max spout pending 20,
  max task parallelism 1) has no counterpart: a Spark query runs one batch at a time.
"""

# ruff: noqa: N806 (the Java's camelCase local names are kept, for a line-by-line reading)
from __future__ import annotations

import argparse
import dataclasses
import datetime
import logging
import os
import random
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trident_spark import FailedException, Fields, Stream, TridentState, TridentTopology
from trident_spark.builtin import Count, Debug, Split
from trident_spark.spout import KafkaSpout
from trident_spark.state import MapState, MemoryState, OpaqueMap, StateFactory

LOG = logging.getLogger(__name__)

#: The seed of the producer's sentences (the Java draws from ``new Random()``).
SEED = 1868


class TridentKafkaWordCount:
    """The word count of a Kafka topic of sentences, and the producer of those sentences.

    Parameters
    ----------
    brokerUrl : str
        The Kafka bootstrap servers, ``"host:port"``.
    topic : str, default "test"
        The topic of the sentences.
    state : StateFactory, optional
        Where the counts go; default ``DebugMemoryMapState.Factory()`` (a random name, as Java's).

    Examples
    --------
    >>> wordCount = TridentKafkaWordCount("127.0.0.1:9092")
    >>> wordCount.buildConsumerTopology().queries()[0].name
    'spout1'
    >>> wordCount.getProducerConfig()
    {'bootstrap.servers': '127.0.0.1:9092', 'client.id': 'storm-kafka-producer'}
    """

    def __init__(self, brokerUrl: str, topic: str = "test", state: StateFactory | None = None) -> None:
        self.brokerUrl = brokerUrl
        self.topic = topic
        self.state = state

    def createOpaqueKafkaSpout(self) -> KafkaSpout:
        """A Kafka spout that consumes any new data published to the topic."""
        # Consume new data from the topic
        return KafkaSpout(bootstrap_servers=self.brokerUrl, topics=[self.topic], starting_offsets="latest")

    def addTridentState(self, tridentTopology: TridentTopology) -> TridentState:
        """The sentences of the topic, split into words and counted into the state."""
        spoutStream: Stream = (tridentTopology.newStream("spout1", self.createOpaqueKafkaSpout())
                               .parallelismHint(1))

        return (spoutStream.each(spoutStream.getOutputFields(), Debug())  # Java: new Debug(true)
                .each(Fields("value"), Split(), Fields("word"))
                .groupBy(Fields("word"))
                .persistentAggregate(self.state or DebugMemoryMapState.Factory(), Count(), Fields("count")))

    def buildConsumerTopology(self) -> TridentTopology:
        """The consumer: the word count of the topic into the state (Java's DRPC stream on the
        counts comes with DRPC)."""
        tridentTopology = TridentTopology()
        self.addTridentState(tridentTopology)
        return tridentTopology

    def runProducer(self, prop: dict[str, str], sentences: int, spout: RandomSentenceSpout | None = None,
                    interval: float = 0.0) -> None:
        """Java's producer topology: ``sentences`` sentences from ``spout`` (default a
        ``RandomSentenceSpout.TimeStamped("")``) written to the topic, ``interval`` seconds apart.

        The tuple has no ``key`` field (``FieldNameBasedTupleToKafkaMapper("key", "word")``), so
        the records have no key; the message is the sentence, UTF-8 (``StringSerializer``).
        """
        from confluent_kafka import Producer

        spout = spout or TimeStamped("")
        producer = Producer(prop)
        for _ in range(sentences):
            producer.produce(self.topic, value=spout.nextTuple().encode("utf-8"))
            producer.poll(0)
            if interval:
                time.sleep(interval)
        undelivered = producer.flush(30)
        if undelivered:
            raise RuntimeError(f"{undelivered} sentences were not delivered to {self.topic!r} at "
                               f"{self.brokerUrl} within 30 s; is the broker up?")

    def getProducerConfig(self) -> dict[str, str]:
        """The producer's properties (librdkafka's names for Java's ProducerConfig)."""
        props = {}
        props["bootstrap.servers"] = self.brokerUrl
        props["client.id"] = "storm-kafka-producer"
        return props


class RandomSentenceSpout:
    """storm-starter's RandomSentenceSpout: one of five sentences at random per ``nextTuple``.

    Parameters
    ----------
    seed : int, default SEED
        The seed of the choice (the Java's ``new Random()`` has none).

    Examples
    --------
    >>> spout = RandomSentenceSpout(seed=1)
    >>> spout.nextTuple(), spout.nextTuple()
    ('an apple a day keeps the doctor away', 'i am at two with nature')
    """

    def __init__(self, seed: int = SEED) -> None:
        self._rand = random.Random(seed)

    def nextTuple(self) -> str:
        sentences = [self.sentence("the cow jumped over the moon"),
                     self.sentence("an apple a day keeps the doctor away"),
                     self.sentence("four score and seven years ago"),
                     self.sentence("snow white and the seven dwarfs"),
                     self.sentence("i am at two with nature")]
        sentence = sentences[self._rand.randrange(len(sentences))]
        LOG.debug("Emitting tuple: %s", sentence)
        return sentence

    def sentence(self, input: str) -> str:
        return input


class TimeStamped(RandomSentenceSpout):
    """``RandomSentenceSpout.TimeStamped``: each sentence after a timestamp, "helpful for debugging".

    Java's ``SimpleDateFormat("yyyy.MM.dd_HH:mm:ss.SSSSSSSSS")`` writes the milliseconds in nine
    digits, as here.

    Parameters
    ----------
    prefix : str, default ""
        Put before the timestamp.
    clock : callable, default datetime.datetime.now
        The time of each sentence.
    seed : int, default SEED
        The seed of the sentences.

    Examples
    --------
    >>> at = datetime.datetime(2016, 10, 25, 12, 0, 0, 7000)
    >>> TimeStamped("", clock=lambda: at, seed=1).nextTuple()
    '2016.10.25_12:00:00.000000007 an apple a day keeps the doctor away'
    """

    def __init__(self, prefix: str = "", clock: Callable[[], datetime.datetime] = datetime.datetime.now,
                 seed: int = SEED) -> None:
        super().__init__(seed)
        self.prefix = prefix
        self.clock = clock

    def sentence(self, input: str) -> str:
        return self.prefix + self.currentDate() + " " + input

    def currentDate(self) -> str:
        now = self.clock()
        return now.strftime("%Y.%m.%d_%H:%M:%S.") + f"{now.microsecond // 1000:09d}"


class DebugMemoryMapState(OpaqueMap):  # type: ignore[misc]  # (mypy does not find trident_spark.state)
    """A MemoryMapState that logs every update and fails every fifth ``multiUpdate``.

    Updates 0, 5, 10... raise ``FailedException`` before anything is written: the batch is
    replayed, and being opaque the state counts it once.

    Examples
    --------
    >>> state = DebugMemoryMapState.Factory(name="doc-debug-memory-map-state").open()
    >>> state.beginCommit(0)     # the engine does, before each batch's updates
    >>> state.multiUpdate([["cat"]], [lambda old: (old or 0) + 1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    trident_spark.errors.FailedException: Enforced State Update Fail. On retrial should replay ...
    >>> state.multiUpdate([["cat"]], [lambda old: (old or 0) + 1])
    [1]
    """

    def __init__(self, state: MapState) -> None:
        super().__init__(state.backing, txid_offset=state.txid_offset,
                         max_conflict_retries=state.max_conflict_retries, stats=state.stats)
        self.updateCount = 0

    def multiUpdate(self, keys: Sequence[list[Any]],  # type: ignore[override]  # Java's form
                    updaters: Sequence[Callable[[Any], Any]]) -> list[Any]:
        self._print(keys, updaters)
        self.updateCount += 1
        if (self.updateCount - 1) % 5 == 0:
            LOG.error("Throwing FailedException")
            raise FailedException("Enforced State Update Fail. "
                                  "On retrial should replay the exact same batch.")
        newValues: list[Any] = super().multiUpdate(keys, updaters)
        return newValues

    def _print(self, keys: Sequence[list[Any]], updaters: Sequence[Callable[[Any], Any]]) -> None:
        for i in range(len(keys)):
            valueUpdater = updaters[i]
            arg = valueUpdater(None)  # a CombinerAggregator's updater: its argument, for a new key
            LOG.info("updateCount = %s, keys = %s => updaterArgs = %s", self.updateCount, keys[i], arg)

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Factory(MemoryState):  # type: ignore[misc]
        """Opens a :class:`DebugMemoryMapState` (opaque) over the memory store ``name``, by
        default a random UUID, as Java's ``Factory()``."""

        name: str = dataclasses.field(default_factory=lambda: str(uuid.uuid4()))

        def open(self) -> MapState:
            return DebugMemoryMapState(super().open())


def main(argv: Sequence[str] | None = None) -> None:
    """Java's ``main`` in local mode: the consumer topology, then the producer, for ``--seconds``
    (60), printing the counts of "the and apple snow jumped" every second (Java asks them of DRPC;
    here they are read from the state); then both stop."""
    parser = argparse.ArgumentParser(description="TridentKafkaWordCount: a word count of a Kafka topic")
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
                        help="the Kafka broker (default: $KAFKA_BOOTSTRAP_SERVERS or %(default)s)")
    parser.add_argument("--topic", default="test", help="the topic of the sentences (default: %(default)s)")
    parser.add_argument("--seconds", type=int, default=60, help="how long to run (default: %(default)s)")
    parser.add_argument("--checkpoint", default="checkpoints/trident_kafka_word_count",
                        help="the consumer's checkpoint directory (default: %(default)s)")
    args = parser.parse_args(argv)
    print("Using Kafka broker url: " + args.bootstrap)

    state = MemoryState.opaque(name="wordCounter")  # DebugMemoryMapState.Factory() once it can run
    wordCount = TridentKafkaWordCount(args.bootstrap, args.topic, state)
    # submit the CONSUMER topology.
    handle = wordCount.buildConsumerTopology().run(Path(args.checkpoint), trigger="1 second")
    handle.processAllAvailable()  # the latest offsets are taken before the producer starts
    try:
        words = ["the", "and", "apple", "snow", "jumped"]
        for _ in range(args.seconds):
            # the PRODUCER: about ten sentences a second, as the Java's two spout tasks
            wordCount.runProducer(wordCount.getProducerConfig(), 10, interval=0.1)
            with state.open() as counts:
                found = counts.multiGet([[word] for word in words])
            print("--- counts:", [[word, count] for word, count in zip(words, found, strict=True)
                                  if count is not None])
    finally:
        handle.stop()


#: What ``trident-spark run`` runs: the consumer topology (``KAFKA_BOOTSTRAP_SERVERS``, topic ``test``),
#: counting into an opaque MemoryState (DebugMemoryMapState fails every replay here, see above).
topology = TridentKafkaWordCount(os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
                                 state=MemoryState.opaque(name="wordCounter")).buildConsumerTopology()

if __name__ == "__main__":
    main()
