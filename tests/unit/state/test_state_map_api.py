"""The map state API around the rules: argument checks, retries, updater safety, the combiner rule."""

from __future__ import annotations

import pytest

from trident_spark.state import (
    MemoryState,
    OpaqueMap,
    OpaqueValue,
    StateConflictError,
    StateError,
    StateType,
    combiner_updater,
)
from trident_spark.state.base import VersionedBackingMap


def add(n):
    return lambda old: (old or 0) + n


class AlwaysLoses(VersionedBackingMap):
    """A store where another writer always got there first."""

    def __init__(self, delegate):
        self.delegate = delegate
        self.rounds = 0

    @property
    def address(self):
        return "memory://contended"

    def multiGetVersioned(self, keys):
        return self.delegate.multiGetVersioned(keys)

    def multiPutIfVersion(self, keys, values, expected_versions):
        self.rounds += 1
        return [None] * len(keys)


def test_combiner_updater_is_tridents_rule():
    update = combiner_updater(lambda a, b: a + b, 4)
    assert update(None) == 4 and update(10) == 14


def test_multi_update_returns_the_new_values_for_new_values_stream(backend):
    state = backend.spec(StateType.OPAQUE).open()
    assert state.multiUpdate(0, [["cat"], ["dog"]], [add(2), add(3)]) == [2, 3]
    assert state.multiUpdate(1, [["dog"], ["eel"]], [add(1), add(1)]) == [4, 1]


def test_a_key_twice_in_one_update_is_refused(backend):
    state = backend.spec(StateType.OPAQUE).open()
    with pytest.raises(StateError, match=r"key \['cat'\] appears twice in one update; combine its updates"):
        state.multiUpdate(0, [["cat"], ["dog"], ("cat",)], [add(1)] * 3)
    assert state.multiGet([["dog"]]) == [None]


def test_keys_and_updaters_must_pair_up(backend):
    state = backend.spec(StateType.OPAQUE).open()
    with pytest.raises(StateError, match="multiUpdate got 2 keys but 1 updaters"):
        state.multiUpdate(0, [["cat"], ["dog"]], [add(1)])
    with pytest.raises(StateError, match="multiPut got 1 keys but 2 values"):
        state.multiPut(0, [["cat"]], [1, 2])


@pytest.mark.parametrize("txid", [-1, True, "3", 1.0, None])
def test_txid_must_be_a_batch_id(backend, txid):
    state = backend.spec(StateType.TRANSACTIONAL).open()
    with pytest.raises(StateError, match=r"txid must be an int >= 0 \(the batch id\), got "):
        state.multiUpdate(txid, [["cat"]], [add(1)])


def test_a_string_instead_of_a_list_of_keys_is_explained(backend):
    state = backend.spec(StateType.OPAQUE).open()
    with pytest.raises(StateError, match=r"a state key is a list of group values, e.g. \['cat'\], got 'cat'"):
        state.multiGet(["cat"])


def test_compound_keys_with_separator_characters_stay_apart(backend):
    state = backend.spec(StateType.OPAQUE).open()
    keys = [["a|b", "c"], ["a", "b|c"], ["a", "b", "c"], ["1", 1], [1, "1"], [None, ""], ["", None]]
    state.multiUpdate(0, keys, [add(i + 1) for i in range(len(keys))])
    assert backend.spec(StateType.OPAQUE).open().multiGet(keys) == list(range(1, len(keys) + 1))


def test_an_updater_that_mutates_its_argument_cannot_corrupt_prev_or_the_cache(backend):
    def append(item):
        def update(old):
            items = old if old is not None else []
            items.append(item)
            return items
        return update

    state = backend.spec(StateType.OPAQUE, cache_size=10).open()
    state.multiUpdate(0, [["cat"]], [append("a")])
    state.multiUpdate(1, [["cat"]], [append("b")])
    state.multiUpdate(1, [["cat"]], [append("c")])        # replay of 1 with other contents
    assert backend.stored(StateType.OPAQUE, ["cat"]) == OpaqueValue(1, ["a", "c"], ["a"])
    assert state.multiGet([["cat"]]) == [["a", "c"]]


def test_a_key_that_keeps_losing_gives_up_with_a_clear_error():
    store = AlwaysLoses(MemoryState.opaque(name="test-contended").open_backing_map())
    state = OpaqueMap(store, max_conflict_retries=3)
    with pytest.raises(StateConflictError) as caught:
        state.multiUpdate(0, [["cat"]], [add(1)])
    assert store.rounds == 4
    assert str(caught.value).startswith(
        "memory://contended key ['cat']: another writer changed the key during each of 4 attempts "
        "to update it; "
        "two queries may be writing this state")
    MemoryState.drop("test-contended")


def test_updaters_run_again_only_for_keys_that_lost(backend):
    calls = {"cat": 0, "dog": 0}

    def counting(word):
        def update(old):
            calls[word] += 1
            return (old or 0) + 1
        return update

    spec = backend.spec(StateType.OPAQUE, cache_size=10)
    a, b = spec.open(), spec.open()
    a.multiUpdate(0, [["cat"], ["dog"]], [add(1), add(1)])
    b.multiUpdate(1, [["cat"]], [add(1)])                 # a's entry for cat is now stale
    a.multiUpdate(2, [["cat"], ["dog"]], [counting("cat"), counting("dog")])
    assert calls == {"cat": 2, "dog": 1}
    assert spec.open().multiGet([["cat"], ["dog"]]) == [3, 2]


def test_close_and_context_manager(backend):
    with backend.spec(StateType.OPAQUE).open() as state:
        state.multiUpdate(0, [["cat"]], [add(1)])
    with pytest.raises(StateError, match="closed"):
        state.multiGet([["cat"]])
    assert repr(state).startswith("OpaqueMap(") and state.address in repr(state)
