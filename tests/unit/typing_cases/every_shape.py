"""A user's script calling every declared shape of Trident's operators: `mypy --strict` passes on it,
and `build()` builds the topology (nothing runs)."""

from __future__ import annotations

from typing import Any

from trident_spark import Fields, JoinOutFieldsMode, JoinType, TridentTopology, TridentTuple
from trident_spark.builtin import Count, Debug, FilterNull, FirstN, MapGet, Split, Sum
from trident_spark.operation import (
    Aggregator,
    Consumer,
    FlatMapFunction,
    GroupedMultiReducer,
    MapFunction,
    MultiReducer,
    ReducerAggregator,
    StateUpdater,
    TridentCollector,
)
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import MemoryState
from trident_spark.stream import Stream


class Stamp(Aggregator[list[int]]):
    def init(self, batch_id: int, collector: TridentCollector) -> list[int]:
        return [0]

    def aggregate(self, state: list[int], tuple: TridentTuple, collector: TridentCollector) -> None:
        state[0] += 1

    def complete(self, state: list[int], collector: TridentCollector) -> None:
        collector.emit([state[0]])


class Concat(ReducerAggregator[str]):
    def init(self) -> str:
        return ""

    def reduce(self, curr: str, tuple: TridentTuple) -> str:
        return curr + str(tuple[0])


class Upper(MapFunction):
    def execute(self, tuple: TridentTuple) -> list[Any]:
        return [str(tuple[0]).upper()]


class Letters(FlatMapFunction):
    def execute(self, tuple: TridentTuple) -> list[list[Any]]:
        return [[c] for c in str(tuple[0])]


class Log(Consumer):
    def accept(self, tuple: TridentTuple) -> None:
        pass


class Keep(StateUpdater[Any]):
    def updateState(self, state: Any, tuples: list[TridentTuple], collector: TridentCollector) -> None:
        pass


class Both(MultiReducer[list[int]]):
    def init(self, collector: TridentCollector) -> list[int]:
        return [0, 0]

    def execute(self, state: list[int], streamIndex: int, input: TridentTuple,
                collector: TridentCollector) -> None:
        state[streamIndex] += 1

    def complete(self, state: list[int], collector: TridentCollector) -> None:
        collector.emit(state)


class Pairs(GroupedMultiReducer[list[int]]):
    def init(self, collector: TridentCollector, group: TridentTuple) -> list[int]:
        return [0]

    def execute(self, state: list[int], streamIndex: int, group: TridentTuple, input: TridentTuple,
                collector: TridentCollector) -> None:
        state[0] += 1

    def complete(self, state: list[int], group: TridentTuple, collector: TridentCollector) -> None:
        collector.emit(state)


class ByLength:
    def compare(self, a: Any, b: Any) -> int:
        return len(str(a)) - len(str(b))


def by_word(a: TridentTuple, b: TridentTuple) -> int:
    return len(str(a[0])) - len(str(b[0]))


def build() -> TridentTopology:
    topology = TridentTopology()
    lines = topology.newStream("lines", FeederBatchSpout(["value"]))
    words = lines.each(["value"], Split(), ["word"])                # each(in, Function, out)
    words = words.each(Split(), Fields("token"))                     # each(Function, out)
    words = words.each(["word"], FilterNull())                       # each(in, Filter)
    words = words.each(None, Debug())                                # each(None, Filter): every field
    words = words.each("word", Split(), ("piece",))                  # a str and a tuple as fields
    words = words.filter(FilterNull())                               # filter(Filter)
    words = words.filter(lambda t: bool(t["word"]))                  # filter(predicate)
    words = words.filter(["word"], FilterNull())                     # filter(in, Filter)
    words = words.filter(["word"], lambda t: t[0] != "")             # filter(in, predicate)
    words = words.map(Upper()).map(lambda t: [t[0]]).map(Upper(), ["u"]).map(lambda t: [t[0]], ["word"])
    words = words.flatMap(Letters()).flatMap(lambda t: [[t[0]]], ["word"])
    words = words.peek(Log()).peek(print)
    n = lines.each(["value"], Split(), ["w"]).map(lambda t: [len(t[0])], ["n:bigint"])

    n.partitionAggregate(Count(), ["c"])                              # partitionAggregate(agg, out)
    n.partitionAggregate(["n"], Sum(), ["s"])                         # partitionAggregate(in, agg, out)
    n.partitionAggregate(None, Stamp(), ["k"])
    n.aggregate(Count(), ["c"])                                       # aggregate(agg, out)
    n.aggregate(["n"], Concat(), ["all"])                             # aggregate(in, agg, out)
    n.aggregate("n", Sum(), "s")
    n.chainedAgg().aggregate(["n"], Sum(), ["s"]).aggregate(Count(), ["c"]).chainEnd()
    n.chainedAgg().partitionAggregate(Count(), ["c"]).partitionAggregate(["n"], Stamp(), ["k"]).chainEnd()
    n.minBy("n"); n.maxBy("n")                                        # noqa: E702
    n.minBy("n", lambda a, b: a - b); n.maxBy("n", abs)               # noqa: E702
    n.minBy("n", ByLength()); n.maxBy("n", key=abs); n.minBy("n", comparator=ByLength())  # noqa: E702
    n.maxBy("n", comparator=lambda a, b: a - b); n.minBy("n", key=lambda v: -v)  # noqa: E702
    n.min(by_word); n.max(ByLength()); n.min(lambda a, b: 0)          # noqa: E702
    n.applyAssembly(FirstN(2, "n"))

    grouped = words.groupBy(["word"])
    grouped.each(["word"], Split(), ["part"]).each(["part"], FilterNull()).each(Split(), ["p2"])
    grouped.aggregate(Count(), ["count"])
    grouped.aggregate(["word"], Concat(), ["all"])
    grouped.partitionAggregate(Count(), ["count"]).toStream()
    grouped.partitionAggregate(["word"], Stamp(), ["k"])
    grouped.chainedAgg().aggregate(Count(), ["c"]).aggregate(["word"], Concat(), ["a"]).chainEnd()

    counts = grouped.persistentAggregate(MemoryState.opaque(name="typed-wc"), Count(), ["count"])
    grouped.persistentAggregate(MemoryState.opaque(name="typed-r"), ["word"], Concat(), ["all"])
    n.persistentAggregate(MemoryState.opaque(name="typed-total"), ["n"], Sum(), ["total"])
    n.persistentAggregate(MemoryState.transactional(name="typed-count"), Count(), ["count"])
    words.stateQuery(counts, ["word"], MapGet(), ["count"])          # stateQuery(state, in, q, out)
    words.stateQuery(counts, MapGet(), ["count2"])                   # stateQuery(state, q, out)
    words.groupBy(["word"]).stateQuery(counts, ["word"], MapGet(), ["c"])
    words.groupBy(["word"]).stateQuery(counts, MapGet(), ["c"])
    static = topology.newStaticState(MemoryState.opaque(name="typed-static"))
    words.stateQuery(static, ["word"], MapGet(), ["seen"]).parallelismHint(2)

    words.partitionPersist(MemoryState.opaque(name="p1"), Keep())                     # (state, updater)
    words.partitionPersist(MemoryState.opaque(name="p2"), Keep(), ["word"])           # (state, updater, out)
    words.partitionPersist(MemoryState.opaque(name="p3"), ["word"], Keep())           # (state, in, updater)
    words.partitionPersist(MemoryState.opaque(name="p4"), ["word"], Keep(), ["word"])  # (state, in, u, out)
    counts.newValuesStream()

    a = topology.newStream("a", FeederBatchSpout(["k", "x"]))
    b = topology.newStream("b", FeederBatchSpout(["k", "y"]))
    topology.merge(a, b); topology.merge([a, b]); topology.merge(Fields("p", "q"), a, b)  # noqa: E702
    topology.join(a, ["k"], b, ["k"], ["k", "x", "y"])
    topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], JoinType.OUTER)
    topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], [JoinType.INNER, JoinType.OUTER])
    topology.join(a, ["k"], b, ["k"], ["k", "k1", "x", "k2", "y"], JoinOutFieldsMode.PRESERVE)
    topology.join(a, ["k"], b, ["k"], ["k", "k1", "x", "k2", "y"], JoinType.INNER, JoinOutFieldsMode.PRESERVE)
    topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], "left")
    topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], how="right", mode="compact")
    topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], how=["inner", "outer"])
    topology.join([a, b], [["k"], ["k"]], ["k", "x", "y"])
    topology.join([a, b], [["k"], ["k"]], ["k", "x", "y"], JoinType.INNER)
    topology.join([a, b], [["k"], ["k"]], ["k", "k1", "x", "k2", "y"], JoinOutFieldsMode.PRESERVE)
    topology.join([a, b], [["k"], ["k"]], ["k", "k1", "x", "k2", "y"], JoinType.INNER,
                  JoinOutFieldsMode.PRESERVE)
    topology.multiReduce([a, b], Both(), ["na", "nb"])
    topology.multiReduce(a, b, Both(), ["na", "nb"])
    topology.multiReduce([["k"], ["k"]], [a, b], Both(), ["na", "nb"])
    topology.multiReduce(["x"], a, ["y"], b, Both(), ["na", "nb"])
    ga, gb = a.groupBy(["k"]), b.groupBy(["k"])
    topology.multiReduce([ga, gb], Pairs(), ["k", "n"])
    topology.multiReduce(ga, gb, Pairs(), ["k", "n"])
    topology.multiReduce([["x"], ["y"]], [ga, gb], Pairs(), ["k", "n"])
    topology.multiReduce(["x"], ga, ["y"], gb, Pairs(), ["k", "n"])
    last: Stream = a.shuffle().partitionBy(["k"]).global_().batchGlobal().broadcast().localOrShuffle()
    last.identityPartition().partition(lambda t, n: 0).name("end").project(["k"]).collect()
    return topology
