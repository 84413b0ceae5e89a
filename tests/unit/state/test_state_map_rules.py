"""Trident's transactional and opaque value rules (TRIDENT.md, "Map state"), on MemoryState and SQLite."""

from __future__ import annotations

import pytest

from trident_spark.state import (
    OpaqueValue,
    StateAheadError,
    StateType,
    StateTypeMismatchError,
    TransactionalValue,
    UnreadableValueError,
)

TX, OPAQUE, NON_TX = StateType.TRANSACTIONAL, StateType.OPAQUE, StateType.NON_TRANSACTIONAL


def add(n):
    return lambda old: (old or 0) + n


# -- transactional: {txid, val} -----------------------------------------------------------------

def test_transactional_new_key_stores_txid_and_update_of_none(backend):
    seen = []
    state = backend.spec(TX).open()
    assert state.multiUpdate(3, [["cat"]], [lambda old: seen.append(old) or 5]) == [5]
    assert seen == [None]
    assert backend.stored(TX, ["cat"]) == TransactionalValue(3, 5)


def test_transactional_same_txid_is_skipped_as_already_applied(backend):
    state = backend.spec(TX).open()
    state.multiUpdate(1, [["cat"], ["dog"]], [add(2), add(1)])
    replayed = state.multiUpdate(1, [["cat"], ["dog"]], [add(2), add(1)])
    assert replayed == [2, 1]                      # the stored values, unchanged
    assert state.stats.keys_skipped == 2
    assert backend.stored(TX, ["cat"]) == TransactionalValue(1, 2)
    assert backend.spec(TX).open().multiGet([["cat"], ["dog"]]) == [2, 1]


def test_transactional_next_txid_updates_the_stored_val(backend):
    state = backend.spec(TX).open()
    state.multiUpdate(1, [["cat"]], [add(2)])
    seen = []
    state.multiUpdate(2, [["cat"]], [lambda old: seen.append(old) or old + 3])
    assert seen == [2]
    assert backend.stored(TX, ["cat"]) == TransactionalValue(2, 5)


def test_transactional_skips_only_the_keys_already_at_the_txid(backend):
    # A batch that wrote some keys and then failed: its replay applies only the rest.
    state = backend.spec(TX).open()
    state.multiUpdate(0, [["cat"], ["dog"]], [add(1), add(1)])
    state.multiUpdate(1, [["cat"]], [add(10)])                  # partial write of txid 1
    assert state.multiUpdate(1, [["cat"], ["dog"]], [add(10), add(20)]) == [11, 21]
    assert backend.spec(TX).open().multiGet([["cat"], ["dog"]]) == [11, 21]


def test_transactional_needs_a_transactional_spout_replay_with_other_tuples_over_counts(backend):
    """Documented limit: a replay whose tuples differ is skipped, so a moved tuple counts twice.

    Batch 1's first attempt carried tuples a and b for "cat" and wrote cat += 2, then failed.
    The replay of txid 1 (an opaque spout) carries only a; b arrives in batch 2. The true count
    is 1 + 1 + 1 = 3; transactional state ends at 4, opaque state at 3.
    """
    results = {}
    for kind in (TX, OPAQUE):
        state = backend.spec(kind, cache_size=0).open()
        state.multiUpdate(0, [["cat"]], [add(1)])     # batch 0
        state.multiUpdate(1, [["cat"]], [add(2)])     # batch 1, first attempt (a, b); then it fails
        state.multiUpdate(1, [["cat"]], [add(1)])     # batch 1 replayed with a only
        state.multiUpdate(2, [["cat"]], [add(1)])     # batch 2 with b
        results[kind] = state.multiGet([["cat"]])[0]
        state.backing.multiRemove([["cat"]])
    assert results == {TX: 4, OPAQUE: 3}


# -- opaque: {txid, curr, prev} -------------------------------------------------------------------

def test_opaque_new_key_stores_txid_update_of_none_and_no_prev(backend):
    state = backend.spec(OPAQUE).open()
    assert state.multiUpdate(4, [["cat"]], [add(2)]) == [2]
    assert backend.stored(OPAQUE, ["cat"]) == OpaqueValue(4, 2, None)


def test_opaque_next_txid_updates_curr_and_moves_it_to_prev(backend):
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(1, [["cat"]], [add(2)])
    seen = []
    state.multiUpdate(2, [["cat"]], [lambda old: seen.append(old) or old + 3])
    assert seen == [2]
    assert backend.stored(OPAQUE, ["cat"]) == OpaqueValue(2, 5, 2)


def test_opaque_same_txid_recomputes_from_prev_even_with_different_contents(backend):
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(1, [["cat"]], [add(10)])
    state.multiUpdate(2, [["cat"]], [add(5)])      # first attempt of txid 2
    seen = []
    replay = state.multiUpdate(2, [["cat"]], [lambda old: seen.append(old) or old + 7])
    assert seen == [10]                             # base = prev, not curr
    assert replay == [17]
    assert backend.stored(OPAQUE, ["cat"]) == OpaqueValue(2, 17, 10)
    state.multiUpdate(2, [["cat"]], [add(7)])       # and again: still exact
    assert backend.stored(OPAQUE, ["cat"]) == OpaqueValue(2, 17, 10)


def test_opaque_replay_of_a_new_key_recomputes_from_none(backend):
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(0, [["cat"]], [add(5)])
    assert state.multiUpdate(0, [["cat"]], [add(3)]) == [3]
    assert backend.stored(OPAQUE, ["cat"]) == OpaqueValue(0, 3, None)


def test_opaque_key_that_a_replay_no_longer_touches_keeps_the_failed_attempts_value(backend):
    """Documented limit (as in Trident): opaque recomputes only keys the replay updates.

    Spark replays a batch from its offset log, so the same keys come back; a source whose
    replay drops a key leaves that key with the failed attempt's write.
    """
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(0, [["cat"], ["dog"]], [add(1), add(1)])
    state.multiUpdate(1, [["cat"], ["dog"]], [add(1), add(1)])    # first attempt of txid 1; fails
    state.multiUpdate(1, [["cat"]], [add(1)])                     # the replay no longer has "dog"
    assert state.multiGet([["cat"], ["dog"]]) == [2, 2]
    assert backend.stored(OPAQUE, ["dog"]) == OpaqueValue(1, 2, 1)


def test_opaque_query_reads_curr_and_in_batch_reads_prev_of_keys_the_batch_wrote(backend):
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(1, [["cat"], ["dog"]], [add(10), add(1)])
    state.multiUpdate(2, [["cat"]], [add(5)])
    assert state.multiGet([["cat"], ["dog"], ["eel"]]) == [15, 1, None]
    # A stateQuery in (a replay of) batch 2 sees values from before batch 2, as Trident's OpaqueMap.
    assert state.multiGet([["cat"], ["dog"]], txid=2) == [10, 1]


def test_non_transactional_replay_applies_again(backend):
    state = backend.spec(NON_TX).open()
    state.multiUpdate(1, [["cat"]], [add(2)])
    state.multiUpdate(1, [["cat"]], [add(2)])
    assert backend.stored(NON_TX, ["cat"]) == 4


# -- multiPut and the global key -------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "stored"), [
    (TX, TransactionalValue(5, 42)),
    (OPAQUE, OpaqueValue(5, 42, 7)),
    (NON_TX, 42),
])
def test_multi_put_sets_values_as_the_batch(backend, kind, stored):
    state = backend.spec(kind).open()
    state.multiPut(4, [["cat"]], [7])
    state.multiPut(5, [["cat"]], [42])
    assert backend.stored(kind, ["cat"]) == stored
    assert state.multiGet([["cat"]]) == [42]


@pytest.mark.parametrize("kind", [TX, OPAQUE, NON_TX])
def test_global_key_holds_ungrouped_state_apart_from_group_keys(backend, kind):
    state = backend.spec(kind).open()
    assert state.update(0, add(5)) == 5
    state.multiUpdate(0, [[""], ["~global"], [None]], [add(1), add(2), add(3)])
    assert state.update(1, add(1)) == 6
    assert backend.spec(kind).open().get() == 6
    assert state.multiGet([[""], ["~global"], [None]]) == [1, 2, 3]
    state.set(2, 100)
    assert state.get() == 100


# -- guards -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", [TX, OPAQUE])
def test_stored_txid_ahead_of_the_batch_raises_and_writes_nothing(backend, kind):
    backend.spec(kind).open().multiUpdate(7, [["cat"]], [add(1)])
    state = backend.spec(kind).open()
    with pytest.raises(StateAheadError) as caught:
        state.multiUpdate(2, [["ant"], ["cat"]], [add(1), add(1)])
    message = str(caught.value)
    assert message.startswith("state is ahead of the stream: ")
    assert "key ['cat'] stored txid 7 > batch txid 2" in message
    assert "the checkpoint was reset or two queries write this state" in message
    assert "To adopt the stored values, restart with a txid_offset" in message
    assert "here at least 6" in message
    assert "to reset, delete the state" in message
    assert caught.value.key == ["cat"] and caught.value.stored_txid == 7 and caught.value.batch_txid == 2
    assert state.address in message
    assert backend.spec(kind).open().multiGet([["ant"], ["cat"]]) == [None, 1]


def test_transactional_multi_put_behind_the_state_raises(backend):
    backend.spec(TX).open().multiPut(9, [["cat"]], [1])
    with pytest.raises(StateAheadError, match=r"stored txid 9 > batch txid 3"):
        backend.spec(TX).open().multiPut(3, [["cat"]], [2])


@pytest.mark.parametrize("kind", [TX, OPAQUE])
def test_txid_offset_adopts_a_state_ahead_of_a_reset_checkpoint(backend, kind):
    old_run = backend.spec(kind).open()
    old_run.multiUpdate(6, [["cat"]], [add(10)])
    old_run.multiUpdate(7, [["cat"]], [add(1)])
    # The checkpoint was reset: batch ids restart at 0. The error names the offset that adopts.
    with pytest.raises(StateAheadError, match="here at least 8"):
        backend.spec(kind).open().multiUpdate(0, [["cat"]], [add(5)])
    new_run = backend.spec(kind, txid_offset=8).open()
    assert new_run.multiUpdate(0, [["cat"]], [add(5)]) == [16]
    assert new_run.multiUpdate(0, [["cat"]], [add(5)]) == [16]   # a replay stays exact
    assert new_run.multiUpdate(1, [["cat"]], [add(1)]) == [17]
    stored = backend.stored(kind, ["cat"])
    assert stored.txid == 9


def test_ahead_error_names_the_offset_in_use(backend):
    backend.spec(TX, txid_offset=100).open().multiUpdate(5, [["cat"]], [add(1)])
    with pytest.raises(StateAheadError) as caught:
        backend.spec(TX, txid_offset=100).open().multiUpdate(2, [["cat"]], [add(1)])
    assert "stored txid 105 > batch txid 102 (batch id 2 + txid_offset 100)" in str(caught.value)
    assert "here at least 104" in str(caught.value)


@pytest.mark.parametrize(("written", "read", "found"), [
    (TX, OPAQUE, "found [1, 5], which looks like a transactional value [txid, val]"),
    (OPAQUE, TX, "found [1, 5, null], which looks like an opaque value [txid, curr, prev]"),
    (NON_TX, OPAQUE, 'found "five", which looks like a non-transactional value'),
    (NON_TX, TX, 'found {"n": 5}, which looks like a non-transactional value'),
])
def test_a_state_of_another_kind_is_refused_naming_the_key(backend, written, read, found):
    value = 5 if written is not NON_TX else ("five" if read is OPAQUE else {"n": 5})
    backend.spec(written).open().multiPut(1, [["cat"]], [value])
    state = backend.spec(read).open()
    for operation in (lambda: state.multiGet([["cat"]]), lambda: state.multiUpdate(2, [["cat"]], [add(1)])):
        with pytest.raises(StateTypeMismatchError) as caught:
            operation()
        message = str(caught.value)
        article = "an" if read is OPAQUE else "a"
        assert f"{state.address} key ['cat']: expected {article} {read.value} value, {found}; " in message
        assert "open it with the type it was written with" in message


@pytest.mark.parametrize("data", [b"\xff\xfenot json", b"[1, 2", b""])
def test_an_unreadable_stored_value_names_the_key(backend, data):
    backend.raw_put(["dog", 3], data)
    state = backend.spec(OPAQUE).open()
    with pytest.raises(UnreadableValueError) as caught:
        state.multiGet([["cat"], ["dog", 3]])
    message = str(caught.value)
    assert message.startswith(f"cannot read the stored value of key ['dog', 3] in {state.address}: ")
    assert repr(data[:60]) in message
    assert "open the state with the serializer that wrote it, or delete that key" in message
    assert caught.value.key == ["dog", 3]
