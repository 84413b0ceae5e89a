"""Executor-side reading: one offset range of one Kafka partition, as Arrow record batches.

Runs inside Spark's Python workers. Consumers are cached per worker process
(keyed by their settings) because creating one costs a broker round trip; the
cache stays correct when a partition moves to another executor because every
read assigns its partition at an explicit offset and never relies on a
position left by an earlier task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from trident_spark.errors import BrokerUnavailableError, DataLossError, MalformedRecordError
from trident_spark.spout.kafka_config import KafkaSpoutConfig
from trident_spark.spout.kafka_decode import decode_column
from trident_spark.spout.kafka_offsets import OffsetRange
from trident_spark.spout.kafka_pool import borrowed_consumer

log = logging.getLogger(__name__)


def read_range(config: KafkaSpoutConfig, schema: pa.Schema, r: OffsetRange) -> Iterator[pa.RecordBatch]:
    """Yield records ``[r.start, r.until)`` of ``r.topic[r.partition]`` in ``schema``.

    Guarantee relied on by replay: the same range always yields the same records,
    because Kafka offsets are immutable (records may only disappear through
    retention, which ``fail_on_data_loss`` turns into an error).
    """
    conf = config.consumer_conf(**{"queued.min.messages": min(config.arrow_batch_rows, 100_000)})
    with borrowed_consumer(conf) as consumer:
        yield from _read(config, schema, r, consumer)


def _read(config: KafkaSpoutConfig, schema: pa.Schema, r: OffsetRange, consumer: Any
          ) -> Iterator[pa.RecordBatch]:
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(r.topic, r.partition, r.start)])
    position = r.start
    pending: list[Any] = []
    idle_since = time.monotonic()
    try:
        while position < r.until:
            msgs = consumer.consume(num_messages=min(config.arrow_batch_rows, r.until - position),
                                    timeout=0.5)
            records = [m for m in msgs if m.error() is None]
            if len(records) != len(msgs):
                position = _handle_events(config, consumer, r, position, msgs)
            if records:
                idle_since = time.monotonic()
                if records[-1].offset() >= r.until:
                    records = [m for m in records if m.offset() < r.until]
                if records:
                    pending.extend(records)
                    position = records[-1].offset() + 1
                if len(pending) >= config.arrow_batch_rows:
                    yield to_record_batch(config, schema, r, pending)
                    pending = []
            elif time.monotonic() - idle_since > config.timeout_s:
                raise BrokerUnavailableError(
                    f"KafkaSpout: no records from {r.topic}[{r.partition}] at offset {position} for "
                    f"{config.timeout_s:g} s while reading [{r.start}, {r.until}) from "
                    f"{config.address}. Check that the broker is up."
                )
        if pending:
            yield to_record_batch(config, schema, r, pending)
    finally:
        consumer.unassign()


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
            low, _ = consumer.get_watermark_offsets(TopicPartition(r.topic, r.partition),
                                                    timeout=config.timeout_s)
            if config.fail_on_data_loss or low <= position:
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
                    msgs: Sequence[Any]) -> pa.RecordBatch:
    """Turn consumed messages into one Arrow record batch in the spout's schema."""
    n = len(msgs)
    first, last = msgs[0].offset(), msgs[-1].offset()
    offsets = (pa.array(range(first, last + 1), pa.int64()) if last - first == n - 1
               else pa.array([m.offset() for m in msgs], pa.int64()))
    timestamps = pa.array([m.timestamp()[1] for m in msgs], pa.int64())
    timestamps = pc.if_else(pc.less(timestamps, 0), None, timestamps)
    errors: list[str | None] = [None] * n
    key = decode_column([m.key() for m in msgs], schema.field("key").type, "key", errors, offsets)
    value = decode_column([m.value() for m in msgs], schema.field("value").type, config.value_format,
                          errors, offsets)
    columns: dict[str, pa.Array] = {
        "key": key,
        "value": value,
        "topic": pa.array([r.topic] * n, pa.string()),
        "partition": pa.array([r.partition] * n, pa.int32()),
        "offset": offsets,
        "timestamp": timestamps.cast(pa.timestamp("ms", tz="UTC")).cast(schema.field("timestamp").type),
    }
    if config.include_headers:
        columns["headers"] = pa.array(
            [[{"key": k, "value": v} for k, v in (m.headers() or [])] for m in msgs],
            schema.field("headers").type,
        )
    if config.on_malformed == "fail":
        bad = next((i for i, e in enumerate(errors) if e is not None), None)
        if bad is not None:
            raise MalformedRecordError(
                f"KafkaSpout: record {r.topic}[{r.partition}]@{offsets[bad].as_py()} cannot be read: "
                f"{errors[bad]}. Fix the producer, or set on_malformed='skip' to count and drop "
                "such records."
            )
    else:
        columns["malformed"] = pa.array(errors, pa.string())
    return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)
