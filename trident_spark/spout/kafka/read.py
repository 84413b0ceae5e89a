"""Executor-side reading: one offset range of one Kafka partition, as Arrow record batches.

Runs inside Spark's Python workers. Consumers are cached per worker process
(keyed by their settings) because creating one costs a broker round trip; the
cache stays correct when a partition moves to another executor because every
read assigns its partition at an explicit offset and never relies on a
position left by an earlier task.

Speed notes (measured in bench/spout.py, see docs/benchmarks.md):

* a task knows its records exist, so it never long-polls the broker: a fetch
  parked at the log end (librdkafka waits up to 500 ms by default) would hold
  the connection, and the next task's fetch on this consumer behind it;
* read-ahead is small: what is fetched past the range's end is thrown away;
* messages are consumed a few thousand at a time and copied out into columns
  at once, with Python's cyclic garbage collector paused meanwhile: consume()
  makes one tracked object per message, and collections walking them took
  about a third of the CPU time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from trident_spark.errors import (
    BrokerUnavailableError,
    DataLossError,
    MalformedRecordError,
    SchemaRegistryError,
)
from trident_spark.spout.formats.decode import decode_column
from trident_spark.spout.formats.schema_registry import forget_misses
from trident_spark.spout.formats.value_decoders import avro_decoder, protobuf_decoder
from trident_spark.spout.kafka.config import READ_MS_COLUMN, KafkaSpoutConfig
from trident_spark.spout.kafka.dead_letters import DeadLetter, send_dead_letters
from trident_spark.spout.kafka.offsets import OffsetRange
from trident_spark.spout.kafka.pool import borrowed_consumer
from trident_spark.spout.kafka.run import KafkaRun
from trident_spark.worker_gc import gc_paused, settle_imports

log = logging.getLogger(__name__)

# librdkafka settings for range reads, unless the user's kafka_options set them.
# fetch.wait.max.ms: the records of a range exist, so waiting at the log end for
# more (librdkafka's default: 500 ms) only delays the next task on this consumer,
# whose fetch queues behind the parked one.
# queued.min.messages: librdkafka fetches ahead while fewer messages than this are
# queued (default 100k); a range read needs little read-ahead, and what is fetched
# past the range's end is thrown away.
READ_DEFAULTS: dict[str, Any] = {"fetch.wait.max.ms": 10, "queued.min.messages": 10_000}

# Messages per consume() call: small answers are cheaper per message than big ones.
CONSUME_CHUNK = 5_000


def read_conf(config: KafkaSpoutConfig) -> dict[str, Any]:
    """librdkafka settings of the executors' consumers (one pooled consumer per distinct value)."""
    return config.consumer_conf(**{k: v for k, v in READ_DEFAULTS.items() if k not in config.kafka_options})


def read_range(config: KafkaSpoutConfig, schema: pa.Schema, r: OffsetRange, run: KafkaRun | None = None
               ) -> Iterator[pa.RecordBatch]:
    """Yield records ``[r.start, r.until)`` of ``r.topic[r.partition]`` in ``schema``, as the query's
    ``run`` reads them (its read-time column, outage budget and dead-letter writer).

    Guarantee relied on by replay: the same range always yields the same records,
    because Kafka offsets are immutable (records may only disappear through
    retention, which ``fail_on_data_loss`` turns into an error).
    """
    settle_imports()
    if r.until <= r.start:
        return
    if config.schema_registry_url is not None:
        forget_misses()  # ids the registry lacked are asked for again once per range
    with borrowed_consumer(read_conf(config)) as consumer:
        yield from _read(config, schema, r, consumer, run)


def _read(config: KafkaSpoutConfig, schema: pa.Schema, r: OffsetRange, consumer: Any,
          run: KafkaRun | None = None) -> Iterator[pa.RecordBatch]:
    from confluent_kafka import TopicPartition

    run = run if run is not None else KafkaRun()
    consumer.assign([TopicPartition(r.topic, r.partition, r.start)])
    position = r.start
    letters: list[DeadLetter] = []
    try:
        while position < r.until:
            started = time.perf_counter()
            columns = _Columns(config.include_headers or config.on_malformed == "dead_letter")
            with gc_paused():
                position = _fill(config, consumer, r, position, columns)
                batch = columns.record_batch(config, schema, r, letters, run) if columns.rows else None
            if batch is not None:
                yield with_read_time(batch, run, (time.perf_counter() - started) * 1000)
        if letters:  # the range read whole: its dead letters, once (spout/kafka/dead_letters.py)
            consumer.unassign()
            send_dead_letters(config, r, letters, consumer, run)
    finally:
        consumer.unassign()


def with_read_time(batch: pa.RecordBatch, run: KafkaRun, ms: float) -> pa.RecordBatch:
    """Set the read-time column (when the run asked for it): ``ms`` on the first row."""
    if not run.read_metrics:
        return batch
    index = batch.schema.get_field_index(READ_MS_COLUMN)
    values = pa.array([ms] + [None] * (batch.num_rows - 1), pa.float64())
    return batch.set_column(index, READ_MS_COLUMN, values)


def _fill(config: KafkaSpoutConfig, consumer: Any, r: OffsetRange, position: int, columns: _Columns) -> int:
    """Consume from ``position`` into ``columns`` up to one Arrow batch or the range's end.

    Returns the new position (the offset after the last record taken, or the range's
    end when it ends in non-record offsets).
    """
    idle_since = time.monotonic()
    while position < r.until and columns.rows < config.arrow_batch_rows:
        msgs = consumer.consume(num_messages=min(CONSUME_CHUNK, r.until - position), timeout=0.5)
        # events: partition end, errors (``is``: a KafkaError cannot be compared with None by ==)
        if any(m.error() is not None for m in msgs):
            position = _handle_events(config, consumer, r, position, msgs)
            msgs = [m for m in msgs if m.error() is None]
        if msgs:
            idle_since = time.monotonic()
            if msgs[-1].offset() >= r.until:
                msgs = [m for m in msgs if m.offset() < r.until]
            if msgs:
                columns.add(msgs)
                position = msgs[-1].offset() + 1
        elif (end := _log_end_before(consumer, r, position, config.timeout_s)) is not None:
            return _past_the_end(config, r, position, end)
        elif time.monotonic() - idle_since > config.timeout_s:
            raise BrokerUnavailableError(
                f"KafkaSpout: no records from {r.topic}[{r.partition}] at offset {position} for "
                f"{config.timeout_s:g} s while reading [{r.start}, {r.until}) from "
                f"{config.address}. Check that the broker is up."
            )
    return position


def _log_end_before(consumer: Any, r: OffsetRange, position: int, timeout: float) -> int | None:
    """The partition's log end when it lies before ``position`` (else None).

    Some brokers answer a fetch past the log's end with no records and no error; the last
    fetch answer's high watermark shows it. That cached value may also be older than this
    assignment (a pooled consumer read the partition before, and no fetch has answered since:
    a slow or paused broker), so the broker is asked before it counts; a broker that does
    not answer is no sign of lost records.
    """
    from confluent_kafka import KafkaException, TopicPartition

    tp = TopicPartition(r.topic, r.partition)
    _, high = consumer.get_watermark_offsets(tp, cached=True)
    if not 0 <= high < position:
        return None
    try:
        _, high = consumer.get_watermark_offsets(tp, timeout=timeout)
    except KafkaException:
        return None
    return int(high) if 0 <= high < position else None


def _past_the_end(config: KafkaSpoutConfig, r: OffsetRange, position: int, end: int) -> int:
    """The partition's log now ends at ``end``, before ``position``: fail, or skip the rest of the range.

    The batch was planned when the log held its records, so they were removed since:
    the topic was deleted and re-created, or the log truncated (a broker that lost data).
    """
    if config.fail_on_data_loss:
        raise DataLossError(
            f"KafkaSpout: {r.topic}[{r.partition}] on {config.address} now ends before offset {position}, "
            f"which the batch reads ([{r.start}, {r.until})): its log ends at offset {end} (high watermark), "
            f"so records the batch was planned with are gone (the topic deleted and re-created, or its log "
            f"truncated). Set fail_on_data_loss=False to skip such ranges."
        )
    log.warning("KafkaSpout: skipped [%d, %d) of %s[%d]: the partition now ends at %d, before it",
                position, r.until, r.topic, r.partition, end)
    return r.until


def _handle_events(config: KafkaSpoutConfig, consumer: Any, r: OffsetRange, position: int,
                   msgs: Sequence[Any]) -> int:
    """Act on error events in a consume() answer; return the new read position."""
    from confluent_kafka import KafkaError, TopicPartition

    for msg in msgs:
        err = msg.error()
        if err is None:
            continue
        code = err.code()
        if code == KafkaError._PARTITION_EOF:
            if msg.offset() >= r.until:
                return r.until  # the range ends in markers (transactions, compaction)
            continue
        if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
            low, high = consumer.get_watermark_offsets(TopicPartition(r.topic, r.partition),
                                                       timeout=config.timeout_s)
            if 0 <= high <= position:  # not deleted from the head: the log ends before ``position``
                return _past_the_end(config, r, position, high)
            if low <= position:  # within the log after all (answers raced): fetch again
                consumer.assign([TopicPartition(r.topic, r.partition, position)])
                return position
            if config.fail_on_data_loss:
                raise DataLossError(
                    f"KafkaSpout: offsets [{position}, {low}) of {r.topic}[{r.partition}] no longer "
                    f"exist on {config.address} (retention or deletion); the batch needs "
                    f"[{r.start}, {r.until}). Set fail_on_data_loss=False to skip them."
                )
            resume = min(low, r.until)
            log.warning("KafkaSpout: skipped %d lost records of %s[%d] at [%d, %d)",
                        resume - position, r.topic, r.partition, position, resume)
            consumer.assign([TopicPartition(r.topic, r.partition, resume)])
            return int(resume)
        if err.fatal() or not err.retriable():
            raise BrokerUnavailableError(
                f"KafkaSpout: reading {r.topic}[{r.partition}] at offset {position} from "
                f"{config.address} failed: {err.str()}"
            )
    return position


def to_record_batch(config: KafkaSpoutConfig, schema: pa.Schema, r: OffsetRange,
                    msgs: Sequence[Any], letters: list[DeadLetter] | None = None,
                    run: KafkaRun | None = None) -> pa.RecordBatch:
    """Turn consumed messages into one Arrow record batch in the spout's schema (with
    ``on_malformed="dead_letter"``, the malformed ones are added to ``letters``), as ``run``
    reads them (no run: no read-time column, no outage budget)."""
    columns = _Columns(config.include_headers or config.on_malformed == "dead_letter")
    columns.add(msgs)
    return columns.record_batch(config, schema, r, [] if letters is None else letters,
                                run if run is not None else KafkaRun())


def _decode(config: KafkaSpoutConfig, run: KafkaRun, part: str, raw: list[bytes | None],
            arrow_type: pa.DataType, errors: list[str | None]) -> pa.Array:
    """The record keys or values ``raw`` decoded as the spout's ``key_format`` or ``value_format``.

    Records are untrusted: whatever a decoder raises for the column (but a registry that does not
    answer) is tried again record by record, and each record that raises becomes one malformed
    record with the reason; the stream never fails for a record's content unless
    ``on_malformed="fail"``.
    """
    try:
        return _decode_with(config, run, part, raw, arrow_type, errors)
    except SchemaRegistryError:
        raise
    except Exception:  # a decoder's error no record was blamed for: find which records raise
        pass
    values: list[pa.Array] = []
    for i, item in enumerate(raw):
        one: list[str | None] = [errors[i]]
        try:
            values.append(_decode_with(config, run, part, [item], arrow_type, one))
            errors[i] = one[0]
        except SchemaRegistryError:
            raise
        except Exception as exc:
            values.append(pa.nulls(1, arrow_type))
            errors[i] = errors[i] or f"{part} cannot be decoded ({type(exc).__name__}: {str(exc)[:300]})"
    return pa.concat_arrays(values) if values else pa.nulls(0, arrow_type)


def _decode_with(config: KafkaSpoutConfig, run: KafkaRun, part: str, raw: list[bytes | None],
                 arrow_type: pa.DataType, errors: list[str | None]) -> pa.Array:
    kind, schema = getattr(config, f"{part}_format"), getattr(config, f"{part}_schema")
    if kind in ("avro", "protobuf"):
        assert schema is not None
        decoder = avro_decoder if kind == "avro" else protobuf_decoder
        found = decoder(schema, config.schema_registry_url, config.timeout_s, part, run.outage_budget_s,
                        config.decode_timeout_s)
        return found.decode(raw, arrow_type, errors)
    return decode_column(raw, arrow_type, "key" if part == "key" else kind, errors, config.decode_timeout_s)


class _Columns:
    """The columns of consumed messages, gathered one consume() answer at a time.

    Messages are dropped as soon as their fields are copied out: holding tens of
    thousands of Message objects alive makes consume() itself about twice as slow.
    """

    def __init__(self, include_headers: bool) -> None:
        self.include_headers = include_headers
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.millis: list[np.ndarray[Any, Any]] = []
        self.offsets: list[np.ndarray[Any, Any]] = []
        self.headers: list[list[dict[str, Any]]] = []
        self.rows = 0

    def add(self, msgs: Sequence[Any]) -> None:
        n = len(msgs)
        self.keys += [m.key() for m in msgs]
        self.values += [m.value() for m in msgs]
        self.millis.append(np.array([m.timestamp()[1] for m in msgs], np.int64))
        first, last = msgs[0].offset(), msgs[-1].offset()
        if last - first == n - 1:  # offsets only grow: n of them over n slots means no gap
            self.offsets.append(np.arange(first, last + 1, dtype=np.int64))
        else:  # gaps: compaction or transaction markers
            self.offsets.append(np.array([m.offset() for m in msgs], np.int64))
        if self.include_headers:
            self.headers += [[{"key": k, "value": v} for k, v in (m.headers() or [])] for m in msgs]
        self.rows += n

    def record_batch(self, config: KafkaSpoutConfig, schema: pa.Schema, r: OffsetRange,
                     letters: list[DeadLetter], run: KafkaRun) -> pa.RecordBatch:
        """The gathered records as one Arrow batch; with ``on_malformed="dead_letter"`` the records
        that cannot be decoded are appended to ``letters`` (and kept in the batch, marked malformed)."""
        n = self.rows
        offsets = pa.array(np.concatenate(self.offsets))
        millis = np.concatenate(self.millis)
        missing = millis < 0  # no timestamp
        timestamps = pa.array(millis, pa.timestamp("ms", tz="UTC"), mask=missing if missing.any() else None)
        errors: list[str | None] = [None] * n
        key = _decode(config, run, "key", self.keys, schema.field("key").type, errors)
        value = _decode(config, run, "value", self.values, schema.field("value").type, errors)
        columns: dict[str, pa.Array] = {
            "key": key,
            "value": value,
            "topic": pa.repeat(pa.scalar(r.topic, pa.string()), n),
            "partition": pa.repeat(pa.scalar(r.partition, pa.int32()), n),
            "offset": offsets,
            "timestamp": timestamps.cast(schema.field("timestamp").type),
        }
        if config.include_headers:
            columns["headers"] = pa.array(self.headers, schema.field("headers").type)
        clean = errors.count(None) == n
        if config.on_malformed == "fail":
            if not clean:
                bad = next(i for i, e in enumerate(errors) if e is not None)
                raise MalformedRecordError(
                    f"KafkaSpout: record {r.topic}[{r.partition}]@{offsets[bad].as_py()} cannot be read: "
                    f"{errors[bad]}. Fix the producer, or set on_malformed='skip' to count and drop "
                    "such records, or on_malformed='dead_letter' to send them to a dead-letter topic."
                )
        else:
            if not clean and config.on_malformed == "dead_letter":
                letters.extend(self._dead_letters(r, offsets, millis, errors))
            columns["malformed"] = pa.nulls(n, pa.string()) if clean else pa.array(errors, pa.string())
        if run.read_metrics:
            columns[READ_MS_COLUMN] = pa.nulls(n, pa.float64())  # filled in by with_read_time
        return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)

    def _dead_letters(self, r: OffsetRange, offsets: pa.Array, millis: np.ndarray[Any, Any],
                      errors: list[str | None]) -> list[DeadLetter]:
        out = []
        for i, error in enumerate(errors):
            if error is not None:
                headers = [(h["key"], h["value"]) for h in self.headers[i]]
                out.append(DeadLetter(r.topic, r.partition, offsets[i].as_py(), self.keys[i], self.values[i],
                                      int(millis[i]) if millis[i] >= 0 else None, headers, error))
        return out
