"""The limit of a word count on this machine: one Python process that consumes the topic with
confluent-kafka (the consumer library the spout uses) and counts the words with a dict, and
each contender's rate as a fraction of it (issue 31)."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

#: The consumer's settings: the spout's fetch-queue backoff (librdkafka's default of 1000 ms stalls
#: a consumer whenever more than ~100k messages are queued), no group join, no offset commits.
CONSUMER_SETTINGS: dict[str, Any] = {"fetch.queue.backoff.ms": 10, "enable.auto.commit": False,
                                     "enable.partition.eof": False}
#: Messages per ``consume()`` call.
CHUNK = 10_000
#: A consumer that sees no message for this long has stalled: stop with an error.
STALL_S = 30.0


def count_words(bootstrap: str, topic: str, partitions: int, records: int) -> tuple[dict[str, int], int]:
    """Read ``records`` records of ``topic`` from offset 0 of every partition and count the words
    of their values (``str.split()``) in a dict; return (counts, records read)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-limit-{uuid.uuid4().hex[:6]}",
                         **CONSUMER_SETTINGS})
    counts: dict[str, int] = {}
    get = counts.get
    seen = 0
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        idle_since = time.monotonic()
        while seen < records:
            messages = consumer.consume(num_messages=CHUNK, timeout=1.0)
            if messages:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > STALL_S:
                raise SystemExit(f"limit: the consumer of {topic!r} at {bootstrap} stalled at {seen} of "
                                 f"{records} records for {STALL_S:g} s; is the broker up?")
            for message in messages:
                error = message.error()
                if error is not None:
                    raise SystemExit(f"limit: reading {topic!r} at {bootstrap} failed: {error}")
                seen += 1
                value = message.value()
                if value is None:
                    continue
                for word in value.decode().split():
                    counts[word] = get(word, 0) + 1
    finally:
        consumer.close()
    return counts, seen


def run_limit(bootstrap: str, topic: str, partitions: int, records: int,
              expected: Counter[str]) -> dict[str, Any]:
    """One timed run of :func:`count_words` in this process: wall seconds from the first fetch
    to the last count, this process's CPU seconds, and a check of the counts against ``expected``.

    The consumer connects (metadata of the topic) before the clock starts, as Spark's source has
    its connections open when a batch starts.
    """
    from confluent_kafka import Consumer

    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-limit-probe"})
    try:
        probe.list_topics(topic, timeout=10)
    finally:
        probe.close()
    cpu_before, started = time.process_time(), time.perf_counter()
    counts, seen = count_words(bootstrap, topic, partitions, records)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_before
    if counts != expected:
        wrong = sorted(w for w in set(counts) | set(expected) if counts.get(w) != expected.get(w))
        raise SystemExit(f"limit: counted {len(wrong)} words differently from Python's Counter, e.g. "
                         + ", ".join(f"{w!r}: {counts.get(w)} != {expected.get(w)}" for w in wrong[:5]))
    return {"records": seen, "seconds": seconds, "records_per_s": seen / seconds, "cpu_s": cpu,
            "cpu_us_per_record": cpu * 1e6 / max(1, seen)}


def limit_fractions(rate: float, limit_rate: float, cores: int) -> dict[str, float]:
    """``rate`` (sentences/s) as a fraction of the limit: ``of_one`` of one process's rate, and
    ``of_cores`` of ``cores`` such processes (each core consuming its share of the partitions).

    Examples
    --------
    >>> limit_fractions(50_000, 250_000, 2)
    {'of_one': 0.2, 'of_cores': 0.1}
    """
    if limit_rate <= 0 or cores < 1:
        raise ValueError(f"limit_fractions: the limit's rate ({limit_rate}) must be positive and "
                         f"cores ({cores}) at least 1")
    return {"of_one": rate / limit_rate, "of_cores": rate / (limit_rate * cores)}
