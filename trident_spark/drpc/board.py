"""The DRPC server's requests, in memory: what callers wait on and what topologies take and answer.

A caller ``submit``\\ s a request and ``wait``\\ s for it. A topology ``fetch``\\ es the requests of
its function (taking each one: no other consumer gets it), then posts its ``result`` or
``fail``\\ s it. Every ``fetch`` and ``heartbeat`` of a consumer renews its lease on the requests
it took; a consumer silent for longer than ``lease`` seconds (a killed driver) loses them, and
their callers get an error naming the function, not a hang. A request nobody answers within
``request_timeout`` seconds fails at its caller (Storm's ``drpc.request.timeout.secs``).

Thread-safe; no I/O. The HTTP server (:mod:`trident_spark.drpc.server`) and an in-driver
consumer call the same methods.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from trident_spark.errors import DRPCExecutionException, InvalidArgumentError

#: Storm's ``drpc.request.timeout.secs``: how long a caller waits for its request's result.
DEFAULT_REQUEST_TIMEOUT = 600.0
#: Seconds a consumer may stay silent (no fetch, no heartbeat) before the requests it took fail.
DEFAULT_LEASE = 20.0
#: Requests of one function that may wait to be taken (Storm's ``drpc.queue.size``).
DEFAULT_MAX_QUEUE = 128
#: How often a waiting caller looks at its connection and the reaper at leases, in seconds.
TICK = 0.2


class RequestTimedOut(DRPCExecutionException):
    """A DRPC request nobody answered in time (the HTTP server answers it with 504)."""


class QueueFull(DRPCExecutionException):
    """A DRPC request refused: its function already has ``max_queue`` requests waiting to be
    taken (the HTTP server answers it with 503)."""


@dataclass(eq=False)
class Request:
    """One DRPC request: ``execute(function, args)`` of one caller.

    Examples
    --------
    >>> request = Request("words", "cat dog")
    >>> request.function, request.args, request.done.is_set()
    ('words', 'cat dog', False)
    """

    function: str
    args: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    #: The consumer that took it (None while pending).
    consumer: str | None = None
    result: str | None = None
    error: str | None = None


class RequestBoard:
    """Pending and taken DRPC requests (see the module's docstring).

    Parameters
    ----------
    request_timeout : float, default 600
        Seconds a caller waits at most (Storm's ``drpc.request.timeout.secs``).
    lease : float, default 20
        Seconds a consumer that took requests may stay silent before they fail.
    max_queue : int, default 128
        Requests of one function that may wait to be taken; one more is refused with
        :class:`QueueFull` (Storm's ``drpc.queue.size``).

    Examples
    --------
    >>> board = RequestBoard()
    >>> request = board.submit("words", "cat dog")
    >>> taken = board.fetch("words", consumer="driver-1")
    >>> board.result(taken.id, "[[5]]")
    True
    >>> board.wait(request)
    '[[5]]'
    """

    def __init__(
        self,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        lease: float = DEFAULT_LEASE,
        max_queue: int = DEFAULT_MAX_QUEUE,
    ) -> None:
        for name, value in (("request_timeout", request_timeout), ("lease", lease)):
            if not is_seconds(value):
                raise InvalidArgumentError(
                    f"RequestBoard({name}={value!r}): give a finite number of seconds > 0"
                )
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue < 1:
            raise InvalidArgumentError(
                f"RequestBoard(max_queue={max_queue!r}): give a number of requests >= 1"
            )
        self.request_timeout = float(request_timeout)
        self.lease = float(lease)
        self.max_queue = max_queue
        self._lock = threading.Condition()
        self._pending: dict[str, list[Request]] = {}
        self._requests: dict[str, Request] = {}
        self._contact: dict[str, float] = {}

    # --- the caller's side -----------------------------------------------------------------
    def submit(self, function: str, args: str) -> Request:
        """A new request of ``function`` with ``args``, pending until a consumer fetches it;
        :class:`QueueFull` when ``max_queue`` requests of ``function`` already wait."""
        if not isinstance(function, str) or not function:
            raise InvalidArgumentError(
                f"DRPC: the function name must be a non-empty string, got {function!r}"
            )
        if not isinstance(args, str):
            raise InvalidArgumentError(f"DRPC {function!r}: args must be a string, got {type(args).__name__}")
        request = Request(function, args)
        with self._lock:
            queue = self._pending.setdefault(function, [])
            if len(queue) >= self.max_queue:
                raise QueueFull(
                    f"DRPC request {function!r} refused: {len(queue)} requests of {function!r} already "
                    f"wait to be taken, this DRPC server's limit (drpc-server --max-queue; Storm's "
                    f"drpc.queue.size); try again later, and check that a topology serves {function!r}"
                )
            self._requests[request.id] = request
            queue.append(request)
            self._lock.notify_all()
        return request

    def wait(
        self, request: Request, timeout: float | None = None, gone: Callable[[], bool] | None = None
    ) -> str:
        """The request's result (Trident's JSON); raises :class:`DRPCExecutionException` if it
        failed or timed out (after ``timeout`` seconds, at most the board's ``request_timeout``).

        ``gone()`` is asked every ``TICK`` seconds: True (the caller disconnected) drops the
        request and raises."""
        if timeout is not None and not is_seconds(timeout):
            self.cancel(request, "was given no valid timeout")
            raise InvalidArgumentError(
                f"DRPC request {request.function!r}: timeout={timeout!r}: give a finite number of seconds > 0"
            )
        limit = self.request_timeout if timeout is None else min(float(timeout), self.request_timeout)
        deadline = request.created + limit
        while not request.done.wait(max(0.0, min(TICK, deadline - time.monotonic()))):
            if gone is not None and gone():
                self.cancel(request, "the caller disconnected")
                raise DRPCExecutionException(f"DRPC request {request.function!r}: the caller disconnected")
            if time.monotonic() >= deadline:
                with self._lock:
                    taken = request.consumer is not None
                what = (
                    "the topology that took it did not answer in time"
                    if taken
                    else f"no topology serving {request.function!r} took it (is one running and connected "
                    "to this DRPC server?)"
                )
                self.cancel(request, "timed out")
                if request.done.is_set() and request.error is None and request.result is not None:
                    return request.result  # answered in the last instant
                raise RequestTimedOut(
                    f"DRPC request {request.function!r} timed out after {limit:g} s: {what}"
                )
        if request.error is not None:
            raise DRPCExecutionException(request.error)
        assert request.result is not None
        return request.result

    def close(self, message: str) -> None:
        """Fail every open request with ``message`` (the server stops)."""
        with self._lock:
            requests = list(self._requests.values())
        for request in requests:
            self.fail(request.id, f"DRPC request {request.function!r} failed: {message}")

    def cancel(self, request: Request, why: str) -> None:
        """Forget a request its caller no longer waits for (a later result is ignored)."""
        with self._lock:
            self._forget(request)
            if not request.done.is_set():
                request.error = f"DRPC request {request.function!r} {why}"
                request.done.set()

    # --- the topology's side ---------------------------------------------------------------
    def fetch(self, function: str, consumer: str, wait: float = 0.0) -> Request | None:
        """Take the oldest pending request of ``function`` for ``consumer`` (waiting up to ``wait``
        seconds for one); None if there is none. Renews ``consumer``'s lease."""
        deadline = time.monotonic() + max(0.0, wait)
        with self._lock:
            while True:
                self._contact[consumer] = time.monotonic()
                queue = self._pending.get(function)
                if queue:
                    request = queue.pop(0)
                    request.consumer = consumer
                    return request
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._lock.wait(left)

    def heartbeat(self, consumer: str) -> None:
        """``consumer`` still works on the requests it took: renew its lease."""
        with self._lock:
            self._contact[consumer] = time.monotonic()

    def result(self, request_id: str, result: str) -> bool:
        """Answer a request with its result (JSON text); False if the board no longer knows it
        (timed out, its caller gone, or answered before)."""
        with self._lock:
            request = self._requests.get(request_id)
            if request is None:
                return False
            self._forget(request)
            request.result = result
            request.done.set()
            return True

    def fail(self, request_id: str, message: str) -> bool:
        """Fail a request: its caller gets :class:`DRPCExecutionException` with ``message``;
        False if the board no longer knows it."""
        with self._lock:
            request = self._requests.get(request_id)
            if request is None:
                return False
            self._forget(request)
            request.error = message or f"DRPC request {request.function!r} failed"
            request.done.set()
            return True

    def expire(self) -> int:
        """Fail the requests of consumers silent for longer than the lease; returns how many."""
        now = time.monotonic()
        failed = 0
        with self._lock:
            for request in list(self._requests.values()):
                consumer = request.consumer
                if consumer is None:
                    continue
                silent = now - self._contact.get(consumer, now)
                if silent > self.lease:
                    self._forget(request)
                    request.error = (
                        f"DRPC request {request.function!r} failed: the topology serving "
                        f"{request.function!r} stopped answering ({silent:.0f} s without a "
                        f"fetch or heartbeat, lease {self.lease:g} s); was its driver stopped "
                        "or killed? Start it again and retry"
                    )
                    request.done.set()
                    failed += 1
            for consumer, last in list(self._contact.items()):
                if now - last > max(self.lease, 60.0) * 10:
                    del self._contact[consumer]
        return failed

    # --- what it holds ---------------------------------------------------------------------
    def pending(self, function: str | None = None) -> int:
        """Requests not yet taken (of ``function``, or of all functions)."""
        with self._lock:
            if function is not None:
                return len(self._pending.get(function, []))
            return sum(len(q) for q in self._pending.values())

    def open_requests(self) -> int:
        """Requests whose caller still waits (pending or taken)."""
        with self._lock:
            return len(self._requests)

    def _forget(self, request: Request) -> None:
        self._requests.pop(request.id, None)
        queue = self._pending.get(request.function)
        if queue and request in queue:
            queue.remove(request)
            if not queue:
                del self._pending[request.function]


def is_seconds(value: object, zero: bool = False) -> bool:
    """Whether ``value`` is a finite number of seconds > 0 (>= 0 with ``zero``): no bool, nan or inf.

    Examples
    --------
    >>> [is_seconds(v) for v in (1, 0.5, 0, -1, float("nan"), float("inf"), True, "1")]
    [True, True, False, False, False, False, False, False]
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    return value >= 0 if zero else value > 0


__all__ = ["DEFAULT_LEASE", "DEFAULT_MAX_QUEUE", "DEFAULT_REQUEST_TIMEOUT", "QueueFull", "Request",
           "RequestBoard", "RequestTimedOut", "is_seconds"]
