"""Arity and shape checks when a topology is built (issue 29): a method declared with other
parameters than Storm's is refused by the builder, naming Storm's signature and the Python one,
before anything runs in a Spark task."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark import TopologyError, TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import (
    Aggregator,
    BaseFilter,
    BaseFunction,
    CombinerAggregator,
    QueryFunction,
    ReducerAggregator,
    StateUpdater,
)
from trident_spark.spout import BaseRichSpout, FixedBatchSpout, IBatchSpout, ITridentSpout
from trident_spark.state import MemoryState, StateFactory


def words() -> Any:
    return TridentTopology().newStream("s", FixedBatchSpout(["word"], 2, ["cat"]))


def message(build: Any) -> str:
    with pytest.raises(TopologyError) as caught:
        build()
    return str(caught.value)


class OneArgExecute(BaseFunction):
    def execute(self, tuple: Any) -> None:
        pass


class TwoArgIsKeep(BaseFilter):
    def isKeep(self, tuple: Any, collector: Any) -> bool:
        return True


class NoCollectorAggregate(Aggregator):
    def init(self, batch_id: Any, collector: Any) -> Any:
        return 0

    def aggregate(self, state: Any, tuple: Any) -> None:
        pass

    def complete(self, state: Any, collector: Any) -> None:
        pass


class ZeroWithArg(CombinerAggregator):
    def init(self, tuple: Any) -> Any:
        return 1

    def combine(self, a: Any, b: Any) -> Any:
        return a + b

    def zero(self, tuple: Any) -> Any:
        return 0


class ReduceOneArg(ReducerAggregator):
    def init(self) -> Any:
        return 0

    def reduce(self, curr: Any) -> Any:
        return curr


class RetrieveOneArg(QueryFunction):
    def batchRetrieve(self, tuples: Any) -> list[Any]:
        return []

    def execute(self, tuple: Any, result: Any, collector: Any) -> None:
        pass


class UpdateTwoArgs(StateUpdater):
    def updateState(self, state: Any, tuples: Any) -> None:
        pass


class PrepareOneArg(BaseFunction):
    def prepare(self, conf: Any) -> None:
        pass

    def execute(self, tuple: Any, collector: Any) -> None:
        pass


def test_operation_methods_of_another_shape_name_storms_signature_and_ours():
    state = MemoryState.opaque(name="shapes")
    assert message(lambda: words().each(["word"], OneArgExecute(), ["x"])) == (
        "each(OneArgExecute): OneArgExecute.execute(tuple) does not take the arguments of Storm's "
        "Function.execute(TridentTuple tuple, TridentCollector collector); declare it as "
        "def execute(self, tuple, collector)")
    assert message(lambda: words().each(["word"], TwoArgIsKeep())) == (
        "each(TwoArgIsKeep): TwoArgIsKeep.isKeep(tuple, collector) does not take the arguments of Storm's "
        "Filter.isKeep(TridentTuple tuple); declare it as def isKeep(self, tuple)")
    assert message(lambda: words().aggregate(["word"], NoCollectorAggregate(), ["n"])).endswith(
        "NoCollectorAggregate.aggregate(state, tuple) does not take the arguments of Storm's "
        "Aggregator.aggregate(T val, TridentTuple tuple, TridentCollector collector); declare it as "
        "def aggregate(self, state, tuple, collector)")
    grouped = words().groupBy(["word"])
    assert message(lambda: grouped.persistentAggregate(state, ZeroWithArg(), ["n"])).endswith(
        "ZeroWithArg.zero(tuple) does not take the arguments of Storm's CombinerAggregator.zero(); "
        "declare it as def zero(self)")
    assert message(lambda: words().aggregate(["word"], ReduceOneArg(), ["n"])).endswith(
        "ReduceOneArg.reduce(curr) does not take the arguments of Storm's ReducerAggregator.reduce(T curr, "
        "TridentTuple tuple); declare it as def reduce(self, curr, tuple)")
    stream = words()
    counts = stream.groupBy(["word"]).persistentAggregate(state, Count(), ["n"])
    assert message(lambda: stream.stateQuery(counts, ["word"], RetrieveOneArg(), ["v"])).endswith(
        "RetrieveOneArg.batchRetrieve(tuples) does not take the arguments of Storm's "
        "QueryFunction.batchRetrieve(S state, List<TridentTuple> args); declare it as "
        "def batchRetrieve(self, state, tuples)")
    assert message(lambda: words().partitionPersist(state, ["word"], UpdateTwoArgs())).endswith(
        "UpdateTwoArgs.updateState(state, tuples) does not take the arguments of Storm's "
        "StateUpdater.updateState(S state, List<TridentTuple> tuples, TridentCollector collector); "
        "declare it as def updateState(self, state, tuples, collector)")
    assert message(lambda: words().each(["word"], PrepareOneArg(), ["x"])).endswith(
        "PrepareOneArg.prepare(conf) does not take the arguments of Storm's "
        "Function.prepare(Map conf, TridentOperationContext context); declare it as "
        "def prepare(self, conf, context)")


def test_methods_with_defaults_or_varargs_fit():
    class Loose(BaseFunction):
        def execute(self, *args: Any) -> None:
            pass

    class Defaulted(BaseFilter):
        def isKeep(self, tuple: Any, strict: bool = False) -> bool:
            return True

    words().each(["word"], Loose(), ["x"]).each(["word"], Defaulted())


def test_make_state_of_another_arity_is_refused_when_persisting():
    class Short(StateFactory):
        def makeState(self, conf: Any, metrics: Any, partitionIndex: int) -> Any:
            return None

    assert message(lambda: words().groupBy(["word"]).persistentAggregate(Short(), Count(), ["n"])) == (
        "persistentAggregate(Count): Short.makeState(conf, metrics, partitionIndex) takes neither Storm's "
        "makeState(conf, metrics, partitionIndex, numPartitions) nor makeState(conf, partition_index, "
        "num_partitions); declare one of them")


def test_spout_methods_of_another_shape_are_refused_at_new_stream():
    class Batches(IBatchSpout):
        def open(self, conf: Any, context: Any) -> None:
            pass

        def emitBatch(self, collector: Any) -> None:
            pass

        def ack(self, batch_id: Any) -> None:
            pass

        def getOutputFields(self) -> list[str]:
            return ["x"]

    class Rich(BaseRichSpout):
        def open(self, conf: Any, context: Any) -> None:
            pass

        def nextTuple(self) -> None:
            pass

        def declareOutputFields(self, declarer: Any) -> None:
            declarer.declare(["x"])

    class General(ITridentSpout):
        def getCoordinator(self, conf: Any, context: Any) -> Any:
            return None

        def getEmitter(self, txStateId: str, conf: Any, context: Any) -> Any:
            return None

        def getOutputFields(self) -> list[str]:
            return ["x"]

    assert message(lambda: TridentTopology().newStream("s", Batches())) == (
        "newStream('s'): Batches.emitBatch(collector) does not take the arguments of Storm's "
        "IBatchSpout.emitBatch(long batchId, TridentCollector collector); declare it as "
        "def emitBatch(self, batch_id, collector)")
    assert message(lambda: TridentTopology().newStream("s", Rich())) == (
        "newStream('s'): Rich.open(conf, context) does not take the arguments of Storm's "
        "IRichSpout.open(Map conf, TopologyContext context, SpoutOutputCollector collector); declare it as "
        "def open(self, conf, context, collector)")
    assert message(lambda: TridentTopology().newStream("s", General())) == (
        "newStream('s'): General.getCoordinator(conf, context) does not take the arguments of Storm's "
        "ITridentSpout.getCoordinator(String txStateId, Map conf, TopologyContext context); declare it as "
        "def getCoordinator(self, txStateId, conf, context)")


def test_a_repeated_stream_name_is_refused_as_trident_refuses_it():
    topology = TridentTopology()
    topology.newStream("s", FixedBatchSpout(["x"], 1, [1]))
    assert message(lambda: topology.newStream("s", FixedBatchSpout(["x"], 1, [1]))).startswith(
        "newStream('s'): a stream with this name already exists")
