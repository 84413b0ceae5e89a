"""The DRPC spout: ``topology.newDRPCStream(function, drpc)``'s requests, one per batch.

Trident makes each DRPC request its own batch (``TridentTopologyBuilder.setBatchPerTupleSpout``),
and so does this spout: its data source (:mod:`trident_spark.drpc.source`) takes one request of
its function from the DRPC server per micro-batch and puts it (id and args) in the batch's end
offset, which Spark logs before the batch runs. The batch's one tuple is ``[args]``. The driver
finds the request of batch ``T`` in the offsets log (:func:`request_of_batch`), and when the
batch ends posts what reached the end of the DRPC stream as its result, or fails it
(``runtime/drpc_results``). A replayed batch re-reads the same request from the log.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from trident_spark.drpc.client import DRPCClient, TopologyClient, is_drpc_server, parse_address
from trident_spark.drpc.local import LocalDRPC
from trident_spark.drpc.server import DRPCServer
from trident_spark.errors import DRPCExecutionException, InvalidArgumentError, TopologyError
from trident_spark.fields import Fields
from trident_spark.spout.base import Spout, SpoutRun

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The DRPC stream's one field: the request's string.
ARGS = "args"
#: Seconds one fetch of the data source long-polls the server for a request.
DEFAULT_POLL = 0.5


class DRPCSpout(Spout):
    """The requests of one DRPC function, one per batch (see the module's docstring).

    Parameters
    ----------
    function : str
        The DRPC function (``drpc.execute(function, args)``).
    address : str or None
        The DRPC server (``host:port``); None: the run's (``run(drpc=...)``, or the one ``run()``
        starts on 127.0.0.1:3772).
    poll : float, default 0.5
        Seconds each fetch waits for a request (a shorter one answers ``stop()`` sooner, a
        longer one asks the server less often).

    Examples
    --------
    >>> spout = DRPCSpout("words", "127.0.0.1:3772")
    >>> list(spout.fields), spout.address
    (['args'], '127.0.0.1:3772')
    """

    def __init__(self, function: str, address: str | None = None, poll: float = DEFAULT_POLL) -> None:
        self.function = function
        self.server_address = address
        self.poll = poll
        self.consumer = ""

    @property
    def fields(self) -> Fields:
        return Fields(f"{ARGS}:string")

    @property
    def address(self) -> str | None:
        return self.server_address

    def for_run(self, run: SpoutRun) -> DRPCSpout:
        """A copy bound to the run's DRPC server (if it names none) and named by the run."""
        bound = copy.copy(self)
        bound.server_address = self.server_address or run.drpc
        bound.consumer = consumer_id(run.run_id, self.function)
        return bound

    def client(self) -> TopologyClient:
        """The topology's side of the server (a bound spout's)."""
        if self.server_address is None:
            raise TopologyError(
                f"newDRPCStream({self.function!r}): no DRPC server; give run(drpc='host:port')"
            )
        return TopologyClient(self.server_address, self.consumer or consumer_id("", self.function))

    def check(self) -> None:
        """A DRPC stream with its own server: that server answers."""
        if self.server_address is not None:
            host, port = parse_address(self.server_address, f"newDRPCStream({self.function!r})")
            if not is_drpc_server(host, port):
                raise TopologyError(
                    f"newDRPCStream({self.function!r}): no trident-spark DRPC server answers at "
                    f"{self.server_address}; start one (`trident-spark drpc-server`) or give "
                    "another address"
                )

    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        """The requests as a streaming DataFrame (Spark data source ``trident_drpc``)."""
        from trident_spark.drpc.source import FORMAT_NAME, DRPCDataSource

        if not getattr(spark, "_trident_drpc_registered", False):
            spark.dataSource.register(DRPCDataSource)
            spark._trident_drpc_registered = True  # type: ignore[attr-defined]
        client = self.client()
        return (
            spark.readStream.format(FORMAT_NAME)
            .option("address", client.address)
            .option("consumer", client.consumer)
            .option("function", self.function)
            .option("poll", str(self.poll))
            .load()
        )

    def __repr__(self) -> str:
        where = self.server_address or "the run's server"
        return f"DRPCSpout({self.function!r}, {where})"


def consumer_id(run_id: str, function: str) -> str:
    """The name of a run's lease on its DRPC server, shared by its data source and driver."""
    return f"{run_id or 'run'}/{function}"


def drpc_spout(function: str, drpc: Any) -> DRPCSpout:
    """The spout of ``newDRPCStream(function, drpc)``: ``drpc`` a :class:`LocalDRPC`, a
    :class:`DRPCServer`, a :class:`DRPCClient`, ``"host:port"``, or None (the run's server).

    Examples
    --------
    >>> drpc_spout("words", "127.0.0.1:3772")
    DRPCSpout('words', 127.0.0.1:3772)
    """
    if drpc is None:
        return DRPCSpout(function)
    if isinstance(drpc, LocalDRPC | DRPCServer | DRPCClient):
        return DRPCSpout(function, drpc.address)
    if isinstance(drpc, str):
        host, port = parse_address(drpc, f"newDRPCStream({function!r})")
        return DRPCSpout(function, f"{host}:{port}")
    raise TopologyError(
        f"newDRPCStream({function!r}, drpc): give a LocalDRPC, a DRPCClient, 'host:port' of a "
        f"DRPC server, or None (the run's server), got {type(drpc).__name__}"
    )


def request_of_batch(offset: Any) -> tuple[str, str] | None:
    """``(request id, args)`` from a DRPC source's logged end offset, or None (no request)."""
    if isinstance(offset, dict) and isinstance(offset.get("id"), str):
        return offset["id"], str(offset.get("args", ""))
    return None


def result_json(fields: list[str], tuples: list[dict[str, Any]]) -> str:
    """Trident's result: a JSON list of each tuple's values in the node's field order; values
    JSON cannot encode become ``str(value)``.

    Examples
    --------
    >>> result_json(["sum"], [{"sum": 5}])
    '[[5]]'
    >>> result_json(["w"], [])
    '[]'
    """
    return values_json([[t.get(f) for f in fields] for t in tuples])


def values_json(rows: list[list[Any]]) -> str:
    """Trident's result from tuples already as value lists in the node's field order.

    Examples
    --------
    >>> values_json([["the", 10], ["jumped", 2]])
    '[["the",10],["jumped",2]]'
    """
    return json.dumps(rows, default=str, separators=(",", ":"))


def resolve_run_server(address: str | Any) -> tuple[str, DRPCServer | None]:
    """The run's DRPC server: ``(host:port, server started here or None)``.

    ``address`` None: a DRPC server already answering on 127.0.0.1:3772, else one started here.
    ``"host:port"`` with port 0: one started here on a free port. Another ``"host:port"``: that
    server, which must answer. A :class:`LocalDRPC` or :class:`DRPCServer`: its address.
    """
    from trident_spark.drpc.server import DEFAULT_PORT

    if isinstance(address, LocalDRPC | DRPCServer | DRPCClient):
        return address.address, None
    if address is None:
        if is_drpc_server("127.0.0.1", DEFAULT_PORT, timeout=1.0):
            return f"127.0.0.1:{DEFAULT_PORT}", None
        try:
            server = DRPCServer("127.0.0.1", DEFAULT_PORT).start()
        except InvalidArgumentError as exc:
            raise TopologyError(
                f"run(): a DRPC stream needs a DRPC server and none answers on 127.0.0.1:{DEFAULT_PORT}, "
                f"where one cannot start ({exc}); give run(drpc='host:port') of a running one, or "
                "run(drpc='127.0.0.1:0') to start one on a free port"
            ) from exc
        return server.address, server
    host, port = parse_address(address, "run(drpc=...)")
    if port == 0:
        server = DRPCServer(host, 0).start()
        return server.address, server
    if not is_drpc_server(host, port):
        raise DRPCExecutionException(
            f"run(drpc={address!r}): no trident-spark DRPC server answers at "
            f"{host}:{port}; start one with `trident-spark drpc-server --port {port}`"
        )
    return f"{host}:{port}", None


__all__ = [
    "ARGS",
    "DRPCSpout",
    "consumer_id",
    "drpc_spout",
    "request_of_batch",
    "resolve_run_server",
    "result_json",
    "values_json",
]
