"""DRPC requests answered in the driver, without a Spark job (the direct path).

A DRPC stream that only runs Python operations, aggregations and state reads
(:func:`~trident_spark.executor.direct_stream.why_not_direct`) needs no Spark job: a few
worker threads of the driver take its function's requests from the DRPC server, run each one
as its own batch (Trident's rule: a batch per request) through a
:class:`~trident_spark.executor.direct_stream.DirectStream`, and post the result. A request
then takes what its operations and state reads take (milliseconds), not Spark's per-batch
floor; the requests of several callers are answered side by side, one per worker.

Each worker holds its own copies of the stream's operations, prepared once per run
(``prepare(conf, context)`` with partition 0 of 1) and cleaned up at ``stop()``.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trident_spark.drpc.spout import values_json
from trident_spark.errors import FailedException, TridentSparkError
from trident_spark.executor.direct_stream import DirectStream
from trident_spark.graph import Node

LOG = logging.getLogger(__name__)

#: Worker threads answering one function's requests.
DEFAULT_WORKERS = 4
#: Seconds one fetch waits for a request before it asks again (and renews the lease).
FETCH_WAIT = 1.0


class TakenRequest(Protocol):
    """A request a consumer took: its id and its args."""

    @property
    def id(self) -> str: ...

    @property
    def args(self) -> str: ...


class RequestQueue(Protocol):
    """Where requests come from and results go: the DRPC server's topology side
    (:class:`~trident_spark.drpc.client.TopologyClient`); a fetch renews the run's lease."""

    def fetch(self, function: str, wait: float) -> TakenRequest | None: ...

    def result(self, request_id: str, result: str) -> bool: ...

    def fail(self, request_id: str, message: str) -> bool: ...


@dataclass
class DirectStats:
    """What a direct DRPC function did: requests answered and failed, and each answer's time."""

    answered: int = 0
    failed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, ok: bool, ms: float) -> None:
        with self._lock:
            if ok:
                self.answered += 1
            else:
                self.failed += 1
            self.latencies_ms.append(ms)
            del self.latencies_ms[:-10_000]


class DirectDRPC:
    """One DRPC function's requests, answered by worker threads of the driver.

    Parameters
    ----------
    function : str
        The DRPC function (``newDRPCStream(function)``).
    nodes : sequence of Node
        The DRPC stream's nodes, the spout first (see :class:`DirectStream`).
    output : Node
        The stream's last node: its tuples are the request's result.
    requests : RequestQueue
        Where the function's requests come from.
    conf : dict
        The topology configuration operations' ``prepare`` receives.
    workers : int, default 4
        Requests answered side by side.
    max_batch_retries, retry_delay : int, float
        A request whose operation raises ``FailedException`` runs again up to this many times.

    Examples
    --------
    >>> from trident_spark import TridentTopology
    >>> from trident_spark.graph import ancestors
    >>> from trident_spark.spout import FeederBatchSpout
    >>> stream = TridentTopology().newStream("d", FeederBatchSpout(["args"])).map(lambda t: [t[0][::-1]])
    >>> class Queue:
    ...     def __init__(self): self.todo, self.done = [("r1", "abc")], {}
    ...     def fetch(self, function, wait):
    ...         if not self.todo:
    ...             time.sleep(wait); return None
    ...         rid, args = self.todo.pop()
    ...         return type("Taken", (), {"id": rid, "args": args})
    ...     def result(self, request_id, result): self.done[request_id] = result; return True
    ...     def fail(self, request_id, message): self.done[request_id] = message; return True
    >>> queue = Queue()
    >>> direct = DirectDRPC("reverse", ancestors([stream.node]), stream.node, queue, {}, workers=1)
    >>> direct.start()
    >>> while not queue.done: time.sleep(0.01)
    >>> direct.stop(); queue.done
    {'r1': '[["cba"]]'}
    """

    def __init__(self, function: str, nodes: Sequence[Node], output: Node, requests: RequestQueue,
                 conf: dict[str, Any], *, workers: int = DEFAULT_WORKERS, max_batch_retries: int = 3,
                 retry_delay: float = 0.5) -> None:
        self.function = function
        self.requests = requests
        self.stats = DirectStats()
        self._max_retries = max_batch_retries
        self._retry_delay = retry_delay
        self._stopping = threading.Event()
        self._txids = itertools.count()
        self._streams = [DirectStream(nodes, output, conf) for _ in range(max(1, workers))]
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start the workers."""
        for i, stream in enumerate(self._streams):
            thread = threading.Thread(target=self._serve, args=(stream,), daemon=True,
                                      name=f"drpc-direct-{self.function}-{i}")
            thread.start()
            self._threads.append(thread)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`stop`; True if it stopped within ``timeout`` seconds."""
        return self._stopping.wait(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop taking requests, let the workers finish the ones they hold, clean up."""
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()

    def _serve(self, stream: DirectStream) -> None:
        away = False  # the server did not answer the last fetch: said once, until it answers again
        try:
            while not self._stopping.is_set():
                try:
                    request = self.requests.fetch(self.function, FETCH_WAIT)
                except Exception as exc:  # the server is away: say so once, keep trying
                    (LOG.debug if away else LOG.warning)("DRPC %r: fetching requests failed: %s; trying "
                                                         "again every %g s", self.function, exc, FETCH_WAIT)
                    away = True
                    self._stopping.wait(FETCH_WAIT)
                    continue
                if away:
                    LOG.warning("DRPC %r: the DRPC server answers again", self.function)
                    away = False
                if request is not None:
                    self._answer(stream, request)
        finally:
            try:
                stream.cleanup()
            except Exception as exc:  # a user's cleanup: logged, the others still run
                LOG.warning("DRPC %r: cleanup failed: %s", self.function, exc)

    def _answer(self, stream: DirectStream, request: TakenRequest) -> None:
        started = time.perf_counter()
        txid = next(self._txids)
        delay = self._retry_delay
        for attempt in itertools.count():
            try:
                rows = stream.run(txid, [{"args": request.args}])
            except FailedException as exc:
                if attempt < self._max_retries and not self._stopping.is_set():
                    LOG.warning("DRPC %r request %d: %s; running it again", self.function, txid, exc)
                    time.sleep(delay)
                    delay *= 2
                    continue
                self._fail(request, f"FailedException after {attempt + 1} attempts: {exc}", started)
            except TridentSparkError as exc:
                self._fail(request, str(exc), started)
            except Exception as exc:  # the caller gets it; the topology goes on
                self._fail(request, f"{type(exc).__name__}: {exc}", started)
            else:
                answer = values_json(rows)
                self.stats.add(True, (time.perf_counter() - started) * 1000)  # before the caller wakes
                self.requests.result(request.id, answer)
            return

    def _fail(self, request: TakenRequest, why: str, started: float) -> None:
        LOG.warning("DRPC %r: a request failed: %s", self.function, why)
        self.stats.add(False, (time.perf_counter() - started) * 1000)
        self.requests.fail(request.id, f"DRPC {self.function!r} failed: {why}")


__all__ = ["DEFAULT_WORKERS", "DirectDRPC", "DirectStats", "RequestQueue"]
