"""A batch interrupted by ``handle.stop()`` ends quietly: no ERROR, no py4j traceback.

``stop()`` interrupts the micro-batch that runs: Spark cancels its jobs and the batch's
``foreachBatch`` call (Python, called back through py4j) fails. That failure is the stop itself,
not an error: the batch has no commit, and the next run on the checkpoint runs it again. Two
loggers would still report it: py4j's callback server logs every exception a Python callback
raises, with its traceback, at ERROR; and Spark logs the query's end with the Python traceback
as the cause (kept out by the package's log4j2 configuration, which the session builder and the
command use). :class:`BatchStoppedError` is what the batch raises instead, short (no cause
chain), and :func:`quiet_py4j` drops py4j's record of it.

Stopping a query also cancels its job group whether or not a batch runs, and Spark's
DAGScheduler warns ``Failed to cancel job group ... Cannot find active jobs for it`` when none
does: nothing went wrong. The package's log4j2 configuration drops that line, but a session the
user built (a notebook's ``SparkSession.builder.getOrCreate()``) logs with Spark's own; so
``handle.stop()`` first adds the same one-message filter to the driver JVM's logging
(:func:`quiet_job_group_warning`). Every other line of that logger, and of every other, is kept.
"""

from __future__ import annotations

import logging
from typing import Any

from trident_spark.errors import TridentSparkError


class BatchStoppedError(TridentSparkError):
    """The running batch was interrupted by ``stop()``; it has no commit and is replayed on restart.

    Examples
    --------
    >>> str(BatchStoppedError("words", 3))
    "stream 'words': batch 3 was interrupted by stop(); it runs again when the topology restarts"
    """

    def __init__(self, stream: str, txid: int) -> None:
        super().__init__(f"stream {stream!r}: batch {txid} was interrupted by stop(); it runs again when "
                         "the topology restarts")
        self.stream = stream
        self.txid = txid


class _DropStopped(logging.Filter):
    """Drops py4j's log record of a callback that raised :class:`BatchStoppedError`."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, BatchStoppedError)


_FILTER = _DropStopped()


def quiet_py4j() -> None:
    """Install the filter on py4j's callback-server logger (idempotent).

    Examples
    --------
    >>> quiet_py4j(); quiet_py4j()
    >>> sum(isinstance(f, _DropStopped) for f in logging.getLogger("py4j.clientserver").filters)
    1
    """
    logger = logging.getLogger("py4j.clientserver")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


#: The logger and the one message :func:`quiet_job_group_warning` drops (as log4j2-cli.properties does).
JOB_GROUP_LOGGER = "org.apache.spark.scheduler.DAGScheduler"
JOB_GROUP_WARNING = "(?s)Failed to cancel job group .*Cannot find active jobs for it.*"

_QUIETED: set[int] = set()  # the JVMs (by their py4j gateway) given the filter


def quiet_job_group_warning(spark: Any) -> bool:
    """Drop Spark's "Failed to cancel job group ... Cannot find active jobs for it" warning in the
    driver JVM of ``spark`` (idempotent): a log4j2 ``RegexFilter`` on the DAGScheduler's logger
    that denies that message and lets every other through. Returns whether the filter is in place;
    False, changing nothing, when the JVM's logging is not log4j2 (a logging setup of the user's).

    Examples
    --------
    >>> quiet_job_group_warning(spark)          # doctest: +SKIP
    True
    """
    context = spark.sparkContext
    gateway = id(context._gateway)
    if gateway in _QUIETED:
        return True
    jvm = context._jvm
    try:
        core = jvm.org.apache.logging.log4j.core
        result = getattr(core, "Filter$Result")
        regex = core.filter.RegexFilter.createFilter(JOB_GROUP_WARNING, None, False, result.DENY,
                                                      result.NEUTRAL)
        logger_context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
        config = logger_context.getConfiguration()
        logger = config.getLoggerConfig(JOB_GROUP_LOGGER)
        if logger.getName() != JOB_GROUP_LOGGER:  # the logger's own, inheriting its parent's level
            logger = core.config.LoggerConfig(JOB_GROUP_LOGGER, None, True)
            config.addLogger(JOB_GROUP_LOGGER, logger)
        logger.addFilter(regex)
        logger_context.updateLoggers()
    except Exception as exc:  # not log4j2 core (another SLF4J binding): leave the user's logging alone
        logging.getLogger(__name__).debug("Spark's job group warning left as it is: %s", exc)
        return False
    _QUIETED.add(gateway)
    return True


__all__ = ["JOB_GROUP_LOGGER", "JOB_GROUP_WARNING", "BatchStoppedError", "quiet_job_group_warning",
           "quiet_py4j"]
