"""What a right topology looks like when built: the output fields of every operator
(Trident's rules), their types and labels, and how ``queries()`` splits a topology.

The wrong ones, and their messages, are in test_dsl_validation.py.
"""

from __future__ import annotations

import pytest
from dsl_topologies import (
    Agg,
    Get,
    Identity,
    Keep,
    Reduce,
    Split,
    Updater,
    case,
    keyed,
    other,
    static,
    topology,
    words,
)

from trident_spark import GroupedStream, TridentTopology
from trident_spark.builtin import Count, Equals, FirstN, MapGet, Sum
from trident_spark.state import MemoryState

FIELDS = ["word", "n", "x"]


# --- output fields of every operator (Trident's rules) ------------------------------------------
OUTPUT_FIELD_CASES = [
    case(lambda t, s: s.each(["word"], Split(), ["w2"]), [*FIELDS, "w2"], "each-appends"),
    case(lambda t, s: s.each(["word"], Keep()), FIELDS, "each-filter-keeps"),
    case(lambda t, s: s.filter(Equals()), FIELDS, "filter-keeps"),
    case(lambda t, s: s.filter(lambda tup: True), FIELDS, "filter-callable-keeps"),
    case(lambda t, s: s.map(lambda tup: tup), FIELDS, "map-without-fields-keeps"),
    case(lambda t, s: s.map(lambda tup: [tup[0]], ["only"]), ["only"], "map-with-fields-replaces"),
    case(lambda t, s: s.flatMap(lambda tup: [tup]), FIELDS, "flatMap-without-fields-keeps"),
    case(lambda t, s: s.flatMap(lambda tup: [[1, 2]], ["a", "b"]), ["a", "b"],
         "flatMap-with-fields-replaces"),
    case(lambda t, s: s.peek(lambda tup: None), FIELDS, "peek-keeps"),
    case(lambda t, s: s.project(["x", "word"]), ["x", "word"], "project-keeps-order"),
    case(lambda t, s: s.partitionAggregate(["n"], Sum(), ["sum"]), ["sum"], "partitionAggregate-replaces"),
    case(lambda t, s: s.aggregate(Count(), ["count"]), ["count"], "aggregate-replaces"),
    case(lambda t, s: s.aggregate(["n"], Agg(), ["a", "b"]), ["a", "b"], "aggregate-several-outputs"),
    case(lambda t, s: s.aggregate(["n"], Reduce(), ["r"]), ["r"], "aggregate-reducer"),
    case(lambda t, s: s.chainedAgg().aggregate(["n"], Sum(), ["sum"]).aggregate(Count(), ["count"])
         .chainEnd(), ["sum", "count"], "chainedAgg-side-by-side"),
    case(lambda t, s: s.groupBy(["word"]).aggregate(Count(), ["count"]), ["word", "count"],
         "grouped-aggregate"),
    case(lambda t, s: s.groupBy(["x", "word"]).aggregate(["n"], Agg(), ["a", "b"]), ["x", "word", "a", "b"],
         "grouped-aggregate-group-fields-in-groupBy-order"),
    case(lambda t, s: s.groupBy(["word"]).partitionAggregate(Count(), ["count"]).toStream(),
         ["word", "count"], "grouped-partitionAggregate"),
    case(lambda t, s: s.groupBy(["word"]).chainedAgg().aggregate(["n"], Sum(), ["sum"])
         .aggregate(Count(), ["count"]).chainEnd(), ["word", "sum", "count"], "grouped-chainedAgg"),
    case(lambda t, s: s.groupBy(["word"]).each(["word"], Split(), ["w2"]).toStream(), [*FIELDS, "w2"],
         "grouped-each-appends"),
    case(lambda t, s: s.minBy("n"), FIELDS, "minBy-keeps-fields"),
    case(lambda t, s: s.maxBy("word", key=len), FIELDS, "maxBy-keeps-fields"),
    case(lambda t, s: s.applyAssembly(FirstN(2, "n")), FIELDS, "FirstN-keeps-fields"),
    case(lambda t, s: s.applyAssembly(Identity()), FIELDS, "assembly"),
    case(lambda t, s: s.shuffle().partitionBy(["word"]).global_().batchGlobal().broadcast().localOrShuffle(),
         FIELDS, "repartitioning-keeps-fields"),
    case(lambda t, s: s.parallelismHint(3).name("renamed"), FIELDS, "hint-and-name-keep-fields"),
    case(lambda t, s: s.stateQuery(static(t), ["word"], MapGet(), ["count"]), [*FIELDS, "count"],
         "stateQuery-appends"),
    case(lambda t, s: s.groupBy(["word"]).stateQuery(static(t), ["word"], Get(), ["count"]),
         [*FIELDS, "count"], "grouped-stateQuery-appends"),
    case(lambda t, s: s.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="p"), Count(),
                                                              ["count"]).newValuesStream(),
         ["word", "count"], "newValuesStream-grouped"),
    case(lambda t, s: s.persistentAggregate(MemoryState.opaque(name="p"), ["n"], Reduce(), ["r"])
         .newValuesStream(), ["r"], "newValuesStream-ungrouped"),
    case(lambda t, s: s.partitionPersist(MemoryState.opaque(name="p"), ["word"], Updater(), ["o"])
         .newValuesStream(), ["o"], "partitionPersist-updater-outputs"),
    case(lambda t, s: t.merge(s, other(t, "b", ("p", "q", "r"))), FIELDS, "merge-first-streams-fields"),
    case(lambda t, s: t.join(s, ["word"], other(t, "b", ("k", "w")), ["k"], ["key", "n", "x", "w"]),
         ["key", "n", "x", "w"], "join-key-then-each-streams-others"),
    case(lambda t, s: t.join([*keyed(t), other(t, "c", ("z", "k"))], [["k"], ["k"], ["k"]],
                             ["k", "v", "w", "z"], ["inner", "outer", "outer"]),
         ["k", "v", "w", "z"], "join-three-streams"),
]


@pytest.mark.parametrize(("build", "expected"), OUTPUT_FIELD_CASES)
def test_output_fields(build, expected):
    t, s = topology()
    result = build(t, s)
    assert result.getOutputFields() == expected


def test_types_flow_through_operators():
    t, s = topology()
    assert s.project(["n", "word"]).getOutputFields().types == {"n": "bigint", "word": "object"}
    assert s.minBy("n").getOutputFields().types == {"word": "object", "n": "bigint", "x": "object"}
    joined = t.join(s, ["word"], other(t, "b", ("k", "w:double")), ["k"], ["key", "n", "x", "w"])
    assert joined.getOutputFields().types == {"key": "object", "n": "bigint", "x": "object", "w": "double"}
    assert s.each(["word"], Split(), ["len:int"]).getOutputFields().types["len"] == "int"


def test_grouped_stream_keeps_its_group_fields():
    _, s = topology()
    grouped = s.groupBy(["word"]).each(["word"], Split(), ["w2"])
    assert isinstance(grouped, GroupedStream)
    assert grouped.getGroupFields() == ["word"]
    grouped = s.groupBy(["word"]).partitionAggregate(Count(), ["count"])
    assert isinstance(grouped, GroupedStream)
    assert grouped.getGroupFields() == ["word"]


def test_labels_name_the_operator():
    _, s = topology()
    assert s.filter(Keep()).node.label == "filter(Keep)"
    assert s.each(["word"], Keep()).node.label == "each(Keep)"
    assert s.minBy("n").node.label == "minBy('n')"
    assert s.groupBy(["word"]).aggregate(Count(), ["c"]).node.label == "aggregate(Count)"
    assert s.chainedAgg().aggregate(Count(), ["c"]).aggregate(["n"], Sum(), ["s"]).chainEnd().node.label == (
        "aggregate(Count, Sum)")


# --- how queries() splits a topology ------------------------------------------------------------
def test_independent_spouts_run_as_separate_queries():
    t = TridentTopology()
    a = other(t, "a", ("word",)).each(["word"], Split(), ["w2"])
    b = other(t, "b", ("word",)).filter(Keep())
    queries = t.queries()
    assert [q.name for q in queries] == ["a", "b"]
    assert [[o.node for o in q.outputs] for q in queries] == [[a.node], [b.node]]


def test_merged_spouts_run_as_one_query():
    t = TridentTopology()
    a, b = other(t, "a", ("word",)), other(t, "b", ("word",))
    merged = t.merge(a, b).each(["word"], Split(), ["w2"])
    [query] = t.queries()
    assert query.name == "a+b"
    assert [s.stream_name for s in query.spouts] == ["a", "b"]
    assert [o.node for o in query.outputs] == [merged.node]


def test_joined_spouts_run_as_one_query_with_a_third_independent():
    t = TridentTopology()
    a, b = keyed(t)
    c = other(t, "c", ("z",)).project(["z"])
    joined = t.join(a, ["k"], b, ["k"], ["k", "v", "w"])
    queries = t.queries()
    assert sorted(q.name for q in queries) == ["a+b", "c"]
    by_name = {q.name: q for q in queries}
    assert [o.node for o in by_name["a+b"].outputs] == [joined.node]
    assert [o.node for o in by_name["c"].outputs] == [c.node]


def test_a_merge_after_a_join_connects_all_three():
    t = TridentTopology()
    a, b = keyed(t)
    joined = t.join(a, ["k"], b, ["k"], ["k", "v", "w"]).project(["k"])
    t.merge(joined, other(t, "c", ("k",)))
    assert [q.name for q in t.queries()] == ["a+b+c"]


def test_outputs_are_the_leaves_and_the_collected_nodes():
    t, s = topology()
    words_ = s.each(["word"], Split(), ["w2"])
    sink = words_.collect()
    kept = words_.filter(Keep())
    counted = words_.groupBy(["w2"]).aggregate(Count(), ["count"])
    counted_sink = counted.collect()
    [query] = t.queries()
    outputs = {id(o.node): o.sinks for o in query.outputs}
    assert outputs == {id(words_.node): [sink], id(kept.node): [], id(counted.node): [counted_sink]}
    assert sink.fields == [*FIELDS, "w2"]
    assert counted_sink.fields == ["w2", "count"]


def test_a_state_query_does_not_connect_the_writer_and_the_reader():
    t = TridentTopology()
    counts = words(t, "a").persistentAggregate(MemoryState.opaque(name="wc"), Count(), ["count"])
    read = other(t, "q", ("word",)).stateQuery(counts, ["word"], MapGet(), ["count"])
    queries = {q.name: q for q in t.queries()}
    assert sorted(queries) == ["a", "q"]
    assert [o.node for o in queries["q"].outputs] == [read.node]
    assert [o.node.label for o in queries["a"].outputs] == ["persistentAggregate(Count)"]

