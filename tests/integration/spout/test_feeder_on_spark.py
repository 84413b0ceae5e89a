"""FeederBatchSpout on a real local Spark: one feed() is one micro-batch, replays read the same rows."""

from __future__ import annotations

import datetime
import decimal
import shutil
from pathlib import Path
from typing import Any

import pytest

from trident_spark.spout import FeederBatchSpout
from trident_spark.spout.feeder_source import FeederDataSource, FeederStreamReader

pytestmark = pytest.mark.integration


def run_available_now(spark: Any, spout: FeederBatchSpout, checkpoint: Path,
                      transform: Any = None) -> list[tuple[int, list[tuple[Any, ...]]]]:
    """Run every fed batch not yet in ``checkpoint``; (batch_id, rows in order) per micro-batch."""
    seen: list[tuple[int, list[tuple[Any, ...]]]] = []

    def collect(df: Any, batch_id: int) -> None:
        out = transform(df) if transform else df
        seen.append((batch_id, [tuple(row) for row in out.collect()]))

    query = (spout.to_dataframe(spark).writeStream.foreachBatch(collect)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        assert query.awaitTermination(120), "the availableNow run did not finish in 120 s"
        assert query.exception() is None
    finally:
        query.stop()
    return seen


def test_each_feed_is_one_micro_batch_and_a_restart_goes_on_from_the_checkpoint(spark, tmp_path):
    spout = FeederBatchSpout(["word", "n:bigint"])
    fed = [[["the", 1], ["cat", 2], ["sat", 3]], [["on", 4]], [[f"w{i}", i] for i in range(6)]]
    for tuples in fed:
        spout.feed(tuples)

    first = run_available_now(spark, spout, tmp_path / "ckpt")

    assert first == [(i, [tuple(t) for t in tuples]) for i, tuples in enumerate(fed)]

    more = [[["mat", 10], ["hat", 11]], [["end", 12]]]
    for tuples in more:
        spout.feed(tuples)
    second = run_available_now(spark, spout, tmp_path / "ckpt")

    assert second == [(3, [("mat", 10), ("hat", 11)]), (4, [("end", 12)])]


def test_an_empty_feed_is_an_empty_micro_batch_of_its_own(spark, tmp_path):
    spout = FeederBatchSpout(["word"])
    spout.feed([["a"]])
    spout.feed([])
    spout.feed([["b"], ["c"]])

    assert run_available_now(spark, spout, tmp_path / "ckpt") == [
        (0, [("a",)]), (1, []), (2, [("b",), ("c",)])]


def test_a_batch_replayed_after_a_driver_crash_reads_the_same_rows(spark, tmp_path):
    """Spark logged batch 1's offsets but crashed before committing it: a new driver re-runs it."""
    directory = tmp_path / "batches"
    spout = FeederBatchSpout(["word", "n:bigint"], directory=str(directory))
    spout.feed([["a", 1], ["b", 2]])
    spout.feed([["c", 3], ["d", 4], ["e", 5]])
    checkpoint = tmp_path / "ckpt"
    assert run_available_now(spark, spout, checkpoint) == [
        (0, [("a", 1), ("b", 2)]), (1, [("c", 3), ("d", 4), ("e", 5)])]
    for name in ("1", ".1.crc"):  # the crash: batch 1 ran but was never committed
        (checkpoint / "commits" / name).unlink(missing_ok=True)

    restarted = FeederBatchSpout(["word", "n:bigint"], directory=str(directory))  # the new driver
    assert restarted.batches == 2
    restarted.feed([["f", 6]])

    assert run_available_now(spark, restarted, checkpoint) == [
        (1, [("c", 3), ("d", 4), ("e", 5)]), (2, [("f", 6)])]


def test_partitions_and_read_for_the_same_offsets_return_the_same_rows(spark):
    spout = FeederBatchSpout(["word", "n"], num_partitions=3)
    spout.feed([[f"w{i}", i] for i in range(5)])
    spout.feed([[f"v{i}", i * 1.5] for i in range(7)])  # n widens to double: batch 0's ints are cast
    schema = spout.to_dataframe(spark).schema
    reader = FeederDataSource({"directory": spout.directory, "num_partitions": "3",
                               "schema": spout.schema_ddl()}).streamReader(schema)
    assert isinstance(reader, FeederStreamReader)

    def read_all(start: int, end: int) -> list[list[dict[str, Any]]]:
        parts = reader.partitions({"batch": start}, {"batch": end})
        return [[row for b in reader.read(p) for row in b.to_pylist()] for p in parts]

    first, again = read_all(0, 1), read_all(0, 1)
    assert first == again
    assert first == [[{"word": "w0", "n": 0.0}, {"word": "w1", "n": 1.0}],
                     [{"word": "w2", "n": 2.0}, {"word": "w3", "n": 3.0}],
                     [{"word": "w4", "n": 4.0}]]
    assert [len(p) for p in read_all(1, 2)] == [3, 2, 2]
    assert read_all(1, 2) == read_all(1, 2)


def test_declared_and_inferred_types_reach_spark(spark, tmp_path):
    spout = FeederBatchSpout(["id:bigint", "score:double", "ok:boolean", "name", "count", "ratio", "raw"])
    spout.feed([[1, 0.5, True, "a", 7, 2, b"\x00\x01"], [2, 3, False, None, None, 2.5, None]])

    df = spout.to_dataframe(spark)
    assert df.columns == ["id", "score", "ok", "name", "count", "ratio", "raw"]
    assert dict(df.dtypes) == {"id": "bigint", "score": "double", "ok": "boolean", "name": "string",
                               "count": "bigint", "ratio": "double", "raw": "binary"}
    assert spout.fields.types == dict(df.dtypes)
    assert run_available_now(spark, spout, tmp_path / "ckpt") == [
        (0, [(1, 0.5, True, "a", 7, 2.0, bytearray(b"\x00\x01")),
             (2, 3.0, False, None, None, 2.5, None)])]


def test_rows_are_split_into_contiguous_chunks_one_per_partition(spark, tmp_path):
    from pyspark.sql import functions as F

    spout = FeederBatchSpout(["n:bigint"], num_partitions=3)
    spout.feed([[i] for i in range(7)])
    spout.feed([[i] for i in range(2)])  # fewer rows than partitions: the last one is empty

    def by_partition(df: Any) -> Any:
        return (df.groupBy(F.spark_partition_id().alias("p"))
                .agg(F.count("*").alias("rows"), F.min("n"), F.max("n")).orderBy("p"))

    seen = run_available_now(spark, spout, tmp_path / "ckpt", transform=by_partition)

    assert seen == [(0, [(0, 3, 0, 2), (1, 2, 3, 4), (2, 2, 5, 6)]),
                    (1, [(0, 1, 0, 0), (1, 1, 1, 1)])]


def test_a_running_query_takes_batches_fed_while_it_runs(spark, tmp_path):
    spout = FeederBatchSpout(["word"])
    seen: list[tuple[int, list[str]]] = []
    query = (spout.to_dataframe(spark).writeStream
             .foreachBatch(lambda df, i: seen.append((i, [r.word for r in df.collect()])))
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(processingTime="100 milliseconds")
             .start())
    try:
        spout.feed([["a"], ["b"]])
        spout.feed([["c"]])
        query.processAllAvailable()
        assert seen == [(0, ["a", "b"]), (1, ["c"])]
    finally:
        query.stop()


def test_a_checkpoint_ahead_of_the_directory_fails_naming_both(spark, tmp_path):
    spout = FeederBatchSpout(["word"], directory=str(tmp_path / "old"))
    spout.feed([["a"]])
    run_available_now(spark, spout, tmp_path / "ckpt")
    shutil.rmtree(tmp_path / "old")

    fresh = FeederBatchSpout(["word"], directory=str(tmp_path / "new"))
    query = (fresh.to_dataframe(spark).writeStream.foreachBatch(lambda df, i: None)
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    try:
        with pytest.raises(Exception) as info:
            query.awaitTermination(60)
    finally:
        query.stop()
    message = str(info.value)
    assert "the checkpoint says 1 batches were read" in message and str(tmp_path / "new") in message


def test_nested_declared_types_reach_spark(spark, tmp_path):
    spout = FeederBatchSpout(["tags:array<string>", "m:map<string,bigint>", "p:struct<x:int,y:double>",
                              "at:timestamp", "day:date", "q:decimal(6,2)"])
    at = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.UTC)
    spout.feed([[["a", "b"], {"k": 1}, (1, 2.5), at, datetime.date(2024, 5, 1), decimal.Decimal("12.34")],
                [None, None, None, None, None, None]])

    df = spout.to_dataframe(spark)
    assert df.dtypes == [("tags", "array<string>"), ("m", "map<string,bigint>"),
                         ("p", "struct<x:int,y:double>"), ("at", "timestamp"), ("day", "date"),
                         ("q", "decimal(6,2)")]
    seen = run_available_now(spark, spout, tmp_path / "ckpt",
                             transform=lambda d: d.selectExpr("tags", "m['k']", "p.x", "p.y",
                                                              "unix_timestamp(at)", "day", "q"))
    assert seen == [(0, [(["a", "b"], 1, 1, 2.5, int(at.timestamp()), datetime.date(2024, 5, 1),
                          decimal.Decimal("12.34")),
                         (None, None, None, None, None, None, None)])]
