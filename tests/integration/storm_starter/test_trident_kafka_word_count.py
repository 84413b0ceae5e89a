"""storm-starter's TridentKafkaWordCount on Spark and a real Kafka broker (the session's, Apache Kafka
locally): the counts Trident would hold.

The expected values follow the Java: the consumer starts at the topic's latest offset
(``LatestTime()``), so sentences written before it are not counted; the producer's
``RandomSentenceSpout.TimeStamped("")`` writes "<timestamp> <sentence>"; ``Split`` counts the
timestamp as a word (each one once, the clock here moving 1 ms a sentence) and every word of the
sentence. The 20 sentences drawn with ``SEED``: "snow white and the seven dwarfs" 5, "an apple a
day keeps the doctor away" 5, "i am at two with nature" 4, "four score and seven years ago" 4,
"the cow jumped over the moon" 2.

The run counts into an opaque MemoryState (MemoryMapState), as the example's ``topology`` does.
With the Java's DebugMemoryMapState, which throws ``FailedException`` on the first update of each
state (and every fifth after), Trident replays the batch and counts it once: the state object
lives for the task, so the replay finds its update count at 1. Here a factory whose ``open()`` is
the program's keeps its state in the partition's instance host, which outlives the failed task.
"""

from __future__ import annotations

import datetime
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from examples.storm_starter.trident_kafka_word_count import (
    DebugMemoryMapState,
    TimeStamped,
    TridentKafkaWordCount,
)
from trident_spark.local.kafka import create_topic
from trident_spark.state import MemoryState, StateFactory

pytestmark = pytest.mark.integration

START = datetime.datetime(2016, 10, 25, 12, 0, 0)
SENTENCE_WORDS = {"the": 14, "and": 9, "seven": 9,
                  "a": 5, "an": 5, "apple": 5, "away": 5, "day": 5, "doctor": 5, "keeps": 5,
                  "dwarfs": 5, "snow": 5, "white": 5,
                  "ago": 4, "four": 4, "score": 4, "years": 4,
                  "am": 4, "at": 4, "i": 4, "nature": 4, "two": 4, "with": 4,
                  "cow": 2, "jumped": 2, "moon": 2, "over": 2}
TIMESTAMPS = {f"2016.10.25_12:00:00.{ms:09d}": 1 for ms in range(20)}


def clock() -> Iterator[datetime.datetime]:
    """1 ms later for each sentence: ``nextTuple`` stamps all five sentences before it picks one, as
    the Java does, so five readings a sentence."""
    for reading in itertools.count():
        yield START + datetime.timedelta(milliseconds=reading // 5)


def count_words(spark: Any, bootstrap: str, state: StateFactory, checkpoint: Path) -> dict[Any, Any]:
    """Java's local-mode main without DRPC: the consumer from the latest offset, then 20 sentences
    from the producer; returns the counts once all their words are in ``state``."""
    topic = f"storm-starter-test-{os.getpid()}-{time.time_ns() % 10**9}"
    create_topic(bootstrap, topic, partitions=1)  # kafka-topics.sh --create --partition 1 --topic test
    word_count = TridentKafkaWordCount(bootstrap, topic=topic, state=state)
    # before the consumer starts: not counted (it starts at the latest offset)
    word_count.runProducer(word_count.getProducerConfig(), 3, TimeStamped("before ", seed=0))

    handle = word_count.buildConsumerTopology().run(checkpoint, trigger="200 milliseconds", spark=spark)
    try:
        handle.processAllAvailable()
        ticks = clock()
        word_count.runProducer(word_count.getProducerConfig(), 20, TimeStamped("", clock=lambda: next(ticks)))
        expected = sum(SENTENCE_WORDS.values()) + len(TIMESTAMPS)
        deadline = time.monotonic() + 120
        while sum(count for _, count in state.open().getTuples()) < expected:
            failure = handle.exception()
            if failure is not None:
                raise failure
            assert time.monotonic() < deadline, f"the {expected} words were not counted in 120 s"
            time.sleep(0.5)
        handle.processAllAvailable()
    finally:
        handle.stop()
    return {word: count for word, count in state.open().getTuples()}


@pytest.fixture(scope="module")
def counts(spark: Any, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> dict[Any, Any]:
    MemoryState.drop("storm-starter-kafka-word-count")
    state = MemoryState.opaque(name="storm-starter-kafka-word-count")
    return count_words(spark, kafka_bootstrap, state, tmp_path_factory.mktemp("kafka-word-count"))


def test_every_word_of_the_new_sentences_is_counted_once(counts: dict[Any, Any]) -> None:
    assert counts == {**SENTENCE_WORDS, **TIMESTAMPS}


def test_the_drpc_query_of_main_would_read(counts: dict[Any, Any]) -> None:
    # Java's main asks drpc.execute("words", "the and apple snow jumped") every second.
    state = MemoryState.opaque(name="storm-starter-kafka-word-count").open()
    assert state.multiGet([["the"], ["and"], ["apple"], ["snow"], ["jumped"]]) == [14, 9, 5, 5, 2]


def test_with_the_javas_debug_memory_map_state_the_replayed_batches_count_once(
        spark: Any, kafka_bootstrap: str, tmp_path: Path) -> None:
    MemoryState.drop("storm-starter-kafka-word-count-debug")
    state = DebugMemoryMapState.Factory(name="storm-starter-kafka-word-count-debug")
    assert count_words(spark, kafka_bootstrap, state, tmp_path / "ckpt") == {**SENTENCE_WORDS, **TIMESTAMPS}


def test_main_runs_the_consumer_and_the_producer_and_prints_the_counts(
        kafka_bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from examples.storm_starter.trident_kafka_word_count import main

    topic = f"storm-starter-main-{os.getpid()}-{time.time_ns() % 10**9}"
    create_topic(kafka_bootstrap, topic, partitions=1)
    main(["--bootstrap", kafka_bootstrap, "--topic", topic, "--seconds", "3",
          "--checkpoint", str(tmp_path / "ckpt")])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"Using Kafka broker url: {kafka_bootstrap}"
    assert len(lines) == 4 and all(line.startswith("--- counts: [") for line in lines[1:]), lines
