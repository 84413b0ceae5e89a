"""Errors of the state layer, and the root every trident-spark error derives from.

:class:`TridentSparkError` is defined here, in the lowest layer, because the
state layer imports nothing outside itself: ``trident_spark.errors`` re-exports
this same class, so one ``except TridentSparkError`` catches state errors and
the rest alike. Every message names the state, the key and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .redaction import redact_text


class TridentSparkError(Exception):
    """Base class of every error trident-spark raises on purpose.

    Its message passes the one redaction (``trident_spark.state.redaction``): a
    password, API key or token in it (a state URL, a setting) shows as ``***``.

    Examples
    --------
    >>> str(TridentSparkError("state redis://:s3cret@cache:6379/0 is already persisted"))
    'state redis://:***@cache:6379/0 is already persisted'
    """

    def __init__(self, *args: object) -> None:
        # Every message passes the one redaction (.redaction): no password or key reaches a user.
        super().__init__(*(redact_text(arg) if isinstance(arg, str) else arg for arg in args))

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross processes (an instance host's back to its task, a task's to the driver).
        # Pickle's default calls ``cls(*self.args)``, which fails for a subclass whose __init__
        # takes other arguments (``StateUnavailableError(address, reason)`` has one message arg):
        # rebuild from the message and the attributes instead, without calling __init__.
        return (_rebuild_error, (type(self), self.args, dict(self.__dict__)))


def _rebuild_error(cls: type[BaseException], args: tuple[Any, ...],
                   attributes: dict[str, Any]) -> BaseException:
    """An error as :meth:`TridentSparkError.__reduce__` pickled it: its class, message and attributes.

    Examples
    --------
    >>> import pickle
    >>> error = pickle.loads(pickle.dumps(StateUnavailableError("http://es:9200", "timed out")))
    >>> type(error).__name__, error.address, error.reason
    ('StateUnavailableError', 'http://es:9200', 'timed out')
    >>> str(error)
    'cannot use the state store at http://es:9200: timed out'
    """
    error = cls.__new__(cls, *args)
    BaseException.__init__(error, *args)
    error.__dict__.update(attributes)
    return error


class InvalidArgumentError(TridentSparkError, ValueError):
    """An argument, option or setting has a value trident-spark cannot use.

    It is a :class:`ValueError` too, so code that caught one before still does.

    Examples
    --------
    >>> err = InvalidArgumentError("FirstN: n must be an int >= 0 (how many tuples to keep), got -1")
    >>> isinstance(err, TridentSparkError), isinstance(err, ValueError)
    (True, True)
    """


class WrongTypeError(TridentSparkError, TypeError):
    """A value given to trident-spark (an argument, or a field's value an operation reads) has the wrong type.

    It is a :class:`TypeError` too, so code that caught one before still does.

    Examples
    --------
    >>> err = WrongTypeError("Negate needs a filter (a BaseFilter or a function of the tuple), got 3")
    >>> isinstance(err, TridentSparkError), isinstance(err, TypeError)
    (True, True)
    """


class MissingExtraError(TridentSparkError, ImportError):
    """An optional dependency is not installed; the message names the ``pip install`` that adds it.

    Raised by :func:`trident_spark.state.extras.require_extra`, the one place an optional
    package is imported. It is an :class:`ImportError` too.

    Examples
    --------
    >>> str(MissingExtraError("value_format='avro' needs fastavro: pip install 'trident-spark[avro]'"))
    "value_format='avro' needs fastavro: pip install 'trident-spark[avro]'"
    """


class StateError(TridentSparkError):
    """Base class of every error the state layer raises on purpose.

    Examples
    --------
    >>> isinstance(StateAheadError("memory://wc", ["cat"], stored_txid=7, batch_txid=2), StateError)
    True
    >>> str(StateError("redis://:s3cret@cache:6379/0?prefix=wc: the state was closed"))
    'redis://:***@cache:6379/0?prefix=wc: the state was closed'
    """


class StateConfigError(StateError, InvalidArgumentError):
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
    largest_txid : int or None
        The largest txid the store holds, when known (its commit record): the
        ``txid_offset`` the message asks for is counted from it, not from this key.

    Examples
    --------
    >>> err = StateAheadError("memory://wc", ["cat"], stored_txid=7, batch_txid=2)
    >>> str(err).split(";")[0]
    "state is ahead of the stream: memory://wc key ['cat'] stored txid 7 > batch txid 2"
    """

    def __init__(self, address: str, key: Sequence[Any], *, stored_txid: int, batch_txid: int,
                 txid_offset: int = 0, largest_txid: int | None = None) -> None:
        self.address = redact_text(address)
        self.key = list(key)
        self.stored_txid = stored_txid
        self.batch_txid = batch_txid
        self.txid_offset = txid_offset
        self.largest_txid = largest_txid
        largest = stored_txid if largest_txid is None else max(stored_txid, largest_txid)
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
            f"after every txid in the state (here at least {largest - (batch_txid - txid_offset) + 1}; "
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


class UnstorableValueError(StateError, TypeError):
    """A value cannot be stored: it is not JSON and cannot be pickled (a lambda, a lock, a socket).

    Attributes
    ----------
    address : str or None
        The state, as a URL (None when raised by a serializer, before a store adds it).
    key : list or None
        The group values of the key whose value could not be stored.
    value_type : str
        The qualified name of the value's type.
    reason : str
        Why pickling failed.

    Examples
    --------
    >>> err = UnstorableValueError("memory://wc", ["cat"], type_name(lambda: 1), "PicklingError: no")
    >>> str(err).split(": a ")[1].split(";")[0]
    'function value cannot be pickled (PicklingError: no)'
    >>> err.key, err.value_type
    (['cat'], 'function')
    """

    def __init__(self, address: str | None, key: Sequence[Any] | None, value_type: str, reason: str) -> None:
        self.address = None if address is None else redact_text(address)
        self.key = None if key is None else list(key)
        self.value_type = value_type
        self.reason = redact_text(reason)
        what = "a value" if self.key is None else f"the value of key {self.key!r}"
        where = "" if address is None else f" in {address}"
        super().__init__(
            f"cannot store {what}{where}: a {self.value_type} value cannot be pickled ({reason}); state "
            f"values are JSON values or picklable objects: make it picklable (a class defined at module "
            f"level, with no lambda, lock, socket or open file among its attributes) or convert it (e.g. "
            f"to a dict) before it is aggregated into the state")

    def __reduce__(self) -> tuple[Any, ...]:
        # The attributes as state too: notes (the one a task adds, trident_spark.task_errors) cross.
        return (UnstorableValueError, (self.address, self.key, self.value_type, self.reason),
                dict(self.__dict__))


def type_name(value: Any) -> str:
    """A value's type as a message shows it: ``int``, ``mymodule.Point``.

    Examples
    --------
    >>> import collections
    >>> type_name(3), type_name(ValueError()), type_name(collections.OrderedDict())
    ('int', 'ValueError', 'collections.OrderedDict')
    """
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


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


class StateAdoptionError(StateError):
    """A new checkpoint adopts a state, but its first batch re-reads records the state already counted.

    Raised before the batch writes. The message gives the offsets where the
    state's last committed batch ended, to start the spout from.

    Examples
    --------
    >>> isinstance(StateAdoptionError("adopting memory://wc: ..."), StateError)
    True
    """


class StateLostError(StateError):
    """The store holds less than the checkpoint committed to it: its data was lost or rolled back.

    Every state keeps a commit record beside its keys (``commit_record.py``): the
    last batch whose writes completed. The checkpoint remembers the same. A store
    that restarted empty (Redis without persistence, an in-memory server), was
    replaced, or was restored from an older backup no longer agrees, and counting
    on would silently give wrong values (a lost key counts from zero again), so
    the query stops instead.

    Attributes
    ----------
    address : str
        The state, as a URL without secrets.
    kind : str
        ``"missing"`` (no commit record: emptied or replaced), ``"behind"`` (an
        older record: rolled back) or ``"replaced"`` (a record of another store
        generation).
    committed_txid : int
        The last txid the checkpoint committed to this state.
    stored_txid : int or None
        The last txid the store's record says it holds (None: no record).

    Examples
    --------
    >>> err = StateLostError("redis://127.0.0.1:6379/0?prefix=wc", kind="missing", committed_txid=24,
    ...                      stored_txid=None)
    >>> str(err).split(", but")[0]
    'state lost data: redis://127.0.0.1:6379/0?prefix=wc holds no commit record'
    """

    def __init__(self, address: str, *, kind: str, committed_txid: int, stored_txid: int | None,
                 detail: str = "") -> None:
        self.address = redact_text(address)
        self.kind = kind
        self.committed_txid = committed_txid
        self.stored_txid = stored_txid
        found = {
            "missing": "holds no commit record",
            "behind": f"holds the values of txid {stored_txid}",
            "replaced": f"holds another store's values (txid {stored_txid}, another generation)",
        }.get(kind, kind)
        why = {
            "missing": "the store was emptied (restarted without persistence?) or replaced",
            "behind": "the store was rolled back (restored from an older backup?) or lost recent writes",
            "replaced": "the store was emptied and written by another run, or replaced by another store",
        }.get(kind, "")
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"state lost data: {address} {found}, but this checkpoint committed batches up to txid "
            f"{committed_txid} to it; {why}{extra}. Counting on would silently give wrong values, so "
            f"the stream stopped before writing. What to do: restore the store from a backup or "
            f"snapshot taken at or after txid {committed_txid} and restart (an exact recovery); or "
            f"rebuild: delete the state and the checkpoint and re-read the topic from its start; or "
            f"accept the loss explicitly with run(..., accept_state_loss=True), which re-bases the "
            f"record on the checkpoint and counts on from what the store holds now")


__all__ = [
    "InvalidArgumentError",
    "MissingExtraError",
    "ScanUnsupportedError",
    "StateAdoptionError",
    "StateAheadError",
    "StateConfigError",
    "StateConflictError",
    "StateError",
    "StateLostError",
    "StateTypeMismatchError",
    "StateUnavailableError",
    "TridentSparkError",
    "UnreadableValueError",
    "UnstorableValueError",
    "WrongTypeError",
]
