"""A state's commit record: read and moved with conditional writes, compared with a checkpoint."""

from __future__ import annotations

import itertools
import sqlite3

import pytest

from trident_spark.state import (
    MemoryState,
    OpaqueValue,
    SqliteState,
    StateAheadError,
    StateLostError,
    open_state,
)
from trident_spark.state.commit_record import (
    CheckpointCommit,
    CommitRecord,
    check_record,
    kafka_offsets,
)
from trident_spark.state.keys import COMMIT_RECORD_KEY, GLOBAL_KEY, encode_key

_names = itertools.count()


def _memory():
    return MemoryState.opaque(name=f"commit-record-{next(_names)}")


def test_the_reserved_key_is_no_group_key():
    assert encode_key(COMMIT_RECORD_KEY) == "~commit"
    assert COMMIT_RECORD_KEY != GLOBAL_KEY and GLOBAL_KEY != COMMIT_RECORD_KEY
    assert encode_key(["~commit"]) != "~commit"      # a user's string is escaped: %7Ecommit


def test_begin_then_complete_moves_the_record_and_keeps_its_epoch():
    log = _memory().open_commit_log()
    begun = log.begin(0, "words")
    assert (begun.txid, begun.writing, begun.stream) == (None, 0, "words")
    done = log.complete(0, {"words": {"offsets": {"t": {"0": 10, "1": 4}}}})
    assert (done.txid, done.writing, done.epoch) == (0, None, begun.epoch)
    again = log.begin(1, "words")
    assert (again.txid, again.writing, again.epoch) == (0, 1, begun.epoch)


def test_record_is_left_out_of_scans_and_reads(tmp_path):
    factory = SqliteState.opaque(path=str(tmp_path / "wc.db"), table="counts")
    with factory.open() as state:
        state.multiUpdate(0, [["cat"]], [lambda old: 3])
    log = factory.open_commit_log()
    log.begin(0)
    log.complete(0, {"s": {"offsets": {"t": {"0": 7}}}})
    with open_state(factory.url) as state:
        assert list(state.getTuples()) == [["cat", 3]]
        assert state.multiGet([["cat"], ["~commit"]]) == [3, None]
    with sqlite3.connect(tmp_path / "wc.db") as db:
        assert sorted(k for (k,) in db.execute("SELECT k FROM counts")) == ["cat", "~commit"]
    assert factory.committed_offsets() == {"t": {"0": 7}}


def test_a_store_emptied_during_the_batch_fails_its_completion():
    factory = _memory()
    log = factory.open_commit_log()
    log.begin(0)
    log.complete(0, {})
    log.begin(1)
    factory.open_backing_map().multiRemove([COMMIT_RECORD_KEY])     # the store restarts empty
    with pytest.raises(StateLostError) as lost:
        log.complete(1, {})
    assert lost.value.kind == "missing"
    assert "the store was emptied while the batch wrote" in str(lost.value)


def test_another_writer_moving_the_record_is_refused_as_ahead():
    factory = _memory()
    mine, theirs = factory.open_commit_log(), factory.open_commit_log()
    mine.begin(0)
    theirs.read()
    theirs.begin(5)
    with pytest.raises(StateAheadError) as ahead:
        mine.complete(0, {})
    assert ahead.value.stored_txid == 5


@pytest.mark.parametrize(
    ("record", "committed", "kind"),
    [(None, CheckpointCommit(4, "e"), "missing"),
     (CommitRecord("e", 2), CheckpointCommit(4, "e"), "behind"),
     (CommitRecord("e", None, writing=3), CheckpointCommit(4, "e"), "behind"),
     (CommitRecord("other", 4), CheckpointCommit(4, "e"), "replaced")],
)
def test_a_store_that_lost_what_the_checkpoint_committed_is_refused(record, committed, kind):
    with pytest.raises(StateLostError) as lost:
        check_record("redis://127.0.0.1:6379/0?prefix=wc", record, committed=committed, batch_txid=5,
                     replaying=False)
    assert lost.value.kind == kind
    assert lost.value.committed_txid == 4
    message = str(lost.value)
    assert message.startswith("state lost data: redis://127.0.0.1:6379/0?prefix=wc ")
    assert "restore the store from a backup or snapshot taken at or after txid 4" in message
    assert "accept_state_loss=True" in message


@pytest.mark.parametrize(
    ("record", "committed", "batch", "replaying"),
    [(None, None, 0, False),                                   # a new state
     (CommitRecord("e", 4), CheckpointCommit(4, "e"), 5, False),   # the next batch
     (CommitRecord("e", 4, writing=5), CheckpointCommit(4, "e"), 5, True),   # a replay, writes begun
     (CommitRecord("e", 5), CheckpointCommit(4, "e"), 5, True),    # a replay, writes completed
     (CommitRecord("e", 5), CheckpointCommit(5, "e"), 5, True),
     (CommitRecord("e", None, writing=0), None, 0, True),      # the first batch, replayed
     (CommitRecord("e", 24), None, 25, False)],                # adopted with txid_offset 25
)
def test_what_a_healthy_store_holds_passes(record, committed, batch, replaying):
    check_record("memory://wc", record, committed=committed, batch_txid=batch, replaying=replaying)


def test_a_reset_checkpoint_names_the_real_minimum_txid_offset():
    # The old run wrote up to txid 24 and began 25 before it died: 26 is the minimum, whatever key is met.
    record = CommitRecord("e", 24, writing=25)
    with pytest.raises(StateAheadError) as ahead:
        check_record("memory://wc", record, committed=None, batch_txid=0, replaying=False)
    assert "here at least 26;" in str(ahead.value)
    with pytest.raises(StateAheadError) as still:
        check_record("memory://wc", record, committed=None, batch_txid=25, replaying=False, txid_offset=25)
    assert "here at least 26;" in str(still.value)
    check_record("memory://wc", record, committed=None, batch_txid=26, replaying=False, txid_offset=26)


def test_a_replay_of_another_checkpoints_batch_is_no_replay():
    with pytest.raises(StateAheadError):
        check_record("memory://wc", CommitRecord("e", 0), committed=None, batch_txid=0, replaying=False)


def test_offsets_documents_of_both_engines():
    assert kafka_offsets({"offsets": {"t": {"0": 5}}, "until": {"t": {"0": 9}}}) == {"t": {"0": 5}}
    assert kafka_offsets({"t": {"0": 5, "1": 6}}) == {"t": {"0": 5, "1": 6}}
    assert kafka_offsets({"batch": 3}) == {}
    assert kafka_offsets(None) == {}


def test_values_written_beside_the_record_are_untouched_by_it():
    factory = _memory()
    with factory.open() as state:
        state.multiUpdate(0, [["cat"]], [lambda old: 1])
        factory.open_commit_log().begin(0)
        assert factory.open_backing_map().multiGet([["cat"]]) == [OpaqueValue(0, 1, None)]
