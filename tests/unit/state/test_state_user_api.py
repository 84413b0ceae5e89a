"""Trident's state interfaces for a user's own state: IBackingMap under each kind's rules
(``OpaqueMap.build`` and the others), the plain State, StateFactory, and open_state over a
user's registered URL scheme."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark.state import (
    IBackingMap,
    NonTransactionalMap,
    OpaqueMap,
    OpaqueValue,
    Scheme,
    State,
    StateAheadError,
    StateConfigError,
    StateError,
    StateFactory,
    TransactionalMap,
    TransactionalValue,
    UnversionedMap,
    open_state,
    register_scheme,
)
from trident_spark.state.base import as_versioned
from trident_spark.state.url import SCHEMES


class DictMap(IBackingMap):
    """A user's store: a dict, with a record of its round trips."""

    def __init__(self) -> None:
        self.data: dict[tuple[Any, ...], Any] = {}
        self.gets: list[int] = []
        self.puts: list[int] = []

    def multiGet(self, keys: Any) -> list[Any]:
        self.gets.append(len(keys))
        return [self.data.get(tuple(k)) for k in keys]

    def multiPut(self, keys: Any, values: Any) -> None:
        self.puts.append(len(keys))
        self.data.update(zip(map(tuple, keys), values, strict=True))


def add(n: int) -> Any:
    return lambda old: (old or 0) + n


def test_opaque_map_build_applies_opaque_rules_to_the_user_store():
    store = DictMap()
    counts = OpaqueMap.build(store)
    assert counts.multiUpdate(0, [["cat"], ["dog"]], [add(2), add(1)]) == [2, 1]
    assert counts.multiUpdate(1, [["cat"]], [add(5)]) == [7]
    assert counts.multiUpdate(1, [["cat"]], [add(3)]) == [5]      # txid 1 again, other tuples: from prev
    assert store.data[("cat",)] == OpaqueValue(1, 5, 2)
    assert counts.multiGet([["cat"], ["eel"]]) == [5, None]


def test_transactional_map_build_skips_a_replayed_txid():
    store = DictMap()
    counts = TransactionalMap.build(store)
    assert counts.multiUpdate(4, [["cat"]], [add(2)]) == [2]
    assert counts.multiUpdate(4, [["cat"]], [add(2)]) == [2]      # applied already: skipped
    assert store.data[("cat",)] == TransactionalValue(4, 2)


def test_non_transactional_map_build_applies_every_time():
    counts = NonTransactionalMap.build(DictMap())
    counts.multiUpdate(0, [["cat"]], [add(2)])
    assert counts.multiUpdate(0, [["cat"]], [add(2)]) == [4]


def test_a_state_ahead_of_the_batch_is_refused_over_a_user_store_too():
    counts = OpaqueMap.build(DictMap())
    counts.multiUpdate(9, [["cat"]], [add(1)])
    with pytest.raises(StateAheadError):
        counts.multiUpdate(3, [["cat"]], [add(1)])


def test_build_batches_store_round_trips_and_caches_when_asked():
    store = DictMap()
    counts = OpaqueMap.build(store, cache_size=100, max_multi_get_batch_size=2, max_multi_put_batch_size=3)
    counts.multiUpdate(0, [[w] for w in "abcde"], [add(1)] * 5)
    assert store.gets == [2, 2, 1] and store.puts == [3, 2]
    counts.multiUpdate(1, [[w] for w in "abcde"], [add(1)] * 5)
    assert store.gets == [2, 2, 1], "the second batch read its keys from the cache"
    assert [v.curr for v in store.multiGet([[w] for w in "abcde"])] == [2] * 5


def test_an_unversioned_store_writes_unconditionally_and_checks_multiget_lengths():
    class Short(DictMap):
        def multiGet(self, keys: Any) -> list[Any]:
            return []

    with pytest.raises(StateError, match="multiGet returned 0 values for 1 keys"):
        OpaqueMap.build(Short()).multiUpdate(0, [["cat"]], [add(1)])
    backing = UnversionedMap(DictMap())
    assert None not in backing.multiPutIfVersion([["cat"]], [1], ["a version that is not stored"])


def test_as_versioned_refuses_what_is_not_a_backing_map():
    with pytest.raises(StateConfigError, match="expected an IBackingMap"):
        as_versioned(object())  # type: ignore[arg-type]


def test_a_plain_state_and_a_state_factory_are_trident_s_abstract_interfaces():
    with pytest.raises(TypeError):
        State()  # type: ignore[abstract]
    with pytest.raises(TypeError):
        StateFactory()  # type: ignore[abstract]

    class Log(State):
        def __init__(self) -> None:
            self.calls: list[tuple[str, int]] = []

        def beginCommit(self, txid: int) -> None:
            self.calls.append(("begin", txid))

        def commit(self, txid: int) -> None:
            self.calls.append(("commit", txid))

    log = Log()
    log.beginCommit(3)
    log.commit(3)
    log.close()
    assert log.calls == [("begin", 3), ("commit", 3)]


STORES: dict[str, DictMap] = {}


class DictFactory(StateFactory):
    def __init__(self, name: str, kind: str = "opaque") -> None:
        self.name, self.kind = name, kind

    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> Any:
        kinds = {"opaque": OpaqueMap, "transactional": TransactionalMap,
                 "non_transactional": NonTransactionalMap}
        if self.kind == "plain":
            return object()
        return kinds[self.kind].build(STORES.setdefault(self.name, DictMap()))


@pytest.fixture
def dict_scheme():
    register_scheme("dictmap", Scheme((), lambda url, parts, params, settings: DictFactory(
        parts.netloc, "plain" if parts.path == "/plain" else settings["state_type"].value), "dictmap://NAME"))
    yield
    del SCHEMES["dictmap"]


def test_open_state_opens_a_user_factory_named_by_a_registered_scheme(dict_scheme):
    DictFactory("wc").makeState({}, 0, 1).multiUpdate(0, [["cat"]], [add(3)])
    with open_state("dictmap://wc?type=opaque") as state:
        assert state.multiGet([["cat"], ["dog"]]) == [3, None]
    with pytest.raises(StateConfigError, match="makeState returned object, not a map state"):
        open_state("dictmap://wc/plain")
