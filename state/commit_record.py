"""A state's commit record: which batch its store last finished, kept beside its keys.

Every map state written by a topology holds one record under the reserved key
:data:`~.keys.COMMIT_RECORD_KEY` (encoded ``~commit``: the Redis key
``<prefix>:~commit``, the Elasticsearch document ``_id`` ``~commit``, the
SQLite row ``k = '~commit'``). Scans and ``getTuples`` leave it out. Its
JSON::

    {"epoch": "5f0c...",          # made when the record was created: the store's generation
     "txid": 24,                  # the last stored txid whose writes completed (null: none yet)
     "writing": null,             # a stored txid whose writes began and did not complete
     "offsets": {"sentences": {...}},   # each spout's end offsets of batch `txid`
     "stream": "sentences"}       # the stream (Spark query) that writes the state

The driver moves it with conditional writes, two per batch: ``writing = t``
before any task of batch ``t`` writes, then ``txid = t, writing = null`` and
the offsets once every write of the batch is done, before Spark's commit log
records the batch. The checkpoint keeps its own copy of ``(txid, epoch)``.
:func:`check_record` compares the two before a batch writes:

* the checkpoint committed txid ``C`` but the store has no record, or an older
  ``txid``, or another ``epoch``: the store lost data or was rolled back or
  replaced -> :class:`~.errors.StateLostError`;
* the record holds a txid greater than the batch's: another history wrote it
  (a reset checkpoint, or two queries) -> :class:`~.errors.StateAheadError`,
  whose ``txid_offset`` figure is then exact (the record bounds every txid in
  the store);
* a store emptied in the middle of a batch loses the record too: the second
  conditional write of the batch fails and the batch stops before Spark
  commits it.

The record's offsets let a new checkpoint adopt a state exactly: start the
spout where the state's last batch ended (:meth:`CommitRecord.starting_offsets`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from .base import Version, VersionedBackingMap
from .checks import is_int
from .errors import StateAheadError, StateError, StateLostError
from .keys import COMMIT_RECORD_KEY


@dataclass(frozen=True)
class CommitRecord:
    """What a state's store says it last finished.

    Attributes
    ----------
    epoch : str
        Made when the record was created; a store emptied and written again gets another.
    txid : int or None
        The last stored txid (batch id + ``txid_offset``) whose writes all completed.
    writing : int or None
        A stored txid whose writes began and have not completed (a batch in
        flight, or one whose driver died).
    offsets : dict
        Each spout's end offsets of batch ``txid``, by stream name, as Spark's
        offsets log holds them.
    stream : str or None
        The stream (Spark query) that writes the state.

    Examples
    --------
    >>> record = CommitRecord(epoch="e1", txid=24, writing=25)
    >>> record.highest_txid
    25
    """

    epoch: str
    txid: int | None = None
    writing: int | None = None
    offsets: dict[str, Any] = field(default_factory=dict)
    stream: str | None = None

    @property
    def highest_txid(self) -> int | None:
        """The largest txid any key of the store can hold (None: nothing written yet)."""
        known = [t for t in (self.txid, self.writing) if t is not None]
        return max(known) if known else None

    def to_json(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "txid": self.txid, "writing": self.writing,
                "offsets": self.offsets, "stream": self.stream}

    @classmethod
    def from_json(cls, data: Any) -> CommitRecord:
        if not isinstance(data, dict) or not isinstance(data.get("epoch"), str):
            raise ValueError(f"not a commit record: {str(data)[:120]!r}")
        offsets = data.get("offsets")
        return cls(epoch=data["epoch"], txid=_txid(data.get("txid")), writing=_txid(data.get("writing")),
                   offsets=offsets if isinstance(offsets, dict) else {}, stream=data.get("stream"))

    def starting_offsets(self) -> dict[str, dict[str, int]]:
        """Where a spout resumes to go on exactly after the record's batch: ``{topic: {partition: offset}}``.

        Paste it as ``KafkaSpout(starting_offsets=...)`` when a new checkpoint adopts the state.

        Examples
        --------
        >>> CommitRecord("e", 3, offsets={"s": {"offsets": {"t": {"0": 7}}}}).starting_offsets()
        {'t': {'0': 7}}
        """
        merged: dict[str, dict[str, int]] = {}
        for document in self.offsets.values():
            for topic, partitions in kafka_offsets(document).items():
                merged.setdefault(topic, {}).update(partitions)
        return merged


def kafka_offsets(document: Any) -> dict[str, dict[str, int]]:
    """The ``{topic: {partition: next offset}}`` of a spout's offsets document.

    Our Kafka source logs ``{"offsets": {...}, ...}``; Spark's JVM source logs the map itself.
    Anything else (a spout without Kafka offsets) gives ``{}``.

    Examples
    --------
    >>> kafka_offsets({"offsets": {"t": {"0": 5}}, "read_limit_bytes": 1}), kafka_offsets({"t": {"1": 2}})
    ({'t': {'0': 5}}, {'t': {'1': 2}})
    """
    if isinstance(document, dict) and isinstance(document.get("offsets"), dict):
        document = document["offsets"]
    if not isinstance(document, dict):
        return {}
    found: dict[str, dict[str, int]] = {}
    for topic, partitions in document.items():
        if isinstance(partitions, dict) and all(is_int(v) for v in partitions.values()):
            found[str(topic)] = {str(p): int(v) for p, v in partitions.items()}
    return found


def _txid(value: Any) -> int | None:
    return int(value) if is_int(value) else None


class CommitRecordSerializer:
    """Stores a :class:`CommitRecord` as compact JSON (picklable, like every serializer)."""

    def serialize(self, value: Any) -> bytes:
        if not isinstance(value, CommitRecord):
            raise StateError(f"the commit record must be a CommitRecord, got {value!r}")
        return json.dumps(value.to_json(), separators=(",", ":"), sort_keys=True).encode("utf-8")

    def deserialize(self, data: bytes) -> CommitRecord:
        return CommitRecord.from_json(json.loads(bytes(data).decode("utf-8")))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


@dataclass(frozen=True)
class CheckpointCommit:
    """What a checkpoint remembers of a state: the last txid it committed there, and the store's epoch."""

    txid: int
    epoch: str


def check_record(address: str, record: CommitRecord | None, *, committed: CheckpointCommit | None,
                 batch_txid: int, replaying: bool, txid_offset: int = 0) -> None:
    """Refuse a batch whose state does not hold what the checkpoint committed, or holds more.

    Parameters
    ----------
    address : str
        The state, for messages (without secrets).
    record : CommitRecord or None
        What the store holds.
    committed : CheckpointCommit or None
        What the checkpoint committed to the state (None: nothing yet).
    batch_txid : int
        The stored txid of the batch about to write (batch id + ``txid_offset``).
    replaying : bool
        The checkpoint began writing this very batch before (a replay).
    txid_offset : int
        For the message of a :class:`StateAheadError`.

    Raises
    ------
    StateLostError
        The store has no record, an older one, or one of another generation.
    StateAheadError
        The store holds txids this batch has not written (another history).

    Examples
    --------
    >>> check_record("memory://wc", CommitRecord("e", 4), committed=CheckpointCommit(4, "e"),
    ...              batch_txid=5, replaying=False)
    >>> try:
    ...     check_record("memory://wc", None, committed=CheckpointCommit(4, "e"), batch_txid=5,
    ...                  replaying=False)
    ... except StateLostError as lost:
    ...     print(lost.kind, lost.committed_txid)
    missing 4
    """
    if committed is not None:
        if record is None:
            raise StateLostError(address, kind="missing", committed_txid=committed.txid, stored_txid=None)
        if record.epoch != committed.epoch:
            raise StateLostError(address, kind="replaced", committed_txid=committed.txid,
                                 stored_txid=record.txid)
        if record.txid is None or record.txid < committed.txid:
            raise StateLostError(address, kind="behind", committed_txid=committed.txid,
                                 stored_txid=record.txid)
    if record is None:
        return
    highest = record.highest_txid
    if highest is None:
        return
    # A replay finds what its own earlier attempt left: writes begun, or completed (the driver
    # died before Spark's commit log).
    own_attempt = replaying and record.writing == batch_txid and (record.txid or -1) < batch_txid
    finished_here = replaying and record.txid == batch_txid and record.writing is None
    if highest > batch_txid or (highest == batch_txid and not (own_attempt or finished_here)):
        raise StateAheadError(address, ["(commit record)"], stored_txid=highest, batch_txid=batch_txid,
                              txid_offset=txid_offset)


class CommitLog:
    """Reads and moves one state's commit record with conditional writes (the driver's side).

    Parameters
    ----------
    backing : VersionedBackingMap
        The state's store, opened with :class:`CommitRecordSerializer` (see
        :meth:`~.factory.StoreStateFactory.open_commit_log`).
    address : str
        The state, for messages (without secrets).

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> log = MemoryState.opaque(name="doc-commitlog").open_commit_log()
    >>> log.read() is None
    True
    >>> log.begin(0).writing, log.complete(0, {"s": {"offsets": {"t": {"0": 9}}}}).txid
    (0, 0)
    >>> log.read().starting_offsets()
    {'t': {'0': 9}}
    """

    def __init__(self, backing: VersionedBackingMap, address: str) -> None:
        self.backing = backing
        self.address = address
        self._record: CommitRecord | None = None
        self._version: Version | None = None
        self._read = False

    def read(self) -> CommitRecord | None:
        """The record the store holds now (remembered, with its version, for the next write)."""
        [stored] = self.backing.multiGetVersioned([COMMIT_RECORD_KEY])
        self._read = True
        if stored is None:
            self._record, self._version = None, None
        else:
            self._record, self._version = stored.value, stored.version
        return self._record

    @property
    def record(self) -> CommitRecord | None:
        """The record as last read or written by this log."""
        return self._record

    def begin(self, txid: int, stream: str | None = None) -> CommitRecord:
        """Mark batch ``txid``'s writes as begun: conditional on the record last read or written."""
        current = self._record if self._read else self.read()
        if current is None:
            new = CommitRecord(epoch=uuid.uuid4().hex, writing=txid, stream=stream)
        else:
            new = replace(current, writing=txid, stream=stream or current.stream)
        return self._write(new, txid)

    def complete(self, txid: int, offsets: dict[str, Any]) -> CommitRecord:
        """Mark batch ``txid``'s writes as complete, with its spouts' end offsets."""
        current = self._record if self._read else self.read()
        if current is None:
            raise StateLostError(self.address, kind="missing", committed_txid=txid, stored_txid=None,
                                 detail="the record vanished while the batch wrote")
        return self._write(replace(current, txid=txid, writing=None, offsets=offsets), txid)

    def rebase(self, txid: int | None, stream: str | None = None) -> CommitRecord:
        """Accept what the store holds: write a record saying ``txid`` completed (a new epoch if none)."""
        current = self._record if self._read else self.read()
        epoch = current.epoch if current is not None else uuid.uuid4().hex
        return self._write(CommitRecord(epoch=epoch, txid=txid, writing=None, stream=stream), txid)

    def _write(self, new: CommitRecord, txid: int | None) -> CommitRecord:
        [won] = self.backing.multiPutIfVersion([COMMIT_RECORD_KEY], [new], [self._version])
        if won is None:
            won = self._landed(new)
        if won is None:
            self._lost_race(txid)
        self._record, self._version = new, won
        return new

    def _landed(self, new: CommitRecord) -> Version | None:
        """The version of ``new`` if the store holds exactly it, else None.

        A write can lose against itself: a store node dies after applying it and before
        answering, and the request is sent again (the client, to another node; Elasticsearch,
        to the shard's new primary), where its condition no longer holds. The record it wanted
        is then there (its epoch is random, so no other history writes the same record).
        """
        [stored] = self.backing.multiGetVersioned([COMMIT_RECORD_KEY])
        return stored.version if stored is not None and stored.value == new else None

    def _lost_race(self, txid: int | None) -> None:
        """The record changed since it was read: say how (it never changes under a lone writer)."""
        before = self._record
        committed = before.txid if before is not None and before.txid is not None else -1
        now = self.read()
        if now is None:
            raise StateLostError(self.address, kind="missing", committed_txid=committed, stored_txid=None,
                                 detail="the store was emptied while the batch wrote")
        if before is not None and now.epoch != before.epoch:
            raise StateLostError(self.address, kind="replaced", committed_txid=committed,
                                 stored_txid=now.txid, detail="while the batch wrote")
        highest = now.highest_txid if now.highest_txid is not None else -1
        if before is None or highest > (before.highest_txid if before.highest_txid is not None else -1):
            raise StateAheadError(self.address, ["(commit record)"], stored_txid=highest,
                                  batch_txid=-1 if txid is None else txid)
        raise StateLostError(self.address, kind="behind", committed_txid=committed, stored_txid=now.txid,
                             detail="the store was rolled back while the batch wrote")

    def close(self) -> None:
        self.backing.close()


__all__ = ["CheckpointCommit", "CommitLog", "CommitRecord", "CommitRecordSerializer", "check_record",
           "kafka_offsets"]
