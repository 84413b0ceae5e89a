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

A dead letter never stops the stream for its size: a record over the dead-letter producer's
limit (librdkafka's ``message.max.bytes``, 1,000,000 bytes unless ``kafka_options`` sets it)
is sent cut to fit: its headers and the first bytes of its key and value, with the header
:data:`TRUNCATED` giving the parts cut and their original sizes. One the broker still refuses
for its size (a topic's ``max.message.bytes`` below the producer's) is sent again with only
the first :data:`MIN_KEPT_BYTES` of its key and value and the spout's headers; one refused
even then is skipped: logged as a warning naming ``topic[partition]@offset`` and the
dead-letter topic, and counted (:func:`skipped_dead_letters`). The batch goes on; the others
of its partition are written.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trident_spark.errors import BrokerUnavailableError, UnknownTopicError
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import OffsetRange
from trident_spark.spout.kafka.pool import LIBRDKAFKA_LOG
from trident_spark.spout.kafka.run import KafkaRun

log = logging.getLogger(__name__)

#: Headers the spout adds to a dead letter (values: UTF-8 text).
SOURCE_TOPIC = "trident.source.topic"
SOURCE_PARTITION = "trident.source.partition"
SOURCE_OFFSET = "trident.source.offset"
ERROR = "trident.error"
#: The checkpoint directory of the stream that wrote the dead letter: two topologies reading the
#: same topic into one dead-letter topic each write their own.
CHECKPOINT = "trident.checkpoint"

#: On a dead letter cut to fit the size limit: the parts cut and their original sizes in bytes,
#: as JSON text, e.g. ``{"value": 1500000}``.
TRUNCATED = "trident.truncated"

#: Dead-letter records read back per step of the scan from the partition's end.
SCAN_CHUNK = 1_000

#: librdkafka's default ``message.max.bytes``: the largest record a producer sends.
DEFAULT_MAX_MESSAGE_BYTES = 1_000_000
#: Bytes kept below the limit for what a record costs beyond its key, value and headers.
RECORD_OVERHEAD = 1024
#: Bytes of key and value kept in the last form of a dead letter the broker refused for its size.
MIN_KEPT_BYTES = 1024

#: The longest value of the TRUNCATED header (room kept for it).
_LONGEST_CUT = b'{"headers": 1000000000, "key": 1000000000, "value": 1000000000}'

# Dead letters skipped by this process (too large in every form), for tests and logs.
_skipped = 0
_skipped_lock = threading.Lock()


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
        return [*self.headers, *self.spout_headers(checkpoint)]

    def spout_headers(self, checkpoint: str) -> list[tuple[str, bytes | None]]:
        """The headers the spout adds: where the record came from, why it was refused, who wrote it."""
        return [(SOURCE_TOPIC, self.topic.encode()),
                (SOURCE_PARTITION, str(self.partition).encode()),
                (SOURCE_OFFSET, str(self.offset).encode()),
                (ERROR, self.error[:4096].encode()),
                (CHECKPOINT, checkpoint.encode())]

    @property
    def where(self) -> str:
        """``topic[partition]@offset`` of the source record, for messages."""
        return f"{self.topic}[{self.partition}]@{self.offset}"


@dataclass(frozen=True)
class _Form:
    """A dead letter as sent: key, value and headers (cut to fit, or as read)."""

    letter: DeadLetter
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    last: bool  # no smaller form is tried after this one


def fitted(letter: DeadLetter, checkpoint: str, limit: int) -> _Form:
    """``letter`` as first sent: as read when it fits ``limit`` bytes, else cut to fit (its value,
    then its key, then its own headers), with the :data:`TRUNCATED` header.

    Examples
    --------
    >>> big = DeadLetter("clicks", 0, 9, b"k", b"x" * 5000, None, [], "value is not JSON")
    >>> form = fitted(big, "/ckpt", 3000)
    >>> len(form.value) < 3000, dict(form.headers)[TRUNCATED]
    (True, b'{"value": 5000}')
    >>> fitted(big, "/ckpt", 10_000).value == big.value
    True
    """
    ours = letter.spout_headers(checkpoint)
    budget = limit - RECORD_OVERHEAD - _headers_size(ours)  # for the record's key, value and headers
    key, value, own = letter.key or b"", letter.value or b"", list(letter.headers)
    if len(key) + len(value) + _headers_size(own) <= budget:
        return _Form(letter, letter.key, letter.value, [*own, *ours], last=False)
    room = budget - _headers_size([(TRUNCATED, _LONGEST_CUT)])
    cut: dict[str, int] = {}
    if _headers_size(own) > room // 4:  # a record's own headers may take a quarter of the room
        cut["headers"] = _headers_bytes(own)
        own = []
    room -= _headers_size(own)
    if len(key) > room // 4:
        cut["key"] = len(key)
        key = key[:max(0, room // 4)]
    if len(value) > room - len(key):
        cut["value"] = len(value)
        value = value[:max(0, room - len(key))]
    headers = [*own, *ours, (TRUNCATED, json.dumps(cut).encode())]
    return _Form(letter, None if letter.key is None else key, None if letter.value is None else value,
                 headers, last=False)


def smallest(letter: DeadLetter, checkpoint: str) -> _Form:
    """``letter``'s last form: the first :data:`MIN_KEPT_BYTES` of key and value, the spout's headers."""
    key, value = letter.key, letter.value
    cut = {name: len(part) for name, part in (("key", key), ("value", value))
           if part is not None and len(part) > MIN_KEPT_BYTES}
    if letter.headers:
        cut["headers"] = _headers_bytes(letter.headers)
    headers = [*letter.spout_headers(checkpoint), (TRUNCATED, json.dumps(cut).encode())]
    return _Form(letter, None if key is None else key[:MIN_KEPT_BYTES],
                 None if value is None else value[:MIN_KEPT_BYTES], headers, last=True)


def _headers_bytes(headers: Sequence[tuple[str, bytes | None]]) -> int:
    """The bytes of the headers' names and values (what :data:`TRUNCATED` reports)."""
    return sum(len(name.encode()) + len(value or b"") for name, value in headers)


def _headers_size(headers: Sequence[tuple[str, bytes | None]]) -> int:
    """What the headers cost in a record, at most (their bytes and their lengths' varints)."""
    return _headers_bytes(headers) + 8 * len(headers)


def skipped_dead_letters() -> int:
    """How many dead letters this process skipped because no form of them could be sent."""
    with _skipped_lock:
        return _skipped


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
                      consumer: Any, run: KafkaRun | None = None) -> int:
    """Write the dead letters of range ``r`` not written by an earlier attempt; return how many
    were written (those skipped for their size, logged and counted, are not). ``consumer``
    (unassigned on return) reads the dead-letter topic back; ``run``'s checkpoint directory
    names the writer (the stream) in each letter's headers.

    Raises ``UnknownTopicError`` when the dead-letter topic does not exist, and
    ``BrokerUnavailableError`` when the broker does not take the records (but for their size:
    those are cut, or skipped): the task fails, and the batch is replayed.
    """
    from confluent_kafka import TopicPartition

    topic = config.dead_letter_topic
    assert topic is not None
    checkpoint = (run.checkpoint if run is not None else None) or ""
    target = TopicPartition(topic, dead_letter_partition(r.topic, r.partition, _partitions(config, consumer)))
    try:
        written = _written(config, consumer, target, checkpoint, r)
    finally:
        consumer.unassign()
    todo = [letter for letter in letters if letter.offset not in written]
    skipped = _produce(config, target, todo, checkpoint, r) if todo else 0
    if len(todo) < len(letters):
        log.info("KafkaSpout: %d dead letters of %s[%d] [%d, %d) were written by an earlier attempt",
                 len(letters) - len(todo), r.topic, r.partition, r.start, r.until)
    return len(todo) - skipped


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
    return {k: v for k, v in options.items() if k.startswith(_SHARED_PREFIXES) or k == "message.max.bytes"}


def record_limit(config: KafkaSpoutConfig) -> int:
    """The largest record the dead-letter producer sends (its ``message.max.bytes``)."""
    try:
        return int(config.kafka_options.get("message.max.bytes", DEFAULT_MAX_MESSAGE_BYTES))
    except (TypeError, ValueError):
        return DEFAULT_MAX_MESSAGE_BYTES


def _produce(config: KafkaSpoutConfig, target: Any, letters: Sequence[DeadLetter], checkpoint: str,
             r: OffsetRange) -> int:
    """Send ``letters`` (each cut to fit the limit); those refused for their size are sent again in
    their smallest form, then skipped; returns how many were skipped. Any other failure raises
    ``BrokerUnavailableError``."""
    limit = record_limit(config)
    forms = [fitted(letter, checkpoint, limit) for letter in letters]
    skipped = 0
    while forms:
        too_large = _send(config, target, forms, r)
        forms = []
        for form in too_large:
            if form.last:
                _skip(form.letter, target.topic, limit)
                skipped += 1
            else:
                forms.append(smallest(form.letter, checkpoint))
    return skipped


def _send(config: KafkaSpoutConfig, target: Any, forms: Sequence[_Form], r: OffsetRange) -> list[_Form]:
    """Send ``forms``; return those refused for their size (by librdkafka or the broker)."""
    from confluent_kafka import KafkaError, KafkaException

    size_codes = {KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE}
    producer = _producer(config)
    too_large: list[_Form] = []
    failures: list[tuple[_Form, str]] = []

    def delivered(form: _Form) -> Any:
        def report(err: Any, _msg: Any) -> None:
            if err is None:
                return
            if err.code() in size_codes:
                too_large.append(form)
            else:
                failures.append((form, str(err.str())))
        return report

    for form in forms:
        letter = form.letter
        extra = {"timestamp": letter.timestamp_ms} if letter.timestamp_ms and letter.timestamp_ms > 0 else {}
        try:
            producer.produce(target.topic, value=form.value, key=form.key, partition=target.partition,
                             headers=form.headers, on_delivery=delivered(form), **extra)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if error is not None and hasattr(error, "code") and error.code() in size_codes:
                too_large.append(form)
                continue
            reason = error.str() if error is not None and hasattr(error, "str") else exc
            failures.append((form, str(reason)))
        except BufferError as exc:  # the local queue is full: wait for room, then once more
            producer.flush(config.timeout_s)
            try:
                producer.produce(target.topic, value=form.value, key=form.key, partition=target.partition,
                                 headers=form.headers, on_delivery=delivered(form), **extra)
            except (BufferError, KafkaException):
                failures.append((form, f"the producer's queue stayed full ({exc})"))
        producer.poll(0)
    left = producer.flush(config.timeout_s)
    if left or failures:
        if failures:
            form, reason = failures[0]
            first = f"{form.letter.where}: {reason}"
        else:
            first = f"{left} not acknowledged within {config.timeout_s:g} s"
        raise BrokerUnavailableError(
            f"KafkaSpout: {len(failures) or left} of {len(forms)} dead letters of {r.topic}[{r.partition}] "
            f"[{r.start}, {r.until}) for the dead-letter topic {target.topic}[{target.partition}] on "
            f"{config.address} were not written ({first}); the batch is replayed and writes the missing ones")
    return too_large


def _skip(letter: DeadLetter, topic: str, limit: int) -> None:
    global _skipped
    with _skipped_lock:
        _skipped += 1
    log.warning("KafkaSpout: the dead letter of %s (%d bytes of value, error: %s) was skipped: the "
                "dead-letter topic %s refused it for its size even cut to %d bytes of key and value "
                "(the producer's limit: %d bytes); the stream goes on without it", letter.where,
                len(letter.value or b""), letter.error[:200], topic, MIN_KEPT_BYTES, limit)


__all__ = ["CHECKPOINT", "ERROR", "SOURCE_OFFSET", "SOURCE_PARTITION", "SOURCE_TOPIC", "TRUNCATED",
           "DeadLetter", "dead_letter_partition", "fitted", "record_limit", "send_dead_letters",
           "skipped_dead_letters", "smallest", "source_of"]
