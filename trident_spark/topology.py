"""TridentTopology: where streams start, and how they run on Spark."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields
from trident_spark.graph import Node, SpoutNode, spout_of
from trident_spark.runtime.progress import ProgressCallback
from trident_spark.sink import CollectSink
from trident_spark.stream import Stream

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from trident_spark.runtime.handle import TopologyHandle

_STREAM_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class TridentTopology:
    """A set of streams to run together.

    Examples
    --------
    >>> from trident_spark.spout import KafkaSpout
    >>> topology = TridentTopology()
    >>> stream = topology.newStream("sentences", KafkaSpout("127.0.0.1:9092", ["sentences"]))
    >>> stream.getOutputFields()
    Fields('key', 'value', 'topic', 'partition', 'offset', 'timestamp')
    """

    def __init__(self) -> None:
        self._spouts: dict[str, SpoutNode] = {}
        self._children: dict[int, int] = {}
        self._nodes: list[Node] = []
        self._sinks: list[tuple[Node, CollectSink]] = []

    def newStream(self, name: str, spout: Any) -> Stream:
        """A stream of the batches ``spout`` emits; ``name`` names its Spark query and checkpoint."""
        if not _STREAM_NAME.match(name or ""):
            raise TopologyError(f"newStream({name!r}): use letters, digits, '_', '-' or '.' in stream names")
        if name in self._spouts:
            raise TopologyError(f"newStream({name!r}): a stream with this name already exists")
        fields = getattr(spout, "fields", None)
        if not fields:
            raise TopologyError(f"newStream({name!r}): {spout!r} is not a spout (it has no fields)")
        node = SpoutNode(Fields(*fields), f"newStream({name})", name, spout)
        self._spouts[name] = node
        self._add(node)
        return Stream(self, node)

    def _add(self, node: Node) -> None:
        self._nodes.append(node)
        if node.parent is not None:
            self._children[id(node.parent)] = self._children.get(id(node.parent), 0) + 1

    def _add_sink(self, node: Node, sink: CollectSink) -> None:
        self._sinks.append((node, sink))

    def _outputs(self, spout: SpoutNode) -> list[Any]:
        from trident_spark.runtime.batch import Output

        outputs: dict[int, Output] = {}
        for node in self._nodes:
            if spout_of(node) is spout and self._children.get(id(node), 0) == 0:
                outputs[id(node)] = Output(node)
        for node, sink in self._sinks:
            if spout_of(node) is spout:
                outputs.setdefault(id(node), Output(node)).sinks.append(sink)
        return list(outputs.values())

    def run(self, checkpoint_location: str | Path, trigger: str | None = "1 second",
            spark: SparkSession | None = None, on_progress: ProgressCallback | None = None) -> TopologyHandle:
        """Start every stream as a Spark streaming query; returns at once with a handle.

        Parameters
        ----------
        checkpoint_location : path
            Each stream keeps its offsets log and commit log in ``<path>/<stream name>``.
            Restarting with the same path resumes (replaying an unfinished batch).
        trigger : str or None
            ``"1 second"`` (a processing-time interval, Trident's batch emit interval),
            ``None`` (next batch as soon as the last ends), ``"available_now"`` (read what
            is there now, in limited batches, then stop) or ``"once"``.
        spark : SparkSession, optional
            Defaults to a local session on this machine's cores.
        on_progress : callable, optional
            Called with a :class:`~trident_spark.runtime.progress.BatchProgress` after each batch.
        """
        from trident_spark.runtime.batch import BatchRunner
        from trident_spark.runtime.handle import TopologyHandle
        from trident_spark.runtime.session import local_session

        if not self._spouts:
            raise TopologyError("run(): the topology has no stream; start one with newStream(name, spout)")
        checkpoint = Path(checkpoint_location)
        spark = spark or local_session()
        for node in self._spouts.values():
            check = getattr(node.spout, "check", None)
            if check is not None:
                check()  # fail fast on the driver: unreachable broker, unknown topic
        handle = TopologyHandle(spark, checkpoint, on_progress)
        try:
            for name, node in self._spouts.items():
                (checkpoint / name).mkdir(parents=True, exist_ok=True)
                source = _without_malformed(name, node.spout.to_dataframe(spark))
                writer = (source.writeStream.queryName(name)
                          .foreachBatch(BatchRunner(name, self._outputs(node)))
                          .option("checkpointLocation", str(checkpoint / name)))
                handle._add(name, _with_trigger(writer, trigger).start())
        except BaseException:
            handle.stop()
            raise
        return handle


def _without_malformed(stream: str, df: DataFrame) -> DataFrame:
    """Count records the spout could not decode (observed metrics), then drop them."""
    if "malformed" not in df.columns:
        return df
    from pyspark.sql import functions as F

    counted = df.observe(f"{stream}_spout", F.count(F.col("malformed")).alias("malformed_records"))
    return counted.where(F.col("malformed").isNull()).drop("malformed")


def _with_trigger(writer: Any, trigger: str | None) -> Any:
    if trigger is None:
        return writer
    if trigger in ("available_now", "availableNow"):
        return writer.trigger(availableNow=True)
    if trigger == "once":
        return writer.trigger(once=True)
    return writer.trigger(processingTime=trigger)
