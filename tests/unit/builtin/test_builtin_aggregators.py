"""Count, Sum, Max and Min: Trident's semantics in Python, and their SQL forms give the same results."""

from __future__ import annotations

import decimal
import functools
from decimal import Decimal

import pyarrow as pa
import pytest

from trident_spark.builtin import Count, Max, Min, Sum
from trident_spark.builtin.aggregators import sum_type
from trident_spark.errors import TopologyError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import TridentCollector


def tuples(fields, rows):
    fields = Fields(fields)
    return [TridentTuple(list(row), fields) for row in rows]


def combine_all(agg, batch):
    """A group's combined value, as Spark's sum/count see it: combine the inits pairwise."""
    return functools.reduce(agg.combine, [agg.init(t) for t in batch])


def run_aggregator(agg, batch):
    out = TridentCollector()
    state = agg.init(0, out)
    for t in batch:
        agg.aggregate(state, t, out)
    agg.complete(state, out)
    return out.emitted


def python_per_group(rows, fields, run):
    """rows: (g, *values); returns {g: run(tuples of that group)} for each group."""
    groups: dict = {}
    for g, *values in rows:
        groups.setdefault(g, []).append(values)
    return {g: run(tuples(fields, values)) for g, values in groups.items()}


# --- Count ------------------------------------------------------------------------------------

def test_count_counts_every_tuple_whatever_its_values():
    count = Count()
    batch = tuples(["word"], [["a"], [None], ["a"]])
    assert [count.init(t) for t in batch] == [1, 1, 1]
    assert count.zero() == 0
    assert combine_all(count, batch) == 3
    assert count.combine(count.zero(), 5) == 5


def test_count_arrow_reduce_is_the_row_count():
    assert Count().arrow_reduce([pa.array(["a", None, "b"])], 3) == 3
    assert Count().arrow_reduce([], 0) == 0


def test_count_types():
    assert Count().spark_types(["string"]) == ["bigint"]


def test_count_sql_equals_python_per_group(spark):
    from pyspark.sql import functions as F

    rows = [("a", "x"), ("b", None), ("a", None), ("a", "y"), ("c", "z")]
    df = spark.createDataFrame(rows, "g string, word string")
    got = {r.g: r.n for r in df.groupBy("g").agg(Count().spark_aggregates([F.col("word")])[0].alias("n"))
           .collect()}
    assert got == python_per_group(rows, ["word"], lambda batch: combine_all(Count(), batch))
    assert got == {"a": 3, "b": 1, "c": 1}
    assert dict(df.groupBy("g").agg(F.count(F.lit(1))).dtypes)["count(1)"] == "bigint"


# --- Sum --------------------------------------------------------------------------------------

def test_sum_keeps_ints_as_ints_and_skips_none():
    total = combine_all(Sum(), tuples(["n"], [[3], [None], [4], [2**70]]))
    assert total == 7 + 2**70 and type(total) is int
    assert Sum().zero() == 0
    assert Sum().combine(Sum().zero(), None) == 0
    assert Sum().combine(None, None) is None
    assert combine_all(Sum(), tuples(["n"], [[None], [None]])) is None


def test_sum_of_mixed_numbers():
    assert combine_all(Sum(), tuples(["n"], [[1], [0.5]])) == 1.5
    assert combine_all(Sum(), tuples(["n"], [[Decimal("1.10")], [2]])) == Decimal("3.10")
    # A float added to a Decimal is converted exactly (Storm: new BigDecimal(double)).
    exact_tenth = Decimal.from_float(0.1)   # 0.1000000000000000055511151231257827...
    assert Sum().combine(Decimal("1"), 0.1) == exact_tenth + 1 != Decimal("1.1")
    assert Sum().combine(0.5, Decimal("0.25")) == Decimal("0.75")
    assert isinstance(Sum().combine(0.5, Decimal("0.25")), decimal.Decimal)


def test_sum_uses_the_first_input_field():
    assert combine_all(Sum(), tuples(["n", "m"], [[1, 100], [2, 200]])) == 3


def test_sum_of_text_is_a_clear_error():
    with pytest.raises(TypeError, match=r"Sum\(\) adds numbers, but field 'word' holds str 'cat'"):
        Sum().init(TridentTuple(["cat"], ["word"]))


@pytest.mark.parametrize(("input_type", "expected"), [
    ("tinyint", "bigint"), ("smallint", "bigint"), ("int", "bigint"), ("integer", "bigint"),
    ("bigint", "bigint"), ("LONG", "bigint"), ("float", "double"), ("double", "double"),
    ("decimal(10,2)", "decimal(20,2)"), ("decimal(35, 4)", "decimal(38,4)"), ("decimal", "decimal(20,0)"),
    ("string", None), ("boolean", None),
])
def test_sum_types(input_type, expected):
    assert sum_type(input_type) == expected
    assert Sum().spark_types([input_type]) == (None if expected is None else [expected])


def test_sum_types_are_what_spark_sums_to(spark):
    from pyspark.sql import functions as F

    for input_type in ["tinyint", "smallint", "int", "bigint", "float", "double", "decimal(10,2)",
                       "decimal(35,4)"]:
        df = spark.createDataFrame([(1,)], "n int").select(F.col("n").cast(input_type).alias("n"))
        summed = df.agg(*Sum().spark_aggregates([F.col("n")]))
        assert [t for _, t in summed.dtypes] == Sum().spark_types([input_type]), input_type


def test_sum_arrow_reduce():
    total = Sum().arrow_reduce([pa.array([1, 2, None, 4])], 4)
    assert total == 7 and type(total) is int
    assert Sum().arrow_reduce([pa.array([0.5, None, 0.25])], 3) == 0.75
    assert Sum().arrow_reduce([pa.array([Decimal("1.10"), Decimal("2.05")])], 2) == Decimal("3.15")
    assert Sum().arrow_reduce([pa.chunked_array([[1, 2], [3]])], 3) == 6
    # An empty or all-null batch adds nothing: zero().
    assert Sum().arrow_reduce([pa.array([], pa.int64())], 0) == 0
    assert Sum().arrow_reduce([pa.array([None, None], pa.float64())], 2) == 0


def test_sum_arrow_reduce_declines_what_it_cannot_add_exactly():
    assert Sum().arrow_reduce([pa.array(["1", "2"])], 2) is None       # text: per tuple
    assert Sum().arrow_reduce([pa.array([2**62, 2**62])], 2) is None    # would overflow int64


def test_sum_sql_equals_python_per_group(spark):
    from pyspark.sql import functions as F

    schemas = {
        "bigint": [("a", 3), ("a", None), ("a", 4), ("b", None), ("b", None), ("c", -5), ("c", 2**40)],
        "double": [("a", 0.5), ("a", None), ("a", 0.25), ("b", None), ("c", -1.5)],
        "decimal(10,2)": [("a", Decimal("1.10")), ("a", Decimal("2.25")), ("b", None),
                          ("c", Decimal("-3.00"))],
    }
    for type_, rows in schemas.items():
        df = spark.createDataFrame(rows, f"g string, n {type_}")
        got = {r.g: r.s for r in df.groupBy("g").agg(Sum().spark_aggregates([F.col("n")])[0].alias("s"))
               .collect()}
        expected = python_per_group(rows, ["n"], lambda batch: combine_all(Sum(), batch))
        assert got == expected, type_
        assert {g: type(v) for g, v in got.items()} == {g: type(v) for g, v in expected.items()}


# --- Max and Min: Python ----------------------------------------------------------------------

SCORES = [["cat", 3], ["dog", None], ["eel", 5], ["fox", 1], ["gnu", 5]]


def test_max_emits_the_whole_tuple_with_the_largest_value():
    assert run_aggregator(Max("n"), tuples(["word", "n"], SCORES)) == [["gnu", 5]]  # tie: the later


def test_min_emits_the_whole_tuple_with_the_smallest_value():
    assert run_aggregator(Min("n"), tuples(["word", "n"], SCORES)) == [["fox", 1]]
    ties = tuples(["word", "n"], [["a", 1], ["b", 1]])
    assert run_aggregator(Min("n"), ties) == [["b", 1]]  # as Storm: the later tuple wins a tie


def test_max_skips_none_and_emits_nothing_without_a_value():
    assert run_aggregator(Max("n"), tuples(["word", "n"], [["a", None], ["b", None]])) == []
    assert run_aggregator(Min("n"), []) == []
    assert run_aggregator(Max(), tuples(["n"], [[None], [2], [None]])) == [[2]]


def test_without_a_field_one_input_field_is_compared():
    assert run_aggregator(Max(), tuples(["word"], [["b"], ["c"], ["a"]])) == [["c"]]
    assert run_aggregator(Min(), tuples(["word"], [["b"], ["c"], ["a"]])) == [["a"]]


def test_without_a_field_several_input_fields_compare_as_whole_tuples():
    batch = tuples(["a", "b"], [[1, "z"], [2, "a"], [2, "b"], [None, "zz"]])
    assert run_aggregator(Max(), batch) == [[2, "b"]]
    assert run_aggregator(Min(), batch) == [[None, "zz"]]   # None below every value, as in Spark


def test_a_key_function_decides_the_order():
    batch = tuples(["word", "n"], [["tiger", 1], ["ox", 2], ["cat", 3]])
    assert run_aggregator(Max("word", key=len), batch) == [["tiger", 1]]
    assert run_aggregator(Min("word", key=len), batch) == [["ox", 2]]
    assert Max("word", key=len).spark_aggregates([]) is None
    assert Max("word", key=len).spark_having([]) is None


def test_an_unknown_field_fails_naming_it():
    with pytest.raises(KeyError, match="tuple has no field 'score'"):
        run_aggregator(Max("score"), tuples(["word", "n"], SCORES))
    with pytest.raises(TopologyError, match=r"Max\('score'\): field 'score' is not among its input "
                                            r"fields \['word', 'n'\]"):
        Max("score").bind(["word", "n"])


def test_the_sql_form_needs_bind_when_a_field_is_named():
    from pyspark.sql import functions as F

    with pytest.raises(RuntimeError, match=r"call bind\(input_fields\)"):
        Max("n").spark_aggregates([F.col("word"), F.col("n")])
    agg = Max("n")
    agg.bind(["n"])
    with pytest.raises(RuntimeError, match="bound to 1 input fields"):
        agg.spark_aggregates([F.col("word"), F.col("n")])


def test_max_and_min_types_are_the_input_types():
    assert Max("n").spark_types(["string", "int"]) == ["string", "int"]
    assert Min().spark_types(["double"]) == ["double"]


def test_bad_arguments():
    with pytest.raises(TypeError, match="field must be a field name"):
        Max(["n"])
    with pytest.raises(TypeError, match="key must be a callable"):
        Min("n", key="len")


# --- Max and Min: SQL equals Python -----------------------------------------------------------

def sql_per_group(df, agg, fields, *, having=True):
    from pyspark.sql import functions as F

    columns = [F.col(f) for f in fields]
    agg.bind(fields)
    outputs = [c.alias(f"o{i}") for i, c in enumerate(agg.spark_aggregates(columns))]
    condition = agg.spark_having(columns)
    if having and condition is not None:
        result = df.groupBy("g").agg(*outputs, condition.alias("keep")).where("keep").drop("keep")
    else:
        result = df.groupBy("g").agg(*outputs)
    return {r[0]: [list(r[1:])] for r in result.collect()}


# Distinct values per group (Spark picks any of tied rows); group "n" has no value at all.
GROUPED = [
    ("a", "cat", 3, 0.5), ("a", "dog", None, 1.5), ("a", "eel", 5, None), ("a", "fox", 1, 2.5),
    ("b", "gnu", None, 9.0), ("b", None, 7, 0.0),
    ("n", "owl", None, 1.0), ("n", "pig", None, None),
]
SCHEMA = "g string, word string, n int, x double"


@pytest.mark.parametrize("agg_class", [Max, Min])
@pytest.mark.parametrize("field", ["n", "x", "word"])
def test_sql_with_a_field_equals_python(spark, agg_class, field):
    df = spark.createDataFrame(GROUPED, SCHEMA)
    fields = ["word", "n", "x"]
    per_group = python_per_group(GROUPED, fields, lambda batch: run_aggregator(agg_class(field), batch))
    expected = {g: out for g, out in per_group.items() if out}
    assert sql_per_group(df, agg_class(field), fields) == expected
    if field == "n":
        assert "n" not in expected  # group "n" has no value of n: it emits nothing


def test_without_having_a_group_without_values_gives_nulls_in_sql(spark):
    df = spark.createDataFrame(GROUPED, SCHEMA)
    got = sql_per_group(df, Max("n"), ["word", "n", "x"], having=False)
    assert got["n"] == [[None, None, None]]
    assert run_aggregator(Max("n"), tuples(["word", "n", "x"], [r[1:] for r in GROUPED if r[0] == "n"])) == []


@pytest.mark.parametrize("agg_class", [Max, Min])
def test_sql_of_a_single_field_equals_python(spark, agg_class):
    df = spark.createDataFrame(GROUPED, SCHEMA)
    for field in ["n", "x", "word"]:
        expected = {g: out for g, out in python_per_group(
            [(r[0], r[("word", "n", "x").index(field) + 1]) for r in GROUPED], [field],
            lambda batch: run_aggregator(agg_class(), batch)).items() if out}
        assert sql_per_group(df, agg_class(), [field]) == expected, field


@pytest.mark.parametrize("agg_class", [Max, Min])
def test_sql_of_whole_tuples_equals_python(spark, agg_class):
    rows = [("a", 1, "z"), ("a", 2, "a"), ("a", 2, "b"), ("a", None, "zz"), ("a", 2, None),
            ("b", None, None), ("b", None, "q"), ("c", 0, "x")]
    df = spark.createDataFrame(rows, "g string, k int, s string")
    expected = python_per_group(rows, ["k", "s"], lambda batch: run_aggregator(agg_class(), batch))
    assert sql_per_group(df, agg_class(), ["k", "s"]) == expected
