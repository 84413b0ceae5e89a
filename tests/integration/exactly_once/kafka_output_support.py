"""Helpers of the Kafka output's tests: an output topic read to its end as read_committed, and
the records one clean run writes (from the sentences and Spark's offsets log)."""

from __future__ import annotations

import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, Producer, TopicPartition
from exactly_once_support import Expected

SENTINEL = b"__end_of_test__"


def read_committed(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0,
                   isolation: str = "read_committed") -> Counter[tuple[bytes | None, bytes | None]]:
    """Every record of ``topic`` as a read_committed consumer reads it, to the end.

    The end is found without trusting the watermark: a plain producer appends a sentinel to
    each partition, and each partition is read until its sentinel. ``isolation=
    "read_uncommitted"`` reads aborted transactions' records too (what the log holds).
    """
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(partitions):
        producer.produce(topic, value=SENTINEL, partition=partition)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                         "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    found: Counter[tuple[bytes | None, bytes | None]] = Counter()
    open_partitions = set(range(partitions))
    deadline = time.monotonic() + timeout
    try:
        while open_partitions:
            assert time.monotonic() < deadline, f"no sentinel in partitions {open_partitions} of {topic}"
            for message in consumer.consume(500, timeout=0.5):
                assert message.error() is None, message.error()
                if message.value() == SENTINEL:
                    open_partitions.discard(message.partition())
                elif message.partition() in open_partitions:
                    found[(message.key(), message.value())] += 1
    finally:
        consumer.close()
    return found


def expected_records(batches: dict[int, list[str]]) -> Counter[tuple[bytes | None, bytes | None]]:
    """One clean run's records: per batch, each word it touched with its count after the batch."""
    expected = Expected.from_batches(batches)
    return Counter((word.encode(), str(count).encode())
                   for batch in sorted(batches) for word, count in expected.values_after(batch).items())


def marker_txids(bootstrap: str, transactional_id: str, partitions: int) -> dict[int, int | None]:
    """The txid each output partition's marker group says it last committed."""
    found = {}
    for partition in range(partitions):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{transactional_id}-{partition}",
                             "isolation.level": "read_committed", "enable.auto.commit": False})
        (tp,) = consumer.committed([TopicPartition("trident-spark-txids", 0)], timeout=10)
        consumer.close()
        found[partition] = tp.offset - 1 if tp.offset >= 0 else None
    return found
