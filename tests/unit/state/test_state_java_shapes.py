"""Storm's state shapes as Java programs write them: makeState with the metrics context, map states
built and subclassed around an IBackingMap, multiPut/multiUpdate without a txid (the txid set by
beginCommit), MemoryMapState by id and its Factory. Expected values follow Storm's
``OpaqueMap``/``TransactionalMap``/``NonTransactionalMap`` and ``MemoryMapState`` sources."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from trident_spark.state import (
    IBackingMap,
    MemoryMapState,
    MemoryState,
    MetricsContext,
    NonTransactionalMap,
    OpaqueMap,
    OpaqueValue,
    StateConfigError,
    StateError,
    StateFactory,
    TransactionalMap,
    TransactionalValue,
)
from trident_spark.state.state_api import make_state, make_state_arity


class DictBacking(IBackingMap):
    """A Java-style IBackingMap: a map of key lists to stored values."""

    def __init__(self) -> None:
        self.data: dict[tuple[Any, ...], Any] = {}

    def multiGet(self, keys: Any) -> list[Any]:
        return [self.data.get(tuple(k)) for k in keys]

    def multiPut(self, keys: Any, values: Any) -> None:
        self.data.update(zip(map(tuple, keys), values, strict=True))


class OutbreakTrendState(NonTransactionalMap):
    """The book's ``class OutbreakTrendState extends NonTransactionalMap<Long>``: ``super(backing)``."""

    def __init__(self, backing: IBackingMap) -> None:
        super().__init__(backing)

    def incrementCount(self, keys: list[list[Any]], counts: list[int]) -> None:
        olds = self.multiGet(keys)
        self.multiPut(keys, [(old or 0) + n for old, n in zip(olds, counts, strict=True)])


class AddValue:
    """Storm's ``ValueUpdater``: ``update(stored)``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def update(self, stored: Any) -> Any:
        return (stored or 0) + self.n


# -- makeState with Storm's four arguments -----------------------------------------------------

class StormFactory(StateFactory):
    def makeState(self, conf: Any, metrics: Any, partitionIndex: int, numPartitions: int) -> Any:
        self.seen = (conf, metrics, partitionIndex, numPartitions)
        metrics.registerMetric("hits", object(), 60)
        return OutbreakTrendState(DictBacking())


class OurFactory(StateFactory):
    def makeState(self, conf: Any, partition_index: int, num_partitions: int) -> Any:
        return NonTransactionalMap(DictBacking())


def test_make_state_is_called_with_storms_four_arguments_or_our_three():
    storm = StormFactory()
    state = make_state(storm, {"k": 1}, 2, 4)
    conf, metrics, index, count = storm.seen
    assert (conf, index, count) == ({"k": 1}, 2, 4)
    assert isinstance(metrics, MetricsContext) and list(metrics.metrics) == ["hits"]
    assert metrics.buckets == {"hits": 60}
    assert isinstance(state, OutbreakTrendState)
    assert (make_state_arity(storm), make_state_arity(OurFactory())) == (4, 3)
    assert type(make_state(OurFactory(), {}, 0, 1)) is NonTransactionalMap


def test_make_state_of_another_shape_names_storms_signature_and_ours():
    class Short(StateFactory):
        def makeState(self, conf: Any, metrics: Any, partitionIndex: int) -> Any:
            return None

    class Five(StateFactory):
        def makeState(self, a: Any, b: Any, c: Any, d: Any, e: Any) -> Any:
            return None

    for factory, shown in ((Short(), "makeState(conf, metrics, partitionIndex)"),
                           (Five(), "makeState(a, b, c, d, e)")):
        with pytest.raises(StateConfigError) as caught:
            make_state_arity(factory)
        assert str(caught.value) == (
            f"{type(factory).__name__}.{shown} takes neither Storm's makeState(conf, metrics, "
            "partitionIndex, numPartitions) nor makeState(conf, partition_index, num_partitions); "
            "declare one of them")


def test_a_built_in_factory_takes_either_form():
    factory = MemoryState.opaque(name="java-shapes-builtin")
    assert type(factory.makeState({}, MetricsContext(), 0, 1)) is OpaqueMap
    assert type(factory.makeState({}, 0, 1)) is OpaqueMap


# -- map states around an IBackingMap ---------------------------------------------------------

def test_a_subclass_calling_super_with_a_plain_backing_map_works_in_a_batch():
    backing = DictBacking()
    state = OutbreakTrendState(backing)
    state.beginCommit(0)
    state.incrementCount([["nyc", "flu"], ["sf", "cold"]], [2, 1])
    state.incrementCount([["nyc", "flu"]], [3])       # within the batch: reads what the batch wrote
    state.commit(0)
    assert backing.data == {("nyc", "flu"): 5, ("sf", "cold"): 1}
    assert state.multiGet([["nyc", "flu"], ["la", "flu"]]) == [5, None]


@pytest.mark.parametrize("kind", [OpaqueMap, TransactionalMap, NonTransactionalMap])
def test_constructed_and_built_with_a_plain_backing_map(kind: type[Any]):
    for state in (kind(DictBacking()), kind.build(DictBacking())):
        assert type(state) is kind
        assert state.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 1]) == [1]


def test_a_subclass_built_with_build_keeps_its_class():
    state = OutbreakTrendState.build(DictBacking())
    assert type(state) is OutbreakTrendState


def test_opaque_multi_put_then_update_in_one_batch_reads_what_the_batch_wrote():
    # Storm's OpaqueMap: multiPut writes OpaqueValue(txid, v); a later multiUpdate of the key in the
    # same batch reads it from CachedBatchReadsMap (cached: curr) and keeps prev.
    backing = DictBacking()
    state = OpaqueMap(backing)
    state.beginCommit(1)
    state.multiPut([["cat"]], [10])
    assert state.multiUpdate([["cat"]], [AddValue(5)]) == [15]
    state.commit(1)
    assert backing.data[("cat",)] == OpaqueValue(1, 15, None)
    state.beginCommit(2)
    assert state.multiUpdate([["cat"]], [AddValue(1)]) == [16]
    state.commit(2)
    assert backing.data[("cat",)] == OpaqueValue(2, 16, 15)
    state.beginCommit(2)                               # batch 2 replayed: from prev, as Storm does
    assert state.multiUpdate([["cat"]], [AddValue(2)]) == [17]
    assert state.multiGet([["cat"]]) == [17]           # written by this attempt: what it wrote
    state.commit(2)


def test_transactional_skips_a_replayed_key_but_not_a_second_write_of_the_same_batch():
    backing = DictBacking()
    state = TransactionalMap(backing)
    state.beginCommit(3)
    assert state.multiUpdate([["cat"]], [AddValue(1)]) == [1]
    assert state.multiUpdate([["cat"]], [AddValue(1)]) == [2]   # cached in the batch: applied
    state.commit(3)
    state.beginCommit(3)                                         # replay of 3: skipped
    assert state.multiUpdate([["cat"]], [AddValue(1)]) == [2]
    state.commit(3)
    assert backing.data[("cat",)] == TransactionalValue(3, 2)


def test_snapshottable_calls_without_a_txid():
    state = OpaqueMap(DictBacking())
    state.beginCommit(0)
    state.set(4)
    assert state.update(AddValue(3)) == 7
    state.commit(0)
    assert state.get() == 7


def test_without_a_txid_outside_a_batch():
    plain = NonTransactionalMap(DictBacking())
    plain.multiPut([["cat"]], [3])                      # stores no txid: allowed
    assert plain.multiUpdate([["cat"]], [AddValue(1)]) == [4]
    for kind in (OpaqueMap, TransactionalMap):
        state = kind(DictBacking())
        with pytest.raises(StateError) as caught:
            state.multiPut([["cat"]], [3])
        kind_name = "opaque" if kind is OpaqueMap else "transactional"
        assert str(caught.value) == (
            f"DictBacking: multiPut without a txid outside a batch; a {kind_name} state stores the txid of "
            "each write. Pass it (multiPut(txid, ...)), or call beginCommit(txid) first (inside a "
            "topology the engine does, as Trident does)")
        state.multiPut(0, [["cat"]], [3])              # with the txid, as before
        assert state.multiGet([["cat"]]) == [3]


def test_a_call_of_another_shape_says_both_forms():
    state = OpaqueMap(DictBacking())
    with pytest.raises(TypeError) as caught:
        state.multiPut([["cat"]])
    assert str(caught.value) == ("OpaqueMap.multiPut() takes (keys, values) as Trident's MapState does (the "
                                 "txid set by beginCommit), or (txid, keys, values); got 1 positional "
                                 "argument(s) and no keywords")


# -- MemoryMapState and fresh ids ---------------------------------------------------------------

def test_memory_map_state_by_id_shares_its_data():
    first = MemoryMapState("java-shapes-mms")
    first.beginCommit(0)
    first.multiPut([["cat"]], [3])
    first.commit(0)
    assert MemoryMapState("java-shapes-mms").multiGet([["cat"]]) == [3]
    assert MemoryMapState("java-shapes-other").multiGet([["cat"]]) == [None]
    assert isinstance(first, OpaqueMap)


def test_factories_without_a_name_get_a_fresh_id_kept_by_pickling():
    one, two = MemoryMapState.Factory(), MemoryState.opaque()
    assert one.name != two.name
    assert one.name.startswith("memory-") and len(one.name) == len("memory-") + 36
    assert pickle.loads(pickle.dumps(two)).name == two.name
    assert MemoryState.transactional().state_type.value == "transactional"
