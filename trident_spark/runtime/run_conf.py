"""``spark.trident.*``: a run's settings read from the Spark conf where ``run()`` was given none.

Precedence, per setting: a value given to ``run()`` (or to a ``trident-spark run`` option) wins;
then the session's Spark conf (``--conf spark.trident.trigger=5s``, ``spark-defaults.conf``,
``SparkSession.builder.config(...)``, ``spark.conf.set(...)``); then ``run()``'s default. A value
in the conf that cannot be read is a :class:`~trident_spark.errors.TopologyError` naming the key,
the value and what the key accepts. The keys are listed in :data:`CONF_SETTINGS` and in
docs/reference/configuration.md.

The spouts' own settings (``KafkaSpout(max_fetch_bytes=...)``, ``max_offsets_per_trigger``) have
no key here: two spouts of one topology may want different ones, and a session-wide key could
not say which. The DRPC token has none either: a secret belongs in ``$TRIDENT_SPARK_DRPC_TOKEN``,
not in a conf that spark-submit and the Spark UI show.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from trident_spark import checkpoint_files
from trident_spark.durations import parse_seconds
from trident_spark.errors import InvalidArgumentError, TopologyError
from trident_spark.runner import RunSettings, is_default, plain

#: Triggers given by name rather than as an interval.
NAMED_TRIGGERS = ("available_now", "availableNow", "once")


class SparkConf(Protocol):
    """What is read of a session's conf: ``spark.conf`` (PySpark's ``RuntimeConfig``) meets it."""

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key``, or ``default`` when it is not set."""


class _UnreadableError(InvalidArgumentError):
    """A conf value its key does not accept (turned into the error naming the key)."""


def read_trigger(text: str) -> str | None:
    """A trigger from the conf: an interval (made Spark's ``N milliseconds``), a named trigger, or
    ``none`` (each batch starts as soon as the last ends, as ``run(trigger=None)``).

    Examples
    --------
    >>> read_trigger("5s"), read_trigger("available_now"), read_trigger("none")
    ('5000 milliseconds', 'available_now', None)
    """
    value = text.strip()
    if value.lower() == "none":
        return None
    if value in NAMED_TRIGGERS:
        return value
    try:
        seconds = parse_seconds(value, what="trigger")
    except ValueError:
        raise _UnreadableError from None
    return f"{round(seconds * 1000)} milliseconds"


def read_count(minimum: int) -> Callable[[str], int]:
    """A reader of an int >= ``minimum``.

    Examples
    --------
    >>> read_count(0)("5")
    5
    """
    def read(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise _UnreadableError from None
        if value < minimum:
            raise _UnreadableError
        return value
    return read


def read_seconds(text: str) -> float:
    """A duration >= 0 in seconds: ``"90"``, ``"500ms"``, ``"10m"``.

    Examples
    --------
    >>> read_seconds("10m"), read_seconds("0.5")
    (600.0, 0.5)
    """
    try:
        value = parse_seconds(text.strip(), what="duration")
    except ValueError:
        raise _UnreadableError from None
    return value


def read_checkpoint(text: str) -> Any:
    """A checkpoint location: a path, or a URI kept as a string.

    Examples
    --------
    >>> read_checkpoint("/tmp/wc"), read_checkpoint("s3a://bucket/wc")
    (PosixPath('/tmp/wc'), 's3a://bucket/wc')
    """
    if not text.strip():
        raise _UnreadableError
    return checkpoint_files.checkpoint_location(text.strip())


def read_address(text: str) -> str:
    """A DRPC server as ``host:port`` (port 0: one started on a free port).

    Examples
    --------
    >>> read_address("127.0.0.1:3772")
    '127.0.0.1:3772'
    """
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise _UnreadableError
    return text.strip()


def read_choice(*choices: str) -> Callable[[str], str]:
    """A reader of one of ``choices``.

    Examples
    --------
    >>> read_choice("auto", "spark")("spark")
    'spark'
    """
    def read(text: str) -> str:
        if text.strip() not in choices:
            raise _UnreadableError
        return text.strip()
    return read


def read_bool(text: str) -> bool:
    """``true`` or ``false`` (any case), as Spark writes booleans.

    Examples
    --------
    >>> read_bool("False"), read_bool("true")
    (False, True)
    """
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise _UnreadableError
    return value == "true"


@dataclass(frozen=True)
class ConfSetting:
    """One ``spark.trident.*`` key: the ``run()`` setting it stands for and how its text is read.

    Examples
    --------
    >>> CONF_SETTINGS[0].key, CONF_SETTINGS[0].field
    ('spark.trident.checkpointLocation', 'checkpoint')
    """

    key: str
    field: str  # the RunSettings field (run()'s keyword, but checkpoint for checkpoint_location)
    accepts: str  # what the key takes, for errors and the docs
    read: Callable[[str], Any]

    def value(self, conf: SparkConf) -> tuple[bool, Any]:
        """``(True, value)`` when ``conf`` sets the key, ``(False, None)`` when it does not; a
        :class:`TopologyError` naming the key, the value and what is accepted when it cannot be read.

        Examples
        --------
        >>> LIVE_PROGRESS.value({"spark.trident.notebook.liveProgress": "false"})
        (True, False)
        >>> LIVE_PROGRESS.value({"spark.trident.notebook.liveProgress": "no"})
        Traceback (most recent call last):
        ...
        trident_spark.errors.TopologyError: Spark conf spark.trident.notebook.liveProgress='no': give true \
or false ...
        """
        text = conf.get(self.key, None)
        if text is None:
            return False, None
        try:
            return True, self.read(str(text))
        except _UnreadableError:
            raise TopologyError(
                f"Spark conf {self.key}={text!r}: give {self.accepts}; it comes from --conf, "
                "spark-defaults.conf or SparkSession.builder.config() (a value given to run() "
                "takes its place)") from None


#: The keys read for ``run()``'s settings, in the order of docs/reference/configuration.md.
CONF_SETTINGS: tuple[ConfSetting, ...] = (
    ConfSetting("spark.trident.checkpointLocation", "checkpoint",
                "a path or a URI (file://, hdfs://, s3a://...)", read_checkpoint),
    ConfSetting("spark.trident.trigger", "trigger",
                "an interval such as '500ms', '2 seconds' or '1m', 'available_now', 'once' or 'none' "
                "(each batch as soon as the last ends)", read_trigger),
    ConfSetting("spark.trident.maxBatchRetries", "max_batch_retries",
                "an int >= 0 (replays of a batch that raises FailedException)", read_count(0)),
    ConfSetting("spark.trident.retryDelay", "retry_delay",
                "a duration >= 0 such as '500ms' or '2s' (the first wait before a replay)", read_seconds),
    ConfSetting("spark.trident.outageBudget", "outage_budget",
                "a duration >= 0 such as '90s', '10m' or '180' (how long a stream waits for a "
                "broker or store that does not answer)", read_seconds),
    ConfSetting("spark.trident.progressHistory", "progress_history",
                "an int >= 1 (batches of progress handle.progress keeps)", read_count(1)),
    ConfSetting("spark.trident.drpc.server", "drpc",
                "'host:port' of a DRPC server ('127.0.0.1:0': one started on a free port)", read_address),
    ConfSetting("spark.trident.drpc.path", "drpc_path", "one of 'auto', 'spark', 'driver'",
                read_choice("auto", "spark", "driver")),
)

#: Off-switch of the live progress table a run shows in Jupyter (``runtime.notebook_progress``).
LIVE_PROGRESS = ConfSetting("spark.trident.notebook.liveProgress", "", "true or false (a live progress "
                            "table under the cell that called run(), in Jupyter)", read_bool)


def _not_given(settings: RunSettings, name: str) -> bool:
    value = getattr(settings, name)
    return value is None if name in ("checkpoint", "drpc") else is_default(value)


def resolve(settings: RunSettings, conf: SparkConf) -> RunSettings:
    """``settings`` with each setting ``run()`` was not given taken from ``conf`` where it has a
    ``spark.trident.*`` key; the defaults left are made plain values (``runner.plain``).

    Examples
    --------
    >>> from pathlib import Path
    >>> conf = {"spark.trident.trigger": "5s", "spark.trident.maxBatchRetries": "7"}
    >>> resolved = resolve(RunSettings(Path("/tmp/wc"), max_batch_retries=1), conf)
    >>> resolved.trigger, resolved.max_batch_retries, resolved.outage_budget
    ('5000 milliseconds', 1, 180.0)
    """
    changes: dict[str, Any] = {}
    for setting in CONF_SETTINGS:
        if _not_given(settings, setting.field):
            found, value = setting.value(conf)
            if found:
                changes[setting.field] = value
    for item in dataclasses.fields(settings):
        if item.name not in changes and is_default(getattr(settings, item.name)):
            changes[item.name] = plain(getattr(settings, item.name))
    return dataclasses.replace(settings, **changes)


__all__ = ["CONF_SETTINGS", "LIVE_PROGRESS", "NAMED_TRIGGERS", "ConfSetting", "SparkConf", "resolve"]
