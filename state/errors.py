"""Errors of the state layer. Every message names the state, the key and what to do.

The state layer cannot import ``trident_spark.errors`` (it depends on nothing
outside itself), so :class:`StateError` derives from :class:`Exception`; the
package root re-exports these classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .redaction import redact_text


class StateError(Exception):
    """Base class of every error the state layer raises on purpose.

    Examples
    --------
    >>> isinstance(StateAheadError("memory://wc", ["cat"], stored_txid=7, batch_txid=2), StateError)
    True
    >>> str(StateError("redis://:s3cret@cache:6379/0?prefix=wc: the state was closed"))
    'redis://:***@cache:6379/0?prefix=wc: the state was closed'
    """

    def __init__(self, *args: object) -> None:
        # Every message passes the one redaction (.redaction): no password or key reaches a user.
        super().__init__(*(redact_text(arg) if isinstance(arg, str) else arg for arg in args))


class StateConfigError(StateError, ValueError):
    """A state setting or state URL is invalid; raised before anything is read or written.

    Examples
    --------
    >>> isinstance(StateConfigError("cache_size must be an int >= 0, got -1"), ValueError)
    True
    """


class StateAheadError(StateError):
    """A stored txid is greater than the batch's txid: the state is ahead of the stream.

    Also raised for a stored txid equal to the txid of a batch the checkpoint has
    not written before (its first run of that batch id): that key was written by
    another history, not by an earlier attempt of this batch.

    It means the checkpoint was reset (batch ids restarted) or two queries write
    this state. Writing would silently mix two histories, so the update is
    refused. The message says how to adopt the stored values or reset the state.

    Attributes
    ----------
    address : str
        The state, as a URL (``memory://wc``, ``sqlite:///tmp/wc.db?table=counts``).
    key : list
        The group values of the first key found ahead.
    stored_txid, batch_txid : int
        The txid in the store and the txid of the batch being applied (after
        ``txid_offset``).
    txid_offset : int
        The offset the state was opened with.

    Examples
    --------
    >>> err = StateAheadError("memory://wc", ["cat"], stored_txid=7, batch_txid=2)
    >>> str(err).split(";")[0]
    "state is ahead of the stream: memory://wc key ['cat'] stored txid 7 > batch txid 2"
    """

    def __init__(self, address: str, key: Sequence[Any], *, stored_txid: int, batch_txid: int,
                 txid_offset: int = 0) -> None:
        self.address = redact_text(address)
        self.key = list(key)
        self.stored_txid = stored_txid
        self.batch_txid = batch_txid
        self.txid_offset = txid_offset
        offset_note = (f" (batch id {batch_txid - txid_offset} + txid_offset {txid_offset})"
                       if txid_offset else "")
        # Equal txids are refused only for a batch this checkpoint never wrote: not a replay.
        compared = ">" if stored_txid > batch_txid else "="
        new_note = ", a batch this checkpoint has not written before" if stored_txid == batch_txid else ""
        super().__init__(
            f"state is ahead of the stream: {address} key {self.key!r} stored txid {stored_txid} "
            f"{compared} batch txid {batch_txid}{offset_note}{new_note}; the checkpoint was reset or "
            f"two queries write this state; the update was refused rather than overwrite newer values. "
            f"To adopt the stored values, restart with a txid_offset that puts this stream's txids "
            f"after every txid in the state (here at least {stored_txid - (batch_txid - txid_offset) + 1}; "
            f"the largest stored txid + 1 always works) and keep that setting from then on; "
            f"to reset, delete the state (or point the stream at a new one) and restart; "
            f"never let two queries write one state")


class StateTypeMismatchError(StateError):
    """The store holds values of another kind than the state was opened as.

    For example an opaque reader finding transactional ``[txid, val]`` values.

    Attributes
    ----------
    address : str
        The state, as a URL.
    key : list or None
        The group values of the key whose value has the wrong kind.
    expected : str
        The kind the state was opened as (``"opaque"``, ...).
    found : str
        What the stored value looks like.

    Examples
    --------
    >>> err = StateTypeMismatchError("memory://wc", ["cat"], expected="opaque",
    ...                              found="a transactional value [txid, val]")
    >>> str(err).split(";")[0]
    "memory://wc key ['cat']: expected an opaque value, found a transactional value [txid, val]"
    """

    def __init__(self, address: str, key: Sequence[Any] | None, *, expected: str, found: str) -> None:
        self.address = redact_text(address)
        self.key = None if key is None else list(key)
        self.expected = expected
        self.found = found
        where = f"{address} key {self.key!r}" if self.key is not None else address
        article = "an" if expected[:1] in "aeiou" else "a"
        super().__init__(
            f"{where}: expected {article} {expected} value, found {found}; the state was written as "
            f"another kind: open it with the type it was written with (?type=... or "
            f"X.transactional()/X.opaque()/X.nonTransactional()), or write to a new state")


class UnreadableValueError(StateError):
    """The serializer cannot read a stored value.

    Attributes
    ----------
    address : str
        The state, as a URL.
    key : list or None
        The group values of the key whose value is unreadable.
    reason : str
        What the serializer said.

    Examples
    --------
    >>> err = UnreadableValueError("memory://wc", ["cat"], "invalid JSON: b'\\\\xff'")
    >>> str(err).split(";")[0]
    "cannot read the stored value of key ['cat'] in memory://wc: invalid JSON: b'\\\\xff'"
    """

    def __init__(self, address: str, key: Sequence[Any] | None, reason: str) -> None:
        self.address = redact_text(address)
        self.key = None if key is None else list(key)
        self.reason = redact_text(reason)
        what = f"key {self.key!r}" if self.key is not None else "a key"
        super().__init__(
            f"cannot read the stored value of {what} in {address}: {reason}; the value was written by "
            f"another program or serializer: open the state with the serializer that wrote it, "
            f"or delete that key")


class StateUnavailableError(StateError):
    """The store cannot be reached or opened: fail fast, naming the address.

    Attributes
    ----------
    address : str
        The store's address (URL or file path).
    reason : str
        What went wrong.

    Examples
    --------
    >>> str(StateUnavailableError("/ro/wc.db", "directory is not writable"))
    'cannot use the state store at /ro/wc.db: directory is not writable'
    """

    def __init__(self, address: str, reason: str) -> None:
        self.address = redact_text(address)
        self.reason = redact_text(reason)
        super().__init__(f"cannot use the state store at {address}: {reason}")


class ScanUnsupportedError(StateError, NotImplementedError):
    """The store cannot list its keys (``scanVersioned``), so ``getTuples`` / TupleCollectionGet cannot work.

    Every backend of this package can; a custom backing map that does not
    implement :meth:`~.base.VersionedBackingMap.scanVersioned` raises this.

    Attributes
    ----------
    address : str
        The state, as a URL.
    backend : str
        The backing map's class name.

    Examples
    --------
    >>> err = ScanUnsupportedError("custom://wc", "MyBackingMap")
    >>> isinstance(err, NotImplementedError), str(err).split(";")[0]
    (True, 'custom://wc: MyBackingMap cannot list its keys (it does not implement scanVersioned)')
    """

    def __init__(self, address: str, backend: str) -> None:
        self.address = redact_text(address)
        self.backend = backend
        super().__init__(
            f"{address}: {backend} cannot list its keys (it does not implement scanVersioned); "
            f"getTuples() and TupleCollectionGet need a store that can: implement "
            f"scanVersioned(batch_size) in {backend}, or query known keys with multiGet() / MapGet()")


class StateConflictError(StateError):
    """A key's conditional write kept losing to other writers: the retries ran out.

    Attributes
    ----------
    address : str
        The state, as a URL.
    key : list
        The group values of the key.
    attempts : int
        How many read-compute-write rounds were tried.

    Examples
    --------
    >>> str(StateConflictError("memory://wc", ["cat"], attempts=10)).split(";")[0]
    "memory://wc key ['cat']: another writer changed the key during each of 10 attempts to update it"
    """

    def __init__(self, address: str, key: Sequence[Any], *, attempts: int) -> None:
        self.address = redact_text(address)
        self.key = list(key)
        self.attempts = attempts
        super().__init__(
            f"{address} key {self.key!r}: another writer changed the key during each of {attempts} "
            f"attempts to update it; two queries may be writing this state (one state, one writer), "
            f"or raise max_conflict_retries if many tasks legitimately share these keys")


__all__ = [
    "ScanUnsupportedError",
    "StateAheadError",
    "StateConfigError",
    "StateConflictError",
    "StateError",
    "StateTypeMismatchError",
    "StateUnavailableError",
    "UnreadableValueError",
]
