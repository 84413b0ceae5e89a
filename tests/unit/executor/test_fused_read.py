"""executor/fused_read.py: a fused spout's partitions read in the stage's task."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark import cloudpickle

from trident_spark.executor.fused_read import SpoutReader, read_only, read_partitions, read_then
from trident_spark.executor.metrics import StageClock
from trident_spark.runtime.metrics import split_counters, spout_reads

SCHEMA = pa.schema([("word", pa.string()), ("n", pa.int64())])


class Reader:
    """Reads partition ``p`` as two batches; every third record undecodable."""

    def read(self, part: Any) -> Iterator[pa.RecordBatch]:
        for chunk in range(2):
            words = [f"{part}-{chunk}-{i}" for i in range(3)]
            yield pa.record_batch({"extra": [1, 2, 3], "word": words, "n": [1, 2, 3],
                                   "malformed": [None, None, "not JSON"]})
        yield pa.record_batch({"extra": pa.array([], pa.int64()), "word": pa.array([], pa.string()),
                               "n": pa.array([], pa.int64()), "malformed": pa.array([], pa.string())})


def _descriptors(*parts: str) -> Iterator[pa.RecordBatch]:
    return iter([pa.record_batch({"partition": [cloudpickle.dumps(p) for p in parts]})])


def test_the_records_come_as_the_fields_asked_for_without_the_malformed_ones():
    clock = StageClock()
    schema = pa.schema([("n", pa.int64()), ("word", pa.string())])
    out = list(read_partitions(Reader(), "words", ["n", "word"], schema, _descriptors("a", "b"), 4, clock))
    assert [b.schema.names for b in out] == [["n", "word"]] * 4
    assert [w for b in out for w in b.column("word").to_pylist()] == [
        "a-0-0", "a-0-1", "a-1-0", "a-1-1", "b-0-0", "b-0-1", "b-1-0", "b-1-1"]
    assert spout_reads(clock.counters) == (12, 4)  # records read, malformed ones among them
    _, stages = split_counters(clock.counters)
    assert [(s["name"], s["kind"], s["rows_out"], s["tasks"]) for s in stages] == [
        ("source", "source", 12, 1)]


def test_a_partition_counted_twice_counts_once():
    first, again = StageClock(), StageClock()
    list(read_partitions(Reader(), "words", ["word", "n"], SCHEMA, _descriptors("a"), 0, first))
    list(read_partitions(Reader(), "words", ["word", "n"], SCHEMA, _descriptors("a"), 0, again))
    summed = dict(first.counters)
    for key, value in again.counters.items():
        summed[key] = summed.get(key, 0) + value
    assert spout_reads(summed) == (6, 2)


def test_types_are_cast_to_the_stage_schema():
    clock = StageClock()
    wanted = pa.schema([("n", pa.int32())])
    out = list(read_partitions(Reader(), "words", ["n"], wanted, _descriptors("a"), 0, clock))
    assert all(b.schema == wanted for b in out)


class Accumulator:
    def __init__(self) -> None:
        self.added: list[dict[Any, float]] = []

    def add(self, counters: dict[Any, float]) -> None:
        self.added.append(counters)


def test_read_then_runs_the_stage_on_the_records_and_counts_the_read():
    metrics = Accumulator()
    spout = SpoutReader(Reader(), "words", ["word"], pa.schema([("word", pa.string())]))

    def stage(m: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        assert m is metrics
        for batch in batches:
            yield pa.record_batch({"upper": [w.upper() for w in batch.column(0).to_pylist()]})

    out = list(read_then(spout, stage, metrics, _descriptors("a")))
    assert [w for b in out for w in b.column(0).to_pylist()] == ["A-0-0", "A-0-1", "A-1-0", "A-1-1"]
    assert len(metrics.added) == 1 and spout_reads(metrics.added[0]) == (6, 2)


def test_read_only_gives_the_records():
    metrics = Accumulator()
    spout = SpoutReader(Reader(), "words", ["word"], pa.schema([("word", pa.string())]))
    assert sum(b.num_rows for b in read_only(spout, metrics, _descriptors("a", "b"))) == 8
    assert spout_reads(metrics.added[0]) == (12, 4)
