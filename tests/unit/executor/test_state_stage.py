"""The executor side of state operations over Arrow batches, without Spark (MemoryState)."""

from __future__ import annotations

import dataclasses
import gc
from typing import Any

import pyarrow as pa
import pytest

from trident_spark.builtin import Count, MapGet
from trident_spark.builtin.updaters import MapCombinerAggStateUpdater
from trident_spark.errors import OperatorError
from trident_spark.executor.state_stage import StateStep, forget_opened_states, opened_state, persist, query
from trident_spark.fields import Fields
from trident_spark.operation import QueryFunction, StateUpdater
from trident_spark.state import MemoryState, StateAheadError


class Totals:
    """Stands in for the Spark accumulator: sums what tasks add."""

    def __init__(self) -> None:
        self.value: dict[str, int] = {}

    def add(self, counts: dict[str, int]) -> None:
        for name, n in counts.items():
            self.value[name] = self.value.get(name, 0) + n


@pytest.fixture(autouse=True)
def fresh_states():
    yield
    forget_opened_states()


def batch(**columns: list[Any]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(columns)


def count_step(name: str, stats: Any = None) -> StateStep:
    return StateStep("persistentAggregate(Count)", MemoryState.opaque(name=name),
                     MapCombinerAggStateUpdater(Count(), Fields("word")), Fields("word", "count"),
                     ["word", "count"], {"word": pa.string(), "count": pa.int64()}, stats=stats)


def rows(batches: Any) -> list[dict[str, Any]]:
    return [row for b in batches for row in b.to_pylist()]


def test_persist_folds_partials_into_the_state_and_emits_new_values():
    totals = Totals()
    step = count_step("stage-persist", totals)
    assert rows(persist(step, 0, {}, 2, iter([batch(word=["cat", "dog"], count=[2, 1])]))) == [
        {"word": "cat", "count": 2}, {"word": "dog", "count": 1}]
    second = persist(step, 1, {}, 2, iter([batch(word=["cat"], count=[5])]))
    assert rows(second) == [{"word": "cat", "count": 7}]
    assert MemoryState.opaque(name="stage-persist").open().multiGet([["cat"], ["dog"]]) == [7, 1]
    assert totals.value["keys_written"] == 3 and totals.value["store_writes"] == 2


def test_a_replayed_partition_leaves_the_value_of_one_run():
    step = count_step("stage-replay")
    for _ in range(3):  # a task retry, a speculative copy, a batch replay: same txid
        list(persist(step, 0, {}, 1, iter([batch(word=["cat"], count=[2])])))
    assert MemoryState.opaque(name="stage-replay").open().multiGet([["cat"]]) == [2]


def test_an_empty_partition_does_not_touch_the_state():
    totals = Totals()
    step = count_step("stage-empty", totals)
    assert rows(persist(step, 0, {}, 1, iter([batch(word=[], count=[])]))) == []
    assert totals.value == {} and len(MemoryState.store("stage-empty")) == 0


def test_the_state_stays_open_per_worker_with_its_cache():
    step = count_step("stage-cache")
    list(persist(step, 0, {}, 1, iter([batch(word=["cat"], count=[1])])))
    state = opened_state(step.factory)
    list(persist(step, 1, {}, 1, iter([batch(word=["cat"], count=[1])])))
    assert opened_state(step.factory) is state and state.stats.cache_hits >= 1


def test_a_state_ahead_of_the_stream_passes_through_as_itself():
    step = count_step("stage-ahead")
    list(persist(step, 5, {}, 1, iter([batch(word=["cat"], count=[1])])))
    with pytest.raises(StateAheadError):
        list(persist(step, 2, {}, 1, iter([batch(word=["cat"], count=[1])])))


class Broken(StateUpdater):
    def updateState(self, state: Any, tuples: Any, collector: Any) -> None:
        raise KeyError("nope")


def test_an_updater_error_names_the_operator():
    step = StateStep("partitionPersist(Broken)", MemoryState.opaque(name="stage-broken"), Broken(),
                     Fields("word"), [], {})
    expected = r"^partitionPersist\(Broken\) failed in updateState: KeyError: 'nope'$"
    with pytest.raises(OperatorError, match=expected):
        list(persist(step, 0, {}, 1, iter([batch(word=["cat"])])))


class SeesTheCollector(StateUpdater):
    """Records whether Python's cyclic garbage collector ran while it updated the state."""

    def updateState(self, state: Any, tuples: Any, collector: Any) -> None:
        collector.emit([tuples[0][0], gc.isenabled()])


def test_the_garbage_collector_is_paused_while_the_state_is_updated_and_on_again_after():
    step = StateStep("partitionPersist(SeesTheCollector)", MemoryState.opaque(name="stage-gc"),
                     SeesTheCollector(), Fields("word"), ["word", "collecting"],
                     {"word": pa.string(), "collecting": pa.bool_()})
    assert gc.isenabled()
    out = rows(persist(step, 0, {}, 1, iter([batch(word=["cat"])])))
    assert out == [{"word": "cat", "collecting": False}]
    assert gc.isenabled()
    with pytest.raises(OperatorError):
        list(persist(dataclasses.replace(step, operation=Broken()), 1, {}, 1, iter([batch(word=["cat"])])))
    assert gc.isenabled()


def query_step(name: str, function: Any, before: bool = True) -> StateStep:
    return StateStep("stateQuery(MapGet)", MemoryState.opaque(name=name), function, Fields("word"),
                     ["id", "word", "count"], {"count": pa.int64()}, reads_before_batch=before)


def test_query_appends_what_execute_emits_to_each_tuple():
    MemoryState.opaque(name="stage-query").open().multiPut(0, [["cat"]], [3])
    out = rows(query(query_step("stage-query", MapGet()), 1, {}, 1,
                     iter([batch(id=[1, 2, 3], word=["cat", "dog", "cat"])])))
    assert out == [{"id": 1, "word": "cat", "count": 3}, {"id": 2, "word": "dog", "count": None},
                   {"id": 3, "word": "cat", "count": 3}]


def test_query_in_the_writing_query_sees_the_value_before_the_batch():
    MemoryState.opaque(name="stage-before").open().multiUpdate(0, [["cat"]], [lambda old: 3])
    MemoryState.opaque(name="stage-before").open().multiUpdate(1, [["cat"]], [lambda old: old + 4])
    data = batch(id=[1], word=["cat"])
    assert rows(query(query_step("stage-before", MapGet()), 1, {}, 1, iter([data])))[0]["count"] == 3
    assert rows(query(query_step("stage-before", MapGet(), before=False), 1, {}, 1, iter([data])))[0][
        "count"] == 7


class Short(QueryFunction):
    def batchRetrieve(self, state: Any, tuples: Any) -> list[Any]:
        return [None]


def test_batch_retrieve_must_answer_every_tuple():
    with pytest.raises(OperatorError) as caught:
        list(query(query_step("stage-short", Short()), 0, {}, 1, iter([batch(id=[1, 2], word=["a", "b"])])))
    assert str(caught.value) == ("stateQuery(MapGet): batchRetrieve returned 1 results for 2 tuples; "
                                 "return one result per tuple, in order")


def test_the_first_batch_after_a_start_finds_a_state_ahead_before_anything_is_written():
    from trident_spark.executor.state_stage import check_not_ahead

    step = count_step("stage-check")
    list(persist(step, 7, {}, 1, iter([batch(word=["cat"], count=[1])])))
    key_step = StateStep("persistentAggregate(Count)", step.factory, step.operation, Fields("word"), [], {})
    assert rows(check_not_ahead(key_step, 8, False, iter([batch(word=["cat", "dog"])]))) == [{"keys": 2}]
    # a replay of batch 7, which this checkpoint began writing: cat's txid 7 is that attempt's
    assert rows(check_not_ahead(key_step, 7, True, iter([batch(word=["cat", "dog"])]))) == [{"keys": 2}]
    with pytest.raises(StateAheadError) as caught:
        list(check_not_ahead(key_step, 0, False, iter([batch(word=["dog", "cat", "cat"])])))
    assert caught.value.key == ["cat"] and caught.value.stored_txid == 7 and caught.value.batch_txid == 0
    assert "(here at least 8;" in str(caught.value)
    # The state's commit record knows a larger txid than this key's: the figure counts from it.
    with pytest.raises(StateAheadError) as counted:
        list(check_not_ahead(key_step, 0, False, iter([batch(word=["cat"])]), largest_txid=24))
    assert counted.value.stored_txid == 7 and "(here at least 25;" in str(counted.value)


def test_a_stored_txid_equal_to_a_batch_this_checkpoint_never_wrote_is_another_history():
    from trident_spark.executor.state_stage import check_not_ahead

    step = count_step("stage-check-equal")
    list(persist(step, 3, {}, 1, iter([batch(word=["cat"], count=[1])])))
    key_step = StateStep("persistentAggregate(Count)", step.factory, step.operation, Fields("word"), [], {})
    with pytest.raises(StateAheadError) as caught:
        list(check_not_ahead(key_step, 3, False, iter([batch(word=["cat"])])))
    assert str(caught.value).startswith(
        "state is ahead of the stream: memory://stage-check-equal key ['cat'] stored txid 3 = "
        "batch txid 3, a batch this checkpoint has not written before; the checkpoint was reset or two "
        "queries write this state;")


def test_a_new_run_opens_the_state_afresh_so_nothing_cached_before_is_trusted():
    factory = MemoryState.transactional(name="stage-runs")
    first = opened_state(factory, "run-1")
    first.multiUpdate(0, [["cat"]], [lambda old: 1])
    MemoryState.drop("stage-runs")  # the state is reset between runs
    assert opened_state(factory, "run-1") is first and first.multiGet([["cat"]]) == [1]  # cached
    second = opened_state(factory, "run-2")
    assert second is not first and second.multiGet([["cat"]]) == [None]


def test_a_write_under_another_store_generation_drops_the_cache_so_no_stale_skip():
    """A store reset during a run (its epoch changes): the cache filled before must not say a key
    was already applied by this txid (a transactional replay would skip it and lose the batch)."""
    factory = MemoryState.transactional(name="stage-generations")
    first = opened_state(factory, "run-1", "epoch-a/0")
    first.multiUpdate(5, [["cat"]], [lambda old: (old or 0) + 3])
    MemoryState.drop("stage-generations")                     # the store loses everything
    cached = opened_state(factory, "run-1", "epoch-a/0")
    assert cached is first and cached.multiUpdate(5, [["cat"]], [lambda old: (old or 0) + 3]) == [3]
    assert cached.stats.keys_skipped == 1                    # the stale entry's skip: what the guard prevents
    MemoryState.drop("stage-generations")
    fresh = opened_state(factory, "run-1", "epoch-b/0")       # the driver saw the new epoch
    assert fresh is not first
    assert fresh.multiUpdate(5, [["cat"]], [lambda old: (old or 0) + 3]) == [3]
    assert fresh.stats.keys_skipped == 0 and fresh.multiGet([["cat"]]) == [3]
    assert opened_state(factory, "run-1") is fresh            # reads take it as it is
