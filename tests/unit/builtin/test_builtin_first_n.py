"""FirstN: Trident's assembly (per partition, then global) and its two aggregators."""

from __future__ import annotations

import random

import pytest

from trident_spark.builtin import FirstN
from trident_spark.builtin.first_n import FirstNAgg, FirstNSortedAgg
from trident_spark.fields import Fields, TridentTuple
from trident_spark.operation import TridentCollector

FIELDS = Fields("word", "score")


def batch(rows):
    return [TridentTuple(list(row), FIELDS) for row in rows]


def run(agg, tuples):
    out = TridentCollector()
    state = agg.init(0, out)
    for t in tuples:
        agg.aggregate(state, t, out)
    agg.complete(state, out)
    return out.emitted


ROWS = [("a", 5), ("b", 1), ("c", 9), ("d", 5), ("e", None), ("f", 3)]


# --- FirstNAgg ----------------------------------------------------------------------------------

def test_first_n_in_arrival_order():
    assert run(FirstNAgg(3), batch(ROWS)) == [["a", 5], ["b", 1], ["c", 9]]
    assert run(FirstNAgg(10), batch(ROWS)) == [list(r) for r in ROWS]
    assert run(FirstNAgg(0), batch(ROWS)) == []
    assert run(FirstNAgg(2), []) == []


def test_first_n_emits_as_tuples_arrive():
    agg, out = FirstNAgg(1), TridentCollector()
    state = agg.init(0, out)
    agg.aggregate(state, batch(ROWS)[0], out)
    assert out.emitted == [["a", 5]]          # before complete, as Storm's FirstNAgg


# --- FirstNSortedAgg -----------------------------------------------------------------------------

def test_ascending_by_default_smallest_first():
    # Storm's PriorityQueue hands out its least element first: reverse=False gives the n smallest.
    assert run(FirstNSortedAgg(3, "score"), batch(ROWS)) == [["b", 1], ["f", 3], ["a", 5]]


def test_reverse_gives_the_largest_first():
    assert run(FirstNSortedAgg(3, "score", reverse=True), batch(ROWS)) == [["c", 9], ["a", 5], ["d", 5]]


def test_ties_keep_arrival_order():
    rows = [("a", 1), ("b", 2), ("c", 1), ("d", 2), ("e", 1)]
    assert run(FirstNSortedAgg(4, "score"), batch(rows)) == [["a", 1], ["c", 1], ["e", 1], ["b", 2]]
    assert run(FirstNSortedAgg(3, "score", reverse=True), batch(rows)) == [["b", 2], ["d", 2], ["a", 1]]


def test_none_sorts_last_in_both_directions():
    assert run(FirstNSortedAgg(10, "score"), batch(ROWS))[-1] == ["e", None]
    assert run(FirstNSortedAgg(10, "score", reverse=True), batch(ROWS))[-1] == ["e", None]
    assert ["e", None] not in run(FirstNSortedAgg(5, "score"), batch(ROWS))


def test_sorted_by_text():
    rows = [("pear", 0), ("apple", 0), ("fig", 0)]
    sort_by_word = FirstNSortedAgg(2, "word")
    assert run(sort_by_word, batch(rows)) == [["apple", 0], ["fig", 0]]


@pytest.mark.parametrize("reverse", [False, True])
def test_many_tuples_stay_bounded_and_exact(reverse):
    rng = random.Random(7)
    rows = [(f"w{i}", rng.choice([None, *range(50)])) for i in range(5000)]
    agg = FirstNSortedAgg(7, "score", reverse=reverse)
    out = TridentCollector()
    state = agg.init(0, out)
    for t in batch(rows):
        agg.aggregate(state, t, out)
        assert len(state) < 2 * 7 + 64
    agg.complete(state, out)
    values = [r for r in rows if r[1] is not None]
    expected = sorted(values, key=lambda r: r[1], reverse=reverse)[:7]   # stable: ties by arrival
    assert out.emitted == [list(r) for r in expected]


def test_an_unknown_sort_field_fails_naming_it():
    with pytest.raises(KeyError, match="tuple has no field 'rank'"):
        run(FirstNSortedAgg(2, "rank"), batch(ROWS))


def test_types_are_the_input_types():
    assert FirstNAgg(1).spark_types(["string", "int"]) == ["string", "int"]
    assert FirstNSortedAgg(1, "score").spark_types(["string", "int"]) == ["string", "int"]


@pytest.mark.parametrize("n", [-1, 1.5, "3", True])
def test_n_must_be_a_count(n):
    with pytest.raises(ValueError, match="FirstN: n must be an int >= 0"):
        FirstN(n)


# --- the assembly ---------------------------------------------------------------------------------

class FakeStream:
    """Records the operators called on it; each returns a new FakeStream sharing the record."""

    def __init__(self, fields, calls=None):
        self.fields = Fields(fields)
        self.calls = [] if calls is None else calls

    def getOutputFields(self):
        return self.fields

    def partitionAggregate(self, input_fields, aggregator, output_fields):
        self.calls.append(("partitionAggregate", list(input_fields), aggregator, list(output_fields)))
        return FakeStream(output_fields, self.calls)

    def global_(self):
        self.calls.append(("global_",))
        return FakeStream(self.fields, self.calls)


@pytest.mark.parametrize(("first_n", "agg_type"), [(FirstN(3), FirstNAgg),
                                                    (FirstN(3, "score", reverse=True), FirstNSortedAgg)])
def test_apply_is_tridents_plan(first_n, agg_type):
    stream = FakeStream(["word", "score"])
    result = first_n.apply(stream)
    fields = ["word", "score"]
    assert stream.calls == [("partitionAggregate", fields, first_n.agg, fields), ("global_",),
                            ("partitionAggregate", fields, first_n.agg, fields)]
    assert isinstance(first_n.agg, agg_type)
    assert list(result.getOutputFields()) == fields


def test_the_plan_gives_the_top_n_of_the_whole_batch():
    first_n = FirstN(3, "score", reverse=True)
    partitions = [batch(ROWS[:3]), batch(ROWS[3:])]
    partial = [TridentTuple(values, FIELDS) for p in partitions for values in run(first_n.agg, p)]
    assert run(first_n.agg, partial) == [["c", 9], ["a", 5], ["d", 5]]
    assert run(FirstN(3, "score").agg, [t for p in partitions for t in p]) == [["b", 1], ["f", 3], ["a", 5]]
