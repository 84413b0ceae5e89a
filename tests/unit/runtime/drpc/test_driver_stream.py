"""DirectStream: a stream's operations on one batch in this process, as the Spark path runs them."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark import Fields, TridentTopology, TridentTuple
from trident_spark.builtin import Count, FilterNull, MapGet, Split, Sum
from trident_spark.errors import OperatorError
from trident_spark.graph import Node, ancestors
from trident_spark.operation import (
    Aggregator,
    BaseFunction,
    CombinerAggregator,
    Consumer,
    OperationContext,
    ReducerAggregator,
    TridentCollector,
)
from trident_spark.runtime.drpc.driver_stream import DirectStream, why_not_direct
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import BatchState, IBackingMap, MemoryState, NonTransactionalMap, StateFactory
from trident_spark.stream import Stream


def requests() -> Stream:
    return TridentTopology().newStream("drpc", FeederBatchSpout(["args"]))


def answer(stream: Stream, *args: str, conf: dict[str, Any] | None = None) -> list[list[list[Any]]]:
    direct = DirectStream(ancestors([stream.node]), stream.node, conf or {})
    try:
        return [direct.run(txid, [{"args": a}]) for txid, a in enumerate(args)]
    finally:
        direct.cleanup()


def counts_state(name: str, values: dict[str, int], **settings: Any) -> Any:
    MemoryState.drop(name)
    factory = MemoryState.opaque(name=name, **settings)
    keys = [[word] for word in values]
    BatchState(factory.open(), txid=0).multiUpdate(keys, [lambda _, v=v: v for v in values.values()])
    return factory


def test_trident_word_count_s_query_sums_the_counts_of_the_words_asked() -> None:
    counts = counts_state("direct-wc", {"the": 10, "jumped": 2})
    topology = TridentTopology()
    state = topology.newStaticState(counts)
    stream = (topology.newStream("drpc", FeederBatchSpout(["args"]))
              .each(["args"], Split(), ["word"]).groupBy(["word"])
              .stateQuery(state, ["word"], MapGet(), ["count"])
              .each(["count"], FilterNull()).aggregate(["count"], Sum(), ["sum"]))
    assert answer(stream, "cat the dog jumped", "cat", "the the") == [[[12]], [[0]], [[20]]]


def test_the_word_count_half_that_projects_each_word_and_its_count() -> None:
    counts = counts_state("direct-wc-project", {"the": 10, "jumped": 2})
    topology = TridentTopology()
    state = topology.newStaticState(counts)
    stream = (topology.newStream("drpc", FeederBatchSpout(["args"]))
              .each(["args"], Split(), ["word"]).groupBy(["word"])
              .stateQuery(state, ["word"], MapGet(), ["count"])
              .each(["count"], FilterNull()).project(["word", "count"]))
    assert answer(stream, "cat the dog jumped") == [[["the", 10], ["jumped", 2]]]


def test_a_state_written_after_the_first_read_is_read_anew_even_when_its_factory_caches() -> None:
    counts = counts_state("direct-uncached", {"cat": 1}, cache_size=1000)
    topology = TridentTopology()
    state = topology.newStaticState(counts)
    stream = (topology.newStream("drpc", FeederBatchSpout(["args"]))
              .stateQuery(state, ["args"], MapGet(), ["count"]))
    direct = DirectStream(ancestors([stream.node]), stream.node, {})
    assert direct.run(0, [{"args": "cat"}]) == [["cat", 1]]
    BatchState(counts.open(), txid=1).multiUpdate([["cat"]], [lambda old: old + 5])
    assert direct.run(1, [{"args": "cat"}]) == [["cat", 6]]
    direct.cleanup()


def test_an_ungrouped_aggregation_emits_for_an_empty_batch_as_trident_does() -> None:
    empty = requests().each(["args"], Split(), ["word"]).each(["word"], FilterNull())
    assert answer(empty.filter(lambda t: False).aggregate(Count(), ["n"]), "a b") == [[[0]]]
    assert answer(empty.filter(lambda t: False).groupBy(["word"]).aggregate(Count(), ["n"]), "a b") == [[]]


class Longest(Aggregator[list[str]]):
    """A Trident Aggregator: init/aggregate/complete, emitting the longest word."""

    def init(self, batch_id: int, collector: TridentCollector) -> list[str]:
        return [""]

    def aggregate(self, state: list[str], tuple: TridentTuple, collector: TridentCollector) -> None:
        if len(tuple[0]) > len(state[0]):
            state[0] = tuple[0]

    def complete(self, state: list[str], collector: TridentCollector) -> None:
        collector.emit([state[0]])


class Joined(ReducerAggregator[str]):
    def init(self) -> str:
        return ""

    def reduce(self, curr: str, tuple: TridentTuple) -> str:
        return curr + tuple[0]


class Letters(CombinerAggregator[int]):
    def init(self, tuple: TridentTuple) -> int:
        return len(tuple[0])

    def combine(self, val1: int, val2: int) -> int:
        return val1 + val2

    def zero(self) -> int:
        return 0


def test_chained_aggregators_of_every_kind_in_one_pass() -> None:
    words = requests().each(["args"], Split(), ["word"])
    chained = (words.chainedAgg().aggregate(["word"], Longest(), ["longest"])
               .aggregate(["word"], Joined(), ["joined"]).aggregate(["word"], Letters(), ["letters"])
               .aggregate(Count(), ["n"]).chainEnd())
    assert answer(chained, "ab abc a") == [[["abc", "ababca", 6, 3]]]


class Seen(Consumer):
    """peek's consumer: the direct stream runs a copy of it, as a task would; the class keeps what it saw."""

    words: list[str] = []

    def accept(self, tuple: TridentTuple) -> None:
        Seen.words.append(tuple["word"])


def test_grouped_aggregation_partition_aggregate_and_map_flat_map_peek_project() -> None:
    Seen.words = []
    stream = (requests().flatMap(lambda t: [[w] for w in t["args"].split()], ["word"])
              .map(lambda t: [t["word"].upper()])
              .peek(Seen())
              .partitionAggregate(["word"], Joined(), ["all"]))
    assert answer(stream, "x y") == [[["XY"]]]
    assert Seen.words == ["X", "Y"]
    grouped = (requests().each(["args"], Split(), ["word"]).groupBy(["word"]).aggregate(Count(), ["n"])
               .project(["n", "word"]))
    assert answer(grouped, "b a b") == [[[2, "b"], [1, "a"]]]


class Counted(BaseFunction):
    """Counts its prepare and cleanup calls, which the direct stream makes once per run."""

    calls: list[str] = []

    def prepare(self, conf: dict[str, Any], context: OperationContext) -> None:
        Counted.calls.append(f"prepare {conf['x']} {context.getPartitionIndex()}/{context.numPartitions()}")

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        collector.emit([len(tuple[0])])

    def cleanup(self) -> None:
        Counted.calls.append("cleanup")


def test_operations_are_prepared_once_per_run_and_cleaned_up() -> None:
    Counted.calls = []
    assert answer(requests().each(["args"], Counted(), ["n"]), "ab", "abc", conf={"x": 7}) == [
        [["ab", 2]], [["abc", 3]]]
    assert Counted.calls == ["prepare 7 0/1", "cleanup"]


class Boom(BaseFunction):
    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        raise KeyError("no such word")


def test_an_operation_s_error_names_the_operation_and_the_tuple() -> None:
    with pytest.raises(OperatorError, match=r"each\(Boom\) failed on tuple .*'cat'.*KeyError"):
        answer(requests().each(["args"], Boom(), ["n"]), "cat")


def test_an_emit_of_too_few_values_is_an_error_and_extra_values_are_dropped() -> None:
    with pytest.raises(OperatorError, match="emitted 1 values"):
        answer(requests().map(lambda t: [1], ["one", "two"]), "cat")
    assert answer(requests().map(lambda t: [1, 2], ["one"]), "cat") == answer(
        requests().map(lambda t: [1], ["one"]), "cat")


class DictBacking(IBackingMap):
    data: dict[tuple[Any, ...], Any] = {("cat",): 4}

    def multiGet(self, keys: list[list[Any]]) -> list[Any]:
        return [self.data.get(tuple(k)) for k in keys]

    def multiPut(self, keys: list[list[Any]], values: list[Any]) -> None:
        self.data.update(zip(map(tuple, keys), values, strict=True))


class DictStateFactory(StateFactory):
    made: list[tuple[int, int]] = []

    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> Any:
        DictStateFactory.made.append((partition_index, num_partitions))
        return NonTransactionalMap.build(DictBacking())


def test_a_user_state_factory_makes_one_state_for_the_driver() -> None:
    DictStateFactory.made = []
    topology = TridentTopology()
    state = topology.newStaticState(DictStateFactory())
    stream = (topology.newStream("drpc", FeederBatchSpout(["args"]))
              .stateQuery(state, ["args"], MapGet(), ["v"]))
    assert answer(stream, "cat", "dog") == [[["cat", 4]], [["dog", None]]]
    assert DictStateFactory.made == [(0, 1)]


def chain(stream: Stream) -> list[Node]:
    return ancestors([stream.node])


def test_what_runs_only_as_a_spark_query_is_named() -> None:
    topology = TridentTopology()
    a = topology.newStream("a", FeederBatchSpout(["args"]))
    b = topology.newStream("b", FeederBatchSpout(["args"]))
    counted = a.each(["args"], Split(), ["w"]).groupBy(["w"]).aggregate(Count(), ["n"])
    assert why_not_direct(chain(counted)) is None
    merged = topology.merge(a, b)
    assert "(MergeNode)" in str(why_not_direct(chain(merged)))
    persisted = a.groupBy(["args"]).persistentAggregate(MemoryState.opaque(name="direct-persist"),
                                                        Count(), ["n"])
    assert persisted.node is not None
    assert "writes state" in str(why_not_direct(ancestors([persisted.node])))
    after_shuffle = a.shuffle().partitionAggregate(Count(), ["n"])
    assert "after a repartitioning" in str(why_not_direct(chain(after_shuffle)))
    assert why_not_direct(chain(a.partitionAggregate(Count(), ["n"]))) is None
    with pytest.raises(ValueError, match="cannot run this stream in the driver"):
        DirectStream(chain(merged), merged.node, {})


def test_fields_declared_as_fields_objects_work_too() -> None:
    stream = (requests().each(Fields("args"), Split(), Fields("word"))
              .aggregate(Fields("word"), Count(), Fields("n")))
    assert answer(stream, "a b c") == [[[3]]]
