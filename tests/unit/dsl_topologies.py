"""Operations and small topologies shared by the DSL build tests (a helper, not a test)."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark import TopologyError, TridentTopology
from trident_spark.operation import (
    Aggregator,
    Assembly,
    BaseFilter,
    BaseFunction,
    CombinerAggregator,
    QueryFunction,
    ReducerAggregator,
    StateUpdater,
)
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import MemoryState
from trident_spark.stream import Stream


# --- operations used by the topologies ---------------------------------------------------------
class Split(BaseFunction):
    def execute(self, tuple, collector):
        collector.emit([tuple[0]])


class Keep(BaseFilter):
    def isKeep(self, tuple):
        return True


class Agg(Aggregator):
    def init(self, batch_id, collector):
        return 0

    def aggregate(self, state, tuple, collector):
        pass

    def complete(self, state, collector):
        collector.emit([1, 2])


class Combine(CombinerAggregator):
    def init(self, tuple):
        return 1

    def combine(self, val1, val2):
        return val1 + val2

    def zero(self):
        return 0


class Reduce(ReducerAggregator):
    def init(self):
        return 0

    def reduce(self, curr, tuple):
        return curr + 1


class Get(QueryFunction):
    def batchRetrieve(self, state, tuples):
        return [None] * len(tuples)

    def execute(self, tuple, result, collector):
        collector.emit([result])


class Updater(StateUpdater):
    def updateState(self, state, tuples, collector):
        pass


class Identity(Assembly):
    def apply(self, stream):
        return stream


class ReturnsNothing(Assembly):
    def apply(self, stream):
        stream.each(["word"], Split(), ["half_built"])  # adds a node, then fails


def topology() -> tuple[TridentTopology, Stream]:
    t = TridentTopology()
    return t, t.newStream("s", FeederBatchSpout(["word", "n:bigint", "x"]))


def other(t: TridentTopology, name: str = "b", fields: tuple[str, ...] = ("k", "w")) -> Stream:
    return t.newStream(name, FeederBatchSpout(list(fields)))


def keyed(t: TridentTopology) -> tuple[Stream, Stream]:
    return other(t, "a", ("k", "v")), other(t, "b", ("k", "w"))


def static(t: TridentTopology, name: str = "st"):
    return t.newStaticState(MemoryState.opaque(name=name))


def message_of(build: Any) -> str:
    t, s = topology()
    with pytest.raises(TopologyError) as info:
        build(t, s)
    return str(info.value)


def case(build: Any, expected: str, id: str) -> Any:
    return pytest.param(build, expected, id=id)


def words(t: TridentTopology, name: str):
    return other(t, name, ("word",)).groupBy(["word"])


