"""Graph to Spark: the DataFrame of every node for one batch.

Runs on the driver inside ``foreachBatch``; what it builds runs on executors.
Built-in operations with a Spark SQL form become expressions; consecutive
Python operators are fused into one ``mapInArrow`` stage, which also reads the
spout's partitions when the spout is read deferred and nothing else reads it
(``spout.deferred_read``: the spout and the first operations in one task); a node
read by several consumers is computed once (persisted for the batch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from trident_spark.arrow_operation import takes_arrow_batches
from trident_spark.errors import TopologyError
from trident_spark.executor.sources import DeferredBatch
from trident_spark.graph import (
    AggregateNode,
    EachNode,
    FilterNode,
    JoinNode,
    MergeNode,
    MultiReduceNode,
    Node,
    PersistNode,
    ProjectNode,
    RepartitionNode,
    SpoutNode,
    StateQueryNode,
    WindowNode,
)
from trident_spark.planner.aggregate import Expressions, FusedPartial, aggregate, combine_partials, fusable
from trident_spark.planner.context import BatchContext
from trident_spark.planner.join import join, merge
from trident_spark.planner.multi_reduce import multi_reduce
from trident_spark.planner.partitioning import repartition
from trident_spark.planner.python_plan import python_stage, python_step
from trident_spark.planner.query import QueryPlan
from trident_spark.planner.spout_read import SpoutPartitions, read_stage
from trident_spark.planner.state_plan import persist_dataframe, query_dataframe
from trident_spark.planner.window_plan import window_dataframe

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType


class BatchFrames:
    """The DataFrames of one batch (txid) of one query, built on demand and memoized.

    Builds the batch's :class:`~trident_spark.planner.context.BatchContext` once, and each
    node's DataFrame by the plan of its kind (:data:`PLANS`), given ``(frame, node, ctx)``.

    Parameters
    ----------
    query : QueryPlan
        What the query runs.
    sources : dict
        ``{id(spout node): DataFrame}``: the batch's tuples from each spout; for a spout read
        deferred, its partitions (:class:`~trident_spark.executor.sources.DeferredBatch`).
    txid : int
        The batch id, passed to aggregators and operations.
    conf : dict
        The topology configuration handed to ``prepare(conf, context)``.
    state_stats : Accumulator, optional
        Where tasks add their counters: each stage's time and rows, and the state counters
        (store round trips, cache hits); see ``trident_spark.runtime.metrics``.
    run_id : str
        The topology run; states opened on executors keep their cache for one run.
    expressions : dict, optional
        The query's Spark SQL expressions that do not change from batch to batch (its
        aggregations'), kept by the runtime across the run's batches; built here if not given.

    Attributes
    ----------
    ctx : BatchContext
        The batch's context, handed to every plan function.
    state_generations : dict
        ``{id(factory): generation}``: each written store's generation as the driver checked it
        before this batch's writes (set by the runtime); a cache filled under another is dropped.
    batch_timestamp_ms : int or None
        The batch's timestamp from Spark's offset log (set by the runtime; the same on a
        replay): a window's processing time. None: the time the batch was first built.
    fusion : dict
        ``{stream: how}``: how each spout read deferred was planned, fused with which
        operations or read alone and why (``explain()`` prints it).
    """

    def __init__(self, query: QueryPlan, sources: dict[int, DataFrame | DeferredBatch], txid: int,
                 conf: dict[str, Any] | None = None, state_stats: Accumulator[dict[Any, float]] | None = None,
                 run_id: str = "", expressions: Expressions | None = None) -> None:
        self.query = query
        self.ctx = BatchContext(query, txid, dict(conf or {}), state_stats, run_id,
                                {} if expressions is None else expressions)
        self.sources = sources
        self._memo: dict[int, DataFrame] = {}
        self._forms: dict[int, list[Column] | Column | None] = {}
        self._persisted: list[DataFrame] = []
        self.fusion: dict[str, str] = {}

    @property
    def state_generations(self) -> dict[int, str]:
        return self.ctx.state_generations

    @state_generations.setter
    def state_generations(self, generations: dict[int, str]) -> None:
        self.ctx.state_generations = generations

    @property
    def batch_timestamp_ms(self) -> int | None:
        return self.ctx.batch_timestamp_ms

    @batch_timestamp_ms.setter
    def batch_timestamp_ms(self, timestamp_ms: int | None) -> None:
        self.ctx.batch_timestamp_ms = timestamp_ms

    def check_states_not_ahead(self, written_before: bool, largest: dict[int, int] | None = None) -> None:
        """Fail, before any write, if a persisted state is ahead of this batch (run once per start).

        ``written_before``: this checkpoint began writing this batch before (a replay), so
        keys stored with its txid are that attempt's. ``largest``: the largest txid each state
        holds (its commit record), by ``id(factory)``, for the txid_offset an error asks for.
        """
        from trident_spark.planner.state_plan import check_not_ahead_job

        for node in self.query.nodes:
            if isinstance(node, PersistNode):
                source = node.inputs[0]
                df = self.dataframe(source)
                if not df.is_cached:  # the write reads what the check computed: one read of the batch
                    df = df.persist()
                    self._persisted.append(df)
                    self._memo[id(source)] = df
                check_not_ahead_job(df, node, self.ctx, written_before, (largest or {}).get(id(node.state)))

    def release(self) -> None:
        """Unpersist what this batch cached."""
        for df in self._persisted:
            df.unpersist()
        self._persisted.clear()

    def spout_records(self, node: SpoutNode) -> DataFrame:
        """The spout's tuples of this batch (its fields), read in a stage of their own when the
        spout is read deferred; not kept for the batch's plan (which may fuse the read)."""
        source = self.sources[id(node)]
        if isinstance(source, DeferredBatch):
            return read_stage(SpoutPartitions(source.partitions, source.read, list(node.fields)), self.ctx)
        return source.select(*node.fields)

    def dataframe(self, node: Node) -> DataFrame:
        """The tuples ``node`` outputs in this batch, as a DataFrame with its fields as columns."""
        found = self._memo.get(id(node))
        if found is not None:
            return found
        df = self._build(node)
        if self.query.consumer_count(node) > 1:
            df = df.persist()
            self._persisted.append(df)
        self._memo[id(node)] = df
        return df

    # --- dispatch ----------------------------------------------------------------------
    def _build(self, node: Node) -> DataFrame:
        if isinstance(node, SpoutNode):
            source = self.sources[id(node)]
            if isinstance(source, DeferredBatch):
                self.fusion.setdefault(node.stream_name, f"read alone: {self._why_alone(node)}")
                df = read_stage(SpoutPartitions(source.partitions, source.read, list(node.fields)), self.ctx)
            else:
                df = source.select(*node.fields)
            cap = self.query.cap_of(node)
            if cap:  # the spout's max task parallelism: at most that many tasks, no shuffle
                return df.coalesce(cap)
            n = self.query.partitions_of(node)
            return df.repartition(n) if n else df
        if python_step(node) is not None and self._sql_form(node) is None:
            return self._python_run(node)
        if isinstance(node, EachNode | FilterNode):
            return self._sql_each(node)
        if isinstance(node, AggregateNode):
            fused = self._fused_aggregate(node)
            if fused is not None:
                return fused
        plan = PLANS.get(type(node))
        if plan is None:
            raise TopologyError(f"{node.label}: no Spark plan for {type(node).__name__}")
        if isinstance(node, MergeNode | JoinNode | MultiReduceNode):
            return plan([self.dataframe(i) for i in node.inputs], node, self.ctx)
        return plan(self.dataframe(node.inputs[0]), node, self.ctx)

    def _fused_aggregate(self, node: AggregateNode) -> DataFrame | None:
        """``node`` with its partial aggregation at the end of the Python stage that feeds it
        (Trident combines before the shuffle), or None when it cannot be fused."""
        source = node.inputs[0]
        while (isinstance(source, ProjectNode) and self.query.consumer_count(source) == 1
               and id(source) not in self._memo):
            source = source.inputs[0]  # a projection keeps the fields the aggregation reads
        if not (fusable(node) and self._fuses(source)):
            return None
        fused = FusedPartial(node)
        return combine_partials(self._python_run(source, fused), fused, self.ctx)

    # --- built-ins as Spark SQL --------------------------------------------------------
    def _sql_form(self, node: Node) -> list[Column] | Column | None:
        """The node's Spark SQL form (None: it runs in Python), asked of the operation once."""
        if id(node) not in self._forms:
            self._forms[id(node)] = self._ask_sql_form(node)
        return self._forms[id(node)]

    def _ask_sql_form(self, node: Node) -> list[Column] | Column | None:
        from pyspark.sql import functions as F

        from trident_spark.executor.object_columns import key_columns, object_names

        if not isinstance(node, EachNode | FilterNode):
            return None
        operation = node.function if isinstance(node, EachNode) else node.filter
        columns = [F.col(f) for f in node.input_fields]
        if self._joins_python_stage(node, operation):
            return None
        if self._no_sql_form(node, columns):
            return None  # asked before the input's types: those need the input built
        if node.input_fields:
            untyped = object_names(self._schema_of(node.inputs[0]), node.input_fields)
            if untyped:
                # Spark SQL sees an untyped field's tagged bytes: only a form that says it compares
                # group keys right (FilterNull, Equals) runs on them, given all-untyped inputs
                reads_untyped = getattr(operation, "spark_reads_untyped", False)
                if len(untyped) < len(node.input_fields) or not reads_untyped:
                    return None
                columns = key_columns(self.dataframe(node.inputs[0]), node.input_fields)
        if isinstance(node, EachNode):
            result: list[Column] | None = node.function.spark_columns(columns)
            return result
        condition: Column | None = node.filter.spark_condition(columns)
        return condition

    def _joins_python_stage(self, node: EachNode | FilterNode, operation: object) -> bool:
        """An operation with an Arrow-batch form (the built-in Split, FilterNull, Equals...) whose
        input is read in Python anyway (the spout's partitions, or a Python stage that nothing
        else reads) runs in that stage, a batch at a time, instead of sending the tuples through
        the JVM for its Spark SQL form."""
        if not takes_arrow_batches(operation):
            return False
        parent = node.inputs[0]
        if self._fused_read(parent) is not None:
            return True
        return (python_step(parent) is not None and self.query.consumer_count(parent) == 1
                and id(parent) not in self._memo and self._sql_form(parent) is None)

    @staticmethod
    def _no_sql_form(node: EachNode | FilterNode, columns: list[Column]) -> bool:
        """The operation has no Spark SQL form, whatever its inputs' types (a user's
        operation): its stage can then take the Python operators before it too."""
        if isinstance(node, EachNode):
            return node.function.spark_columns(columns) is None
        return node.filter.spark_condition(columns) is None

    def _sql_each(self, node: EachNode | FilterNode) -> DataFrame:
        df = self.dataframe(node.inputs[0])
        form = self._sql_form(node)
        if isinstance(node, FilterNode):
            assert form is not None and not isinstance(form, list)
            return df.where(form)
        assert isinstance(form, list)
        if len(form) != len(node.function_fields):
            raise TopologyError(f"{node.label}: its Spark form gives {len(form)} columns for "
                                f"{len(node.function_fields)} fields {list(node.function_fields)}")
        return df.select(*df.columns, *(c.alias(f) for c, f in zip(form, node.function_fields, strict=True)))

    # --- Python operators, fused -------------------------------------------------------
    def _fuses(self, node: Node) -> bool:
        """``node`` is a Python operator whose stage can end in its one consumer's partial
        aggregation (it has no other consumer and is not built yet)."""
        return (python_step(node) is not None and self._sql_form(node) is None
                and self.query.consumer_count(node) == 1 and id(node) not in self._memo)

    def _python_run(self, last: Node, tail: FusedPartial | None = None) -> DataFrame:
        """``last`` and the Python operators before it that nothing else reads, in one stage
        (ending in ``tail``'s partial aggregation when there is one)."""
        run = [last]
        current = last
        while True:
            parent = current.parent
            if (parent is None or len(current.inputs) != 1 or self.query.consumer_count(parent) != 1
                    or python_step(parent) is None or self._sql_form(parent) is not None
                    or id(parent) in self._memo):
                break
            run.append(parent)
            current = parent
        run.reverse()
        read = self._fused_read(run[0].inputs[0])
        if read is not None:
            labels = [n.label for n in run] + ([f"{tail.label} (partial)"] if tail is not None else [])
            self.fusion[read.stream] = f"read in one task with {', '.join(labels)}"
            return python_stage(read.partitions, run, self.ctx, tail, read=read)
        return python_stage(self.dataframe(run[0].inputs[0]), run, self.ctx, tail)

    # --- a spout read deferred ---------------------------------------------------------
    def _fused_read(self, node: Node) -> SpoutPartitions | None:
        """The spout's partitions, when the stage starting at ``node`` (the spout, or projections
        of it that nothing else reads) can read them itself; None otherwise."""
        fields = list(node.fields)
        while (isinstance(node, ProjectNode) and self.query.consumer_count(node) == 1
               and id(node) not in self._memo):
            node = node.inputs[0]
        source = self.sources.get(id(node)) if isinstance(node, SpoutNode) else None
        if (not isinstance(source, DeferredBatch) or id(node) in self._memo
                or self.query.consumer_count(node) != 1 or self.query.partitions_of(node)):
            return None
        cap = self.query.cap_of(node)
        partitions = source.partitions.coalesce(cap) if cap else source.partitions
        return SpoutPartitions(partitions, source.read, fields)

    def _schema_of(self, node: Node) -> StructType:
        """``node``'s output schema, without building its DataFrame when it is a spout read
        deferred (building it would read the spout in a stage of its own)."""
        read = self._fused_read(node)
        return read.schema(read.fields) if read is not None else self.dataframe(node).schema

    def read_plan(self, spout: SpoutNode) -> str:
        """How this batch reads ``spout``, decided from the graph without building a DataFrame:
        ``"read in one task with <its first operation>"`` when the stage of its first operations
        reads its partitions, else ``"read alone: why"`` (``"read alone"`` for a spout not read
        deferred)."""
        source = self.sources.get(id(spout))
        if not isinstance(source, DeferredBatch):
            return "read alone"
        first = self._first_operation(spout)
        if (first is not None and not self.query.partitions_of(spout) and not isinstance(first, ProjectNode)
                and python_step(first) is not None and self._sql_form(first) is None):
            return f"read in one task with {first.label}"
        return f"read alone: {self._why_alone(spout)}"

    def _readers(self, node: Node) -> list[Node]:
        """The nodes that read ``node``'s tuples."""
        return [n for n in self.query.nodes if any(i is node for i in n.inputs)]

    def _first_operation(self, spout: SpoutNode) -> Node | None:
        """The spout's one reader, past projections that have one reader each (None: the spout
        has several readers or none)."""
        readers = self._readers(spout)
        if len(readers) != 1:
            return None
        first = readers[0]
        while isinstance(first, ProjectNode) and self.query.consumer_count(first) == 1:
            following = self._readers(first)
            if len(following) != 1:
                break
            first = following[0]
        return first

    def _why_alone(self, spout: SpoutNode) -> str:
        """Why the stream's first operations do not read the spout's partitions themselves."""
        readers = self._readers(spout)
        if len(readers) != 1:
            return f"{len(readers)} operations read its tuples"
        hint = self.query.partitions_of(spout)
        if hint:
            return f"parallelismHint({hint}) repartitions its tuples before its operations"
        first = self._first_operation(spout)
        assert first is not None, "a spout with one reader has a first operation"
        if python_step(first) is not None and self._sql_form(first) is not None:
            return f"its first operation {first.label} runs as Spark SQL"
        if python_step(first) is not None:
            return f"its first operation {first.label} is read by several operations"
        return f"its first operation {first.label} is not a per-tuple Python operation"


def _project(df: DataFrame, node: ProjectNode, ctx: BatchContext) -> DataFrame:
    return df.select(*node.fields)


#: The plan of each node kind that is not a spout nor a per-tuple operator, given ``(frame,
#: node, ctx)``: the frame is the input's DataFrame, or the list of the inputs' for a merge,
#: a join and a multiReduce.
PLANS: dict[type[Node], Callable[[Any, Any, BatchContext], DataFrame]] = {
    ProjectNode: _project,
    RepartitionNode: repartition,
    AggregateNode: aggregate,
    MergeNode: merge,
    JoinNode: join,
    MultiReduceNode: multi_reduce,
    PersistNode: persist_dataframe,
    StateQueryNode: query_dataframe,
    WindowNode: window_dataframe,
}


def describe_node(node: Node) -> str:
    """One line for ``explain()``."""
    kind = type(node).__name__.removesuffix("Node")
    hint = f" x{node.parallelism}" if node.parallelism else ""
    return f"{node.label or kind} -> {list(node.fields)}{hint}"
