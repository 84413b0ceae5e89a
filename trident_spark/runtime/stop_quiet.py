"""A batch interrupted by ``handle.stop()`` ends quietly: no ERROR, no py4j traceback.

``stop()`` interrupts the micro-batch that runs: Spark cancels its jobs and the batch's
``foreachBatch`` call (Python, called back through py4j) fails. That failure is the stop itself,
not an error: the batch has no commit, and the next run on the checkpoint runs it again. Two
loggers would still report it: py4j's callback server logs every exception a Python callback
raises, with its traceback, at ERROR; and Spark logs the query's end with the Python traceback
as the cause (kept out by the package's log4j2 configuration, which the session builder and the
command use). :class:`BatchStoppedError` is what the batch raises instead, short (no cause
chain), and :func:`quiet_py4j` drops py4j's record of it.
"""

from __future__ import annotations

import logging

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


__all__ = ["BatchStoppedError", "quiet_py4j"]
