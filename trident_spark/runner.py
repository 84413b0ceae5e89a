"""The one seam between the DSL and what runs it: the DSL describes a graph, a Runner plans and runs it.

``TridentTopology.queries()``, ``run()`` and ``explain()`` hand their graph to the installed
:class:`Runner` and import nothing of the planner or the runtime: the layers import one way
(``runtime -> planner -> executor``, and each of them -> the DSL). The package installs the
Spark runner (``trident_spark.runtime.spark_runner``) when it is imported; a test may install
another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from trident_spark.errors import TopologyError
from trident_spark.graph import Node, SpoutNode
from trident_spark.sink import Sink

#: Called with each batch's :class:`~trident_spark.runtime.progress.BatchProgress`.
ProgressCallback = Callable[[Any], None]


class BatchProgress(Protocol):
    """One finished batch as ``RunHandle.progress`` lists it: what a type checker knows of it.

    The runtime's :class:`trident_spark.runtime.progress.BatchProgress` (a dataclass with every
    measure of the batch) meets it; the DSL names it here since it imports nothing of the runtime.
    """

    stream: str
    txid: int
    rows: int
    duration_ms: int
    bytes: int | None
    limited_by: str | None
    backlog: int | None
    attempts: int

    def line(self) -> str:
        """A one-line summary for terminals and logs."""
        ...


class PlannedQuery(Protocol):
    """One query as the runner planned it: the spouts it reads and the nodes it runs."""

    @property
    def name(self) -> str:
        """The query's name: its stream name, or ``a+b`` for streams merged or joined."""

    @property
    def spouts(self) -> Sequence[SpoutNode]:
        """The spouts the query reads (their batches share batch ids)."""

    @property
    def nodes(self) -> Sequence[Node]:
        """The query's operations, in the order a batch meets them."""


class RunHandle(Protocol):
    """The running topology ``run()`` returns (:class:`~trident_spark.runtime.handle.TopologyHandle`)."""

    @property
    def spark(self) -> Any:
        """The SparkSession the queries run in."""

    @property
    def checkpoint(self) -> Path | str:
        """The checkpoint location: one directory per query; a ``Path`` for a plain path, the URI
        string for a URI (``file://``, ``hdfs://``, ``s3a://`` ...)."""

    @property
    def queries(self) -> dict[str, Any]:
        """Each stream's Spark ``StreamingQuery``, by stream name."""

    @property
    def progress(self) -> Sequence[BatchProgress]:
        """The last batches' progress, oldest first."""

    @property
    def drpc_address(self) -> str | None:
        """The DRPC server (``host:port``) of DRPC streams given none, if the topology has any."""

    @property
    def isActive(self) -> bool:
        """Whether any query still runs."""

    def on_progress(self, callback: ProgressCallback) -> None:
        """Also call ``callback`` after each batch."""

    def processAllAvailable(self) -> None:
        """Block until every query has processed all input available now."""

    def awaitTermination(self, timeout: float | None = None) -> bool:
        """Wait for the queries to end (``timeout`` seconds at most)."""

    def exception(self) -> BaseException | None:
        """The error that stopped a query, if one did."""

    def stop(self) -> None:
        """Stop every query."""

    def __enter__(self) -> RunHandle:
        """``with topology.run(...) as handle:`` stops the queries when the block ends."""

    def __exit__(self, *exc: object) -> None:
        """Stop every query."""


class _Default:
    """A default of ``run()`` that says so: equal to its value and printed as it, but told apart
    from the same value given explicitly (:func:`is_default`), so a ``spark.trident.*`` setting of
    the session can take its place (``trident_spark.runtime.run_conf``)."""

    __slots__ = ()


class _DefaultStr(_Default, str):
    __slots__ = ()


class _DefaultInt(_Default, int):
    __slots__ = ()


class _DefaultFloat(_Default, float):
    __slots__ = ()


def is_default(value: object) -> bool:
    """Whether ``value`` is one of ``run()``'s defaults rather than a value the caller gave.

    Examples
    --------
    >>> is_default(DEFAULT_TRIGGER), is_default("1 second"), DEFAULT_TRIGGER == "1 second"
    (True, False, True)
    """
    return isinstance(value, _Default)


def plain(value: Any) -> Any:
    """``value`` as its plain type (a default's ``str``, ``int`` or ``float``), for Spark and JSON.

    Examples
    --------
    >>> type(plain(DEFAULT_MAX_BATCH_RETRIES)), plain(DEFAULT_MAX_BATCH_RETRIES)
    (<class 'int'>, 3)
    """
    for kind in (str, int, float):
        if isinstance(value, _Default) and isinstance(value, kind):
            return kind(value)
    return value


#: ``run()``'s defaults, each told apart from the same value given (see :func:`is_default`).
DEFAULT_TRIGGER: str = _DefaultStr("1 second")
DEFAULT_MAX_BATCH_RETRIES: int = _DefaultInt(3)
DEFAULT_RETRY_DELAY: float = _DefaultFloat(0.5)
DEFAULT_OUTAGE_BUDGET: float = _DefaultFloat(180.0)
DEFAULT_PROGRESS_HISTORY: int = _DefaultInt(100)
DEFAULT_DRPC_PATH: str = _DefaultStr("auto")


@dataclass(frozen=True)
class RunSettings:
    """What ``TridentTopology.run()`` was asked, as the runner receives it (see ``run()``).

    A setting left at its default (:func:`is_default`; ``None`` for ``checkpoint`` and ``drpc``)
    may be taken from the session's ``spark.trident.*`` conf when the run starts
    (``trident_spark.runtime.run_conf``); a value given to ``run()`` always wins.

    Examples
    --------
    >>> RunSettings(Path("/tmp/wc")).trigger
    '1 second'
    """

    checkpoint: Path | str | None  # a Path for a plain path, the URI string for a URI (never Path(uri))
    trigger: str | None = DEFAULT_TRIGGER
    spark: Any = None  # a SparkSession, or None: a local one
    on_progress: ProgressCallback | None = None
    conf: dict[str, Any] | None = None
    max_batch_retries: int = DEFAULT_MAX_BATCH_RETRIES
    retry_delay: float = DEFAULT_RETRY_DELAY
    outage_budget: float = DEFAULT_OUTAGE_BUDGET
    progress_history: int = DEFAULT_PROGRESS_HISTORY
    accept_state_loss: bool = False
    py_files: Sequence[str | Path] | None = None
    drpc: Any = None  # the DRPC server of DRPC streams given none ("host:port", a LocalDRPC)
    drpc_path: str = DEFAULT_DRPC_PATH  # DRPC requests answered in the driver ("driver"), by Spark, or "auto"
    drpc_token: str | None = field(default=None, repr=False)  # the DRPC server's token (a secret)


class Runner(Protocol):
    """Plans and runs a topology's graph."""

    def queries(self, nodes: Sequence[Node], sinks: Sequence[tuple[Node, Sink]]
                ) -> Sequence[PlannedQuery]:
        """The graph's queries: one per set of spouts joined or merged together."""

    def run(self, queries: list[PlannedQuery], settings: RunSettings) -> RunHandle:
        """Start every query; returns at once with a handle."""

    def explain(self, queries: list[PlannedQuery], spark: Any, mode: str) -> str:
        """Each query's operations and the Spark plan of one batch (``mode``: Spark's explain mode)."""

    def drpc_spout(self, function: str, drpc: Any) -> Any:
        """The spout of ``newDRPCStream(function, drpc)``: the requests of ``function``."""


_installed: list[Runner] = []


def install_runner(runner: Runner) -> None:
    """Make ``runner`` the one ``TridentTopology`` hands its graph to (replacing any before).

    Examples
    --------
    >>> previous = installed_runner()
    >>> install_runner(previous)
    """
    _installed[:] = [runner]


def installed_runner() -> Runner:
    """The runner ``TridentTopology`` hands its graph to."""
    if not _installed:
        raise TopologyError("no runner is installed: import trident_spark (it installs the Spark runner)")
    return _installed[0]


__all__ = ["DEFAULT_DRPC_PATH", "DEFAULT_MAX_BATCH_RETRIES", "DEFAULT_OUTAGE_BUDGET",
           "DEFAULT_PROGRESS_HISTORY", "DEFAULT_RETRY_DELAY", "DEFAULT_TRIGGER", "PlannedQuery",
           "ProgressCallback", "RunHandle", "RunSettings", "Runner", "install_runner", "installed_runner",
           "is_default", "plain"]
