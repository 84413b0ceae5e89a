"""One retry policy for a batch: what replays it, how an outage is waited out, the one failure text.

Both ways a batch runs use it: the Spark batch runner (:class:`~.batch.BatchRunner`, each
micro-batch in ``foreachBatch``) and the DRPC driver path (:class:`~.drpc.driver_path.DirectDRPC`,
a request run as its own batch by a thread of the driver). The rules are the Spark path's:

* ``FailedException`` (an operation asks for a replay, Trident's rule) and
  ``StateConflictError`` (a store kept losing conditional writes; Trident replays a batch whose
  state update failed) replay the batch, at most ``max_retries`` times, ``retry_delay`` seconds
  apart, doubling;
* a broker or store that does not answer (``BrokerUnavailableError``,
  ``StateUnavailableError``) is waited out within the outage budget
  (:class:`~trident_spark.outage.Outage`), which does not use up ``max_retries``;
* anything else fails the batch at once;
* replays used up: a ``FailedException`` fails with :func:`exhausted`'s text, ``batch N of
  stream 'S' failed K times (max_batch_retries=M); last cause: ...``; a state conflict fails
  with the store's own error, which names its address.

A replay runs with the same txid (the same batch, the same data). Where the txids come from:
the Spark path's txid is Spark's batch id, logged in the query's checkpoint before the batch
runs, so a restarted query never gives an id to other data. The driver path has no offsets log
of its own; it takes its txids from :class:`~.drpc.txids.TxidBlocks`, kept in the same query
checkpoint directory (see that module for why).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from trident_spark.errors import (
    BrokerUnavailableError,
    FailedException,
    StateConflictError,
    StateUnavailableError,
)
from trident_spark.outage import Kind, Outage

log = logging.getLogger(__name__)

#: Causes that replay the batch (bounded by ``max_batch_retries``): asked for by an operation,
#: or a state store that kept losing conditional writes (Trident replays a batch whose state
#: update failed).
RETRYABLE = (FailedException, StateConflictError)

#: Causes that replay the batch while the outage lasts less than ``outage_budget`` seconds
#: (``trident_spark.outage``): a broker or store that does not answer.
OUTAGES = (BrokerUnavailableError, StateUnavailableError)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How a batch is retried: replays bounded by ``max_retries``, outages by an :class:`Outage`.

    Parameters
    ----------
    stream : str
        The stream (query) the batches belong to, for the messages.
    max_retries : int, default 3
        Replays after a ``FailedException`` or a state conflict (``run(max_batch_retries=)``).
    retry_delay : float, default 0.5
        Seconds before the first replay; each next one waits twice as long.
    sleep : callable, default time.sleep
        How a replay waits (tests give a fake clock).

    Examples
    --------
    >>> failures = [FailedException("flaky"), FailedException("flaky")]
    >>> def attempt():
    ...     if failures:
    ...         raise failures.pop()
    ...     return "done"
    >>> policy = RetryPolicy("words", max_retries=3, retry_delay=0.0)
    >>> policy.run(attempt, 7, Outage(0, "words", "batch 7"))
    'done'
    >>> def always_fails():
    ...     raise FailedException("flaky")
    >>> RetryPolicy("words", max_retries=0).run(always_fails, 7, Outage(0, "words", "batch 7"))
    Traceback (most recent call last):
    ...
    trident_spark.errors.FailedException: batch 7 of stream 'words' failed 1 time (max_batch_retries=0); ...
    """

    stream: str
    max_retries: int = 3
    retry_delay: float = 0.5
    sleep: Callable[[float], None] = time.sleep

    def run(self, attempt: Callable[[], T], batch_id: int, outage: Outage, *,
            translate: Callable[[BaseException], BaseException] | None = None,
            unavailable: Callable[[BaseException], tuple[Kind, str]] | None = None) -> T:
        """``attempt()`` until it returns, replayed and waited as the policy says; its result.

        Parameters
        ----------
        attempt : callable
            One attempt at batch ``batch_id``; called again with the same txid on a replay.
        batch_id : int
            The batch (txid), for the messages.
        outage : Outage
            The batch's outage tracker: waits for a broker or store within its budget.
        translate : callable, optional
            The error an attempt's exception stands for (a Spark failure's text read back as
            ours); by default the first retryable or outage error in its chain of causes.
        unavailable : callable, optional
            What did not answer, ``(kind, address)``; by default the store's address.

        Raises
        ------
        FailedException
            The replays ran out on a ``FailedException`` (the text of :func:`exhausted`).
        StateConflictError, BrokerUnavailableError, StateUnavailableError
            The replays ran out on a state conflict, or an outage outlasted its budget.
        Exception
            Any other failure of an attempt, as it was raised, at once.
        """
        translate = translate or chained_cause
        unavailable = unavailable or store_address
        replays = 0
        while True:
            try:
                result = attempt()
            except Exception as exc:
                cause = exc if isinstance(exc, RETRYABLE + OUTAGES) else translate(exc)
                if isinstance(cause, OUTAGES):  # waits, or raises once the outage outlasts the budget
                    outage.wait(cause, *unavailable(cause))
                    continue
                outage.forget()  # another failure (a stop included): no longer waiting for anything
                if not isinstance(cause, RETRYABLE):
                    raise
                if replays >= self.max_retries and not isinstance(cause, FailedException):
                    raise cause from exc  # the store's own error, naming its address
                if replays >= self.max_retries:
                    raise exhausted(self.stream, batch_id, replays + 1, self.max_retries, cause) from exc
                delay = self.retry_delay * (2 ** replays)
                replays += 1
                log.warning("stream %s: batch %d asked to be replayed (%s); retry %d of %d in %.1f s",
                            self.stream, batch_id, cause, replays, self.max_retries, delay)
                self.sleep(delay)
            else:
                outage.end()
                return result


def exhausted(stream: str, batch_id: int, attempts: int, max_retries: int,
              cause: BaseException) -> FailedException:
    """The one failure text of a batch whose replays ran out.

    Examples
    --------
    >>> str(exhausted("words", 4, 4, 3, FailedException("flaky (stream 'words')")))
    "batch 4 of stream 'words' failed 4 times (max_batch_retries=3); last cause: flaky"
    """
    times = "1 time" if attempts == 1 else f"{attempts} times"
    reason = str(cause).removesuffix(f" (stream {stream!r})")
    return FailedException(f"batch {batch_id} of stream {stream!r} failed {times} "
                           f"(max_batch_retries={max_retries}); last cause: {reason}")


def chained_cause(exc: BaseException) -> BaseException:
    """The first retryable or outage error in ``exc``'s chain of causes, else ``exc``: an
    operation's error that wraps a store's (``OperatorError`` from ``StateUnavailableError``)
    is the store's, as the Spark path reads it back from the task's text.

    Examples
    --------
    >>> from trident_spark.errors import OperatorError
    >>> try:
    ...     try:
    ...         raise StateUnavailableError("redis://127.0.0.1:6379/0", "connection refused")
    ...     except StateUnavailableError as down:
    ...         raise OperatorError("stateQuery(MapGet) failed") from down
    ... except OperatorError as exc:
    ...     type(chained_cause(exc)).__name__
    'StateUnavailableError'
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, RETRYABLE + OUTAGES):
            return current
        seen.add(id(current))
        current = current.__cause__
    return exc


def store_address(cause: BaseException) -> tuple[Kind, str]:
    """What did not answer when nothing else is known: the store, at its address.

    Examples
    --------
    >>> store_address(StateUnavailableError("redis://127.0.0.1:6379/0", "connection refused"))
    ('store', 'redis://127.0.0.1:6379/0')
    """
    if isinstance(cause, StateUnavailableError):
        return "store", str(getattr(cause, "address", None) or "?")
    return "broker", "?"


__all__ = ["OUTAGES", "RETRYABLE", "RetryPolicy", "chained_cause", "exhausted", "store_address"]
