"""Error classes. Every message names what failed, where, and what to do.

Every error trident-spark raises on purpose derives from :class:`TridentSparkError`:
catch that one class for all of them. The root, the two classes for users'
mistakes (:class:`InvalidArgumentError`, a ValueError; :class:`WrongTypeError`,
a TypeError), :class:`MissingExtraError` (an optional package
is not installed) and the state layer's errors (``StateError`` and its subclasses) are
defined in ``trident_spark.state.errors``, because the state layer imports nothing
outside itself, and are re-exported here: ``trident_spark.errors.TridentSparkError``
is ``trident_spark.state.errors.TridentSparkError``.

Examples
--------
>>> from trident_spark.state.errors import StateAheadError
>>> issubclass(StateAheadError, TridentSparkError), issubclass(TopologyError, TridentSparkError)
(True, True)
"""

from __future__ import annotations

from trident_spark.state.checks import check_int, is_int
from trident_spark.state.errors import (
    InvalidArgumentError,
    MissingExtraError,
    ScanUnsupportedError,
    StateAdoptionError,
    StateAheadError,
    StateConfigError,
    StateConflictError,
    StateError,
    StateLostError,
    StateTypeMismatchError,
    StateUnavailableError,
    TridentSparkError,
    UnreadableValueError,
    UnstorableValueError,
    WrongTypeError,
)


class TopologyError(TridentSparkError):
    """The topology is wrong: found while building it, before anything runs.

    Examples
    --------
    >>> raise TopologyError("each(Split): unknown input field 'text'; the stream has ['value']")
    Traceback (most recent call last):
    ...
    trident_spark.errors.TopologyError: each(Split): unknown input field 'text'; ...
    """


class FailedException(TridentSparkError):  # noqa: N818 (Trident's name)
    """Raised by user code to ask for the whole batch to be replayed (Trident's FailedException).

    Examples
    --------
    >>> raise FailedException("store briefly unavailable")
    Traceback (most recent call last):
    ...
    trident_spark.errors.FailedException: store briefly unavailable
    """


class DRPCExecutionException(TridentSparkError):  # noqa: N818 (Storm's name)
    """A DRPC request failed: its batch failed, it timed out, the topology serving it stopped
    answering, or the DRPC server cannot be reached (Storm's ``DRPCExecutionException``).

    The message is the server's (or names the unreachable ``host:port``).

    Examples
    --------
    >>> raise DRPCExecutionException("DRPC request 'words' timed out after 600 s")
    Traceback (most recent call last):
    ...
    trident_spark.errors.DRPCExecutionException: DRPC request 'words' timed out after 600 s
    """


class SpoutError(TridentSparkError):
    """A spout cannot read what it was asked to read."""


class BrokerUnavailableError(SpoutError):
    """The Kafka broker does not answer at the configured address."""


class UnknownTopicError(SpoutError):
    """A configured topic does not exist on the broker."""


class DataLossError(SpoutError):
    """Offsets the stream needs no longer exist on the broker (retention or deletion)."""


class MalformedRecordError(SpoutError):
    """A record cannot be decoded with the spout's value format."""


class SchemaRegistryError(SpoutError):
    """The Schema Registry a spout decodes with did not answer, or refused; the message names its URL.

    Examples
    --------
    >>> str(SchemaRegistryError("Schema Registry at http://r:8081 did not answer GET /schemas/ids/1"))
    'Schema Registry at http://r:8081 did not answer GET /schemas/ids/1'
    """




class OffsetOutOfRangeError(SpoutError):
    """An offset the spout was asked to start from lies past the end of its partition.

    Examples
    --------
    >>> raise OffsetOutOfRangeError("KafkaSpout(starting_offsets=...): words[0] starts at 500, past ...")
    Traceback (most recent call last):
    ...
    trident_spark.errors.OffsetOutOfRangeError: KafkaSpout(starting_offsets=...): words[0] starts at 500, ...
    """



class OperatorError(TridentSparkError, RuntimeError):
    """User code raised on an executor: the message names the operator and the offending tuple.

    Raised inside Spark tasks (``trident_spark.executor``); the driver raises it again from the
    failed query's text (``trident_spark.runtime.failures``).

    Examples
    --------
    >>> raise OperatorError("each(Split) raised ValueError: bad line on tuple ['x']")
    Traceback (most recent call last):
    ...
    trident_spark.errors.OperatorError: each(Split) raised ValueError: bad line on tuple ['x']
    """


__all__ = [
    "BrokerUnavailableError",
    "DRPCExecutionException",
    "DataLossError",
    "FailedException",
    "InvalidArgumentError",
    "MalformedRecordError",
    "MissingExtraError",
    "OffsetOutOfRangeError",
    "OperatorError",
    "ScanUnsupportedError",
    "SchemaRegistryError",
    "SpoutError",
    "StateAdoptionError",
    "StateAheadError",
    "StateConfigError",
    "StateConflictError",
    "StateError",
    "StateLostError",
    "StateTypeMismatchError",
    "StateUnavailableError",
    "TopologyError",
    "TridentSparkError",
    "UnknownTopicError",
    "UnreadableValueError",
    "UnstorableValueError",
    "WrongTypeError",
    "check_int",
    "is_int",
]
