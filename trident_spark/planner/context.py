"""One batch's planning context, and the one wrapper that turns a node's task into its ``mapInArrow`` stage.

:class:`BatchContext` is what every ``*_plan`` entry function is given with its input and its
node, ``(frame, node, ctx)``: the query, the batch's txid, the topology conf, the metrics
accumulator, the run (whose instance hosts keep operations with a lifecycle), the query's
cached Spark SQL expressions, the stores' generations and the batch's timestamp. It is built
once per batch by :class:`~trident_spark.planner.compile.BatchFrames`.

:func:`arrow_stage` is the task wrapper every node kind's Python stage goes through: in the
partition's instance host when the node's operations are kept (``hosted``), its time and rows
counted (``timed``), named after the operators (Spark's plans and UI show it), and shipped
(pickled, with the operator that cannot be named in the error).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trident_spark.executor.instances import InstanceScope, StageFunction, hosted, stopped_runs
from trident_spark.executor.metrics import StageName, timed
from trident_spark.planner.shipping import shipped

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from trident_spark.graph import Node
    from trident_spark.planner.query import QueryPlan

#: What a stage runs in a Spark task: Arrow batches in, Arrow batches out.
TaskFunction = Callable[[Iterator[Any]], Iterator[Any]]


@dataclass
class BatchContext:
    """What planning one batch (txid) of one query knows: handed whole to every ``*_plan`` function.

    Parameters
    ----------
    query : QueryPlan
        What the query runs.
    txid : int
        The batch id, passed to aggregators and operations.
    conf : dict
        The topology configuration handed to ``prepare(conf, context)``.
    metrics : Accumulator, optional
        Where tasks add their counters: each stage's time and rows, and the state counters
        (store round trips, cache hits); see ``trident_spark.runtime.metrics``.
    run_id : str
        The topology run; states opened on executors keep their cache for one run, and kept
        instances live in the run's instance hosts. Empty: no run (``explain``).
    expressions : dict
        The query's Spark SQL expressions that do not change from batch to batch (its
        aggregations', ``planner.aggregate.Expressions``), kept by the runtime across the run's
        batches.
    state_generations : dict
        ``{id(factory): generation}``: each written store's generation as the driver checked it
        before this batch's writes (set by the runtime); a cache filled under another is dropped.
    batch_timestamp_ms : int or None
        The batch's timestamp from Spark's offset log (set by the runtime; the same on a
        replay): a window's processing time. None: the time the batch was first built.

    Examples
    --------
    >>> from trident_spark import TridentTopology
    >>> from trident_spark.spout import FeederBatchSpout
    >>> topology = TridentTopology()
    >>> _ = topology.newStream("words", FeederBatchSpout(["word"])).map(lambda t: [t[0]])
    >>> query = topology.queries()[0]
    >>> ctx = BatchContext(query, txid=3, conf={}, run_id="run1")
    >>> ctx.place(query.nodes[1]), ctx.scope(query.nodes[1], "partial").stage
    ('words/1', 'words/1/partial')
    """

    query: QueryPlan
    txid: int
    conf: dict[str, Any] = field(default_factory=dict)
    metrics: Accumulator[dict[Any, float]] | None = None
    run_id: str = ""
    expressions: dict[tuple[int, bool, str], Any] = field(default_factory=dict)
    state_generations: dict[int, str] = field(default_factory=dict)
    batch_timestamp_ms: int | None = None

    def place(self, node: Node) -> str:
        """``node``'s place in the query, ``<query>/<position>`` (labels may repeat; the
        position does not change from run to run): its kept instances and window keys."""
        position = next((str(i) for i, n in enumerate(self.query.nodes) if n is node), node.label)
        return f"{self.query.name}/{position}"

    def scope(self, node: Node, mode: str = "") -> InstanceScope | None:
        """Which kept instances ``node``'s stage uses (``mode``: one of its stages, such as an
        aggregation's partial and final): the run's, under the node's place; None outside a run."""
        if not self.run_id:
            return None
        return InstanceScope(self.run_id, f"{self.place(node)}/{mode}" if mode else self.place(node),
                             stopped_runs())

    def timestamp_ms(self) -> int:
        """The batch's timestamp: the offset log's, else the time it is first asked for (kept)."""
        if self.batch_timestamp_ms is None:
            import time

            self.batch_timestamp_ms = int(time.time() * 1000)
        return self.batch_timestamp_ms


def arrow_stage(df: DataFrame, schema: StructType, ctx: BatchContext, *, name: str, task: TaskFunction,
                operations: Sequence[tuple[str, Any]], kept: StageFunction | None = None,
                scope: InstanceScope | None = None,
                timed_as: tuple[str, str | StageName] | None = None) -> DataFrame:
    """``df.mapInArrow`` of a node's stage, wrapped the one way every node kind's stage is.

    Parameters
    ----------
    df : DataFrame
        The stage's input.
    schema : StructType
        What the stage emits.
    ctx : BatchContext
        The batch: its metrics accumulator counts the stage.
    name : str
        The operators' names: Spark shows the function so in its plans and UI.
    task : callable
        ``task(batches)``: the stage as a Python worker runs it.
    operations : sequence of (label, object)
        What the stage pickles, named in the error when one cannot be.
    kept : callable, optional
        ``kept(metrics, batches)``: the stage as the partition's instance host runs it, for
        operations kept from batch to batch; used when ``scope`` is given too.
    scope : InstanceScope, optional
        The kept instances the host holds (:meth:`BatchContext.scope`); None: ``task`` runs.
    timed_as : (kind, name), optional
        Count the task's time and rows as this stage (``executor.metrics.timed``); None: the
        stage counts itself, or nothing.

    Examples
    --------
    >>> from trident_spark.planner.context import arrow_stage
    >>> callable(arrow_stage)
    True
    """
    fn: Any = hosted(scope, kept, ctx.metrics) if scope is not None and kept is not None else task
    if timed_as is not None:
        fn = timed(fn, timed_as[0], timed_as[1], ctx.metrics)
    stage = named(fn, name)
    return shipped(lambda: df.mapInArrow(stage, schema), operations)


def named(fn: Any, label: str) -> Any:
    """Give a stage function the operators' names: Spark shows it in plans and its UI.

    Examples
    --------
    >>> from functools import partial
    >>> named(partial(print), "each(Upper) -> filter").__name__
    'each_Upper_filter'
    """
    fn.__name__ = re.sub(r"\W+", "_", label).strip("_")[:80] or "trident_stage"
    return fn


__all__ = ["BatchContext", "TaskFunction", "arrow_stage", "named"]
