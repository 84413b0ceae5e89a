"""Debug, Equals, FilterNull and Negate: Trident's semantics, and SQL conditions that keep the same tuples."""

from __future__ import annotations

import pytest

from trident_spark.builtin import Debug, Equals, FilterNull, Negate
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import BaseFilter, CallableFilter, OperationContext

NAN = float("nan")


def t(*values, fields=None):
    return TridentTuple(list(values), Fields(fields or [f"f{i}" for i in range(len(values))]))


# --- Debug ------------------------------------------------------------------------------------

def test_debug_prints_each_tuple_and_keeps_it(capsys):
    assert Debug().isKeep(t("cat", 3, fields=["word", "count"])) is True
    assert Debug("counts").isKeep(t("dog", None, fields=["word", "count"])) is True
    assert capsys.readouterr().out.splitlines() == [
        "DEBUG: [cat, 3]",
        "counts: [dog, null]",
    ]


def test_debug_has_no_sql_form():
    assert Debug().spark_condition([]) is None


# --- Equals -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("values", "kept"), [
    (("cat", "cat"), True),
    (("cat", "cat", "cat"), True),
    (("cat", "dog"), False),
    (("cat", "cat", "dog"), False),
    ((1, 1), True),
    ((1, 2), False),
    (("cat", None), False),     # Storm: a null next to a value is unequal
    ((None, "cat"), False),
    ((None, None), True),       # Storm would throw a NullPointerException; SQL <=> says equal
    ((NAN, NAN), True),         # Java's Double.equals and Spark: NaN equals NaN
    ((NAN, 1.0), False),
    (("cat",), True),           # fewer than two fields: nothing to differ
    ((), True),
])
def test_equals(values, kept):
    assert Equals().isKeep(t(*values)) is kept


# --- FilterNull -------------------------------------------------------------------------------

@pytest.mark.parametrize(("values", "kept"), [
    (("cat", 3), True),
    (("cat", None), False),
    ((None, None), False),
    ((NAN, 0, ""), True),       # NaN, 0 and "" are values, not nulls
    ((), True),
])
def test_filter_null(values, kept):
    assert FilterNull().isKeep(t(*values)) is kept


# --- Negate -----------------------------------------------------------------------------------

class Recording(BaseFilter):
    def __init__(self):
        self.calls = []

    def prepare(self, conf, context):
        self.calls.append(("prepare", conf, context.partition_index))

    def cleanup(self):
        self.calls.append(("cleanup",))

    def isKeep(self, tuple):
        return tuple[0] == "keep"


def test_negate_inverts_and_passes_the_lifecycle_on():
    inner = Recording()
    negated = Negate(inner)
    negated.prepare({"k": 1}, OperationContext(partition_index=2, num_partitions=4, txid=7))
    assert negated.isKeep(t("keep")) is False
    assert negated.isKeep(t("drop")) is True
    negated.cleanup()
    assert inner.calls == [("prepare", {"k": 1}, 2), ("cleanup",)]


def test_negate_accepts_a_plain_predicate():
    negated = Negate(lambda tuple: tuple[0] > 2)
    assert isinstance(negated.filter, CallableFilter)
    assert [negated.isKeep(t(n)) for n in [1, 3]] == [True, False]
    assert negated.spark_condition([]) is None
    assert repr(negated) == "Negate(<lambda>)"


def test_negate_of_something_else_is_a_clear_error():
    with pytest.raises(TypeError, match="Negate needs a filter"):
        Negate("n > 2")


def test_a_filter_and_its_negation_split_a_stream_in_two():
    batch = [t("a", "a"), t("a", None), t(None, None), t("a", "b")]
    kept = [x for x in batch if Equals().isKeep(x)]
    dropped = [x for x in batch if Negate(Equals()).isKeep(x)]
    assert len(kept) + len(dropped) == len(batch)
    assert {id(x) for x in kept}.isdisjoint(id(x) for x in dropped)


# --- SQL conditions equal the Python filters ----------------------------------------------------

class GreaterThanTwo(BaseFilter):
    """A filter whose SQL condition is NULL for a null value (which the Python form drops)."""

    def isKeep(self, tuple):
        return tuple[0] is not None and tuple[0] > 2

    def spark_condition(self, columns):
        return columns[0] > 2

    def __repr__(self):
        return "GreaterThanTwo()"


ROWS = [
    (0, "cat", "cat", "cat", 1.0, 1.0, 0),
    (1, "cat", "dog", "cat", 1.0, 2.0, 3),
    (2, "cat", None, "cat", None, None, None),
    (3, None, None, None, NAN, NAN, 5),
    (4, None, "cat", "cat", NAN, 1.0, None),
    (5, "dog", "dog", None, 3.0, 3.0, 1),
    (6, "", "", "", 0.0, -0.0, 2),
]
SCHEMA = "id int, a string, b string, c string, x double, y double, n int"


def python_kept(filter_, fields):
    names = ["id", "a", "b", "c", "x", "y", "n"]
    kept = []
    for row in ROWS:
        record = dict(zip(names, row, strict=True))
        if filter_.isKeep(TridentTuple([record[f] for f in fields], Fields(fields))):
            kept.append(row[0])
    return kept


def sql_kept(spark, filter_, fields):
    from pyspark.sql import functions as F

    df = spark.createDataFrame(ROWS, SCHEMA)
    condition = filter_.spark_condition([F.col(f) for f in fields])
    assert condition is not None
    return sorted(r.id for r in df.where(condition).select("id").collect())


FILTERS = [
    (Equals(), ["a", "b"]),
    (Equals(), ["a", "b", "c"]),
    (Equals(), ["x", "y"]),
    (Equals(), ["a"]),
    (FilterNull(), ["a", "b"]),
    (FilterNull(), ["a", "b", "c", "x", "y"]),
    (FilterNull(), ["x"]),
    (GreaterThanTwo(), ["n"]),
    (Negate(Equals()), ["a", "b"]),
    (Negate(Equals()), ["x", "y"]),
    (Negate(FilterNull()), ["a", "b", "c"]),
    (Negate(GreaterThanTwo()), ["n"]),           # NULL inner condition: the negation keeps the row
    (Negate(Negate(GreaterThanTwo())), ["n"]),
]


@pytest.mark.parametrize(("filter_", "fields"), FILTERS,
                         ids=[f"{f!r}-{'-'.join(fields)}" for f, fields in FILTERS])
def test_sql_condition_keeps_what_python_keeps(spark, filter_, fields):
    assert sql_kept(spark, filter_, fields) == python_kept(filter_, fields)


def test_the_negation_of_a_null_condition_keeps_the_row(spark):
    assert sql_kept(spark, GreaterThanTwo(), ["n"]) == [1, 3]
    # n is null in rows 2 and 4: GreaterThanTwo drops them (its condition is NULL), so Negate keeps them.
    assert sql_kept(spark, Negate(GreaterThanTwo()), ["n"]) == [0, 2, 4, 5, 6]


def test_negate_of_a_python_only_filter_has_no_sql_form():
    assert Negate(Debug()).spark_condition([]) is None
