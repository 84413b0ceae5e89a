"""The Spout interface: what the runtime and the planner need of a spout, and nothing more.

A spout describes where a stream's batches come from. The runtime turns it into one
streaming DataFrame per query; Spark's micro-batches are Trident's batches (batch id =
txid). :class:`KafkaSpout`, :class:`FeederBatchSpout` and :class:`FixedBatchSpout`
implement it, and so does ``UserSpout``, which wraps a user's ``IBatchSpout`` or partitioned
spout; the runtime calls only what is declared here, so it never asks which class a spout is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: A column a spout's DataFrame may add beside its fields: the reason a record could not be
#: decoded (null for good records). The runtime counts such records per batch
#: (``malformed_records``), then drops them and the column.
MALFORMED_COLUMN = "malformed"

#: A column a spout's DataFrame may add beside its fields: the milliseconds spent reading each
#: Arrow batch. The runtime sums it into the batch's ``source`` stage, then drops it.
READ_MS_COLUMN = "__read_ms"


@dataclass(frozen=True)
class SpoutRun:
    """How one run reads a spout: what :meth:`Spout.for_run` is told.

    Parameters
    ----------
    checkpoint : Path, str or None
        The query's checkpoint directory, a local ``Path`` or a URI string (read and write it
        with :mod:`trident_spark.checkpoint_files`, never ``Path(uri)``): a spout may keep files
        there (the driver's batch durations an adaptive spout learns from, the record of a
        broker outage it waits through).
    outage_budget : float
        Seconds the spout may wait for a broker that does not answer before it fails.
    drpc : str or None
        The DRPC server (``host:port``) of the run (``run(drpc=...)``), for a DRPC stream given none.
    drpc_token : str or None
        The token of that server, if it asks for one (``run(drpc_token=...)``); not in the repr.
    run_id : str
        This run of the topology (a DRPC spout names its lease on the server with it).

    Examples
    --------
    >>> SpoutRun(Path("/tmp/ckpt/words"), outage_budget=180.0).outage_budget
    180.0
    """

    checkpoint: Path | str | None
    outage_budget: float = 0.0
    drpc: str | None = None
    run_id: str = ""
    drpc_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class PythonSource:
    """A spout read by one of trident-spark's Spark Python data sources: which, with what options.

    The runtime may read the spout through it later than Spark would (fused into the first
    Python operations of the stream: :mod:`trident_spark.spout.deferred_read`).

    Parameters
    ----------
    data_source : type
        The ``pyspark.sql.datasource.DataSource`` subclass (defined in ``trident_spark``).
    options : mapping of str to str
        Its options, as ``spark.readStream.options(...)`` takes them.

    Examples
    --------
    >>> from trident_spark.spout.testing.feeder_source import FeederDataSource
    >>> PythonSource(FeederDataSource, {"num_partitions": "2"}).format_name
    'trident_feeder'
    """

    data_source: type[Any]
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def format_name(self) -> str:
        """The name Spark knows the data source by."""
        return str(self.data_source.name())

    def load(self, spark: SparkSession) -> DataFrame:
        """The streaming DataFrame of the source's records (registered in ``spark`` once)."""
        registered = getattr(spark, "_trident_sources_registered", None)
        if registered is None:
            registered = set()
            spark._trident_sources_registered = registered  # type: ignore[attr-defined]
        if self.format_name not in registered:
            spark.dataSource.register(self.data_source)
            registered.add(self.format_name)
        reader = spark.readStream.format(self.format_name)
        for key, value in self.options.items():
            reader = reader.option(key, value)
        return reader.load()


@dataclass(frozen=True)
class BatchFeedback:
    """What the driver tells a spout after a batch of its query finished: :meth:`Spout.after_batch`.

    Parameters
    ----------
    batch_id : int
        The batch (txid) that finished.
    duration_ms : float
        Its duration on the driver, from the start of its last attempt (ms).
    checkpoint : Path, str or None
        The query's checkpoint directory (as in :class:`SpoutRun`), None if it has none.
    warmup : bool, default False
        The first batch of the run (workers starting, code loading): not a typical duration.

    Examples
    --------
    >>> BatchFeedback(7, 812.25, Path("/tmp/ckpt/words"), warmup=True).warmup
    True
    """

    batch_id: int
    duration_ms: float
    checkpoint: Path | str | None
    warmup: bool = False


class Spout(ABC):
    """A source of Trident batches.

    Subclasses declare :attr:`fields` and :meth:`to_dataframe`; the other methods have
    defaults that suit a spout with nothing to check, no run settings and no remote address.

    Examples
    --------
    >>> from trident_spark.spout import FixedBatchSpout
    >>> spout = FixedBatchSpout(["word"], 2, ["a"], ["b"])
    >>> isinstance(spout, Spout), list(spout.fields)
    (True, ['word'])
    """

    @property
    @abstractmethod
    def fields(self) -> Sequence[str]:
        """The fields of the spout's tuples, in order (a :class:`~trident_spark.Fields` may
        carry their types).

        Driver, when the topology is built (``newStream``) and planned.
        """

    @abstractmethod
    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        """The spout as a streaming DataFrame in ``spark``: its fields, and optionally the
        columns :data:`MALFORMED_COLUMN` and :data:`READ_MS_COLUMN`.

        Driver, once per query start (and once per ``explain``). The reads themselves run
        on the executors, once per batch, as Spark's source calls them.
        """

    def check(self) -> None:
        """Fail fast if the spout cannot be read (unreachable broker, unknown topic).

        Driver, once per run, before any query starts. The default checks nothing.
        """
        return None

    def for_run(self, run: SpoutRun) -> Spout:
        """The spout as this run reads it (a copy told ``run``'s settings, or ``self``).

        Driver, once per query start, before :meth:`to_dataframe`. The default is ``self``.
        """
        return self

    def after_batch(self, feedback: BatchFeedback) -> None:
        """Learn from a finished batch of the spout's query (an adaptive spout sizes the next
        batches from its duration).

        Driver, once per successful batch (after its last attempt), in the query's batch
        thread; it must not fail the batch that finished. The default does nothing.
        """
        return None

    def python_source(self) -> PythonSource | None:
        """The Spark Python data source :meth:`to_dataframe` reads with, or None (another kind
        of source: Spark's own, a DRPC server...). With one, the runtime may read the spout's
        partitions inside the stream's first Python operations (one task, no hop through the
        JVM between them).

        Driver, once per query start, after :meth:`to_dataframe`. The default is None.
        """
        return None

    def max_task_parallelism(self) -> int | None:
        """Trident's ``topology.max.task.parallelism`` of the spout (its component configuration):
        a ``parallelismHint`` above it on the spout's stage is capped at it, as Trident caps the
        operations that follow a spout before any repartitioning (``getGroupParallelisms``).
        None: no cap (the default).

        Driver, when the topology is planned.
        """
        return None

    @property
    def address(self) -> str | None:
        """Where the spout reads from (a broker's ``host:port``), named when it does not answer;
        ``None`` for a spout with no remote source. Driver, when a batch waits for an outage."""
        return None


__all__ = ["MALFORMED_COLUMN", "READ_MS_COLUMN", "BatchFeedback", "PythonSource", "Spout", "SpoutRun"]
