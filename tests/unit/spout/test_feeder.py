"""FeederBatchSpout without Spark: fields and types, feed() validation, batch files, offset planning."""

from __future__ import annotations

import datetime
import decimal
import os
import re
import shutil
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from trident_spark.errors import SpoutError
from trident_spark.fields import Fields
from trident_spark.spout import FeederBatchSpout
from trident_spark.spout.feeder_files import batch_path, chunk_bounds, chunk_sizes, read_batch
from trident_spark.spout.feeder_source import FeederStreamReader
from trident_spark.spout.feeder_types import parse_type


class FakeSpark:
    """Records what ``to_dataframe`` asks of a SparkSession (``dataSource``, ``readStream``)."""

    def __init__(self) -> None:
        self.registered: list[Any] = []
        self.options: dict[str, str] = {}
        self.format_name = ""
        self.dataSource = self
        self.readStream = self

    def register(self, source: Any) -> None:
        self.registered.append(source)

    def format(self, name: str) -> FakeSpark:
        self.format_name = name
        return self

    def option(self, key: str, value: str) -> FakeSpark:
        self.options[key] = value
        return self

    def load(self) -> str:
        return "streaming-df"


# --- fields and types ----------------------------------------------------------------------
def test_fields_keep_declared_types_and_undeclared_default_to_string():
    spout = FeederBatchSpout(["word", "n:bigint", "ok : boolean"])
    assert list(spout.fields) == ["word", "n", "ok"]
    assert spout.fields.types == {"word": "string", "n": "bigint", "ok": "boolean"}
    assert isinstance(spout.fields, Fields)


def test_a_fields_object_declares_its_non_string_types():
    spout = FeederBatchSpout(Fields("word", "n:long"))
    spout.feed([["a", 1]])
    assert spout.fields.types == {"word": "string", "n": "bigint"}
    with pytest.raises(TypeError, match="field 'n' \\(declared bigint\\)"):
        spout.feed([["a", 1.5]])


@pytest.mark.parametrize(("fields", "message"), [
    ([], "give at least one field"),
    (["a", "b", "a"], "duplicate fields \\['a'\\]"),
    (["a:bigintt"], "field 'a' has type 'bigintt': unknown type 'bigintt'; supported types: string, bigint"),
    (["m:map<string>"], "field 'm' has type 'map<string>': expected ','"),
])
def test_bad_fields_fail_at_construction(fields, message):
    with pytest.raises(ValueError, match=message):
        FeederBatchSpout(fields)


@pytest.mark.parametrize("num_partitions", [0, -1, 1.5, True])
def test_num_partitions_must_be_a_positive_int(num_partitions):
    with pytest.raises(ValueError, match="num_partitions"):
        FeederBatchSpout(["a"], num_partitions=num_partitions)


@pytest.mark.parametrize(("text", "ddl", "arrow"), [
    ("long", "bigint", pa.int64()),
    ("INTEGER", "int", pa.int32()),
    ("decimal(10, 2)", "decimal(10,2)", pa.decimal128(10, 2)),
    ("decimal", "decimal(10,0)", pa.decimal128(10, 0)),
    ("array<map<string, double>>", "array<map<string,double>>", pa.list_(pa.map_(pa.string(), pa.float64()))),
    ("struct<x: int, `y z` string>", "struct<`x`:int,`y z`:string>",
     pa.struct([("x", pa.int32()), ("y z", pa.string())])),
    ("timestamp", "timestamp", pa.timestamp("us", tz="UTC")),
])
def test_type_names_parse_to_canonical_ddl_and_arrow(text, ddl, arrow):
    parsed = parse_type(text)
    assert (parsed.ddl, parsed.arrow) == (ddl, arrow)


@pytest.mark.parametrize(("fed", "types"), [
    ([["a", 1, 1.5, True, b"x"]], ["string", "bigint", "double", "boolean", "binary"]),
    ([["a", 1, 2, False, None], ["b", 2.5, 3, True, bytearray(b"y")]],
     ["string", "double", "bigint", "boolean", "binary"]),
    ([[None, None, None, None, None]], ["string"] * 5),
])
def test_undeclared_types_are_inferred_from_the_values_fed(fed, types):
    spout = FeederBatchSpout(["a", "b", "c", "d", "e"])
    spout.feed(fed)
    assert list(spout.fields.types.values()) == types


def test_nothing_fed_means_string():
    assert FeederBatchSpout(["a", "b"]).fields.types == {"a": "string", "b": "string"}


def test_dates_and_times_are_inferred():
    spout = FeederBatchSpout(["at", "day"])
    spout.feed([[datetime.datetime(2024, 5, 1, 12, 0), datetime.date(2024, 5, 1)]])
    assert spout.fields.types == {"at": "timestamp", "day": "date"}


def test_an_int_field_widens_to_double_across_batches_and_the_old_file_stays_as_written():
    spout = FeederBatchSpout(["n"])
    spout.feed([[1], [2]])
    assert spout.fields.types == {"n": "bigint"}
    spout.feed([[0.5]])
    assert spout.fields.types == {"n": "double"}
    assert read_batch(spout.directory, 0).schema.field("n").type == pa.int64()
    assert read_batch(spout.directory, 1).schema.field("n").type == pa.float64()


@pytest.mark.parametrize(("value", "declaration"),
                         [([1, 2], "array<string>"), ({"a": 1}, "map<string,bigint>")])
def test_lists_and_dicts_must_be_declared(value, declaration):
    spout = FeederBatchSpout(["word", "m"])
    with pytest.raises(TypeError) as info:
        spout.feed([["a", None], ["b", value]])
    message = str(info.value)
    assert "field 'm' has no declared type" in message and f"'m:{declaration}'" in message
    assert spout.batches == 0


def test_mixed_undeclared_values_fail_naming_the_field_and_the_tuple():
    spout = FeederBatchSpout(["n"])
    spout.feed([[1]])
    with pytest.raises(TypeError, match="field 'n' has no declared type and holds both bigint and string "
                                        "values \\(tuple 1 of batch 1 has a string\\)"):
        spout.feed([[2], ["three"]])
    assert spout.fields.types == {"n": "bigint"}  # a failed feed changes nothing


# --- feed validation -----------------------------------------------------------------------
def test_wrong_arity_names_the_tuple_index_and_the_fields():
    spout = FeederBatchSpout(["word", "n:bigint"])
    with pytest.raises(ValueError) as info:
        spout.feed([["a", 1], ["b"], ["c", 3]])
    assert str(info.value) == ("FeederBatchSpout.feed: tuple 1 has 1 values ['b'], expected 2 for "
                               "fields ['word', 'n']")
    assert spout.batches == 0 and not os.listdir(spout.directory)


def test_a_single_tuple_instead_of_a_list_of_tuples_is_explained():
    spout = FeederBatchSpout(["word", "n"])
    with pytest.raises(TypeError, match=re.escape("tuple 0 is 'a' (str), not a list of values; feed takes "
                                                  "a list of tuples, e.g. feed([[<word>, <n>]])")):
        spout.feed(["a", 1])  # type: ignore[list-item]


@pytest.mark.parametrize(("field", "value", "error", "message"), [
    ("n:bigint", "1", TypeError, "tuple 0, field 'n' \\(declared bigint\\): '1' is a str, not a bigint"),
    ("n:bigint", True, TypeError, "True is a bool, not a bigint"),
    ("n:bigint", 1.0, TypeError, "1.0 is a float, not a bigint"),
    ("n:int", 2**31, ValueError, "2147483648 does not fit in a int \\(32-bit integer\\)"),
    ("x:double", "1.5", TypeError, "'1.5' is a str, not a double"),
    ("ok:boolean", 1, TypeError, "1 is a int, not a boolean"),
    ("s:string", 7, TypeError, "7 is a int, not a string"),
    ("b:binary", "x", TypeError, "'x' is a str, not a binary"),
    ("d:date", datetime.datetime(2024, 1, 1), TypeError, "is a datetime, not a date"),
    ("t:array<bigint>", [1, "x"], TypeError, "element 1: 'x' is a str, not a bigint"),
    ("m:map<string,double>", {"a": "b"}, TypeError, "value of key 'a': 'b' is a str, not a double"),
    ("p:struct<x:bigint,y:string>", {"x": 1, "z": 2}, TypeError, "has keys \\['z'\\]"),
    ("p:struct<x:bigint,y:string>", (1, 2), TypeError, "field 'y': 2 is a int, not a string"),
    ("q:decimal(5,2)", decimal.Decimal("1.234"), ValueError, "cannot be stored as decimal\\(5,2\\)"),
])
def test_values_that_do_not_fit_their_type_fail_at_feed_time(field, value, error, message):
    spout = FeederBatchSpout([field])
    with pytest.raises(error, match=message):
        spout.feed([[value]])
    assert spout.batches == 0


def test_declared_values_that_fit_are_stored_as_given():
    spout = FeederBatchSpout(["x:double", "t:array<bigint>", "m:map<string,bigint>",
                              "p:struct<x:bigint,y:string>", "q:decimal(5,2)", "n:bigint"])
    spout.feed([[1, [1, 2], {"a": 1}, {"x": 1, "y": "b"}, decimal.Decimal("1.25"), None],
                [2.5, [], {}, (2, "c"), 3, -(2**63)]])
    assert read_batch(spout.directory, 0).to_pylist() == [
        {"x": 1.0, "t": [1, 2], "m": [("a", 1)], "p": {"x": 1, "y": "b"}, "q": decimal.Decimal("1.25"),
         "n": None},
        {"x": 2.5, "t": [], "m": [], "p": {"x": 2, "y": "c"}, "q": decimal.Decimal("3.00"), "n": -(2**63)}]


# --- batch files ---------------------------------------------------------------------------
def test_each_feed_writes_one_numbered_arrow_file_in_feed_order():
    spout = FeederBatchSpout(["word", "n:bigint"])
    assert spout.feed([["b", 2], ["a", 1]]) == 0
    assert spout.feed([]) == 1
    assert sorted(os.listdir(spout.directory)) == ["batch-00000000.arrow", "batch-00000001.arrow"]
    assert read_batch(spout.directory, 0).to_pylist() == [{"word": "b", "n": 2}, {"word": "a", "n": 1}]
    assert read_batch(spout.directory, 1).num_rows == 0
    assert repr(spout) == "FeederBatchSpout(fields=['word:string', 'n:bigint'], batches=2)"


def test_a_spout_on_an_existing_directory_goes_on_after_its_batches(tmp_path):
    first = FeederBatchSpout(["word", "n"], directory=tmp_path)
    first.feed([["a", 1]])
    first.feed([["b", 2.5]])

    again = FeederBatchSpout(["word", "n"], directory=str(tmp_path))
    assert again.batches == 2 and again.fields.types == {"word": "string", "n": "double"}
    assert again.feed([["c", 3]]) == 2

    with pytest.raises(ValueError, match="holds batches with fields \\['word', 'n'\\], not \\['other'\\]"):
        FeederBatchSpout(["other"], directory=tmp_path)


def test_two_spouts_feeding_one_directory_never_overwrite_a_batch(tmp_path):
    one = FeederBatchSpout(["word"], directory=tmp_path)
    two = FeederBatchSpout(["word"], directory=tmp_path)
    one.feed([["from one"]])
    with pytest.raises(FileExistsError, match="batch 0 already exists"):
        two.feed([["from two"]])
    assert read_batch(str(tmp_path), 0).to_pylist() == [{"word": "from one"}]
    assert sorted(os.listdir(tmp_path)) == ["batch-00000000.arrow"]  # no temporary file left


def test_chunks_are_contiguous_and_the_first_ones_take_the_remainder():
    assert chunk_sizes(7, 3) == [3, 2, 2]
    assert chunk_sizes(2, 3) == [1, 1, 0]
    assert chunk_sizes(0, 2) == [0, 0]
    assert [chunk_bounds(10, 4, i) for i in range(4)] == [(0, 3), (3, 6), (6, 8), (8, 10)]


# --- Spark side without Spark --------------------------------------------------------------
def test_to_dataframe_fixes_types_and_passes_everything_the_reader_needs_in_options(tmp_path):
    spout = FeederBatchSpout(["word", "n", "later", "x:double"], num_partitions=3, directory=tmp_path)
    spout.feed([["a", 1, None, 2]])
    spark = FakeSpark()

    assert spout.to_dataframe(spark) == "streaming-df"
    spout.to_dataframe(spark)

    assert spark.format_name == "trident_feeder" and len(spark.registered) == 1  # registered once
    assert spark.options == {"directory": str(tmp_path), "num_partitions": "3",
                             "schema": "`word` string, `n` bigint, `later` string, `x` double"}
    # types are fixed now: the never-seen field stays string, ints stay bigint
    with pytest.raises(TypeError, match="field 'later' \\(string, fixed when the stream started; "
                                        "declare 'later:<type>' to choose another\\): 5 is a int"):
        spout.feed([["b", 2, 5, 1.0]])
    with pytest.raises(TypeError, match="field 'n' \\(bigint, fixed when"):
        spout.feed([["b", 2.5, None, 1.0]])
    assert spout.feed([["b", 2, "ok", 1]]) == 1


def test_check_fails_when_the_directory_is_gone(tmp_path):
    spout = FeederBatchSpout(["word"], directory=tmp_path / "d")
    spout.check()
    shutil.rmtree(tmp_path / "d")
    with pytest.raises(SpoutError, match="does not exist any more"):
        spout.check()


def reader_for(spout: FeederBatchSpout) -> FeederStreamReader:
    return FeederStreamReader(spout.directory, spout.num_partitions, None)  # type: ignore[arg-type]


def test_the_reader_takes_one_fed_batch_per_micro_batch_whatever_the_limit():
    spout = FeederBatchSpout(["word"])
    reader = reader_for(spout)
    start = reader.initialOffset()
    assert start == {"batch": 0}
    assert reader.latestOffset(start, ReadAllAvailable()) == {"batch": 0}  # nothing fed: no batch
    for i in range(3):
        spout.feed([[f"w{i}"]])
    assert reader.latestOffset({"batch": 0}, ReadAllAvailable()) == {"batch": 1}
    assert reader.latestOffset({"batch": 1}, ReadMaxRows(100)) == {"batch": 2}
    assert reader.latestOffset({"batch": 3}, ReadAllAvailable()) == {"batch": 3}
    assert reader.reportLatestOffset() == {"batch": 3}
    assert [p.value for p in reader.partitions({"batch": 1}, {"batch": 2})] == [(1, 2, 0, 2), (1, 2, 1, 2)]


def test_available_now_stops_at_the_batches_fed_when_it_started():
    spout = FeederBatchSpout(["word"])
    spout.feed([["a"]])
    reader = reader_for(spout)
    reader.prepareForTriggerAvailableNow()
    spout.feed([["late"]])
    assert reader.latestOffset({"batch": 0}, ReadAllAvailable()) == {"batch": 1}
    assert reader.latestOffset({"batch": 1}, ReadAllAvailable()) == {"batch": 1}


def test_a_checkpoint_ahead_of_the_directory_is_a_clear_error(tmp_path):
    spout = FeederBatchSpout(["word"], directory=tmp_path / "d")
    spout.feed([["a"]])
    reader = reader_for(spout)
    with pytest.raises(SpoutError, match=r"the checkpoint says 5 batches were read, but .* holds only 1"):
        reader.latestOffset({"batch": 5}, ReadAllAvailable())
    shutil.rmtree(tmp_path / "d")
    with pytest.raises(SpoutError, match="is gone"):
        reader.latestOffset({"batch": 1}, ReadAllAvailable())
    with pytest.raises(FileNotFoundError, match="batch 0 is missing"):
        read_batch(spout.directory, 0)
    assert not os.path.exists(batch_path(spout.directory, 0))


def test_structs_given_as_tuples_or_dicts_are_stored_alike_even_nested():
    spout = FeederBatchSpout(["ps:array<struct<x:bigint,y:string>>"])
    spout.feed([[[(1, "a"), {"x": 2}]], [[{"y": "c", "x": 3}]]])
    assert read_batch(spout.directory, 0).to_pylist() == [
        {"ps": [{"x": 1, "y": "a"}, {"x": 2, "y": None}]}, {"ps": [{"x": 3, "y": "c"}]}]
