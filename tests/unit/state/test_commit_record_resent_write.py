"""A commit record write that lands but answers "lost" (sent again after a store node died under it).

Elasticsearch/OpenSearch: a ``_bulk`` whose node dies after the primary applied it is sent again by
the client to another node, or retried by the cluster on the shard's new primary; its
``if_seq_no`` then no longer holds and the item answers 409 though the write is there. The
driver's commit log must take its own record as written, and still refuse a record that another
history wrote. Pure logic: a MemoryState backing map that applies a write and answers None.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from trident_spark.state import MemoryState, StateAheadError
from trident_spark.state.base import Key, Version, Versioned, VersionedBackingMap
from trident_spark.state.commit_record import CommitLog, CommitRecord, CommitRecordSerializer
from trident_spark.state.keys import COMMIT_RECORD_KEY

_names = itertools.count()


class ResentWrites(VersionedBackingMap):
    """A backing map whose next ``lose_after_applying`` writes apply, then answer a lost race."""

    def __init__(self, inner: VersionedBackingMap) -> None:
        self.inner = inner
        self.lose_after_applying = 0

    @property
    def address(self) -> str:
        return str(self.inner.address)

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        return self.inner.multiGetVersioned(keys)

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        won = self.inner.multiPutIfVersion(keys, values, expected_versions)
        if self.lose_after_applying:
            self.lose_after_applying -= 1
            return [None] * len(won)
        return won

    def close(self) -> None:
        self.inner.close()


def _log() -> tuple[CommitLog, ResentWrites, MemoryState]:
    spec = MemoryState.opaque(name=f"resent-{next(_names)}", serializer=CommitRecordSerializer())
    backing = ResentWrites(spec.open_backing_map())
    return CommitLog(backing, backing.address), backing, spec


def test_a_first_record_that_landed_but_answered_lost_is_taken_as_written() -> None:
    log, backing, _ = _log()
    backing.lose_after_applying = 1
    record = log.begin(0, "words")
    assert (record.txid, record.writing, record.stream) == (None, 0, "words")
    assert log.read() == record


def test_begin_and_complete_that_landed_but_answered_lost_go_on() -> None:
    log, backing, _ = _log()
    log.begin(0, "words")
    log.complete(0, {"words": {"offsets": {"t": {"0": 3}}}})
    backing.lose_after_applying = 2
    begun = log.begin(1, "words")
    done = log.complete(1, {"words": {"offsets": {"t": {"0": 7}}}})
    assert (begun.writing, done.txid, done.writing) == (1, 1, None)
    stored = log.read()
    assert stored == done and done.epoch == begun.epoch
    assert stored.starting_offsets() == {"t": {"0": 7}}
    log.begin(2, "words")                         # the version kept after a resend is the current one
    again = log.read()
    assert again is not None and again.writing == 2


def test_a_record_another_writer_moved_is_still_refused() -> None:
    log, _, spec = _log()
    log.begin(0, "words")
    other = CommitLog(spec.open_backing_map(), "memory://other")
    other.read()
    other.begin(5, "words")                       # another history is ahead
    with pytest.raises(StateAheadError):
        log.complete(0, {})
    stored = spec.open_backing_map().multiGetVersioned([COMMIT_RECORD_KEY])[0]
    assert stored is not None and isinstance(stored.value, CommitRecord) and stored.value.writing == 5
