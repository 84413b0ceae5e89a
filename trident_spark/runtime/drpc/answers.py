"""The answers of a query's DRPC requests: each batch's result posted, or the request failed.

A DRPC stream's batch is one request (:mod:`trident_spark.drpc.spout`); its id is in the
batch's end offset in Spark's offsets log (its args in an owner-only file beside it). When
the batch ends on the driver, the tuples that reached the end of the DRPC stream (its
:class:`~trident_spark.sink.DRPCResultSink`) go to the DRPC server as the request's result; a
batch that failed for good fails the request with the error's message, and the query goes on
serving. A request the server no longer knows (it timed out, or the server restarted) is
ignored. While the query runs, a heartbeat tells the server that the run still works on what
it took (a killed driver stops it, and the server fails its requests once the lease passes).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from trident_spark.drpc.client import TopologyClient
from trident_spark.drpc.spout import DRPCSpout, request_of_batch, result_json
from trident_spark.errors import DRPCExecutionException
from trident_spark.planner.query import QueryPlan
from trident_spark.runtime.state_commits import batch_offsets
from trident_spark.sink import DRPCResultSink
from trident_spark.spout.base import SpoutRun

log = logging.getLogger(__name__)

#: Seconds between two heartbeats of a run to its DRPC server (well inside the lease).
HEARTBEAT_EVERY = 2.0


class DRPCResults:
    """A query's DRPC streams: where their requests come from and where their results go.

    Parameters
    ----------
    query : QueryPlan
        The query; :meth:`of` gives None for a query without a DRPC stream.
    run : SpoutRun
        The run (its DRPC server and id), as the spouts were bound to it.
    """

    def __init__(self, query: QueryPlan, run: SpoutRun) -> None:
        self.checkpoint: Path | str | None = run.checkpoint
        self.streams = [node.stream_name for node in query.spouts]
        self.clients: dict[str, TopologyClient] = {}
        for node in query.spouts:
            if isinstance(node.spout, DRPCSpout):
                self.clients[node.stream_name] = node.spout.for_run(run).client()
        self.sinks = [
            sink for output in query.outputs for sink in output.sinks if isinstance(sink, DRPCResultSink)
        ]
        self._stop = threading.Event()

    @classmethod
    def of(cls, query: QueryPlan, run: SpoutRun) -> DRPCResults | None:
        """The query's DRPC results, or None if it reads no DRPC stream."""
        if not any(isinstance(node.spout, DRPCSpout) for node in query.spouts):
            return None
        return cls(query, run)

    def _requests(self, batch_id: int) -> dict[str, str]:
        """The request id of each DRPC stream in the batch (from the offsets log)."""
        offsets = batch_offsets(self.checkpoint, batch_id, self.streams)
        found = {}
        for stream in self.clients:
            request_id = request_of_batch(offsets.get(stream))
            if request_id is not None:
                found[stream] = request_id
        return found

    def answered(self, batch_id: int) -> None:
        """The batch succeeded: post each request's result (the tuples of its result sink)."""
        requests = self._requests(batch_id)
        for sink in self.sinks:
            tuples = sink.take(batch_id)
            request_id = requests.get(sink.stream_name)
            if request_id is None:
                continue
            self._post(
                sink.stream_name, batch_id, "result", request_id, result_json(list(sink.fields), tuples)
            )

    def failed(self, batch_id: int, error: BaseException) -> None:
        """The batch failed for good: fail its requests with the error's message."""
        for sink in self.sinks:
            sink.take(batch_id)
        message = f"DRPC request failed in batch {batch_id}: {error}"
        for stream, request_id in self._requests(batch_id).items():
            self._post(stream, batch_id, "fail", request_id, message)

    def _post(self, stream: str, batch_id: int, kind: str, request_id: str, body: str) -> None:
        client = self.clients[stream]
        try:
            known = client.result(request_id, body) if kind == "result" else client.fail(request_id, body)
            if not known:
                log.info(
                    "stream %s: batch %d's DRPC request is no longer known to %s (timed out or "
                    "the server restarted); its answer is dropped",
                    stream,
                    batch_id,
                    client.address,
                )
        except DRPCExecutionException as exc:
            log.warning("stream %s: batch %d's DRPC answer not delivered: %s", stream, batch_id, exc)

    def start_heartbeat(self, active: Callable[[], bool]) -> None:
        """Renew the run's lease every few seconds while ``active()`` (a daemon thread)."""
        thread = threading.Thread(
            target=self._beat, args=(active,), daemon=True, name=f"drpc-heartbeat-{'+'.join(self.streams)}"
        )
        thread.start()

    def _beat(self, active: Callable[[], bool]) -> None:
        while not self._stop.wait(HEARTBEAT_EVERY):
            try:
                if not active():
                    return
                for client in self.clients.values():
                    client.heartbeat()
            except Exception as exc:  # the server is down: try again
                log.debug("DRPC heartbeat: %s", exc)

    def stop(self) -> None:
        """Stop the heartbeat."""
        self._stop.set()


__all__ = ["DRPCResults"]
