"""The driver's side of every written state's commit record, moved around each batch's writes.

Before a batch writes: read each state's record, compare it with what the
checkpoint committed (``state/commit_record.py``: lost, rolled back, replaced,
or ahead), and mark the batch's writes as begun, conditionally. After every
write of the batch: mark them complete with the spouts' end offsets, then
remember ``(txid, epoch)`` in the checkpoint (``trident-state-commits.json``),
all before Spark's commit log records the batch.

A new checkpoint adopting a state (its ``txid_offset`` already past the record)
is checked once more: its first batch must not re-read what the state counted
(:func:`check_adopted_offsets`).

The file names each state by :func:`state_id`: its location with every secret removed
(:func:`state_identity`), hashed with a random salt kept in the file, so the file says
nothing that checks a password guess (nor, without the file's salt, a location). A file
written by an earlier version names states by an unsalted hash of the URL with its password;
it is read, and each state found under its old id is moved to the new one and the file
rewritten at once (the old id is computed in memory only, to look it up).
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark import checkpoint_files as files
from trident_spark.errors import StateAdoptionError, StateLostError
from trident_spark.runtime.offsets_log import read_offsets
from trident_spark.state.commit_record import (
    CheckpointCommit,
    CommitLog,
    CommitRecord,
    check_record,
    kafka_offsets,
)
from trident_spark.state.redaction import is_secret_name, redact_text, redact_url
from trident_spark.state.source import StateSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

#: In a query's checkpoint directory: per written state, the last txid committed there and its epoch.
COMMITS_FILE = "trident-state-commits.json"


#: The key of the file's salt (every other key is a state id).
SALT_KEY = "salt"


def state_identity(factory: Any) -> str:
    """Where a state lives, with every secret removed: its URL's location (scheme, user, hosts,
    ports, database, path or index) with the password shown as ``***``, and its backend parameters
    (table, key prefix, ...) but the secret ones (``api_key``, ``password``, ...). A password
    change keeps it; the common settings (``cache_size``, ``type`` ...) are not part of it.

    Examples
    --------
    >>> from trident_spark.state import RedisState
    >>> state_identity(RedisState.opaque(url="redis://:hunter2@cache:6379/0", key_prefix="wc"))
    '["redis://:***@cache:6379/0", {"prefix": "wc"}]'
    """
    if not isinstance(factory, StateSource):
        return str(redact_text(repr(factory)))
    location, params = factory.url_location()
    kept = {name: value for name, value in params.items() if not is_secret_name(name)}
    return json.dumps([redact_url(location), kept], sort_keys=True)


def state_id(factory: Any, salt: str) -> str:
    """A state's name in the checkpoint's file: its :func:`state_identity` (no secret in it),
    hashed with the file's ``salt``.

    Examples
    --------
    >>> from trident_spark.state import RedisState
    >>> one = RedisState.opaque(url="redis://:hunter2@cache:6379/0", key_prefix="wc")
    >>> state_id(one, "5a17") == state_id(one.with_settings(url="redis://:other@cache:6379/0"), "5a17")
    True
    >>> len(state_id(one, "5a17")), state_id(one, "5a17") == state_id(one, "0ther")
    (32, False)
    """
    digest = hashlib.blake2b(state_identity(factory).encode("utf-8"), digest_size=16,
                             key=salt.encode("utf-8"))
    return digest.hexdigest()


def _legacy_state_id(factory: Any) -> str:
    """The id an earlier version gave a state (an unsalted hash of its location, password
    included): computed only to find a state in an old file, never written."""
    location = factory.url_location() if isinstance(factory, StateSource) else repr(factory)
    return hashlib.sha256(repr(location).encode("utf-8")).hexdigest()[:20]


@dataclass
class _Guard:
    factory: StateSource
    stream: str
    identity: str  # state_identity(factory): which guard a factory's is
    key: str = ""  # state_id(factory, salt): its entry in the checkpoint's file, once the file is read
    log: CommitLog | None = None
    adopting: CommitRecord | None = None
    epoch: str | None = None  # the record's epoch as the batch began writing
    rebases: int = 0  # losses accepted in this run (each re-bases the store on the checkpoint)

    def commit_log(self) -> CommitLog:
        if self.log is None:
            self.log = self.factory.open_commit_log()
        return self.log

    @property
    def offset(self) -> int:
        return int(self.factory.txid_offset)


@dataclass
class StateCommits:
    """The commit records of the states one query writes.

    Parameters
    ----------
    factories : list
        The state factories of the query's persists (each with ``open_commit_log``).
    stream : str
        The query's name.
    checkpoint : Path, str or None
        The query's checkpoint directory, a local path or a URI (None: nothing is compared with a checkpoint).
    accept_loss : bool
        Re-base a state that lost data on the checkpoint instead of failing (``run(accept_state_loss=True)``).
    """

    factories: list[Any]
    stream: str
    checkpoint: Path | str | None = None
    accept_loss: bool = False
    _guards: list[_Guard] = field(default_factory=list, init=False, repr=False)
    #: The checkpoint's file as last read or written (this driver is its only writer).
    _entries: dict[str, Any] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for factory in self.factories:
            if not isinstance(factory, StateSource):
                continue
            identity = state_identity(factory)
            if identity not in seen:
                seen.add(identity)
                self._guards.append(_Guard(factory, self.stream, identity))

    def __bool__(self) -> bool:
        return bool(self._guards)

    # -- the checkpoint's side ---------------------------------------------------------------

    def _file(self) -> Path | str | None:
        return None if self.checkpoint is None else files.join(self.checkpoint, COMMITS_FILE)

    def _committed(self) -> dict[str, Any]:
        """The checkpoint's entries: read from its file once, then kept as they are written.

        The first read gives every state its id under the file's salt (made, for a file without
        one), and moves a state found under its old, unsalted id to its new one: the file is
        written again at once, so the old id leaves the disk.
        """
        if self._entries is None:
            entries = self._read_file()
            salt = entries.get(SALT_KEY)
            if not isinstance(salt, str) or not salt:
                salt = entries[SALT_KEY] = secrets.token_hex(16)
            moved = False
            for guard in self._guards:
                guard.key = state_id(guard.factory, salt)
                legacy = _legacy_state_id(guard.factory)
                if legacy in entries:
                    old = entries.pop(legacy)
                    entries.setdefault(guard.key, old)  # one written under the new id is newer
                    moved = True
            self._entries = entries
            if moved:
                try:
                    self._remember(entries)
                except OSError as exc:  # written again after the batch's writes
                    log.warning("stream %s: cannot rewrite %s under the new state ids (%s)", self.stream,
                                files.describe(self._file() or ""), exc)
        return self._entries

    def _read_file(self) -> dict[str, Any]:
        path = self._file()
        if path is None:
            return {}
        try:
            data = json.loads(files.read_text(path))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("stream %s: cannot read %s (%s); state commit records are checked from the next "
                        "batch on", self.stream, files.describe(path), exc)
            return {}
        return data if isinstance(data, dict) else {}

    def _remember(self, entries: dict[str, Any]) -> None:
        self._entries = entries
        path = self._file()
        if path is None:
            return
        files.write_text(path, json.dumps(entries, indent=1, sort_keys=True))  # atomic

    # -- around a batch's writes -------------------------------------------------------------

    def largest_txids(self) -> dict[int, int]:
        """The largest txid each state's record says it holds, by ``id(factory)`` (one read each)."""
        found: dict[int, int] = {}
        for guard in self._guards:
            record = guard.commit_log().read()
            if record is not None and record.highest_txid is not None:
                found[id(guard.factory)] = record.highest_txid
        return found

    def before_writes(self, batch_id: int, replaying: bool) -> None:
        """Check every state against the checkpoint, then mark batch ``batch_id``'s writes begun.

        Raises StateLostError (or StateAheadError) before anything of the batch is written.
        """
        self.check(batch_id, replaying)
        self.begin(batch_id)

    def check(self, batch_id: int, replaying: bool) -> None:
        """Compare every state's record with the checkpoint (no write, unless a loss is accepted)."""
        committed = self._committed()
        for guard in self._guards:
            commit_log = guard.commit_log()
            record = commit_log.read()
            txid = batch_id + guard.offset
            entry = committed.get(guard.key)
            known = (CheckpointCommit(int(entry["txid"]), str(entry["epoch"]))
                     if isinstance(entry, dict) else None)
            try:
                check_record(commit_log.address, record, committed=known, batch_txid=txid,
                             replaying=replaying, txid_offset=guard.offset)
            except StateLostError as lost:
                if not self.accept_loss:
                    raise
                log.warning("stream %s: %s -- accepted (accept_state_loss=True): the record is re-based on "
                            "txid %s and counting goes on from what the store holds", self.stream,
                            str(lost).split(". Counting on")[0], lost.committed_txid)
                record = commit_log.rebase(lost.committed_txid, self.stream)
                guard.rebases += 1
                committed[guard.key] = self._entry(guard, record)
                self._remember(committed)
            guard.adopting = record if (known is None and record is not None and record.txid is not None
                                        and not replaying) else None

    def begin(self, batch_id: int) -> None:
        """Mark batch ``batch_id``'s writes begun in every state (conditional on the record checked)."""
        for guard in self._guards:
            guard.epoch = guard.commit_log().begin(batch_id + guard.offset, self.stream).epoch

    def generations(self) -> dict[int, str]:
        """Each written store's generation as this batch began writing, by ``id(factory)``.

        The record's epoch (a store emptied or replaced gets another) and the losses accepted
        in this run (a store rolled back keeps its epoch): the executors drop a state's cache
        filled under another generation, so no entry outlives what it was read from, and no
        key is skipped as "already applied" on the word of a store that was reset.
        """
        found = {g.identity: f"{g.epoch}/{g.rebases}" for g in self._guards if g.epoch is not None}
        return {id(factory): found[identity] for factory in self.factories
                if isinstance(factory, StateSource)
                and (identity := state_identity(factory)) in found}

    def after_writes(self, batch_id: int, offsets: dict[str, Any]) -> None:
        """Mark batch ``batch_id``'s writes complete in every state, then in the checkpoint."""
        committed = self._committed()
        for guard in self._guards:
            record = guard.commit_log().complete(batch_id + guard.offset, offsets)
            committed[guard.key] = self._entry(guard, record)
            guard.adopting = None
        self._remember(committed)

    def _entry(self, guard: _Guard, record: CommitRecord) -> dict[str, Any]:
        return {"txid": record.txid, "epoch": record.epoch, "state": guard.commit_log().address}

    def adopted_records(self) -> list[tuple[str, CommitRecord, int]]:
        """The states this batch adopts from another checkpoint: (address, their record, txid_offset)."""
        return [(g.commit_log().address, g.adopting, g.offset)
                for g in self._guards if g.adopting is not None]

    def close(self) -> None:
        for guard in self._guards:
            if guard.log is not None:
                guard.log.close()
                guard.log = None


def batch_offsets(checkpoint: Path | str | None, batch_id: int, streams: list[str]) -> dict[str, Any]:
    """Each spout's end offsets of a batch, from Spark's offsets log (logged before the batch ran).

    The log's file ``offsets/<batch id>`` holds a version line, the batch's metadata,
    then one JSON line per source, in the order the query reads its spouts (``offsets_log``).
    A missing file gives ``{}``; a malformed one raises
    :class:`~trident_spark.runtime.offsets_log.MalformedOffsetsError`, naming it.
    """
    if checkpoint is None:
        return {}
    try:
        logged = read_offsets(checkpoint, batch_id)
    except OSError:
        return {}
    if logged is None:
        return {}
    return dict(zip(streams, logged.sources, strict=False))


def check_adopted_offsets(address: str, record: CommitRecord, batch_end: dict[str, Any],
                          first_offsets: dict[tuple[str, str], int], txid_offset: int) -> None:
    """Refuse a first batch that re-reads what an adopted state already counted.

    Parameters
    ----------
    address : str
        The adopted state.
    record : CommitRecord
        Its commit record (offsets where its last batch ended).
    batch_end : dict
        This batch's end offsets by stream (Spark's offsets log).
    first_offsets : dict
        The smallest offset this batch read per ``(topic, partition)``.
    txid_offset : int
        The state's txid_offset, for the message.

    Examples
    --------
    >>> record = CommitRecord("e", 24, offsets={"s": {"offsets": {"t": {"0": 100}}}})
    >>> check_adopted_offsets("memory://wc", record, {"s": {"offsets": {"t": {"0": 150}}}},
    ...                       {("t", "0"): 100}, 25)
    """
    counted = record.starting_offsets()
    if not counted:
        return
    ends: dict[tuple[str, str], int] = {}
    for document in batch_end.values():
        for topic, partitions in kafka_offsets(document).items():
            ends.update({(topic, p): o for p, o in partitions.items()})
    overlaps = []
    for topic, partitions in counted.items():
        for partition, done in partitions.items():
            first = first_offsets.get((topic, partition))
            end = ends.get((topic, partition))
            if (first is not None and first < done) or (end is not None and end < done):
                start = first if first is not None else end
                overlaps.append(f"{topic}[{partition}] from offset {start} (counted up to {done})")
    if overlaps:
        raise StateAdoptionError(
            f"adopting {address}: this run's first batch re-reads records the state already counted: "
            f"{', '.join(overlaps[:5])}{' ...' if len(overlaps) > 5 else ''}; counting them again would "
            f"double them. The state's last committed batch (txid {record.txid}) ended at "
            f"starting_offsets={json.dumps(counted, sort_keys=True)}: start the spout there "
            f"(KafkaSpout(..., starting_offsets=<that>), or factory.committed_offsets()), keep "
            f"txid_offset={txid_offset}, and restart with a new checkpoint directory")


def first_offsets(df: DataFrame) -> dict[tuple[str, str], int]:
    """The smallest offset a batch's DataFrame holds per (topic, partition) (one Spark job)."""
    from pyspark.sql import functions as F

    if not {"topic", "partition", "offset"} <= set(df.columns):
        return {}
    rows = df.groupBy("topic", "partition").agg(F.min("offset").alias("first")).collect()
    return {(str(r["topic"]), str(r["partition"])): int(r["first"]) for r in rows}


__all__ = ["COMMITS_FILE", "SALT_KEY", "StateCommits", "batch_offsets", "check_adopted_offsets",
           "first_offsets", "state_id", "state_identity"]
