"""Untyped fields carry any Python value, end to end on Spark (issue "Port line by line", item 1).

A Function defined in this test module (no registration: local mode ships it) emits ints,
floats, dicts and None into undeclared fields. The stream is grouped by an untyped int
field, counted and summed, persisted into SQLite, Redis and Elasticsearch, and read back
with stateQuery (from a stream of untyped questions: 1, 1.0 and True ask for one key) and
with ``open_state(...).multiGet``: the same Python values come back.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests.integration.state.state_backends import unique_name
from trident_spark import TridentTopology
from trident_spark.builtin import Count, Equals, FilterNull, MapGet, Max, Min, Sum
from trident_spark.operation import BaseFunction
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import ElasticsearchState, RedisState, SqliteState, open_state

pytestmark = pytest.mark.integration

WORDS = [
    [["cat"], ["dog"], ["horse"], ["ox"]],
    [["kitten"], ["eel"], [""]],
]


class Describe(BaseFunction):
    """A word's length (int), half of it (float), a dict about it, and None."""

    def execute(self, tuple: Any, collector: Any) -> None:
        word = tuple.getString(0)
        collector.emit([len(word), len(word) / 2, {"word": word, "letters": sorted(set(word))}, None])


class When(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([datetime.datetime(2024, 5, tuple[0] + 1), (tuple[0], "t")])


def _expected() -> tuple[dict[int, int], dict[int, float]]:
    counts: dict[int, int] = {}
    sums: dict[int, float] = {}
    for batch in WORDS:
        for (word,) in batch:
            counts[len(word)] = counts.get(len(word), 0) + 1
            sums[len(word)] = sums.get(len(word), 0) + len(word) / 2
    return counts, sums


def _states(tag: str, tmp: Any, redis_url: str, elasticsearch_url: str) -> dict[str, tuple[Any, Any]]:
    def both(make: Any) -> tuple[Any, Any]:
        return make("count"), make("sum")

    return {
        "sqlite": both(lambda what: SqliteState.opaque(path=str(tmp / f"{tag}.db"), table=what)),
        "redis": both(lambda what: RedisState.opaque(url=redis_url, key_prefix=f"{tag}-{what}")),
        "elasticsearch": both(lambda what: ElasticsearchState.opaque(hosts=[elasticsearch_url],
                                                                     index=f"{tag}-{what}")),
    }


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory, redis_url: str,
        elasticsearch_url: str) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("untyped")
    words = FeederBatchSpout(["word:string"])
    questions = FeederBatchSpout(["n"])
    for batch in WORDS:
        words.feed(batch)

    topology = TridentTopology()
    described = topology.newStream("words", words).each(["word"], Describe(), ["n", "half", "info", "none"])
    sinks: dict[str, Any] = {"described": described.collect()}
    states = _states(unique_name("untyped"), tmp, redis_url, elasticsearch_url)
    asked = topology.newStream("questions", questions)
    for name, (count_factory, sum_factory) in states.items():
        grouped = described.groupBy(["n"])
        counted = grouped.persistentAggregate(count_factory, Count(), ["count"])
        summed = grouped.persistentAggregate(sum_factory, ["half"], Sum(), ["sum"])
        sinks[f"{name}-new"] = counted.newValuesStream().collect()
        sinks[f"{name}-asked"] = (asked.stateQuery(counted, ["n"], MapGet(), ["count"])
                                  .stateQuery(summed, ["n"], MapGet(), ["sum"]).collect())
    lengths = described.groupBy(["n"])
    sinks["aggregated"] = lengths.chainedAgg().aggregate(Count(), ["c"]).aggregate(["half"], Sum(), ["s"]) \
        .aggregate(["half"], Min(), ["lo"]).aggregate(["half"], Max(), ["hi"]).chainEnd().collect()
    sinks["equal"] = described.each(["n"], When(), ["when", "pair"]).each(["n", "half"], Equals()).collect()
    sinks["kept"] = described.each(["info"], FilterNull()).project(["info"]).collect()
    with topology.run(str(tmp / "ckpt"), trigger="available_now", spark=spark) as handle:
        handle.awaitTermination()
    # the questions stream is another query: asked once the words are in
    questions.feed([[3], [3.0], [True], ["3"], [None]])
    questions.feed([[6], [5], [2]])
    with topology.run(str(tmp / "ckpt"), trigger="available_now", spark=spark) as handle:
        handle.awaitTermination()
    return {"sinks": sinks, "states": states}


def test_a_function_emits_ints_floats_dicts_and_none_into_undeclared_fields(run):
    described = run["sinks"]["described"].batches[0]
    assert described[0] == {"word": "cat", "n": 3, "half": 1.5,
                            "info": {"word": "cat", "letters": ["a", "c", "t"]}, "none": None}
    for t in described:
        assert type(t["n"]) is int and type(t["half"]) is float and type(t["info"]) is dict
        assert t["none"] is None


def test_grouped_by_an_untyped_int_counted_summed_min_and_max(run):
    rows = [t for batch in run["sinks"]["aggregated"].batches.values() for t in batch]
    batches = run["sinks"]["aggregated"].batches
    by_batch = {txid: sorted(t["n"] for t in batch) for txid, batch in batches.items()}
    assert by_batch == {0: [2, 3, 5], 1: [0, 3, 6]}
    for t in rows:
        assert type(t["n"]) is int and type(t["s"]) is float
        assert t["lo"] == t["hi"] == t["n"] / 2


@pytest.mark.parametrize("store", ["sqlite", "redis", "elasticsearch"])
def test_persisted_counts_and_sums_read_back_with_open_state_as_the_same_python_values(run, store):
    counts, sums = _expected()
    count_factory, sum_factory = run["states"][store]
    keys = [[n] for n in sorted(counts)]
    with open_state(count_factory.url) as state:
        got = state.multiGet(keys)
        assert got == [counts[n] for n in sorted(counts)]
        assert all(type(v) is int for v in got)
        assert state.multiGet([[3.0], [True], ["3"]]) == [counts[3], None, None]
    with open_state(sum_factory.url) as state:
        got = state.multiGet(keys)
        assert got == [sums[n] for n in sorted(counts)]
        assert all(type(v) is float for v in got)


@pytest.mark.parametrize("store", ["sqlite", "redis", "elasticsearch"])
def test_state_query_with_untyped_keys_finds_python_equal_keys(run, store):
    counts, sums = _expected()
    asked = [batch for _, batch in sorted(run["sinks"][f"{store}-asked"].batches.items()) if batch]
    assert asked[0] == [
        {"n": 3, "count": counts[3], "sum": sums[3]},
        {"n": 3.0, "count": counts[3], "sum": sums[3]},
        {"n": True, "count": None, "sum": None},   # True == 1, and no word has one letter
        {"n": "3", "count": None, "sum": None},
        {"n": None, "count": None, "sum": None},
    ]
    assert [type(t["n"]) for t in asked[0]] == [int, float, bool, str, type(None)]
    assert asked[1] == [{"n": n, "count": counts[n], "sum": sums[n]} for n in (6, 5, 2)]


@pytest.mark.parametrize("store", ["sqlite", "redis", "elasticsearch"])
def test_new_values_stream_gives_the_untyped_group_values_back(run, store):
    new = run["sinks"][f"{store}-new"].batches
    assert sorted(t["n"] for t in new[0]) == [2, 3, 5]
    assert sorted((t["n"], t["count"]) for t in new[1]) == [(0, 1), (3, 3), (6, 1)]


def test_datetimes_and_tuples_travel_and_equals_compares_python_values(run):
    rows = [t for batch in run["sinks"]["equal"].batches.values() for t in batch]
    # n == n / 2 only for the empty word: 0 == 0.0, compared by Spark SQL on the untyped fields
    assert rows == [{"word": "", "n": 0, "half": 0.0, "info": {"word": "", "letters": []}, "none": None,
                     "when": datetime.datetime(2024, 5, 1), "pair": (0, "t")}]
    kept = [t["info"]["word"] for batch in run["sinks"]["kept"].batches.values() for t in batch]
    assert sorted(kept) == sorted(w for batch in WORDS for (w,) in batch)

