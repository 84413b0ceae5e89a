"""FeederBatchSpout on a real local Spark: one feed() is one micro-batch, replays read the same rows,
undeclared fields carry any Python value."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import shutil
from pathlib import Path
from typing import Any

import pytest

from trident_spark.object_values import OBJECT_METADATA, decode_value
from trident_spark.spout import FeederBatchSpout
from trident_spark.spout.testing.feeder_source import FeederDataSource, FeederStreamReader

pytestmark = pytest.mark.integration


@dataclasses.dataclass(frozen=True)
class Reading:
    """A user object fed into an undeclared field."""

    sensor: str
    value: float


def python_rows(df: Any) -> list[tuple[Any, ...]]:
    """``df``'s rows, with the columns marked untyped decoded back to the Python values fed."""
    untyped = [f.metadata == OBJECT_METADATA for f in df.schema.fields]
    return [tuple(decode_value(None if v is None else bytes(v)) if marked else v
                  for v, marked in zip(row, untyped, strict=True)) for row in df.collect()]


def typed(rows: list[tuple[Any, ...]]) -> list[tuple[tuple[type, Any], ...]]:
    """Rows with each value's type, so ``1``, ``1.0`` and ``True`` compare apart."""
    return [tuple((type(v), v) for v in row) for row in rows]


def run_available_now(spark: Any, spout: FeederBatchSpout, checkpoint: Path,
                      transform: Any = None) -> list[tuple[int, list[tuple[Any, ...]]]]:
    """Run every fed batch not yet in ``checkpoint``; (batch_id, rows in order) per micro-batch."""
    seen: list[tuple[int, list[tuple[Any, ...]]]] = []

    def collect(df: Any, batch_id: int) -> None:
        out = transform(df) if transform else df
        seen.append((batch_id, python_rows(out)))

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
    spout.feed([[f"v{i}", i * 1.5] for i in range(7)])  # n's values change type: each batch keeps its own
    schema = spout.to_dataframe(spark).schema
    reader = FeederDataSource({"directory": spout.directory, "num_partitions": "3",
                               "schema": spout.schema_ddl()}).streamReader(schema)
    assert isinstance(reader, FeederStreamReader)

    def read_all(start: int, end: int) -> list[list[dict[str, Any]]]:
        parts = reader.partitions({"batch": start}, {"batch": end})
        rows = [[row for b in reader.read(p) for row in b.to_pylist()] for p in parts]
        return [[{k: decode_value(v) for k, v in row.items()} for row in part] for part in rows]

    first, again = read_all(0, 1), read_all(0, 1)
    assert first == again
    assert first == [[{"word": "w0", "n": 0}, {"word": "w1", "n": 1}],
                     [{"word": "w2", "n": 2}, {"word": "w3", "n": 3}],
                     [{"word": "w4", "n": 4}]]
    assert {type(row["n"]) for part in first for row in part} == {int}
    second = read_all(1, 2)
    assert [len(p) for p in second] == [3, 2, 2]
    assert second == read_all(1, 2)
    assert [(type(row["n"]), row["n"]) for part in second for row in part] == [
        (float, i * 1.5) for i in range(7)]


def test_declared_and_untyped_fields_reach_spark(spark, tmp_path):
    spout = FeederBatchSpout(["id:bigint", "score:double", "ok:boolean", "name", "count", "ratio", "raw"])
    spout.feed([[1, 0.5, True, "a", 7, 2, b"\x00\x01"], [2, 3, False, None, None, 2.5, None]])

    df = spout.to_dataframe(spark)
    assert df.columns == ["id", "score", "ok", "name", "count", "ratio", "raw"]
    assert dict(df.dtypes) == {"id": "bigint", "score": "double", "ok": "boolean", "name": "binary",
                               "count": "binary", "ratio": "binary", "raw": "binary"}
    assert {f.name: f.metadata for f in df.schema.fields} == {
        "id": {}, "score": {}, "ok": {}, "name": OBJECT_METADATA, "count": OBJECT_METADATA,
        "ratio": OBJECT_METADATA, "raw": OBJECT_METADATA}
    assert spout.fields.types == {"id": "bigint", "score": "double", "ok": "boolean", "name": "object",
                                  "count": "object", "ratio": "object", "raw": "object"}
    [(batch, rows)] = run_available_now(spark, spout, tmp_path / "ckpt")
    assert batch == 0
    assert typed(rows) == typed([(1, 0.5, True, "a", 7, 2, b"\x00\x01"),
                                 (2, 3.0, False, None, None, 2.5, None)])


def test_any_python_value_fed_undeclared_comes_back_from_spark_as_fed(spark, tmp_path):
    at = datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.UTC)
    first = [["ints", 1], ["float", 1.0], ["bool", True], ["str", "1"], ["none", None], ["big", 2**70],
             ["list", [1, "two", None]], ["dict", {"k": [1, 2], 3: "three"}], ["tuple", (1, "a")]]
    second = [["time", at], ["day", datetime.date(2024, 5, 1)], ["decimal", decimal.Decimal("1.25")],
              ["bytes", b"\xff\x00"], ["object", Reading("t1", 21.5)], ["set", {1, 2}]]
    spout = FeederBatchSpout(["what", "v"], num_partitions=2)
    spout.feed(first)
    spout.feed(second)

    seen = run_available_now(spark, spout, tmp_path / "ckpt")

    assert [(b, typed(rows)) for b, rows in seen] == [
        (0, typed([tuple(t) for t in first])), (1, typed([tuple(t) for t in second]))]

    reopened = FeederBatchSpout(["what", "v"], directory=spout.directory)  # a new driver, same directory
    reopened.feed([["again", {"n": Reading("t2", 0.0)}]])
    assert run_available_now(spark, reopened, tmp_path / "ckpt") == [
        (2, [("again", {"n": Reading("t2", 0.0)})])]


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
             .foreachBatch(lambda df, i: seen.append((i, [r[0] for r in python_rows(df)])))
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
