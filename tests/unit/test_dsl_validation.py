"""Build-time validation of every DSL operator, with the exact message users see.

A wrong topology fails with a TopologyError when the operator is called (before
``run``, without Spark): the message names the operator and the field, says what
is wrong and what to do. What a right topology looks like is in test_dsl_shapes.py.
"""

from __future__ import annotations

import pytest
from dsl_topologies import (
    Agg,
    Combine,
    Keep,
    ReturnsNothing,
    Split,
    Updater,
    case,
    keyed,
    message_of,
    other,
    static,
    topology,
    words,
)

from trident_spark import TopologyError, TridentTopology
from trident_spark.builtin import Count, FirstN, MapGet, Sum
from trident_spark.state import MemoryState, SqliteState

FIELDS = ["word", "n", "x"]
UNKNOWN = f"unknown input field 'nope'; the stream has {FIELDS}"


# --- unknown input fields -----------------------------------------------------------------------
UNKNOWN_FIELD_CASES = [
    case(lambda t, s: s.each(["nope"], Split(), ["o"]), f"each(Split): {UNKNOWN}", "each-function"),
    case(lambda t, s: s.each(["word", "nope"], Keep()), f"each(Keep): {UNKNOWN}", "each-filter"),
    case(lambda t, s: s.filter(["nope"], Keep()), f"filter(Keep): {UNKNOWN}", "filter-with-fields"),
    case(lambda t, s: s.partitionAggregate(["nope"], Count(), ["c"]),
         f"partitionAggregate(Count): {UNKNOWN}", "partitionAggregate"),
    case(lambda t, s: s.aggregate(["nope"], Count(), ["c"]), f"aggregate(Count): {UNKNOWN}", "aggregate"),
    case(lambda t, s: s.groupBy(["nope"]), f"groupBy: {UNKNOWN}", "groupBy"),
    case(lambda t, s: s.groupBy(["word"]).aggregate(["nope"], Count(), ["c"]),
         f"aggregate(Count): {UNKNOWN}", "grouped-aggregate"),
    case(lambda t, s: s.groupBy(["word"]).partitionAggregate(["nope"], Count(), ["c"]),
         f"partitionAggregate(Count): {UNKNOWN}", "grouped-partitionAggregate"),
    case(lambda t, s: s.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="p"), ["nope"],
                                                              Count(), ["c"]),
         f"persistentAggregate(Count): {UNKNOWN}", "grouped-persistentAggregate"),
    case(lambda t, s: s.groupBy(["word"]).stateQuery(static(t), ["nope"], MapGet(), ["c"]),
         f"stateQuery(MapGet): {UNKNOWN}", "grouped-stateQuery"),
    case(lambda t, s: s.groupBy(["word"]).each(["nope"], Split(), ["o"]), f"each(Split): {UNKNOWN}",
         "grouped-each"),
    case(lambda t, s: s.chainedAgg().aggregate(["n"], Sum(), ["sum"]).aggregate(["nope"], Count(), ["c"]),
         f"chainedAgg().aggregate(Count): {UNKNOWN}", "chainedAgg-aggregate-member"),
    case(lambda t, s: s.chainedAgg().partitionAggregate(["nope"], Count(), ["c"]),
         f"chainedAgg().partitionAggregate(Count): {UNKNOWN}", "chainedAgg-partitionAggregate-member"),
    case(lambda t, s: s.groupBy(["word"]).chainedAgg().aggregate(["nope"], Sum(), ["sum"]),
         f"chainedAgg().aggregate(Sum): {UNKNOWN}", "grouped-chainedAgg-member"),
    case(lambda t, s: s.minBy("nope"), f"minBy('nope'): {UNKNOWN}", "minBy"),
    case(lambda t, s: s.maxBy("nope"), f"maxBy('nope'): {UNKNOWN}", "maxBy"),
    case(lambda t, s: s.partitionBy(["nope"]), f"partitionBy: {UNKNOWN}", "partitionBy"),
    case(lambda t, s: s.project(["word", "nope"]), f"project: {UNKNOWN}", "project"),
    case(lambda t, s: s.stateQuery(static(t), ["nope"], MapGet(), ["c"]), f"stateQuery(MapGet): {UNKNOWN}",
         "stateQuery"),
    case(lambda t, s: s.partitionPersist(MemoryState.opaque(name="p"), ["nope"], Updater()),
         f"partitionPersist(Updater): {UNKNOWN}", "partitionPersist"),
    case(lambda t, s: s.persistentAggregate(MemoryState.opaque(name="p"), ["nope"], Count(), ["c"]),
         f"persistentAggregate(Count): {UNKNOWN}", "persistentAggregate"),
    case(lambda t, s: t.join(s, ["word"], other(t), ["nope"], ["word", "n", "x", "w"]),
         "join: unknown join field 'nope'; stream 1 (from 'b') has ['k', 'w']", "join-second-stream"),
    case(lambda t, s: t.join([s, other(t)], [["nope"], ["k"]], ["word", "n", "x", "w"]),
         f"join: unknown join field 'nope'; stream 0 (from 's') has {FIELDS}", "join-list-form"),
]


@pytest.mark.parametrize(("build", "expected"), UNKNOWN_FIELD_CASES)
def test_unknown_input_field_names_the_operator_and_the_field(build, expected):
    assert message_of(build) == expected


def test_several_unknown_fields_and_near_misses_are_named():
    assert message_of(lambda t, s: s.each(["wrod", "n", "zzz"], Split(), ["o"])) == (
        f"each(Split): unknown input field 'wrod', 'zzz'; the stream has {FIELDS}; did you mean 'word' "
        "for 'wrod'?")
    assert message_of(lambda t, s: s.groupBy(["Word"])) == (
        f"groupBy: unknown input field 'Word'; the stream has {FIELDS}; did you mean 'word'?")


def test_an_input_field_listed_twice():
    assert message_of(lambda t, s: s.each(["word", "word"], Split(), ["o"])) == (
        "each(Split): input field 'word' is listed twice in ['word', 'word']; list each field once")


@pytest.mark.parametrize(("build", "expected"), [
    case(lambda t, s: s.each([1], Split(), ["o"]),
         "each(Split): input field names must be strings, got 1 in [1]; write them as ['word', 'count']",
         "input-not-a-string"),
    case(lambda t, s: s.each(["word"], Split(), [""]),
         "each(Split): Fields: empty field name in ''; give every output field a name", "empty-output-name"),
    case(lambda t, s: s.aggregate(["n"], Count(), 5),
         "aggregate(Count): output fields must be a list of field names such as ['word'], got 5 (an int)",
         "outputs-not-a-list"),
])
def test_field_lists_that_are_not_lists_of_names(build, expected):
    assert message_of(build) == expected


def test_unknown_field_after_an_aggregation_lists_the_new_fields():
    counted = lambda t, s: s.groupBy(["word"]).aggregate(Count(), ["c"]).each(["n"], Split(), ["o"])  # noqa: E731
    assert message_of(counted) == (
        "each(Split): unknown input field 'n'; the stream has ['word', 'c']")


# --- duplicate output fields --------------------------------------------------------------------
CLASH = f"the stream already has {FIELDS}; choose another name (or project() the old field away first)"
OWN_NAME = "give each output field its own name"
GROUP_CLASH = ("output field 'word' is also a group field; a grouped aggregation emits the group fields "
               "['word'] followed by its output fields, so name the output something else")

DUPLICATE_OUTPUT_CASES = [
    case(lambda t, s: s.each(["word"], Split(), ["n"]), f"each(Split): duplicate output field 'n'; {CLASH}",
         "each-clashes-with-stream"),
    case(lambda t, s: s.each(["word"], Split(), ["o", "o"]),
         f"each(Split): duplicate output field 'o' in ['o', 'o']; {OWN_NAME}", "each-repeated"),
    case(lambda t, s: s.groupBy(["word"]).each(["word"], Split(), ["x"]),
         f"each(Split): duplicate output field 'x'; {CLASH}", "grouped-each-clashes"),
    case(lambda t, s: s.aggregate(["n"], Agg(), ["o", "o"]),
         f"aggregate(Agg): duplicate output field 'o' in ['o', 'o']; {OWN_NAME}", "aggregate-repeated"),
    case(lambda t, s: s.partitionAggregate(["n"], Agg(), ["o", "o"]),
         f"partitionAggregate(Agg): duplicate output field 'o' in ['o', 'o']; {OWN_NAME}",
         "partitionAggregate-repeated"),
    case(lambda t, s: s.groupBy(["word"]).aggregate(Count(), ["word"]), f"aggregate(Count): {GROUP_CLASH}",
         "grouped-aggregate-clashes-with-group-field"),
    case(lambda t, s: s.groupBy(["word"]).partitionAggregate(Count(), ["word"]),
         f"partitionAggregate(Count): {GROUP_CLASH}", "grouped-partitionAggregate-clashes-with-group-field"),
    case(lambda t, s: s.groupBy(["word"]).chainedAgg().aggregate(["n"], Sum(), ["word"]).chainEnd(),
         f"aggregate(Sum): {GROUP_CLASH}", "grouped-chainedAgg-clashes-with-group-field"),
    case(lambda t, s: s.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="p"), Count(),
                                                              ["word"]),
         f"persistentAggregate(Count): {GROUP_CLASH}",
         "grouped-persistentAggregate-clashes-with-group-field"),
    case(lambda t, s: s.map(lambda tup: tup, ["a", "a"]),
         f"map(<lambda>): duplicate output field 'a' in ['a', 'a']; {OWN_NAME}", "map-repeated"),
    case(lambda t, s: s.flatMap(lambda tup: [tup], ["a", "b", "a"]),
         f"flatMap(<lambda>): duplicate output field 'a' in ['a', 'b', 'a']; {OWN_NAME}", "flatMap-repeated"),
    case(lambda t, s: s.stateQuery(static(t), ["word"], MapGet(), ["x"]),
         f"stateQuery(MapGet): duplicate output field 'x'; {CLASH}", "stateQuery-clashes-with-stream"),
    case(lambda t, s: s.stateQuery(static(t), ["word"], MapGet(), ["c", "c"]),
         f"stateQuery(MapGet): duplicate output field 'c' in ['c', 'c']; {OWN_NAME}", "stateQuery-repeated"),
    case(lambda t, s: s.partitionPersist(MemoryState.opaque(name="p"), ["word"], Updater(), ["o", "o"]),
         f"partitionPersist(Updater): duplicate output field 'o' in ['o', 'o']; {OWN_NAME}",
         "partitionPersist-repeated"),
    case(lambda t, s: t.join(*keyed(t)[:1], ["k"], other(t, "c", ("k", "w")), ["k"], ["k", "v", "v"]),
         f"join: duplicate output field 'v' in ['k', 'v', 'v']; {OWN_NAME}", "join-repeated"),
]


@pytest.mark.parametrize(("build", "expected"), DUPLICATE_OUTPUT_CASES)
def test_duplicate_output_field_names_the_operator_and_the_field(build, expected):
    assert message_of(build) == expected


@pytest.mark.parametrize(("build", "expected"), [
    case(lambda t, s: s.chainedAgg().aggregate(["n"], Sum(), ["c"]).aggregate(Count(), ["c"]).chainEnd(),
         "chainedAgg: output field 'c' is declared by both aggregate(Sum) (aggregator 1) and "
         "aggregate(Count) (aggregator 2); chained aggregators emit side by side, so give each output "
         "field its own name",
         "ungrouped"),
    case(lambda t, s: (s.groupBy(["word"]).chainedAgg().partitionAggregate(Count(), ["c"])
                       .partitionAggregate(["n"], Sum(), ["s"]).partitionAggregate(Count(), ["s"])
                       .chainEnd()),
         "chainedAgg: output field 's' is declared by both partitionAggregate(Sum) (aggregator 2) and "
         "partitionAggregate(Count) (aggregator 3); chained aggregators emit side by side, so give each "
         "output field its own name", "grouped-partition"),
    case(lambda t, s: s.chainedAgg().aggregate(Count(), ["c"]).aggregate(Count(), ["c"]).chainEnd(),
         "chainedAgg: output field 'c' is declared by both aggregate(Count) (aggregator 1) and "
         "aggregate(Count) (aggregator 2); chained aggregators emit side by side, so give each output "
         "field its own name",
         "same-class-twice"),
])
def test_chained_aggregators_with_the_same_output_field_name_both(build, expected):
    assert message_of(build) == expected


def test_output_fields_missing():
    assert message_of(lambda t, s: s.aggregate(["n"], Count(), [])) == (
        "aggregate(Count): declare the output fields, e.g. ['word']")
    assert message_of(lambda t, s: s.each(["word"], Split())) == (
        "each(Split): a Function needs output fields, e.g. each(['value'], Split(), ['word']), or [] for a "
        "Function run for its side effects")
    assert message_of(lambda t, s: s.each(["word"], Keep(), ["k"])) == (
        "each(Keep): a Filter emits no fields; drop ['k']")


def test_a_map_state_keeps_one_value():
    assert message_of(lambda t, s: s.groupBy(["word"]).persistentAggregate(
        MemoryState.opaque(name="p"), Count(), ["c", "d"])) == (
        "persistentAggregate(Count): a map state keeps one value per key; declare one output field, "
        "got ['c', 'd']")


# --- join and merge shapes ----------------------------------------------------------------------
def test_join_field_count_mismatch():
    def build(t, s):
        a, b = keyed(t)
        t.join(a, ["k", "v"], b, ["k"], ["k", "v", "w"])

    assert message_of(build) == (
        "join: every stream must join on the same number of fields (at least one); got 2 ['k', 'v'] for "
        "stream 0, 1 ['k'] for stream 1; give each stream its join fields in matching order")


def test_join_on_no_field():
    def build(t, s):
        a, b = keyed(t)
        t.join(a, [], b, [], ["k", "v", "w"])

    assert message_of(build) == (
        "join: every stream must join on the same number of fields (at least one); got 0 [] for stream 0, "
        "0 [] for stream 1; give each stream its join fields in matching order")


@pytest.mark.parametrize("out", [["k", "v"], ["k", "v", "w", "extra"], []])
def test_join_with_the_wrong_number_of_output_fields(out):
    def build(t, s):
        a, b = keyed(t)
        t.join(a, ["k"], b, ["k"], out)

    assert message_of(build) == (
        f"join: {len(out)} output fields {out} declared but the join produces 3: join fields ['k'], then "
        "stream 0's other fields ['v'], then stream 1's other fields ['w']; declare 3 names in that order")


def test_join_of_three_streams_counts_every_stream():
    def build(t, s):
        a, b = keyed(t)
        c = other(t, "c", ("k", "y", "z"))
        t.join([a, b, c], [["k"], ["k"], ["k"]], ["k", "v", "w", "y"])

    assert message_of(build) == (
        "join: 4 output fields ['k', 'v', 'w', 'y'] declared but the join produces 5: join fields ['k'], "
        "then stream 0's other fields ['v'], then stream 1's other fields ['w'], then stream 2's other "
        "fields ['y', 'z']; declare 5 names in that order")


@pytest.mark.parametrize(("how", "expected"), [
    ("sideways", "join: unknown join type 'sideways'; use JoinType.INNER, JoinType.OUTER, a list of them "
                 "per stream, or one of ['full', 'inner', 'left', 'outer', 'right']"),
    (["inner"], "join: give one JoinType (INNER or OUTER) for each of the 2 streams, got ['inner']"),
    (["inner", "left"],
     "join: give one JoinType (INNER or OUTER) for each of the 2 streams, got ['inner', 'left']"),
    (3, "join: the join type must be a JoinType such as JoinType.INNER, or a list of JoinType per stream, "
        "got 3 (an int)"),
])
def test_join_with_a_bad_how(how, expected):
    def build(t, s):
        a, b = keyed(t)
        t.join(a, ["k"], b, ["k"], ["k", "v", "w"], how=how)

    assert message_of(build) == expected


def test_left_join_of_three_streams():
    def build(t, s):
        a, b = keyed(t)
        t.join([a, b, other(t, "c", ("k",))], [["k"], ["k"], ["k"]], ["k", "v", "w"], "left")

    assert message_of(build) == ("join: 'left' needs two streams; give a list of JoinType.INNER/OUTER per "
                                 "stream")


def test_merge_with_different_field_counts():
    def build(t, s):
        t.merge(s, other(t, "b", ("k", "w")))

    assert message_of(build) == (
        f"merge: stream 1 (from 'b') has 2 fields ['k', 'w'] but stream 0 (from 's') has 3 {FIELDS}; project "
        "them to the same number of fields first (the merged stream takes stream 0's field names)")


@pytest.mark.parametrize(("build", "expected"), [
    case(lambda t, s: t.merge(s), "merge: give at least two streams", "merge-one"),
    case(lambda t, s: t.merge([s, s.groupBy(["word"])]),
         "merge: stream 1 is not a Stream but GroupedStream(['word'] of Stream(newStream(s): "
         "['word', 'n', 'x'])) (a GroupedStream); call toStream() on a GroupedStream first", "merge-grouped"),
    case(lambda t, s: t.merge(s, topology()[1]),
         "merge: stream 1 (from 's') belongs to another TridentTopology; build every stream of a merge with "
         "this topology's newStream()", "merge-other-topology"),
    case(lambda t, s: t.join(s, ["word"], topology()[1], ["word"], ["word", "n", "x", "n2", "x2"]),
         "join: stream 1 (from 's') belongs to another TridentTopology; build every stream of a join with "
         "this topology's newStream()", "join-other-topology"),
    case(lambda t, s: t.join(s, ["word"], other(t), ["k"]),
         "join: use join(s1, fields1, s2, fields2, out_fields[, how][, mode])", "join-without-outputs"),
])
def test_merge_and_join_given_wrong_streams(build, expected):
    assert message_of(build) == expected


# --- state ---------------------------------------------------------------------------------------
INDEPENDENT = ("persisting one state from two independent streams would mix their txids (each stream "
               "numbers its own batches). Merge the streams first (topology.merge) and persist once, or use "
               "a separate state")


@pytest.mark.parametrize(("first", "second"), [
    pytest.param(lambda: (f := MemoryState.opaque(name="wc"), f), None, id="same-factory-object"),
    pytest.param(lambda: (MemoryState.opaque(name="wc"), MemoryState.opaque(name="wc")), None,
                 id="two-factories-same-url"),
    pytest.param(lambda: (MemoryState.opaque(name="wc"), MemoryState.opaque(name="wc", cache_size=0)), None,
                 id="same-store-other-cache-settings"),
])
def test_one_state_persisted_from_two_independent_streams(first, second):
    factory_a, factory_b = first()
    t = TridentTopology()
    words(t, "a").persistentAggregate(factory_a, Count(), ["count"])
    with pytest.raises(TopologyError) as info:
        words(t, "b").persistentAggregate(factory_b, Count(), ["count"])
    assert str(info.value) == (
        "persistentAggregate(Count) on stream 'b': state memory://wc?type=opaque is already persisted by "
        f"persistentAggregate(Count) on stream 'a'; {INDEPENDENT}")


def test_one_sqlite_state_from_partition_persist_and_persistent_aggregate(tmp_path):
    path = str(tmp_path / "s.db")
    t = TridentTopology()
    other(t, "a", ("word",)).partitionPersist(SqliteState.opaque(path=path, table="wc"), ["word"], Updater())
    with pytest.raises(TopologyError) as info:
        words(t, "b").persistentAggregate(SqliteState.transactional(path=path, table="wc"), Count(), ["c"])
    url = SqliteState.opaque(path=path, table="wc").url
    assert str(info.value) == (
        f"persistentAggregate(Count) on stream 'b': state {url} is already persisted by "
        f"partitionPersist(Updater) on stream 'a'; {INDEPENDENT}")


def test_one_state_persisted_twice_from_the_same_stream():
    t = TridentTopology()
    grouped = words(t, "a")
    grouped.persistentAggregate(MemoryState.opaque(name="wc"), Count(), ["count"])
    with pytest.raises(TopologyError) as info:
        grouped.persistentAggregate(MemoryState.opaque(name="wc"), Combine(), ["count"])
    assert str(info.value) == (
        "persistentAggregate(Combine) on stream 'a': state memory://wc?type=opaque is already persisted by "
        "persistentAggregate(Count) on the same stream; two writes of one state in one batch would overwrite "
        "each other (the second looks like a replay of the txid). Persist it once (chainedAgg() computes "
        "several values in one pass), or use a separate state")


def test_distinct_states_and_a_merged_stream_may_persist():
    t = TridentTopology()
    words(t, "a").persistentAggregate(MemoryState.opaque(name="wc-a"), Count(), ["count"])
    words(t, "b").persistentAggregate(MemoryState.opaque(name="wc-b"), Count(), ["count"])
    merged = t.merge(other(t, "c", ("word",)), other(t, "d", ("word",)))
    state = merged.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="wc"), Count(), ["count"])
    assert state.newValuesStream().getOutputFields() == ["word", "count"]
    t.newStaticState(MemoryState.opaque(name="wc"))  # reading it too is fine


def test_state_query_on_a_state_of_another_topology():
    first, s1 = topology()
    counts = s1.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="wc"), Count(), ["count"])
    assert message_of(lambda t, s: s.stateQuery(counts, ["word"], MapGet(), ["count"])) == (
        "stateQuery(MapGet): state memory://wc?type=opaque belongs to another TridentTopology; query a state "
        "of this topology (persistentAggregate, partitionPersist or newStaticState)")
    other_static = first.newStaticState(MemoryState.opaque(name="ro"))
    assert message_of(lambda t, s: s.groupBy(["word"]).stateQuery(other_static, ["word"], MapGet(),
                                                                   ["count"])) == (
        "stateQuery(MapGet): state memory://ro?type=opaque belongs to another TridentTopology; query a state "
        "of this topology (persistentAggregate, partitionPersist or newStaticState)")


@pytest.mark.parametrize(("build", "expected"), [
    case(lambda t, s: s.stateQuery(MemoryState.opaque(name="wc"), ["word"], MapGet(), ["c"]),
         "stateQuery(MapGet): expected a TridentState, got memory://wc?type=opaque (a MemoryState); "
         "pass what persistentAggregate or partitionPersist returned, or "
         "topology.newStaticState(factory) for a state this topology only reads",
         "stateQuery-given-a-factory"),
    case(lambda t, s: s.persistentAggregate(static(t, "wc"), Count(), ["c"]),
         "persistentAggregate(Count): got the TridentState memory://wc?type=opaque; persisting takes a state "
         "factory such as SqliteState.opaque(path='/tmp/wc.db') (to read a TridentState use stateQuery)",
         "persistentAggregate-given-a-TridentState"),
    case(lambda t, s: s.partitionPersist("memory://wc", ["word"], Updater()),
         "partitionPersist(Updater): got the string 'memory://wc'; pass a state factory: "
         "parse_state_url('memory://wc') from trident_spark.state, or e.g. "
         "SqliteState.opaque(path='/tmp/wc.db')",
         "partitionPersist-given-a-url"),
    case(lambda t, s: t.newStaticState(MemoryState),
         "newStaticState: expected a state factory (with Storm's makeState(conf, metrics, partitionIndex, "
         "numPartitions) or makeState(conf, partition_index, num_partitions), or a built-in store's), got "
         "the class MemoryState (pass an instance: MemoryState(...)); e.g. "
         "SqliteState.opaque(path='/tmp/wc.db') or parse_state_url('sqlite:///tmp/wc.db?table=wc')",
         "newStaticState-given-a-class"),
    case(lambda t, s: t.newStaticState(MemoryState.opaque(name="wc").open()),
         "newStaticState: got the opened state OpaqueMap(memory://wc) (what open_state(url) returns, for "
         "reads outside Spark); a topology takes the state's settings, which it opens on the executors: "
         "parse_state_url(url) from trident_spark.state, or e.g. SqliteState.opaque(path='/tmp/wc.db')",
         "newStaticState-given-an-opened-state"),
    case(lambda t, s: t.newStaticState(static(t, "ro")).newValuesStream(),
         "newStaticState: got the TridentState memory://ro?type=opaque; persisting takes a state factory "
         "such as SqliteState.opaque(path='/tmp/wc.db') (to read a TridentState use stateQuery)",
         "newStaticState-given-a-TridentState"),
    case(lambda t, s: static(t, "ro").newValuesStream(),
         "newValuesStream: memory://ro?type=opaque is a static state (newStaticState); only a state this "
         "topology writes has new values: call newValuesStream() on the TridentState that "
         "persistentAggregate or partitionPersist returned", "newValuesStream-on-a-static-state"),
])
def test_wrong_state_arguments(build, expected):
    assert message_of(build) == expected


# --- wrong kinds of operation -------------------------------------------------------------------
AGGREGATOR_HINT = "aggregators go to aggregate(), partitionAggregate() or persistentAggregate()"
AGGREGATE_EXPECTED = "expected an Aggregator, CombinerAggregator or ReducerAggregator, got"
PERSIST_EXPECTED = "expected a CombinerAggregator or ReducerAggregator, got"
MAP_STATE_HINT = ("a map state keeps one value per key, which only a CombinerAggregator or "
                  "ReducerAggregator can update: implement one of those, or aggregate() first and "
                  "partitionPersist() the result")

WRONG_KIND_CASES = [
    case(lambda t, s: s.each(["word"], Count(), ["c"]),
         f"each(Count): expected a BaseFunction or BaseFilter, got Count() (a CombinerAggregator); "
         f"{AGGREGATOR_HINT}", "each-combiner"),
    case(lambda t, s: s.each(["word"], Agg(), ["c"]),
         f"each(Agg): expected a BaseFunction or BaseFilter, got Agg (an Aggregator); {AGGREGATOR_HINT}",
         "each-aggregator"),
    case(lambda t, s: s.each(["word"], MapGet(), ["c"]),
         "each(MapGet): expected a BaseFunction or BaseFilter, got MapGet() (a QueryFunction); "
         "a QueryFunction goes to stateQuery(state, inputs, function, outputs)", "each-query-function"),
    case(lambda t, s: s.each(["word"], len, ["c"]),
         "each(builtin_function_or_method): expected a BaseFunction or BaseFilter, got len "
         "(a plain function); for a plain callable use map(), flatMap() or filter()", "each-plain-callable"),
    case(lambda t, s: s.each(["word"], Split, ["c"]),
         "each(type): expected a BaseFunction or BaseFilter, got the class Split (pass an instance: "
         "Split(...)); subclass BaseFunction (execute(tuple, collector)) or BaseFilter (isKeep(tuple))",
         "each-class-not-instance"),
    case(lambda t, s: s.each(["word"], "split", ["c"]),
         "each(str): expected a BaseFunction or BaseFilter, got 'split' (a str); subclass BaseFunction "
         "(execute(tuple, collector)) or BaseFilter (isKeep(tuple))", "each-string"),
    case(lambda t, s: s.groupBy(["word"]).each(["word"], Sum(), ["c"]),
         f"each(Sum): expected a BaseFunction or BaseFilter, got Sum() (a CombinerAggregator); "
         f"{AGGREGATOR_HINT}", "grouped-each-combiner"),
    case(lambda t, s: s.filter(Split()),
         "filter: expected a BaseFilter or a predicate (a callable taking the tuple), got Split (a Function)",
         "filter-function"),
    case(lambda t, s: s.filter(["word"], 3),
         "filter: expected a BaseFilter or a predicate (a callable taking the tuple), got 3 (an int)",
         "filter-int"),
    case(lambda t, s: s.map(Split(), ["o"]),
         "map: expected a MapFunction or a callable taking the tuple, got Split (a Function)",
         "map-function"),
    case(lambda t, s: s.flatMap(None),
         "flatMap: expected a FlatMapFunction or a callable taking the tuple, got None (a NoneType)",
         "flatMap-none"),
    case(lambda t, s: s.peek(Keep()),
         "peek: expected a Consumer or a callable taking the tuple, got Keep (a Filter)", "peek-filter"),
    case(lambda t, s: s.aggregate(["word"], Split(), ["c"]),
         f"aggregate(Split): {AGGREGATE_EXPECTED} Split (a Function); a Function goes to each()",
         "aggregate-function"),
    case(lambda t, s: s.partitionAggregate(["word"], Keep(), ["c"]),
         f"partitionAggregate(Keep): {AGGREGATE_EXPECTED} Keep (a Filter); e.g. Count(), Sum() or a subclass "
         "of CombinerAggregator", "partitionAggregate-filter"),
    case(lambda t, s: s.groupBy(["word"]).aggregate(["word"], Split(), ["c"]),
         f"aggregate(Split): {AGGREGATE_EXPECTED} Split (a Function); a Function goes to each()",
         "grouped-aggregate-function"),
    case(lambda t, s: s.chainedAgg().aggregate(["word"], Split(), ["c"]),
         f"chainedAgg().aggregate(Split): {AGGREGATE_EXPECTED} Split (a Function); a Function goes to each()",
         "chainedAgg-function"),
    case(lambda t, s: s.stateQuery(static(t), ["word"], Split(), ["c"]),
         "stateQuery(Split): expected a QueryFunction such as MapGet(), got Split (a Function); subclass "
         "QueryFunction (batchRetrieve(state, tuples), execute(tuple, result, collector))",
         "stateQuery-function"),
    case(lambda t, s: s.partitionPersist(MemoryState.opaque(name="p"), ["word"], Split()),
         "partitionPersist(Split): expected a StateUpdater, got Split (a Function); subclass StateUpdater "
         "(updateState(state, tuples, collector))", "partitionPersist-function"),
    case(lambda t, s: s.partitionPersist(MemoryState.opaque(name="p"), ["word"], Count(), ["c"]),
         "partitionPersist(Count): expected a StateUpdater, got Count() (a CombinerAggregator); subclass "
         "StateUpdater (updateState(state, tuples, collector)); to fold an aggregator into a map state use "
         "persistentAggregate", "partitionPersist-combiner"),
    case(lambda t, s: s.persistentAggregate(MemoryState.opaque(name="p"), ["word"], Agg(), ["c"]),
         f"persistentAggregate(Agg): {PERSIST_EXPECTED} Agg (an Aggregator); {MAP_STATE_HINT}",
         "persistentAggregate-plain-aggregator"),
    case(lambda t, s: s.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="p"), Agg(), ["c"]),
         f"persistentAggregate(Agg): {PERSIST_EXPECTED} Agg (an Aggregator); {MAP_STATE_HINT}",
         "grouped-persistentAggregate-plain-aggregator"),
    case(lambda t, s: s.persistentAggregate(MemoryState.opaque(name="p"), Split(), ["c"]),
         f"persistentAggregate(Split): {PERSIST_EXPECTED} Split (a Function); e.g. Count() or Sum()",
         "persistentAggregate-function"),
]


@pytest.mark.parametrize(("build", "expected"), WRONG_KIND_CASES)
def test_wrong_kind_of_operation(build, expected):
    assert message_of(build) == expected


# --- other misuse -------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, -1, "2", 2.0, True, None])
def test_parallelism_hint_must_be_a_positive_int(n):
    assert message_of(lambda t, s: s.each(["word"], Split(), ["o"]).parallelismHint(n)) == (
        f"parallelismHint({n!r}) on each(Split): the partition count must be an int >= 1, "
        "e.g. parallelismHint(4)")


def test_parallelism_hint_of_states():
    assert message_of(lambda t, s: s.groupBy(["word"]).persistentAggregate(
        MemoryState.opaque(name="p"), Count(), ["c"]).parallelismHint(0)) == (
        "parallelismHint(0) on persistentAggregate(Count): the partition count must be an int >= 1, "
        "e.g. parallelismHint(4)")
    assert message_of(lambda t, s: static(t).parallelismHint(-1)) == (
        "parallelismHint(-1) on the static state memory://st?type=opaque: the partition count must be an "
        "int >= 1, e.g. parallelismHint(4)")


@pytest.mark.parametrize(("build", "expected"), [
    case(lambda t, s: s.chainedAgg().aggregate(["n"], Sum(), ["s"]).partitionAggregate(Count(), ["c"]),
         "chainedAgg: partitionAggregate(Count) cannot follow aggregate(Sum) in one chain; chain either "
         "aggregate() calls (the whole batch) or partitionAggregate() calls (each partition), not both",
         "aggregate-then-partitionAggregate"),
    case(lambda t, s: s.groupBy(["word"]).chainedAgg().partitionAggregate(Count(), ["c"]).aggregate(
        ["n"], Sum(), ["s"]),
         "chainedAgg: aggregate(Sum) cannot follow partitionAggregate(Count) in one chain; chain either "
         "aggregate() calls (the whole batch) or partitionAggregate() calls (each partition), not both",
         "grouped-partitionAggregate-then-aggregate"),
    case(lambda t, s: s.chainedAgg().chainEnd(),
         "chainEnd: nothing was chained; add aggregate(...) or partitionAggregate(...) after chainedAgg(), "
         "then call chainEnd()", "chainEnd-empty"),
    case(lambda t, s: s.groupBy(["word"]).chainedAgg().chainEnd(),
         "chainEnd: nothing was chained; add aggregate(...) or partitionAggregate(...) after chainedAgg(), "
         "then call chainEnd()", "grouped-chainEnd-empty"),
    case(lambda t, s: s.applyAssembly(Count()),
         "applyAssembly: expected an Assembly (an object with apply(stream)), got Count() (a "
         "CombinerAggregator); e.g. applyAssembly(FirstN(3, 'score'))", "applyAssembly-aggregator"),
    case(lambda t, s: s.applyAssembly(FirstN),
         "applyAssembly: expected an Assembly (an object with apply(stream)), got the class FirstN (pass an "
         "instance: FirstN(...)); e.g. applyAssembly(FirstN(3, 'score'))", "applyAssembly-class"),
    case(lambda t, s: s.applyAssembly(ReturnsNothing()),
         "applyAssembly(ReturnsNothing): apply(stream) returned None (a NoneType); it must return the "
         "Stream it built", "applyAssembly-returns-none"),
    case(lambda t, s: s.minBy(["n"]), "minBy: give one field name, e.g. minBy('n'); got ['n']",
         "minBy-list"),
    case(lambda t, s: s.maxBy("n", key=3),
         "maxBy('n'): key must be a callable that orders values, got 3 (an int)", "maxBy-bad-key"),
    case(lambda t, s: s.groupBy([]), "groupBy: name at least one field to group by", "groupBy-nothing"),
    case(lambda t, s: s.partitionBy([]), "partitionBy: name at least one field", "partitionBy-nothing"),
    case(lambda t, s: s.project([]), f"project: name at least one field to keep; the stream has {FIELDS}",
         "project-nothing"),
    case(lambda t, s: s.name(""), "name('') on newStream(s): give a non-empty string, e.g. name('split')",
         "name-empty"),
    case(lambda t, s: s.aggregate(Count()),
         "aggregate: use aggregate([input_fields], aggregator, output_fields)", "aggregate-arity"),
    case(lambda t, s: s.stateQuery(static(t), MapGet()),
         "stateQuery: use stateQuery(state, [input_fields], QueryFunction, output_fields)",
         "stateQuery-arity"),
])
def test_misuse(build, expected):
    assert message_of(build) == expected


# --- a failed call leaves the topology as it was ------------------------------------------------
def leaves(t: TridentTopology) -> list[list[str]]:
    return [sorted(o.node.label for o in q.outputs) for q in t.queries()]


@pytest.mark.parametrize("fail", [
    pytest.param(lambda t, s: words(t, "b").persistentAggregate(MemoryState.opaque(name="wc"), Count(),
                                                                ["c"]), id="persist-conflict"),
    pytest.param(lambda t, s: s.groupBy(["word"]).stateQuery(static(t), ["nope"], MapGet(), ["c"]),
                 id="grouped-stateQuery"),
    pytest.param(lambda t, s: s.applyAssembly(ReturnsNothing()), id="assembly"),
    pytest.param(lambda t, s: s.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="wc"), Count(),
                                                                      ["c"]), id="same-stream-persist"),
])
def test_a_failed_call_adds_nothing_to_the_topology(fail):
    t, s = topology()
    s.groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="wc"), Count(), ["count"])
    before = leaves(t)
    with pytest.raises(TopologyError):
        fail(t, s)
    after = [q for q in leaves(t) if q != ["newStream(b)"]]  # words(t, "b") made a new spout
    assert after == before == [["persistentAggregate(Count)"]]


