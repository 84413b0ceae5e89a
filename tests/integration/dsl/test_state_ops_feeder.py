"""Trident's state operations on Spark, on FeederBatchSpout: one topology, several states, one run.

persistentAggregate (Combiner and Reducer, grouped and ungrouped), partitionPersist with a
user StateUpdater, stateQuery (same query and another query), newValuesStream, empty batches,
parallelismHint on a state, and a batch replayed by FailedException after its state writes.
Values are read back outside Spark with ``open_state`` and compared exactly.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import FailedException, TridentTopology
from trident_spark.builtin import Count, MapGet, SnapshotGet, Sum, TupleCollectionGet
from trident_spark.operation import BaseFunction, ReducerAggregator, StateUpdater
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState, open_state

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules

BATCHES = [
    [["cat", 1], ["dog", 2], ["cat", 3], ["eel", 4]],
    [["cat", 5], ["fox", 6]],
    [],
    [["dog", 7], ["dog", 8], ["cat", 9]],
]
QUESTIONS = [[["cat"], ["ant"]], [["dog"]], [], [["fox"], ["cat"]]]


class SumN(ReducerAggregator):
    def init(self) -> int:
        return 0

    def reduce(self, curr: int, tuple: Any) -> int:
        return curr + tuple.getLongByField("n")


class LastSeen(StateUpdater):
    """Keeps each word's largest n so far; emits the words it wrote with the partition count."""

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.partitions = context.num_partitions

    def updateState(self, state: Any, tuples: list[Any], collector: Any) -> None:
        best: dict[str, int] = {}
        for t in tuples:
            best[t["word"]] = max(best.get(t["word"], 0), t["n"])
        words = sorted(best)
        old = state.multiGet([[w] for w in words])
        new = [max(o or 0, best[w]) for w, o in zip(words, old, strict=True)]
        state.multiPut([[w] for w in words], new)
        for w, v in zip(words, new, strict=True):
            collector.emit([w, v, self.partitions])


class CountWords(StateUpdater):
    """Adds each word's tuples of the partition to its count (one multiUpdate)."""

    def updateState(self, state: Any, tuples: list[Any], collector: Any) -> None:
        seen: dict[str, int] = {}
        for t in tuples:
            seen[t["word"]] = seen.get(t["word"], 0) + 1
        words = sorted(seen)
        updaters = [lambda old, k=seen[w]: (old or 0) + k for w in words]
        state.multiUpdate([[w] for w in words], updaters)


class FailOnceAfterWrites(BaseFunction):
    """Asks for batch 1 to be replayed once, after the state has been written (second phase)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def execute(self, tuple: Any, collector: Any) -> None:
        if not self.marker.exists():
            self.marker.write_text("failed once")
            raise FailedException("replay batch 1 after its writes")
        collector.emit([1])


class Shout(BaseFunction):
    """A Python function before persistentAggregate: its stage also does the partial aggregation."""

    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([tuple.getString(0).upper(), 2 * tuple.getLong(1)])


def expected_counts(upto: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for batch in BATCHES[:upto]:
        for word, _ in batch:
            counts[word] = counts.get(word, 0) + 1
    return counts


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("state-ops")
    db = str(work / "state.db")
    states = {
        "counts": SqliteState.opaque(path=db, table="counts"),
        "counts_tx": SqliteState.transactional(path=db, table="counts_tx"),
        "sums": SqliteState.opaque(path=db, table="sums"),
        "total": SqliteState.transactional(path=db, table="total"),
        "last": SqliteState.nonTransactional(path=db, table="last"),
        "hinted_counts": SqliteState.opaque(path=db, table="hinted_counts"),
        "hinted_total": SqliteState.opaque(path=db, table="hinted_total"),
        "shouted_counts": SqliteState.transactional(path=db, table="shouted_counts"),
        "twice_total": SqliteState.opaque(path=db, table="twice_total"),
    }
    topology = TridentTopology()
    words = FeederBatchSpout(["word", "n:bigint"], num_partitions=3)
    questions = FeederBatchSpout(["word"], num_partitions=1)
    stream = topology.newStream("words", words)
    counts = stream.groupBy(["word"]).persistentAggregate(states["counts"], Count(), ["count"])
    stream.groupBy(["word"]).persistentAggregate(states["counts_tx"], Count(), ["count"])
    sums = stream.groupBy(["word"]).persistentAggregate(states["sums"], ["n"], SumN(), ["sum:bigint"])
    total = stream.persistentAggregate(states["total"], ["n"], Sum(), ["total"])
    last = stream.partitionPersist(states["last"], ["word", "n"], LastSeen(),
                                   ["word", "last:bigint", "partitions:int"]).parallelismHint(2)
    # parallelismHint on a state sizes the stage it runs in: a key stays in one task
    stream.partitionBy(["word"]).partitionPersist(states["hinted_counts"], ["word"], CountWords()) \
        .parallelismHint(4)
    stream.persistentAggregate(states["hinted_total"], ["n"], SumN(), ["sum:bigint"]).parallelismHint(3)
    # Python operators then persistentAggregate(Combiner): partial aggregation in their stage
    shouted = (stream.each(["word", "n"], Shout(), ["shout:string", "twice:bigint"]).groupBy(["shout"])
               .persistentAggregate(states["shouted_counts"], Count(), ["count"]))
    stream.each(["word", "n"], Shout(), ["shout:string", "twice:bigint"]) \
        .persistentAggregate(states["twice_total"], ["twice"], Sum(), ["total"])
    sinks = {
        "new_counts": counts.newValuesStream().collect(),
        "new_sums": sums.newValuesStream().collect(),
        "new_total": total.newValuesStream().collect(),
        "new_shouted": shouted.newValuesStream().collect(),
        "new_last": last.newValuesStream().collect(),
        "same_query": stream.stateQuery(counts, ["word"], MapGet(), ["before"]).collect(),
        "replayed": counts.newValuesStream()
                          .each(["word"], FailOnceAfterWrites(work / "failed"), ["one:bigint"]).collect(),
        "questions": topology.newStream("questions", questions)
                             .stateQuery(counts, ["word"], MapGet(), ["count"])
                             .stateQuery(total, SnapshotGet(), ["total"]).collect(),
    }
    for batch, asked in zip(BATCHES, QUESTIONS, strict=True):
        words.feed(batch)
        questions.feed(asked)
    handle = topology.run(checkpoint_location=work / "ckpt", trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
        assert handle.exception() is None
    finally:
        handle.stop()
    return {"states": states, "sinks": sinks, "progress": handle.progress, "work": work}


def by_batch(sink: Any, *fields: str) -> dict[int, list[tuple[Any, ...]]]:
    return {txid: sorted(tuple(t[f] for f in fields) for t in rows) for txid, rows in sink.batches.items()}


def test_grouped_combiner_counts_exactly_opaque_and_transactional(run):
    for name in ("counts", "counts_tx"):
        state = open_state(run["states"][name].url)
        words = sorted(expected_counts(4))
        assert state.multiGet([[w] for w in words]) == [expected_counts(4)[w] for w in words], name


def test_python_operators_before_persistent_aggregate_count_and_sum_exactly(run):
    state = open_state(run["states"]["shouted_counts"].url)
    counts = expected_counts(4)
    assert state.multiGet([[w.upper()] for w in sorted(counts)]) == [counts[w] for w in sorted(counts)]
    assert by_batch(run["sinks"]["new_shouted"], "shout", "count")[3] == [("CAT", 4), ("DOG", 3)]
    assert open_state(run["states"]["twice_total"].url).get() == 2 * sum(n for b in BATCHES for _, n in b)


def test_new_values_stream_carries_each_batchs_updated_keys_and_new_values(run):
    assert by_batch(run["sinks"]["new_counts"], "word", "count") == {
        0: [("cat", 2), ("dog", 1), ("eel", 1)],
        1: [("cat", 3), ("fox", 1)],
        2: [],
        3: [("cat", 4), ("dog", 3)],
    }


def test_reducer_folds_every_tuple_of_the_group_into_the_stored_value(run):
    assert by_batch(run["sinks"]["new_sums"], "word", "sum")[3] == [("cat", 18), ("dog", 17)]
    state = open_state(run["states"]["sums"].url)
    assert state.multiGet([["cat"], ["dog"], ["eel"], ["fox"]]) == [18, 17, 4, 6]


def test_ungrouped_persistent_aggregate_keeps_one_value_under_the_global_key(run):
    assert open_state(run["states"]["total"].url).get() == sum(n for b in BATCHES for _, n in b)
    # Trident's global aggregation emits once per batch, so the total is written every batch.
    assert by_batch(run["sinks"]["new_total"], "total") == {0: [(10,)], 1: [(21,)], 2: [(21,)], 3: [(45,)]}


def test_partition_persist_hands_the_user_updater_the_batch_state(run):
    state = open_state(run["states"]["last"].url)
    assert state.multiGet([["cat"], ["dog"], ["eel"], ["fox"]]) == [9, 8, 4, 6]
    rows = [t for ts in run["sinks"]["new_last"].batches.values() for t in ts]
    assert {t["partitions"] for t in rows} == {2}  # parallelismHint(2) on the TridentState


def test_a_query_in_the_writing_query_sees_the_state_before_the_batch(run):
    assert by_batch(run["sinks"]["same_query"], "word", "n", "before") == {
        0: [("cat", 1, None), ("cat", 3, None), ("dog", 2, None), ("eel", 4, None)],
        1: [("cat", 5, 2), ("fox", 6, None)],
        2: [],
        3: [("cat", 9, 3), ("dog", 7, 1), ("dog", 8, 1)],
    }


def test_a_batch_replayed_after_its_writes_leaves_exact_values(run):
    assert (run["work"] / "failed").read_text() == "failed once"
    # batch 0 failed once after its writes and was replayed whole: counts are still exact
    assert sorted(t["word"] for t in run["sinks"]["replayed"].batches[0]) == ["cat", "dog", "eel"]
    assert [p.txid for p in run["progress"] if p.stream == "words"] == [0, 1, 2, 3]


def test_questions_from_another_stream_read_current_values(run):
    answers = [(t["word"], t["count"], t["total"]) for ts in run["sinks"]["questions"].batches.values()
               for t in ts]
    # the questions stream runs concurrently with the words: each answer is some committed value
    for word, count, total in answers:
        assert count is None or 1 <= count <= expected_counts(4).get(word, 0)
        assert total is None or total in (10, 21, 45)
    assert sorted(w for w, _, _ in answers) == ["ant", "cat", "cat", "dog", "fox"]


def test_empty_batches_do_not_touch_grouped_state(run):
    from trident_spark.state.sqlite import SqliteBackingMap  # noqa: F401 (the backend in use)

    raw = run["states"]["counts"].open().backing.multiGetVersioned([["cat"], ["eel"]])
    assert [v.value.txid for v in raw] == [3, 0]  # eel: last written in batch 0, not batch 2


def test_state_progress_counts_reach_the_driver(run):
    batches = [p for p in run["progress"] if p.stream == "words"]
    # batch 0 ran twice (FailOnceAfterWrites) and Spark counts both reads; the others are exact
    assert [p.rows for p in batches][1:] == [len(b) for b in BATCHES][1:]
    assert all(p.state.get("keys_written", 0) > 0 for p in batches if p.rows)
    assert sum(p.state.get("keys_written", 0) for p in batches) > 0


def test_the_first_batch_is_read_once_though_its_keys_are_checked_before_the_writes(spark, tmp_path):
    topology = TridentTopology()
    words = FeederBatchSpout(["word"], num_partitions=2)
    topology.newStream("w", words).groupBy(["word"]).persistentAggregate(
        SqliteState.opaque(path=str(tmp_path / "s.db")), Count(), ["count"])
    words.feed([["a"], ["b"], ["a"], ["c"], ["d"]])
    words.feed([["a"]])
    with topology.run(tmp_path / "ckpt", trigger="available_now", spark=spark) as handle:
        handle.awaitTermination(300)
    assert [(p.txid, p.rows) for p in handle.progress] == [(0, 5), (1, 1)]
    assert open_state(f"sqlite://{tmp_path}/s.db").multiGet([["a"]]) == [3]


def test_tuple_collection_get_emits_every_stored_key_and_value_typed_like_the_state(spark, tmp_path):
    topology = TridentTopology()
    words = FeederBatchSpout(["word"], num_partitions=2)
    counts = topology.newStream("w", words).groupBy(["word"]).persistentAggregate(
        SqliteState.opaque(path=str(tmp_path / "s.db"), table="c"), Count(), ["count"])
    asks = FeederBatchSpout(["id"], num_partitions=1)
    everything = topology.newStream("q", asks).stateQuery(counts, TupleCollectionGet(), ["word", "count"])
    assert everything.getOutputFields().types == {"id": "object", "word": "object", "count": "bigint"}
    sink = everything.collect()
    words.feed([["cat"], ["dog"], ["cat"]])
    handle = topology.run(tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        handle.awaitTermination(300)
    finally:
        handle.stop()
    asks.feed([["q1"]])  # asked once the words are in
    handle = topology.run(tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        handle.awaitTermination(300)
    finally:
        handle.stop()
    answers = sorted((t["id"], t["word"], t["count"]) for t in sink.tuples)
    assert answers == [("q1", "cat", 2), ("q1", "dog", 1)]


def test_parallelism_hint_on_a_state_keeps_each_key_in_one_task(run):
    counts = expected_counts(4)
    words = sorted(counts)
    assert open_state(run["states"]["hinted_counts"].url).multiGet([[w] for w in words]) == [
        counts[w] for w in words]
    assert open_state(run["states"]["hinted_total"].url).get() == 45
