"""Error classes. Every message names what failed, where, and what to do.

The state layer's errors (``StateError`` and its subclasses) are defined in
``trident_spark.state.errors`` and importable from here too. The state layer
imports nothing from trident_spark, so they derive from :class:`Exception`,
not :class:`TridentSparkError`: catch ``(TridentSparkError, StateError)`` for both.
"""

from __future__ import annotations

from trident_spark.state.errors import (
    StateAdoptionError,
    StateAheadError,
    StateConfigError,
    StateConflictError,
    StateError,
    StateLostError,
    StateTypeMismatchError,
    StateUnavailableError,
    UnreadableValueError,
    UnstorableValueError,
)
from trident_spark.state.redaction import redact_text


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
        super().__init__(*(redact_text(arg) if isinstance(arg, str) else arg for arg in args))


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


class OffsetOutOfRangeError(SpoutError):
    """An offset the spout was asked to start from lies past the end of its partition.

    Examples
    --------
    >>> raise OffsetOutOfRangeError("KafkaSpout(starting_offsets=...): words[0] starts at 500, past ...")
    Traceback (most recent call last):
    ...
    trident_spark.errors.OffsetOutOfRangeError: KafkaSpout(starting_offsets=...): words[0] starts at 500, ...
    """



class OperatorError(RuntimeError):
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
    "DataLossError",
    "FailedException",
    "MalformedRecordError",
    "OffsetOutOfRangeError",
    "OperatorError",
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
]
