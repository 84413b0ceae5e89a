"""Executor side of a fused spout: read a batch's partitions inside the first Python stage.

The stage's input is the spout's partitions (``spout.deferred_read``: one row each, the
partition pickled); :func:`read_partitions` turns them into the spout's records, read by the
spout's own reader in this task, as the Arrow batches the stage's operations take. Records
the spout could not decode are counted and dropped here (the runtime does it in Spark when
the spout is read alone); the read's time and rows are counted as the batch's ``source``
stage, apart from the operations' time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from trident_spark.executor.metrics import StageClock
from trident_spark.spout.base import MALFORMED_COLUMN

#: Counter keys ``(SPOUT_READ, stream, partition, metric, value)``: one partition's rows read
#: and malformed records. The value is in the key so that a partition counted twice (a stage
#: Spark computed again) counts once: see :func:`trident_spark.runtime.metrics.spout_reads`.
SPOUT_READ = "spout_read"


def read_partitions(reader: Any, stream: str, fields: Sequence[str], schema: pa.Schema,
                    descriptors: Iterator[pa.RecordBatch], partition: int,
                    clock: StageClock) -> Iterator[pa.RecordBatch]:
    """The records of the partitions in ``descriptors``, read with ``reader`` (the spout's
    inner stream reader), as Arrow batches of ``fields`` in ``schema``.

    Parameters
    ----------
    reader : DataSourceStreamReader
        The spout's reader (``DeferredRead.reader()``), as Spark would have run it.
    stream : str
        The stream the spout starts (names its counters).
    fields : sequence of str
        The columns to keep, in order (the stage's input).
    schema : pyarrow.Schema
        Their Arrow types (the spout DataFrame's).
    descriptors : iterator of pyarrow.RecordBatch
        The stage's input: one column, each value a pickled input partition.
    partition : int
        The Spark partition this task runs (for counting each partition once).
    clock : StageClock
        Where the read's time, rows and malformed records are counted.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from pyspark import cloudpickle
    >>> class Reader:
    ...     def read(self, part):
    ...         yield pa.record_batch({"word": ["a", "b"], "malformed": [None, "bad utf-8"]})
    >>> parts = iter([pa.record_batch({"partition": [cloudpickle.dumps("p0")]})])
    >>> clock = StageClock()
    >>> out = list(read_partitions(Reader(), "words", ["word"], pa.schema([("word", pa.string())]),
    ...                            parts, 0, clock))
    >>> out[0].to_pydict(), clock.counters[("spout_read", "words", "0.0", "malformed", 1)]
    ({'word': ['a']}, 1)
    """
    from pyspark import cloudpickle

    read_ms = 0.0
    rows = 0
    number = 0
    for descriptor in descriptors:
        for blob in descriptor.column(0).to_pylist():
            started = time.perf_counter()
            records = iter(reader.read(cloudpickle.loads(blob)))
            read, malformed = 0, 0
            while True:
                try:
                    batch = next(records)
                except StopIteration:
                    read_ms += (time.perf_counter() - started) * 1000
                    break
                read += batch.num_rows  # every record read counts, as Spark counts them unfused
                batch, bad = _decoded(batch, fields, schema)
                malformed += bad
                read_ms += (time.perf_counter() - started) * 1000
                if batch.num_rows:
                    yield batch
                started = time.perf_counter()
            key = (SPOUT_READ, stream, f"{partition}.{number}")
            clock.counters[(*key, "rows", read)] = 1
            if malformed:
                clock.counters[(*key, "malformed", malformed)] = 1
            rows += read
            number += 1
    clock.add("source", "source", ms=read_ms, rows_out=rows)


@dataclass(frozen=True)
class SpoutReader:
    """What a task needs to read a fused spout's partitions (pickled into the stage).

    Examples
    --------
    >>> import pyarrow as pa
    >>> SpoutReader(None, "words", ["word"], pa.schema([("word", pa.string())])).stream
    'words'
    """

    reader: Any
    stream: str
    columns: list[str]
    schema: pa.Schema

    def records(self, descriptors: Iterator[pa.RecordBatch], clock: StageClock) -> Iterator[pa.RecordBatch]:
        """The records of the partitions in ``descriptors`` (:func:`read_partitions`)."""
        from trident_spark.executor.python_stage import partition_index

        return read_partitions(self.reader, self.stream, self.columns, self.schema, descriptors,
                               partition_index(), clock)


def read_then(spout: SpoutReader, stage: Callable[[Any, Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
              metrics: Any, descriptors: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``stage(metrics, records)`` over the records read from ``descriptors``: the spout's read
    and the stream's first operations in one task. The read is counted as the ``source`` stage."""
    clock = StageClock()
    try:
        yield from stage(metrics, spout.records(descriptors, clock))
    finally:
        clock.send(metrics)


def read_only(spout: SpoutReader, metrics: Any,
              descriptors: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The records read from ``descriptors``: a spout read deferred whose first operation runs
    in Spark (not fused), or read by several."""
    clock = StageClock()
    try:
        yield from spout.records(descriptors, clock)
    finally:
        clock.send(metrics)


def _decoded(batch: pa.RecordBatch, fields: Sequence[str], schema: pa.Schema) -> tuple[pa.RecordBatch, int]:
    """``batch`` without the records the spout could not decode, as ``fields`` in ``schema``;
    and how many it dropped."""
    bad = 0
    if MALFORMED_COLUMN in batch.schema.names:
        good = pc.is_null(batch.column(MALFORMED_COLUMN))
        bad = batch.num_rows - pc.sum(good.cast(pa.int64())).as_py() if batch.num_rows else 0
        if bad:
            batch = batch.filter(good)
    columns = [batch.column(name) for name in fields]
    out = pa.RecordBatch.from_arrays(columns, names=list(fields))
    if not out.schema.equals(schema):
        out = out.cast(schema)
    return out, bad


__all__ = ["SPOUT_READ", "SpoutReader", "read_only", "read_partitions", "read_then"]
