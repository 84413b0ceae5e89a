"""Split: one tuple per word; the SQL form emits exactly what str.split() (or re.split) gives."""

from __future__ import annotations

import sys

import pytest

from trident_spark.builtin import Split
from trident_spark.errors import TopologyError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import TridentCollector

CORPUS = [
    "the cat sat on the mat",
    "  leading and trailing spaces  ",
    "several   spaces\tand\t\ttabs",
    "lines\nand\r\nwindows\rreturns\n",
    "\v\f vertical tab and form feed",
    "",
    " ",
    "\t\n ",
    "oneword",
    None,
    "Four score and seven years ago, our fathers brought forth on this continent",
    "unicode\u00a0no-break\u3000ideographic\u2003em\u2028line\u2029para\u0085next",
    "separators\x1cfile\x1dgroup\x1erecord\x1funit",
    "zero\u200bwidth is not whitespace",
    "émigré naïve café",
]


def emitted(function, value):
    out = TridentCollector()
    function.execute(TridentTuple([value], Fields("value")), out)
    return [values[0] for values in out.emitted]


def test_split_on_whitespace_is_str_split():
    for text in CORPUS:
        assert emitted(Split(), text) == ([] if text is None else text.split()), repr(text)


def test_split_with_a_pattern_drops_empty_pieces():
    assert emitted(Split(","), "a,,b,") == ["a", "b"]
    assert emitted(Split(r"\s*;\s*"), " a ; b;;c ") == [" a", "b", "c "]
    assert emitted(Split("[,;]"), ",,;") == []


def test_none_emits_nothing_and_other_values_are_a_clear_error():
    assert emitted(Split(), None) == []
    with pytest.raises(TypeError, match=r"Split\(\) splits text, but field 'value' holds int 3"):
        emitted(Split(), 3)


def test_split_reads_the_first_input_field():
    out = TridentCollector()
    Split().execute(TridentTuple(["a b", "c d"], Fields("x", "y")), out)
    assert out.emitted == [["a"], ["b"]]


def test_a_bad_pattern_fails_when_built():
    with pytest.raises(ValueError, match=r"Split: '\(' is not a valid regular expression"):
        Split("(")
    with pytest.raises(TypeError, match="pattern must be a regular expression"):
        Split(3)


def test_function_types():
    assert Split().function_types(1) == ["string"]
    with pytest.raises(TopologyError, match=r"Split\(\) emits one field \(the word\), but 2 output fields"):
        Split().function_types(2)


def test_the_sql_form_splits_on_exactly_pythons_whitespace(spark):
    """Every code point (but surrogates), between two letters: Spark's split of the SQL
    form and str.split() agree (the regex is Java's; Python's re cannot read it)."""
    from pyspark.sql import functions as F

    points = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    rows = ["".join(f"x{chr(c)}{chr(c)}y" for c in points[i:i + 8192]) for i in range(0, len(points), 8192)]
    [column] = Split().spark_columns([F.col("value")])
    df = spark.createDataFrame([(i, text) for i, text in enumerate(rows)], "id int, value string")
    got: dict[int, list[str]] = {i: [] for i in range(len(rows))}
    for row in df.select("id", column.alias("word")).collect():
        got[row.id].append(row.word)
    assert got == {i: text.split() for i, text in enumerate(rows)}


def sql_words(spark, function, corpus):
    from pyspark.sql import functions as F

    df = spark.createDataFrame(list(enumerate(corpus)), "id int, value string").coalesce(1)
    [column] = function.spark_columns([F.col("value")])
    words: dict[int, list[str]] = {i: [] for i in range(len(corpus))}
    for row in df.select("id", column.alias("word")).collect():
        words[row.id].append(row.word)
    return words


def test_sql_split_on_whitespace_equals_python(spark):
    got = sql_words(spark, Split(), CORPUS)
    assert got == {i: emitted(Split(), text) for i, text in enumerate(CORPUS)}
    assert got[CORPUS.index("separators\x1cfile\x1dgroup\x1erecord\x1funit")] == [
        "separators", "file", "group", "record", "unit"]


def test_sql_split_of_every_whitespace_character_equals_python(spark):
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    corpus = [f"a{s}b{s}{s}c{s}" for s in spaces] + [f"{s}x" for s in spaces]
    got = sql_words(spark, Split(), corpus)
    assert got == {i: text.split() for i, text in enumerate(corpus)}


@pytest.mark.parametrize("pattern", [",", r",\s*", r"[,;]+", r"\s*\|\s*", r"\d+"])
def test_sql_split_with_a_pattern_equals_python(spark, pattern):
    corpus = ["a,b, c,,d,", ",,", "", None, "x;y;;z", "p | q|r  |", "a1b22c333", "no separators"]
    got = sql_words(spark, Split(pattern), corpus)
    assert got == {i: emitted(Split(pattern), text) for i, text in enumerate(corpus)}
