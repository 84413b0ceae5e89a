"""The data source of a spout of your own, called as Spark calls it but without Spark: a new batch's
rows travel in its input partitions; a replay in a fresh process emits again from the logged offsets."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from trident_spark.errors import SpoutError
from trident_spark.object_values import decode_value
from trident_spark.spout import IPartitionedTridentSpout
from trident_spark.spout.user.source import UserSpoutStreamReader, pickle_spout, write_spout

ROWS = {"a": [("x", 1), ("y", 2), ("z", 3)], "b": [("w", 4)]}


class Part:
    def __init__(self, pid: str) -> None:
        self.pid = pid

    def getId(self) -> str:
        return self.pid


class Lister(IPartitionedTridentSpout.Coordinator):
    def getPartitionsForBatch(self) -> list[str]:
        return sorted(ROWS)


class Emitter(IPartitionedTridentSpout.Emitter):
    def getOrderedPartitions(self, all_partition_info: list[str]) -> list[Part]:
        return [Part(pid) for pid in all_partition_info]

    def emitPartitionBatchNew(self, tx: Any, collector: Any, partition: Part,
                              last_partition_meta: Any) -> Any:
        start = last_partition_meta["end"] if last_partition_meta else 0
        meta = {"start": start, "end": min(start + 2, len(ROWS[partition.pid]))}
        self.emitPartitionBatch(tx, collector, partition, meta)
        return meta

    def emitPartitionBatch(self, tx: Any, collector: Any, partition: Part, partition_meta: Any) -> None:
        for word, n in ROWS[partition.pid][partition_meta["start"]:partition_meta["end"]]:
            collector.emit([word, n])


class Pairs(IPartitionedTridentSpout):
    def getCoordinator(self, conf: dict[str, Any], context: Any) -> Lister:
        return Lister()

    def getEmitter(self, conf: dict[str, Any], context: Any) -> Emitter:
        return Emitter()

    def getOutputFields(self) -> list[str]:
        return ["word", "n:bigint"]


SCHEMA = StructType([StructField("word", BinaryType()), StructField("n", LongType())])


def reader(tmp_path: Path, spout: Any) -> UserSpoutStreamReader:
    """A reader as the data source makes one in a fresh process (for the driver or for a task)."""
    options = {"spout_file": write_spout(pickle_spout(spout), str(tmp_path)),
               "spout_class": type(spout).__name__, "kind": "transactional", "stream": "pairs",
               "fields": json.dumps(["word", "n:bigint"]),
               "schema": "`word` binary, `n` bigint", "metadata_dir": str(tmp_path)}
    return UserSpoutStreamReader(options, SCHEMA)


def rows_read(task_reader: UserSpoutStreamReader, partitions: Any) -> list[tuple[str, int]]:
    """What the tasks read: each partition and the reader pickled as Spark ships them."""
    task = pickle.loads(pickle.dumps(task_reader))
    found = []
    for partition in pickle.loads(pickle.dumps(list(partitions))):
        for batch in task.read(partition):
            words, numbers = batch.column(0).to_pylist(), batch.column(1).to_pylist()
            found += [(decode_value(w), n) for w, n in zip(words, numbers, strict=True)]
    return found


def test_a_new_batch_travels_as_rows_and_a_replay_is_emitted_again_from_the_log(tmp_path: Path):
    driver = reader(tmp_path, Pairs())
    start = driver.initialOffset()
    end = driver.latestOffset(start, ReadAllAvailable())
    logged = json.loads(json.dumps(end))               # as Spark's offset log gives it back
    assert logged == {"batch": 1, "partitions": {"a": {"start": 0, "end": 2}, "b": {"start": 0, "end": 1}}}
    first = driver.partitions(start, logged)
    assert all(p.rows is not None and p.spout is None for p in first)   # no emitter call in the tasks
    assert rows_read(driver, first) == [("x", 1), ("y", 2), ("w", 4)]
    assert (tmp_path / "spout.pickle").stat().st_mode & 0o077 == 0     # the pickled spout: owner only

    restarted = reader(tmp_path, Pairs())               # a new process after a restart: nothing kept
    again = restarted.partitions(start, logged)
    assert all(p.rows is None and p.spout is not None for p in again)
    assert rows_read(restarted, again) == [("x", 1), ("y", 2), ("w", 4)]
    after = restarted.latestOffset(logged, ReadAllAvailable())
    assert after == {"batch": 2, "partitions": {"a": {"start": 2, "end": 3}, "b": {"start": 1, "end": 1}}}


def test_a_value_that_does_not_fit_its_declared_type_fails_on_the_driver(tmp_path: Path):
    driver = reader(tmp_path, Pairs())
    driver.field_specs = ["word", "n:boolean"]          # the spout says bigint; the stream, boolean
    start = driver.initialOffset()
    end = driver.latestOffset(start, ReadAllAvailable())
    with pytest.raises(SpoutError, match=r"spout Pairs \(stream 'pairs'\), partition 'a', batch 0: tuple 0, "
                                         r"field 'n' \(declared boolean\): "):
        driver.partitions(start, end)


def test_no_new_tuple_is_no_new_offset(tmp_path: Path):
    driver = reader(tmp_path, Pairs())
    offset = driver.initialOffset()
    for _ in range(2):
        offset = driver.latestOffset(offset, ReadAllAvailable())
    assert driver.latestOffset(offset, ReadAllAvailable()) is offset
