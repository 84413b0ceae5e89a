"""The driver's commit records: checked against the checkpoint around every batch's writes."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass

import pytest

from trident_spark.errors import StateAdoptionError, StateAheadError, StateLostError
from trident_spark.runtime.state_commits import (
    COMMITS_FILE,
    SALT_KEY,
    StateCommits,
    batch_offsets,
    check_adopted_offsets,
    state_id,
    state_identity,
)
from trident_spark.state import CommitRecord, MemoryState, RedisState, StateType
from trident_spark.state.keys import COMMIT_RECORD_KEY

_names = itertools.count()


@pytest.fixture
def factory():
    return MemoryState.opaque(name=f"state-commits-{next(_names)}")


def _run_batch(commits: StateCommits, batch_id: int, replaying: bool = False, offsets=None) -> None:
    commits.before_writes(batch_id, replaying)
    commits.after_writes(batch_id, offsets or {})


def test_batches_move_the_record_and_the_checkpoint_together(factory, tmp_path):
    commits = StateCommits([factory], "words", tmp_path)
    for batch in range(3):
        _run_batch(commits, batch, offsets={"words": {"offsets": {"t": {"0": 10 * (batch + 1)}}}})
    record = factory.open_commit_log().read()
    assert (record.txid, record.writing, record.stream) == (2, None, "words")
    saved = json.loads((tmp_path / COMMITS_FILE).read_text())
    salt = saved[SALT_KEY]
    assert len(salt) == 32
    assert saved == {SALT_KEY: salt, state_id(factory, salt): {"txid": 2, "epoch": record.epoch,
                                                               "state": "memory://" + factory.name}}
    assert factory.committed_offsets() == {"t": {"0": 30}}


def test_a_store_restarted_empty_stops_the_next_batch_before_it_writes(factory, tmp_path):
    commits = StateCommits([factory], "words", tmp_path)
    _run_batch(commits, 0)
    _run_batch(commits, 1)
    factory.open_backing_map().multiRemove([COMMIT_RECORD_KEY])     # everything gone, record included
    with pytest.raises(StateLostError) as lost:
        commits.before_writes(2, False)
    assert (lost.value.kind, lost.value.committed_txid, lost.value.stored_txid) == ("missing", 1, None)
    assert factory.open_commit_log().read() is None               # nothing written


def test_a_store_rolled_back_is_found_behind(factory, tmp_path):
    commits = StateCommits([factory], "words", tmp_path)
    _run_batch(commits, 0)
    backup = factory.open_commit_log().read()
    _run_batch(commits, 1)
    _run_batch(commits, 2)
    factory.open_commit_log().backing.multiPut([COMMIT_RECORD_KEY], [backup])   # batch 0's backup restored
    with pytest.raises(StateLostError) as lost:
        StateCommits([factory], "words", tmp_path).before_writes(3, False)   # a restart, too
    assert (lost.value.kind, lost.value.committed_txid, lost.value.stored_txid) == ("behind", 2, 0)


def test_accepting_the_loss_rebases_the_record_and_goes_on(factory, tmp_path, caplog):
    commits = StateCommits([factory], "words", tmp_path)
    _run_batch(commits, 0)
    factory.open_backing_map().multiRemove([COMMIT_RECORD_KEY])
    accepting = StateCommits([factory], "words", tmp_path, accept_loss=True)
    _run_batch(accepting, 1)
    record = factory.open_commit_log().read()
    assert (record.txid, record.writing) == (1, None)
    assert "accepted (accept_state_loss=True)" in caplog.text
    _run_batch(StateCommits([factory], "words", tmp_path), 2)    # and the next run checks again


def test_the_generation_the_executors_check_changes_when_the_store_is_reset_or_rebased(factory, tmp_path):
    """The caches' guard: a store's generation holds from batch to batch, and changes when it is
    emptied (a new epoch) or rolled back and accepted (same epoch, one more re-base)."""
    commits = StateCommits([factory], "words", tmp_path, accept_loss=True)
    assert commits.generations() == {}                          # nothing checked yet
    generations = []
    for batch in range(2):
        commits.before_writes(batch, False)
        generations.append(commits.generations())
        commits.after_writes(batch, {})
    assert generations[0] == generations[1] and set(generations[0]) == {id(factory)}
    backup = factory.open_commit_log().read()
    _run_batch(commits, 2)
    factory.open_commit_log().backing.multiPut([COMMIT_RECORD_KEY], [backup])   # rolled back, same epoch
    commits.before_writes(3, False)
    rolled_back = commits.generations()
    commits.after_writes(3, {})
    factory.open_backing_map().multiRemove([COMMIT_RECORD_KEY])                 # emptied
    commits.before_writes(4, False)
    emptied = commits.generations()
    assert len({generations[0][id(factory)], rolled_back[id(factory)], emptied[id(factory)]}) == 3
    assert rolled_back[id(factory)].split("/")[0] == generations[0][id(factory)].split("/")[0]


def test_a_replayed_batch_finds_its_own_attempt(factory, tmp_path):
    commits = StateCommits([factory], "words", tmp_path)
    _run_batch(commits, 0)
    commits.before_writes(1, False)          # the driver dies while batch 1 writes
    restarted = StateCommits([factory], "words", tmp_path)
    _run_batch(restarted, 1, replaying=True)
    commits_done = StateCommits([factory], "words", tmp_path)
    commits_done.before_writes(2, False)
    commits_done.after_writes(2, {})         # dies after the record, before Spark's commit log
    _run_batch(StateCommits([factory], "words", tmp_path), 2, replaying=True)


def test_a_reset_checkpoint_is_refused_with_the_minimum_offset_then_adopted(factory, tmp_path):
    old = StateCommits([factory], "words", tmp_path / "old")
    for batch in range(25):
        _run_batch(old, batch)
    with pytest.raises(StateAheadError) as ahead:
        StateCommits([factory], "words", tmp_path / "new").before_writes(0, False)
    assert "here at least 25;" in str(ahead.value)
    adopted = factory.with_settings(txid_offset=25)
    commits = StateCommits([adopted], "words", tmp_path / "new")
    commits.before_writes(0, False)
    [(address, record, offset)] = commits.adopted_records()
    assert address == "memory://" + factory.name
    assert (record.txid, offset) == (24, 25)
    commits.after_writes(0, {})
    assert commits.adopted_records() == []


def test_a_state_that_lost_its_write_during_the_batch_fails_the_completion(factory, tmp_path):
    commits = StateCommits([factory], "words", tmp_path)
    _run_batch(commits, 0)
    commits.before_writes(1, False)
    factory.open_backing_map().multiRemove([COMMIT_RECORD_KEY])
    with pytest.raises(StateLostError, match="emptied while the batch wrote"):
        commits.after_writes(1, {})


def test_adopting_refuses_a_first_batch_that_rereads_counted_records():
    record = CommitRecord("e", 24, offsets={"words": {"offsets": {"t": {"0": 100, "1": 50}}}})
    with pytest.raises(StateAdoptionError) as refused:
        check_adopted_offsets("sqlite:///wc.db?table=counts", record,
                              {"words": {"offsets": {"t": {"0": 40, "1": 40}}}},
                              {("t", "0"): 0, ("t", "1"): 0}, 25)
    message = str(refused.value)
    assert "t[0] from offset 0 (counted up to 100), t[1] from offset 0 (counted up to 50)" in message
    assert 'starting_offsets={"t": {"0": 100, "1": 50}}' in message
    assert "keep txid_offset=25" in message
    check_adopted_offsets("x", record, {"words": {"offsets": {"t": {"0": 120, "1": 50}}}},
                          {("t", "0"): 100}, 25)


def test_offsets_are_read_from_sparks_offsets_log(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "offsets" / "3").write_text(
        'v1\n{"batchWatermarkMs":0}\n{"offsets":{"t":{"0":5}}}\n{"t":{"0":9}}\n')
    assert batch_offsets(tmp_path, 3, ["a", "b"]) == {"a": {"offsets": {"t": {"0": 5}}}, "b": {"t": {"0": 9}}}
    assert batch_offsets(tmp_path, 4, ["a"]) == {}


def test_state_ids_name_no_secret():
    factory = RedisState.opaque(url="redis://:hunter2@127.0.0.1:6379/0", key_prefix="wc")
    assert "hunter2" not in state_identity(factory)
    assert state_id(factory, "s") == state_id(factory.with_settings(cache_size=5), "s")


def _old_id(factory) -> str:
    """How versions before this one named a state in the file (an unsalted hash, password in)."""
    return hashlib.sha256(repr(factory.url_location()).encode("utf-8")).hexdigest()[:20]


@dataclass(frozen=True, kw_only=True)
class PasswordedState(MemoryState):
    """A memory state whose URL carries a password, as a Redis state's does (no server needed)."""

    password: str = "hunter2"

    def url_location(self) -> tuple[str, dict[str, str]]:
        return f"redis://:{self.password}@127.0.0.1:6379/0", {"prefix": self.name}


def test_the_file_gives_no_offline_check_of_a_password_guess(tmp_path):
    """The attack: read trident-state-commits.json, then hash the state's URL with each guessed
    password until one matches its id. The id no longer depends on the password at all, and is
    salted per checkpoint: no guess can be checked against it."""
    secret = PasswordedState(name=f"state-commits-{next(_names)}", state_type=StateType.OPAQUE)
    _run_batch(StateCommits([secret], "words", tmp_path), 0)
    text = (tmp_path / COMMITS_FILE).read_text()
    saved = json.loads(text)
    [key] = set(saved) - {SALT_KEY}
    for guess in ("hunter1", "hunter2", "hunter3"):
        guessed = secret.with_settings(password=guess)
        assert _old_id(guessed) not in text                      # the old, unsalted form: gone
        assert state_id(guessed, saved[SALT_KEY]) == key         # every guess gives the same id
    assert "hunter2" not in text
    assert oct(os.stat(tmp_path / COMMITS_FILE).st_mode & 0o777) == "0o600"
    # a salt per checkpoint: the same state has another id in another checkpoint's file
    _run_batch(StateCommits([secret], "words", tmp_path / "other"), 1)
    assert key not in json.loads((tmp_path / "other" / COMMITS_FILE).read_text())


def test_a_checkpoint_written_by_an_older_version_is_read_and_rewritten_under_the_new_ids(factory, tmp_path):
    """Upgrading mid-stream: the old file names the state by the old id. The run goes on from it
    (a lost store is still found), and the first read rewrites the file without the old id."""
    old = StateCommits([factory], "words", tmp_path)
    for batch in range(3):
        _run_batch(old, batch)
    record = factory.open_commit_log().read()
    other_state = {"txid": 9, "epoch": "e", "state": "memory://gone"}   # no longer written here
    (tmp_path / COMMITS_FILE).write_text(json.dumps({
        _old_id(factory): {"txid": 2, "epoch": record.epoch, "state": "memory://" + factory.name},
        "0123456789abcdef0123": other_state}))
    upgraded = StateCommits([factory], "words", tmp_path)
    upgraded.check(3, False)                             # no StateAheadError, nothing "adopted"
    assert upgraded.adopted_records() == []
    saved = json.loads((tmp_path / COMMITS_FILE).read_text())
    assert _old_id(factory) not in saved
    assert saved[state_id(factory, saved[SALT_KEY])]["txid"] == 2
    assert saved["0123456789abcdef0123"] == other_state  # another state's entry is kept as it was
    upgraded.begin(3)
    upgraded.after_writes(3, {})
    # and the checkpoint still catches a store that lost its data
    factory.open_backing_map().multiRemove([COMMIT_RECORD_KEY])
    with pytest.raises(StateLostError) as lost:
        StateCommits([factory], "words", tmp_path).before_writes(4, False)
    assert (lost.value.kind, lost.value.committed_txid) == ("missing", 3)


def test_an_old_file_without_the_new_id_still_finds_a_lost_store(factory, tmp_path):
    old = StateCommits([factory], "words", tmp_path)
    _run_batch(old, 0)
    _run_batch(old, 1)
    epoch = factory.open_commit_log().read().epoch
    (tmp_path / COMMITS_FILE).write_text(json.dumps(
        {_old_id(factory): {"txid": 1, "epoch": epoch, "state": "memory://" + factory.name}}))
    factory.open_backing_map().multiRemove([COMMIT_RECORD_KEY])
    with pytest.raises(StateLostError) as lost:
        StateCommits([factory], "words", tmp_path).before_writes(2, False)
    assert (lost.value.kind, lost.value.committed_txid) == ("missing", 1)
