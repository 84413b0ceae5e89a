"""The DRPC spout: ``topology.newDRPCStream(function, drpc)``'s requests, one per batch.

Trident makes each DRPC request its own batch (``TridentTopologyBuilder.setBatchPerTupleSpout``),
and so does this spout: its data source (:mod:`trident_spark.drpc.source`) takes one request of
its function from the DRPC server per micro-batch, keeps its args in an owner-only file beside
the checkpoint until the batch commits, and puts the request's id in the batch's end offset,
which Spark logs before the batch runs (the args never go into Spark's offsets log). The
batch's one tuple is ``[args]``. The driver finds the request of batch ``T`` in the offsets log
(:func:`request_of_batch`), and when the batch ends posts what reached the end of the DRPC
stream as its result, or fails it (``runtime/drpc/answers``). A replayed batch re-reads the
same request: its id from the log, its args from their file.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trident_spark.checkpoint_files import join
from trident_spark.drpc.client import DRPCClient, TopologyClient, check_server, parse_address
from trident_spark.drpc.local import LocalDRPC
from trident_spark.drpc.server import DRPCServer
from trident_spark.drpc.token import check_token, token_from_env
from trident_spark.errors import DRPCExecutionException, InvalidArgumentError, TopologyError
from trident_spark.fields import Fields
from trident_spark.spout.base import Spout, SpoutRun

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The DRPC stream's one field: the request's string.
ARGS = "args"
#: Beside a DRPC query's checkpoint: each function's args of batches not yet committed.
ARGS_DIR = "drpc-args"
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
    token : str or None
        The server's shared token, if it asks for one; None: the run's (``run(drpc_token=)``).

    Examples
    --------
    >>> spout = DRPCSpout("words", "127.0.0.1:3772")
    >>> list(spout.fields), spout.address
    (['args'], '127.0.0.1:3772')
    """

    def __init__(self, function: str, address: str | None = None, poll: float = DEFAULT_POLL,
                 token: str | None = None) -> None:
        self.function = function
        self.server_address = address
        self.poll = poll
        self.consumer = ""
        self._token = token
        #: Where the data source keeps a batch's args until it commits (bound to a run).
        self.args_dir: Any = None

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
        bound._token = self._token or run.drpc_token
        bound.consumer = consumer_id(run.run_id, self.function)
        if run.checkpoint is not None:
            bound.args_dir = join(run.checkpoint, ARGS_DIR, self.function)
        return bound

    def client(self) -> TopologyClient:
        """The topology's side of the server (a bound spout's)."""
        if self.server_address is None:
            raise TopologyError(
                f"newDRPCStream({self.function!r}): no DRPC server; give run(drpc='host:port')"
            )
        return TopologyClient(self.server_address, self.consumer or consumer_id("", self.function),
                              self._token)

    def check(self) -> None:
        """A DRPC stream with its own server: that server answers and takes the token."""
        if self.server_address is not None:
            try:
                check_server(self.server_address, self._token, f"newDRPCStream({self.function!r})")
            except DRPCExecutionException as exc:
                raise TopologyError(str(exc)) from None

    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        """The requests as a streaming DataFrame (Spark data source ``trident_drpc``)."""
        from trident_spark.drpc.source import FORMAT_NAME, DRPCDataSource

        if not getattr(spark, "_trident_drpc_registered", False):
            spark.dataSource.register(DRPCDataSource)
            spark._trident_drpc_registered = True  # type: ignore[attr-defined]
        client = self.client()
        reader = (
            spark.readStream.format(FORMAT_NAME)
            .option("address", client.address)
            .option("consumer", client.consumer)
            .option("function", self.function)
            .option("poll", str(self.poll))
        )
        if self.args_dir is not None:
            reader = reader.option("args_dir", str(self.args_dir))
        if self._token:  # Spark shows an option named "token" as *** (spark.redaction.regex)
            reader = reader.option("token", self._token)
        return reader.load()

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
    if isinstance(drpc, DRPCClient):
        return DRPCSpout(function, drpc.address, token=drpc.token)
    if isinstance(drpc, DRPCServer):
        return DRPCSpout(function, drpc.address, token=drpc.token)
    if isinstance(drpc, LocalDRPC):
        return DRPCSpout(function, drpc.address)
    if isinstance(drpc, str):
        host, port = parse_address(drpc, f"newDRPCStream({function!r})")
        return DRPCSpout(function, f"{host}:{port}")
    raise TopologyError(
        f"newDRPCStream({function!r}, drpc): give a LocalDRPC, a DRPCClient, 'host:port' of a "
        f"DRPC server, or None (the run's server), got {type(drpc).__name__}"
    )


def request_of_batch(offset: Any) -> str | None:
    """The request id in a DRPC source's logged end offset, or None (no request).

    Examples
    --------
    >>> request_of_batch({"n": 3, "id": "9f2c"}), request_of_batch({"n": 0})
    ('9f2c', None)
    """
    if isinstance(offset, dict) and isinstance(offset.get("id"), str):
        return str(offset["id"])
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


@dataclass
class RunServer:
    """The DRPC server a run's DRPC streams use (those that name none): what ``run()`` says.

    Examples
    --------
    >>> RunServer("127.0.0.1:3772", None, None, "named by run(drpc=...)").address
    '127.0.0.1:3772'
    """

    address: str
    started: DRPCServer | None  # started by this run (it stops with the run), or None
    token: str | None
    how: str  # why this one, for the run's log line

    def __repr__(self) -> str:
        return f"RunServer({self.address}, {self.how})"


def run_token(token: str | None) -> str | None:
    """The token of a run's DRPC server: ``run(drpc_token=)``, else ``$TRIDENT_SPARK_DRPC_TOKEN``."""
    return check_token(token, "run(drpc_token=...)") if token is not None else token_from_env()


def resolve_run_server(address: str | Any, token: str | None = None) -> RunServer:
    """The run's DRPC server (see :class:`RunServer`); it never adopts a server it did not start
    unless ``address`` names it.

    ``address`` None: a server started here on 127.0.0.1:3772, or on a free port when that port
    is taken (whatever listens there is not asked: it could be anyone's). ``"host:port"`` with
    port 0: one started here on a free port. Another ``"host:port"``: that server, which must
    answer and take ``token``. A :class:`LocalDRPC`, :class:`DRPCServer` or :class:`DRPCClient`:
    its address (and a server's or client's token). A server started here asks for ``token``.
    """
    from trident_spark.drpc.server import DEFAULT_PORT

    if isinstance(address, LocalDRPC):
        return RunServer(address.address, None, None, "the LocalDRPC given to run(drpc=...)")
    if isinstance(address, DRPCServer | DRPCClient):
        return RunServer(address.address, None, address.token, "given to run(drpc=...)")
    if address is None:
        try:
            server = DRPCServer("127.0.0.1", DEFAULT_PORT, token=token).start()
            return RunServer(server.address, server, token, "started by this run")
        except InvalidArgumentError:
            server = DRPCServer("127.0.0.1", 0, token=token).start()
            return RunServer(
                server.address, server, token,
                f"started by this run on a free port: 127.0.0.1:{DEFAULT_PORT} is taken by another "
                "process, not adopted (to use a DRPC server you trust there, give "
                f"run(drpc='127.0.0.1:{DEFAULT_PORT}'))",
            )
    host, port = parse_address(address, "run(drpc=...)")
    if port == 0:
        server = DRPCServer(host, 0, token=token).start()
        return RunServer(server.address, server, token, "started by this run on a free port")
    check_server(f"{host}:{port}", token, f"run(drpc={address!r})")
    return RunServer(f"{host}:{port}", None, token, "named by run(drpc=...)")


__all__ = [
    "ARGS",
    "ARGS_DIR",
    "DRPCSpout",
    "RunServer",
    "consumer_id",
    "drpc_spout",
    "request_of_batch",
    "resolve_run_server",
    "result_json",
    "run_token",
    "values_json",
]
