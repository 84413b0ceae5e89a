"""DRPC requests answered in the driver, without a Spark job (the direct path).

A DRPC stream that only runs Python operations, aggregations and state reads
(:func:`~trident_spark.runtime.drpc.driver_stream.why_not_direct`) needs no Spark job: a few
worker threads of the driver take its function's requests from the DRPC server, run each one
as its own batch (Trident's rule: a batch per request) through a
:class:`~trident_spark.runtime.drpc.driver_stream.DirectStream`, and post the result. A request
then takes what its operations and state reads take (milliseconds), not Spark's per-batch
floor; the requests of several callers are answered side by side, one per worker.

Each worker holds its own copies of the stream's operations, prepared once per run
(``prepare(conf, context)`` with partition 0 of 1) and cleaned up at ``stop()``.

A request is retried as a Spark batch is (:class:`~trident_spark.runtime.retry.RetryPolicy`):
``FailedException`` and state conflicts replay it with the same txid, a store that does not
answer is waited out within the outage budget, and a request whose batch fails for good fails
with the Spark path's text (``DRPC request failed in batch N: ...``). Its txid comes from the
query's checkpoint (:class:`~trident_spark.runtime.drpc.txids.TxidBlocks`), never reused after a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from trident_spark.drpc.spout import values_json
from trident_spark.errors import TridentSparkError
from trident_spark.graph import Node
from trident_spark.outage import Outage
from trident_spark.runtime.drpc.driver_stream import DirectStream
from trident_spark.runtime.drpc.txids import TxidBlocks
from trident_spark.runtime.retry import RetryPolicy, chained_cause

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
        A request whose operation raises ``FailedException`` or whose state reports a conflict
        runs again up to this many times, the first ``retry_delay`` seconds later (doubling).
    stream : str, optional
        The DRPC stream's name (its query's), for messages; the function's by default.
    checkpoint : Path, str or None
        The query's checkpoint directory: where the requests' txids are reserved and an outage's
        wait is recorded. None: txids from 0 in this process, waits only logged.
    outage_budget : float, default 180
        Seconds a request waits for a store that does not answer (``run(outage_budget=)``).

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
                 retry_delay: float = 0.5, stream: str | None = None,
                 checkpoint: Path | str | None = None, outage_budget: float = 180.0) -> None:
        self.function = function
        self.stream = stream or function
        self.requests = requests
        self.stats = DirectStats()
        self.checkpoint = checkpoint
        self.outage_budget = outage_budget
        self.policy = RetryPolicy(self.stream, max_batch_retries, retry_delay)
        self._stopping = threading.Event()
        self._txids = TxidBlocks(checkpoint)
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
        try:
            txid = self._txids.next()
        except Exception as exc:  # the checkpoint cannot say which txids are free: no answer risks one
            self._fail(request, None, exc, started)
            return
        outage = Outage(self.outage_budget, self.stream, f"batch {txid}", self.checkpoint,
                        stopped=self._stopping.is_set)
        try:
            rows = self.policy.run(lambda: stream.run(txid, [{"args": request.args}]), txid, outage)
        except Exception as exc:  # the caller gets it; the topology goes on
            self._fail(request, txid, exc, started)
            return
        answer = values_json(rows)
        self.stats.add(True, (time.perf_counter() - started) * 1000)  # before the caller wakes
        self.requests.result(request.id, answer)

    def _fail(self, request: TakenRequest, txid: int | None, exc: Exception, started: float) -> None:
        """Fail the request with the Spark path's text: ``DRPC request failed in batch N: <error>``."""
        cause = chained_cause(exc)
        why = str(cause) if isinstance(cause, TridentSparkError) else (
            f"stream {self.stream!r} failed: {type(cause).__name__}: {cause}")
        message = f"DRPC request failed in batch {txid}: {why}" if txid is not None else (
            f"DRPC request of {self.function!r} failed: {why}")
        LOG.warning("stream %s: batch %s failed; its DRPC request fails: %s", self.stream, txid, why)
        self.stats.add(False, (time.perf_counter() - started) * 1000)
        self.requests.fail(request.id, message)


__all__ = ["DEFAULT_WORKERS", "DirectDRPC", "DirectStats", "RequestQueue"]
