"""Kafka helpers for tests, the demo and benchmarks: create, fill and read topics.

They work against any broker; the notes are about Tansu, the local one:
metadata is asked through a Consumer with topic auto-creation off (an
AdminClient metadata request for a named topic creates the topic there),
and reads ``assign()`` partitions (a consumer-group join takes ~23 s).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from trident_spark.errors import TridentSparkError

__all__ = [
    "ConsumedRecord",
    "KafkaHelperError",
    "Record",
    "consume",
    "create_topic",
    "produce",
    "wait_for_partitions",
]

Record = tuple[bytes | str | None, bytes | str, int | None]
"""A record to produce: ``(key, value, partition)``; ``None`` partition lets Kafka choose."""


class KafkaHelperError(TridentSparkError, RuntimeError):
    """A topic could not be created, filled or read; the message says which and where.

    Examples
    --------
    >>> str(KafkaHelperError("topic 'words' on 127.0.0.1:9092: 2 partitions, wanted 4"))
    "topic 'words' on 127.0.0.1:9092: 2 partitions, wanted 4"
    """


class ConsumedRecord(NamedTuple):
    """One record read back by :func:`consume`."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def _metadata_consumer(bootstrap: str, extra: Mapping[str, int] | None = None) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "trident-spark-local",
            "allow.auto.create.topics": False,
            "enable.auto.commit": False,
            **(extra or {}),
        }
    )


def wait_for_partitions(
    bootstrap: str, topic: str, partitions: int, *, timeout: float = 10.0
) -> None:
    """Wait until broker metadata shows ``topic`` with ``partitions`` led partitions.

    Raises
    ------
    KafkaHelperError
        When the topic is missing, has another partition count, or has
        partitions without a leader after ``timeout`` seconds.

    Examples
    --------
    >>> wait_for_partitions("127.0.0.1:9092", "words", 4)  # doctest: +SKIP
    """
    consumer = _metadata_consumer(bootstrap)
    deadline = time.monotonic() + timeout
    problem = "no metadata"
    try:
        while True:
            try:
                metadata = consumer.list_topics(topic, timeout=max(0.5, min(2.0, timeout)))
                found = metadata.topics.get(topic)
                if found is None or found.error is not None:
                    problem = f"missing ({found.error if found else 'not in metadata'})"
                else:
                    led = [
                        p for p in found.partitions.values() if p.leader >= 0 and p.error is None
                    ]
                    if len(found.partitions) == partitions and len(led) == partitions:
                        return
                    problem = f"{len(found.partitions)} partitions ({len(led)} with a leader)"
            except KafkaException as error:
                problem = f"metadata request failed: {error}"
            if time.monotonic() >= deadline:
                raise KafkaHelperError(
                    f"topic {topic!r} on {bootstrap}: wanted {partitions} partitions with a "
                    f"leader, still {problem} after {timeout:g} s"
                )
            time.sleep(0.1)
    finally:
        consumer.close()


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    *,
    timeout: float = 10.0,
    replication_factor: int = 1,
    config: Mapping[str, str] | None = None,
    exist_ok: bool = False,
) -> None:
    """Create ``topic`` and wait until every partition has a leader.

    Parameters
    ----------
    bootstrap
        Kafka bootstrap string.
    topic, partitions, replication_factor, config
        What to create.
    timeout
        Seconds for the creation and for the metadata to show it.
    exist_ok
        Accept an existing topic if it has ``partitions`` partitions.

    Raises
    ------
    KafkaHelperError
        The broker refused (e.g. the topic exists and ``exist_ok`` is false) or
        did not answer in time.

    Examples
    --------
    >>> create_topic("127.0.0.1:9092", "words", 4)  # doctest: +SKIP
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, replication_factor, config=dict(config or {}))
    future = admin.create_topics([new], request_timeout=timeout)[topic]
    try:
        future.result(timeout)
    except KafkaException as error:
        code = error.args[0].code() if error.args else None
        if not (exist_ok and code == KafkaError.TOPIC_ALREADY_EXISTS):
            raise KafkaHelperError(f"creating topic {topic!r} on {bootstrap}: {error}") from None
    except TimeoutError:
        raise KafkaHelperError(
            f"creating topic {topic!r} on {bootstrap}: no answer within {timeout:g} s"
        ) from None
    wait_for_partitions(bootstrap, topic, partitions, timeout=timeout)


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[Record | bytes | str],
    *,
    timeout: float = 30.0,
    config: Mapping[str, str | int] | None = None,
) -> int:
    """Produce ``records`` to ``topic`` quickly, flush, and check every delivery.

    Parameters
    ----------
    records
        ``(key, value, partition)`` tuples, or bare values (no key, any partition).
        ``str`` is encoded as UTF-8.
    timeout
        Seconds for the final flush.
    config
        Extra librdkafka producer settings (override the fast defaults).

    Returns
    -------
    int
        How many records were delivered.

    Raises
    ------
    KafkaHelperError
        Some records failed or were still undelivered after ``timeout``.

    Examples
    --------
    >>> produce("127.0.0.1:9092", "words", [(b"k", b"the cat", 0), "a dog"])  # doctest: +SKIP
    2
    """
    settings: dict[str, str | int] = {
        "bootstrap.servers": bootstrap,
        "linger.ms": 5,
        "batch.num.messages": 100_000,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 1_000_000,
    }
    settings.update(config or {})
    producer = Producer(settings)
    failures: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            failures.append(error)

    sent = 0
    for record in records:
        if isinstance(record, tuple):
            key, value, partition = record
        else:
            key, value, partition = None, record, None
        while True:
            try:
                producer.produce(
                    topic,
                    value,
                    key,
                    partition=-1 if partition is None else partition,  # -1: the partitioner's pick
                    on_delivery=on_delivery,
                )
                break
            except BufferError:  # local queue full: let deliveries drain it
                producer.poll(0.05)
        sent += 1
        if sent % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(timeout)
    if failures or remaining:
        raise KafkaHelperError(
            f"producing to {topic!r} on {bootstrap}: {len(failures)} of {sent} records failed"
            + (f" (first: {failures[0]})" if failures else "")
            + (f", {remaining} undelivered after {timeout:g} s" if remaining else "")
        )
    return sent


def consume(
    bootstrap: str, topic: str, *, count: int, timeout: float = 30.0
) -> list[ConsumedRecord]:
    """Read ``count`` records from all partitions of ``topic``, from the start.

    Partitions are ``assign()``-ed, so no consumer group is joined.

    Raises
    ------
    KafkaHelperError
        Fewer than ``count`` records arrived within ``timeout`` seconds.

    Examples
    --------
    >>> [r.value for r in consume("127.0.0.1:9092", "words", count=1)]  # doctest: +SKIP
    [b'the cat']
    """
    # librdkafka's default 1 s fetch backoff stalls reads of large topics.
    consumer = _metadata_consumer(bootstrap, {"fetch.queue.backoff.ms": 10})
    try:
        metadata = consumer.list_topics(topic, timeout=min(timeout, 10.0))
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            raise KafkaHelperError(f"topic {topic!r} on {bootstrap}: not found")
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(found.partitions)])
        records: list[ConsumedRecord] = []
        deadline = time.monotonic() + timeout
        while len(records) < count and time.monotonic() < deadline:
            for message in consumer.consume(min(count - len(records), 10_000), timeout=0.2):
                error = message.error()
                if error is not None:
                    raise KafkaHelperError(f"reading {topic!r} on {bootstrap}: {error}")
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                records.append(ConsumedRecord(partition, offset, message.key(), message.value()))
        if len(records) < count:
            raise KafkaHelperError(
                f"reading {topic!r} on {bootstrap}: {len(records)} of {count} records "
                f"after {timeout:g} s"
            )
        return records
    finally:
        consumer.close()
