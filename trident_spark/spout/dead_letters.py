"""The dead-letter topic: records the Kafka spout cannot decode, written once per batch.

With ``KafkaSpout(on_malformed="dead_letter", dead_letter_topic=...)`` the read task that
meets a malformed record sends it on to the dead-letter topic: its key and value exactly as
read, its timestamp and headers, and headers saying where it came from and why it was
refused (:data:`SOURCE_TOPIC`, :data:`SOURCE_PARTITION`, :data:`SOURCE_OFFSET`, :data:`ERROR`,
:data:`CHECKPOINT`). The batch goes on without it.

Exactly once, without Kafka transactions (the test broker, Tansu, accepts transactional
producers but its ``read_committed`` consumers still see aborted records, so a transaction
would not hide an attempt's records): a dead letter is named by the stream that wrote it
(its checkpoint directory) and its source record (topic, partition, offset). All dead letters
of one source partition go to one partition of the dead-letter topic, chosen from the
source's topic and partition; before sending, a task reads that partition back from its end
to the first dead letter of an earlier batch of the same source partition, and sends only
the records not there yet. A replayed batch, a retried task, and a batch replayed after its
driver was killed find what an earlier attempt wrote and do not write it again; what the
earlier attempt did not get to write, they write. Batches run one after the other, so every
dead letter of an earlier batch lies before those of the batch being read (the scan's end);
two attempts of one task at the same moment (Spark's speculative execution, off by default)
could both write.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trident_spark.errors import BrokerUnavailableError, UnknownTopicError
from trident_spark.spout.kafka_config import KafkaSpoutConfig
from trident_spark.spout.kafka_offsets import OffsetRange
from trident_spark.spout.kafka_pool import LIBRDKAFKA_LOG

log = logging.getLogger(__name__)

#: Headers the spout adds to a dead letter (values: UTF-8 text).
SOURCE_TOPIC = "trident.source.topic"
SOURCE_PARTITION = "trident.source.partition"
SOURCE_OFFSET = "trident.source.offset"
ERROR = "trident.error"
#: The checkpoint directory of the stream that wrote the dead letter: two topologies reading the
#: same topic into one dead-letter topic each write their own.
CHECKPOINT = "trident.checkpoint"

#: Dead-letter records read back per step of the scan from the partition's end.
SCAN_CHUNK = 1_000


@dataclass(frozen=True)
class DeadLetter:
    """A record the spout could not decode, as read, and why.

    Examples
    --------
    >>> letter = DeadLetter("clicks", 0, 41, None, b"{not json", 1700000000000, [], "value is not JSON")
    >>> dict(letter.kafka_headers("/ckpt/clicks"))[SOURCE_OFFSET]
    b'41'
    """

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None
    headers: Sequence[tuple[str, bytes | None]]
    error: str

    def kafka_headers(self, checkpoint: str) -> list[tuple[str, bytes | None]]:
        """The record's own headers, then the spout's."""
        return [*self.headers,
                (SOURCE_TOPIC, self.topic.encode()),
                (SOURCE_PARTITION, str(self.partition).encode()),
                (SOURCE_OFFSET, str(self.offset).encode()),
                (ERROR, self.error.encode()),
                (CHECKPOINT, checkpoint.encode())]


def dead_letter_partition(topic: str, partition: int, partitions: int) -> int:
    """The dead-letter partition of source partition ``topic[partition]`` (stable across processes).

    Examples
    --------
    >>> dead_letter_partition("clicks", 3, 1)
    0
    >>> dead_letter_partition("clicks", 3, 4) == dead_letter_partition("clicks", 3, 4)
    True
    """
    return zlib.crc32(f"{topic}\x00{partition}".encode()) % partitions


def source_of(headers: Sequence[tuple[str, bytes | None]] | None) -> tuple[str, str, int, int] | None:
    """``(checkpoint, topic, partition, offset)`` of a dead letter, from its headers (None for other records).

    Examples
    --------
    >>> letter = DeadLetter("clicks", 2, 7, None, b"x", None, [], "bad")
    >>> source_of(letter.kafka_headers("/ckpt/a"))
    ('/ckpt/a', 'clicks', 2, 7)
    >>> source_of([("other", b"1")]) is None
    True
    """
    found = {name: value for name, value in headers or () if name.startswith("trident.")}
    try:
        return (bytes(found[CHECKPOINT] or b"").decode(), bytes(found[SOURCE_TOPIC] or b"").decode(),
                int(found[SOURCE_PARTITION] or b""), int(found[SOURCE_OFFSET] or b""))
    except (KeyError, ValueError):
        return None


def send_dead_letters(config: KafkaSpoutConfig, r: OffsetRange, letters: Sequence[DeadLetter],
                      consumer: Any) -> int:
    """Write the dead letters of range ``r`` not written by an earlier attempt; return how many
    were written. ``consumer`` (unassigned on return) reads the dead-letter topic back.

    Raises ``UnknownTopicError`` when the dead-letter topic does not exist, and
    ``BrokerUnavailableError`` when the broker does not take the records: the task fails, and
    the batch is replayed.
    """
    from confluent_kafka import TopicPartition

    topic = config.dead_letter_topic
    assert topic is not None
    checkpoint = config.dead_letter_writer or ""
    target = TopicPartition(topic, dead_letter_partition(r.topic, r.partition, _partitions(config, consumer)))
    try:
        written = _written(config, consumer, target, checkpoint, r)
    finally:
        consumer.unassign()
    todo = [letter for letter in letters if letter.offset not in written]
    if todo:
        _produce(config, target, todo, checkpoint)
    if len(todo) < len(letters):
        log.info("KafkaSpout: %d dead letters of %s[%d] [%d, %d) were written by an earlier attempt",
                 len(letters) - len(todo), r.topic, r.partition, r.start, r.until)
    return len(todo)


def _partitions(config: KafkaSpoutConfig, consumer: Any) -> int:
    from confluent_kafka import KafkaException

    topic = config.dead_letter_topic
    try:
        metadata = consumer.list_topics(topic, timeout=config.timeout_s)
    except KafkaException as exc:
        raise BrokerUnavailableError(
            f"KafkaSpout: Kafka at {config.address} did not answer a metadata request for the dead-letter "
            f"topic {topic!r} within {config.timeout_s:g} s ({exc.args[0]})") from exc
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise UnknownTopicError(
            f"KafkaSpout(dead_letter_topic={topic!r}): no such topic on {config.address}; create it "
            "(any number of partitions) before the stream starts")
    return len(found.partitions)


def _written(config: KafkaSpoutConfig, consumer: Any, target: Any, checkpoint: str,
             r: OffsetRange) -> set[int]:
    """Source offsets in ``[r.start, r.until)`` that already have a dead letter from this stream.

    Reads the dead-letter partition back from its end, a chunk at a time, until a dead letter
    of the same stream and source partition from an earlier batch (source offset before the
    batch's start), or the partition's beginning.
    """
    low, high = _watermarks(config, consumer, target)
    batch_start = r.batch_start if r.batch_start is not None else r.start
    found: set[int] = set()
    end: int | None = None  # the first chunk reads on to the partition's end (a fetch's answer)
    begin = max(low, high - SCAN_CHUNK)
    while True:
        earlier = False
        for headers in _read_headers(config, consumer, target, begin, end):
            source = source_of(headers)
            if source is None or source[:3] != (checkpoint, r.topic, r.partition):
                continue
            if r.start <= source[3] < r.until:
                found.add(source[3])
            elif source[3] < batch_start:
                earlier = True
        if earlier or begin <= low:
            return found
        end, begin = begin, max(low, begin - SCAN_CHUNK)


def _watermarks(config: KafkaSpoutConfig, consumer: Any, target: Any) -> tuple[int, int]:
    from confluent_kafka import KafkaException

    try:
        low, high = consumer.get_watermark_offsets(target, timeout=config.timeout_s)
    except KafkaException as exc:
        raise BrokerUnavailableError(
            f"KafkaSpout: Kafka at {config.address} did not answer for the dead-letter topic "
            f"{target.topic}[{target.partition}] within {config.timeout_s:g} s ({exc.args[0]})") from exc
    low = max(0, int(low))  # a broker may answer -1 for an empty partition
    return low, max(low, int(high))


def _read_headers(config: KafkaSpoutConfig, consumer: Any, target: Any, begin: int,
                  end: int | None) -> list[Sequence[tuple[str, bytes | None]] | None]:
    """The headers of the records ``[begin, end)`` of the dead-letter partition (``end=None``: to
    its end, as the fetch answers tell it; a broker's ListOffsets answer may lag)."""
    from confluent_kafka import KafkaError, TopicPartition

    consumer.assign([TopicPartition(target.topic, target.partition, begin)])
    out: list[Sequence[tuple[str, bytes | None]] | None] = []
    position = begin
    idle_since = time.monotonic()
    while end is None or position < end:
        msgs = consumer.consume(num_messages=SCAN_CHUNK, timeout=0.5)
        if msgs:
            idle_since = time.monotonic()
        for msg in msgs:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if end is None or msg.offset() >= end:
                        return out
                    continue
                lost = (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)
                if err.code() in lost and begin > 0:
                    # the end we were told lies past the partition's: read it all
                    return _read_headers(config, consumer, target, 0, end)
                if err.fatal() or not err.retriable():
                    raise BrokerUnavailableError(
                        f"KafkaSpout: reading the dead-letter topic {target.topic}[{target.partition}] at "
                        f"offset {position} from {config.address} failed: {err.str()}")
                continue
            if end is not None and msg.offset() >= end:
                return out
            out.append(msg.headers())
            position = msg.offset() + 1
        if not msgs and time.monotonic() - idle_since > config.timeout_s:
            raise BrokerUnavailableError(
                f"KafkaSpout: no answer reading the dead-letter topic {target.topic}[{target.partition}] "
                f"at offset {position} from {config.address} for {config.timeout_s:g} s")
    return out


# Producers by settings, kept open in the worker process (creating one costs a connection).
_producers: dict[str, Any] = {}
_producers_lock = threading.Lock()


def _producer(config: KafkaSpoutConfig) -> Any:
    import json

    from confluent_kafka import Producer

    conf = {"bootstrap.servers": config.bootstrap_servers, **_producer_options(config.kafka_options),
            "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    key = json.dumps(conf, sort_keys=True, default=str)
    with _producers_lock:
        producer = _producers.get(key)
        if producer is None:
            producer = _producers[key] = Producer(conf, logger=LIBRDKAFKA_LOG)
    return producer


#: The user's kafka_options a producer also understands: connection and security settings.
_SHARED_PREFIXES = ("security.", "sasl.", "ssl.", "client.", "socket.", "broker.", "metadata.", "reconnect.",
                    "retry.", "api.version", "log.", "debug", "connections.", "resolve.", "client.dns")


def _producer_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k.startswith(_SHARED_PREFIXES)}


def _produce(config: KafkaSpoutConfig, target: Any, letters: Sequence[DeadLetter], checkpoint: str) -> None:
    producer = _producer(config)
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err.str() if hasattr(err, "str") else err))

    for letter in letters:
        extra = {"timestamp": letter.timestamp_ms} if letter.timestamp_ms and letter.timestamp_ms > 0 else {}
        producer.produce(target.topic, value=letter.value, key=letter.key, partition=target.partition,
                         headers=letter.kafka_headers(checkpoint), on_delivery=delivered, **extra)
        producer.poll(0)
    left = producer.flush(config.timeout_s)
    if left or failures:
        reason = failures[0] if failures else f"{left} not acknowledged within {config.timeout_s:g} s"
        raise BrokerUnavailableError(
            f"KafkaSpout: {len(letters)} dead letters for {target.topic}[{target.partition}] on "
            f"{config.address} were not all written ({reason}); the batch is replayed and writes the "
            "missing ones")


__all__ = ["CHECKPOINT", "ERROR", "SOURCE_OFFSET", "SOURCE_PARTITION", "SOURCE_TOPIC", "DeadLetter",
           "dead_letter_partition", "send_dead_letters", "source_of"]
