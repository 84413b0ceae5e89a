"""FeederBatchSpout without Spark: fields and types, untyped values, feed() validation, batch files,
offset planning."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import doctest
import importlib
import os
import re
import shutil
import threading
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from trident_spark.errors import SpoutError
from trident_spark.fields import Fields
from trident_spark.object_values import OBJECT_METADATA, decode_column
from trident_spark.spout import FeederBatchSpout
from trident_spark.spout.field_types import parse_type
from trident_spark.spout.testing.batch_files import batch_path, chunk_bounds, chunk_sizes, read_batch
from trident_spark.spout.testing.feeder_source import FeederStreamReader


@dataclasses.dataclass(frozen=True)
class Point:
    """A user object, as a Trident Function might emit one."""

    x: int
    label: str


def stored(spout: FeederBatchSpout, batch: int, field: str) -> list[Any]:
    """The values of an undeclared ``field`` in a stored batch file, decoded."""
    column = read_batch(spout.directory, batch).column(field)
    assert column.type == pa.binary()  # an undeclared field is one tagged binary column
    return decode_column(column)


def typed(values: list[Any]) -> list[tuple[type, Any]]:
    """Values with their types, so ``1``, ``1.0`` and ``True`` compare apart."""
    return [(type(v), v) for v in values]


class FakeColumn:
    """What ``pyspark.sql.functions.col`` gives ``mark_untyped``: a name, maybe an alias with metadata."""

    def __init__(self, name: str, alias: str | None = None, metadata: dict[str, str] | None = None) -> None:
        self.name, self.alias_name, self.metadata = name, alias, metadata

    def alias(self, name: str, metadata: dict[str, str]) -> FakeColumn:
        return FakeColumn(self.name, name, metadata)

    def __repr__(self) -> str:
        return f"FakeColumn({self.name!r}, {self.alias_name!r}, {self.metadata!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeColumn) and repr(self) == repr(other)


class FakeFrame:
    """The streaming DataFrame ``load()`` returns; records the columns ``select`` was given."""

    def __init__(self) -> None:
        self.selected: list[FakeColumn] = []

    def select(self, *columns: FakeColumn) -> FakeFrame:
        self.selected = list(columns)
        return self


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

    def load(self) -> FakeFrame:
        return FakeFrame()


# --- fields and types ----------------------------------------------------------------------
def test_fields_keep_declared_types_and_undeclared_ones_are_objects():
    spout = FeederBatchSpout(["word", "n:bigint", "ok : boolean"])
    assert list(spout.fields) == ["word", "n", "ok"]
    assert spout.fields.types == {"word": "object", "n": "bigint", "ok": "boolean"}
    assert isinstance(spout.fields, Fields)


def test_a_fields_object_declares_its_types():
    spout = FeederBatchSpout(Fields("word", "n:long"))
    spout.feed([["a", 1]])
    assert spout.fields.types == {"word": "object", "n": "bigint"}
    with pytest.raises(TypeError) as info:
        spout.feed([["a", 1.5]])
    assert str(info.value) == ("FeederBatchSpout.feed: tuple 0, field 'n' (declared bigint; declare it "
                               "without a type to carry any value): 1.5 is a float, not a bigint")


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


UNTYPED_VALUES: list[Any] = [
    "a", "", "1", 1, 1.0, True, False, 0, 2.5, -7, 2**70, float("inf"), b"\x00raw", bytearray(b"ba"),
    None, [1, "two", None], {"k": [1, 2], 3: "three"}, (1, "a"), {1, 2}, decimal.Decimal("1.25"),
    datetime.datetime(2024, 5, 1, 12, 30), datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.UTC),
    datetime.date(2024, 5, 1), Point(1, "p"), [Point(2, "q"), {"nested": (3, 4.5)}],
]


def test_undeclared_fields_are_objects_before_and_after_anything_is_fed():
    spout = FeederBatchSpout(["a", "b:double", "c"])
    assert spout.fields.types == {"a": "object", "b": "double", "c": "object"}
    spout.feed([["x", 1, 1], [None, None, [1]]])
    assert spout.fields.types == {"a": "object", "b": "double", "c": "object"}


def test_any_value_fed_to_an_undeclared_field_is_stored_and_comes_back_as_given():
    spout = FeederBatchSpout(["v", "n:bigint"])
    spout.feed([[v, i] for i, v in enumerate(UNTYPED_VALUES)])
    assert typed(stored(spout, 0, "v")) == typed(UNTYPED_VALUES)
    assert read_batch(spout.directory, 0).column("n").to_pylist() == list(range(len(UNTYPED_VALUES)))


def test_values_of_one_undeclared_field_mix_types_from_tuple_to_tuple():
    spout = FeederBatchSpout(["word", "n"])
    spout.feed([["a", 1], ["b", "1"], ["c", 1.0], ["d", True], ["e", None], ["f", {"n": 1}]])
    assert stored(spout, 0, "word") == ["a", "b", "c", "d", "e", "f"]
    assert typed(stored(spout, 0, "n")) == [(int, 1), (str, "1"), (float, 1.0), (bool, True),
                                            (type(None), None), (dict, {"n": 1})]


def test_an_undeclared_field_may_change_type_from_batch_to_batch_and_each_file_stays_as_written():
    spout = FeederBatchSpout(["n"])
    spout.feed([[1], [2]])
    spout.feed([[0.5], [2**70]])
    spout.feed([["three"], [None]])
    spout.feed([[None], [None]])
    assert spout.fields.types == {"n": "object"}
    assert [typed(stored(spout, b, "n")) for b in range(4)] == [
        [(int, 1), (int, 2)], [(float, 0.5), (int, 2**70)], [(str, "three"), (type(None), None)],
        [(type(None), None), (type(None), None)]]


def test_dates_and_times_fed_undeclared_come_back_with_their_type_and_zone():
    at = datetime.datetime(2024, 5, 1, 12, 0)
    spout = FeederBatchSpout(["at", "day"])
    spout.feed([[at, datetime.date(2024, 5, 1)], [at.replace(tzinfo=datetime.UTC), at]])
    assert spout.fields.types == {"at": "object", "day": "object"}
    assert typed(stored(spout, 0, "at")) == [(datetime.datetime, at),
                                             (datetime.datetime, at.replace(tzinfo=datetime.UTC))]
    assert stored(spout, 0, "at")[1].tzinfo is datetime.UTC and stored(spout, 0, "at")[0].tzinfo is None
    assert typed(stored(spout, 0, "day")) == [(datetime.date, datetime.date(2024, 5, 1)),
                                              (datetime.datetime, at)]


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, (1, "a"), Point(3, "user"), [[{"deep": (1,)}]]],
                         ids=["list", "dict", "tuple", "user-object", "nested"])
def test_lists_dicts_tuples_and_user_objects_need_no_declaration(value):
    spout = FeederBatchSpout(["word", "m"])
    assert spout.feed([["a", None], ["b", value]]) == 0
    assert typed(stored(spout, 0, "m")) == [(type(None), None), (type(value), value)]


_LOCK = threading.Lock()


@pytest.mark.parametrize(("value", "cause"), [
    (_LOCK, "cannot pickle '_thread.lock' object"),
    ((i for i in range(2)), "cannot pickle 'generator' object"),
    ({"callback": lambda: 1, "guard": _LOCK}, "cannot pickle '_thread.lock' object"),
], ids=["lock", "generator", "dict-holding-a-lock"])
def test_a_value_that_does_not_pickle_fails_naming_the_tuple_the_field_and_the_value(value, cause):
    spout = FeederBatchSpout(["word", "x"])
    with pytest.raises(TypeError) as info:
        spout.feed([["a", 1], ["b", value]])
    assert str(info.value) == (
        f"FeederBatchSpout.feed: tuple 1, field 'x': the value {value!r} ({type(value).__name__}) cannot "
        f"be carried: an untyped field carries values that pickle, and this one does not (TypeError: "
        f"{cause}); emit something that pickles (e.g. its data as a dict or str), or give the class "
        f"__getstate__")
    assert spout.batches == 0 and not os.listdir(spout.directory)  # a failed feed stores nothing
    assert spout.feed([["c", 3]]) == 0


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
    ("n:bigint", "1", TypeError, "tuple 0, field 'n' \\(declared bigint; declare it without a type to carry "
                                 "any value\\): '1' is a str, not a bigint"),
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
    assert stored(spout, 0, "word") == ["b", "a"]
    assert read_batch(spout.directory, 0).column("n").to_pylist() == [2, 1]
    assert read_batch(spout.directory, 1).num_rows == 0
    assert read_batch(spout.directory, 1).schema == pa.schema([("word", pa.binary()), ("n", pa.int64())])
    assert repr(spout) == "FeederBatchSpout(fields=['word:object', 'n:bigint'], batches=2)"


def test_a_spout_on_an_existing_directory_goes_on_after_its_batches(tmp_path):
    first = FeederBatchSpout(["word", "n"], directory=tmp_path)
    first.feed([["a", 1]])
    first.feed([["b", 2.5]])

    again = FeederBatchSpout(["word", "n"], directory=str(tmp_path))
    assert again.batches == 2 and again.fields.types == {"word": "object", "n": "object"}
    assert again.feed([["c", 3], ["d", {"four": 4}]]) == 2
    assert [typed(stored(again, b, "n")) for b in range(3)] == [
        [(int, 1)], [(float, 2.5)], [(int, 3), (dict, {"four": 4})]]
    assert [stored(again, b, "word") for b in range(3)] == [["a"], ["b"], ["c", "d"]]

    with pytest.raises(ValueError, match="holds batches with fields \\['word', 'n'\\], not \\['other'\\]"):
        FeederBatchSpout(["other"], directory=tmp_path)


def test_two_spouts_feeding_one_directory_never_overwrite_a_batch(tmp_path):
    one = FeederBatchSpout(["word"], directory=tmp_path)
    two = FeederBatchSpout(["word"], directory=tmp_path)
    one.feed([["from one"]])
    with pytest.raises(FileExistsError, match="batch 0 already exists"):
        two.feed([["from two"]])
    assert decode_column(read_batch(str(tmp_path), 0).column("word")) == ["from one"]
    assert sorted(os.listdir(tmp_path)) == ["batch-00000000.arrow"]  # no temporary file left


def test_chunks_are_contiguous_and_the_first_ones_take_the_remainder():
    assert chunk_sizes(7, 3) == [3, 2, 2]
    assert chunk_sizes(2, 3) == [1, 1, 0]
    assert chunk_sizes(0, 2) == [0, 0]
    assert [chunk_bounds(10, 4, i) for i in range(4)] == [(0, 3), (3, 6), (6, 8), (8, 10)]


# --- Spark side without Spark --------------------------------------------------------------
def test_to_dataframe_passes_the_reader_binary_for_undeclared_fields_and_marks_them_untyped(
        tmp_path, monkeypatch):
    from pyspark.sql import functions

    monkeypatch.setattr(functions, "col", FakeColumn)  # F.col needs a SparkContext; this test has none
    spout = FeederBatchSpout(["word", "n", "later", "x:double"], num_partitions=3, directory=tmp_path)
    spout.feed([["a", 1, None, 2]])
    spark = FakeSpark()

    df = spout.to_dataframe(spark)
    spout.to_dataframe(spark)

    assert spark.format_name == "trident_feeder" and len(spark.registered) == 1  # registered once
    assert spark.options == {"directory": str(tmp_path), "num_partitions": "3",
                             "schema": "`word` binary, `n` binary, `later` binary, `x` double"}
    assert spout.schema_ddl() == spark.options["schema"]
    assert isinstance(df, FakeFrame) and df.selected == [
        FakeColumn("`word`", "word", OBJECT_METADATA), FakeColumn("`n`", "n", OBJECT_METADATA),
        FakeColumn("`later`", "later", OBJECT_METADATA), FakeColumn("`x`")]
    # nothing is fixed when the stream starts: undeclared fields go on taking any value
    assert spout.feed([["b", 2.5, 5, 1.0], ["c", "two", {"k": [1]}, None]]) == 1
    assert typed(stored(spout, 1, "n")) == [(float, 2.5), (str, "two")]
    assert stored(spout, 1, "later") == [5, {"k": [1]}]
    with pytest.raises(TypeError, match=re.escape("field 'x' (declared double; declare it without a type "
                                                  "to carry any value): 'one' is a str, not a double")):
        spout.feed([["d", 3, None, "one"]])


def test_a_backticked_field_name_is_quoted_in_the_schema():
    spout = FeederBatchSpout(["we`ird", "n:bigint"])
    assert spout.schema_ddl() == "`we``ird` binary, `n` bigint"


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


@pytest.mark.parametrize("name", ["trident_spark.spout.testing.feeder", "trident_spark.spout.field_types",
                                  "trident_spark.spout.testing.batch_files"])
def test_docstring_examples(name):
    failures, attempted = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0 and attempted > 0


def test_a_spouts_fields_as_it_shows_them_make_an_equal_spout():
    spout = FeederBatchSpout(["word", "n:bigint"])
    assert FeederBatchSpout(spout.fields).fields.types == {"word": "object", "n": "bigint"}
    assert FeederBatchSpout(["word:object"]).fields.declared_types == {}


def test_a_directory_written_with_typed_undeclared_fields_is_refused_saying_what_to_do(tmp_path):
    import pyarrow as pa

    from trident_spark.spout.testing.batch_files import write_batch

    write_batch(str(tmp_path), 0, pa.table({"word": pa.array(["cat"]), "n": pa.array([1])}))
    with pytest.raises(ValueError) as info:
        FeederBatchSpout(["word", "n:bigint"], directory=tmp_path)
    assert str(info.value) == (
        f"FeederBatchSpout: batch 0 in {tmp_path} stores the undeclared fields ['word'] as typed columns "
        "(word: string), written before undeclared fields carried any value; declare their types "
        "(e.g. 'word:<type>') or give this spout another directory")
    assert FeederBatchSpout(["word:string", "n:bigint"], directory=tmp_path).batches == 1
