"""Graph to Spark: the DataFrame of every node for one batch.

Runs on the driver inside ``foreachBatch``; what it builds runs on executors.
Built-in operations with a Spark SQL form become expressions; consecutive
Python operators are fused into one ``mapInArrow`` stage; a node read by
several consumers is computed once (persisted for the batch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.executor.instances import InstanceScope, stopped_runs
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
from trident_spark.operation import Consumer
from trident_spark.planner.python_plan import python_stage, python_step
from trident_spark.planner.query import QueryPlan

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import Column, DataFrame

    from trident_spark.planner.aggregate import Expressions, FusedPartial


class BatchFrames:
    """The DataFrames of one batch (txid) of one query, built on demand and memoized.

    Parameters
    ----------
    query : QueryPlan
        What the query runs.
    sources : dict
        ``{id(spout node): DataFrame}``: the batch's tuples from each spout.
    txid : int
        The batch id, passed to aggregators and operations.
    conf : dict
        The topology configuration handed to ``prepare(conf, context)``.
    state_stats : Accumulator, optional
        Where tasks add their counters: each stage's time and rows, and the state
        counters (store round trips, cache hits); see ``trident_spark.runtime.metrics``.
    run_id : str
        The topology run; states opened on executors keep their cache for one run.
    expressions : dict, optional
        The query's Spark SQL expressions that do not change from batch to batch (its
        aggregations'), kept by the runtime across the run's batches; built here if not given.

    Attributes
    ----------
    state_generations : dict
        ``{id(factory): generation}``: each written store's generation as the driver checked it
        before this batch's writes (set by the runtime); a cache filled under another is dropped.
    batch_timestamp_ms : int or None
        The batch's timestamp from Spark's offset log (set by the runtime; the same on a
        replay): a window's processing time. None: the time the batch was first built.
    """

    def __init__(self, query: QueryPlan, sources: dict[int, DataFrame], txid: int,
                 conf: dict[str, Any] | None = None, state_stats: Accumulator[dict[Any, float]] | None = None,
                 run_id: str = "", expressions: Expressions | None = None) -> None:
        self.query = query
        self.expressions: Expressions = {} if expressions is None else expressions
        self.run_id = run_id
        self.state_generations: dict[int, str] = {}
        self.batch_timestamp_ms: int | None = None
        self.state_stats = state_stats
        self.sources = sources
        self.txid = txid
        self.conf = dict(conf or {})
        self._memo: dict[int, DataFrame] = {}
        self._forms: dict[int, list[Column] | Column | None] = {}
        self._persisted: list[DataFrame] = []

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
                check_not_ahead_job(df, node, self.txid, written_before, self.run_id,
                                    largest_txid=(largest or {}).get(id(node.state)), conf=self.conf)

    def release(self) -> None:
        """Unpersist what this batch cached."""
        for df in self._persisted:
            df.unpersist()
        self._persisted.clear()

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
            df = self.sources[id(node)].select(*node.fields)
            n = self.query.partitions_of(node)
            return df.repartition(n) if n else df
        if python_step(node) is not None and self._sql_form(node) is None:
            return self._python_run(node)
        if isinstance(node, EachNode | FilterNode):
            return self._sql_each(node)
        if isinstance(node, ProjectNode):
            return self.dataframe(node.inputs[0]).select(*node.fields)
        if isinstance(node, RepartitionNode):
            from trident_spark.planner.partitioning import repartition

            return repartition(self.dataframe(node.inputs[0]), node, self.query.partitions_of(node))
        if isinstance(node, AggregateNode):
            from trident_spark.planner.aggregate import FusedPartial, aggregate, combine_partials, fusable

            n = self.query.partitions_of(node)
            source = node.inputs[0]
            while (isinstance(source, ProjectNode) and self.query.consumer_count(source) == 1
                   and id(source) not in self._memo):
                source = source.inputs[0]  # a projection keeps the fields the aggregation reads
            if fusable(node) and self._fuses(source):
                # Trident's partial aggregation, in the Python stage that feeds it
                fused = FusedPartial(node)
                partials = self._python_run(source, fused)
                return combine_partials(partials, fused, self.txid, self.conf, n, self.state_stats,
                                        self.scope(node), self.expressions)
            return aggregate(self.dataframe(node.inputs[0]), node, self.txid, self.conf, n, self.state_stats,
                             self.scope(node), self.expressions)
        if isinstance(node, MergeNode):
            from trident_spark.planner.join import merge

            return merge([self.dataframe(i) for i in node.inputs], node, self.query.partitions_of(node))
        if isinstance(node, JoinNode):
            from trident_spark.planner.join import join

            return join([self.dataframe(i) for i in node.inputs], node, self.query.partitions_of(node))
        if isinstance(node, MultiReduceNode):
            from trident_spark.planner.multi_reduce import multi_reduce

            return multi_reduce([self.dataframe(i) for i in node.inputs], node, self.txid, self.conf,
                                self.query.partitions_of(node), self.state_stats, self.scope(node))
        if isinstance(node, PersistNode):
            from trident_spark.planner.query import stage_boundary
            from trident_spark.planner.state_plan import persist_dataframe

            return persist_dataframe(self.dataframe(node.inputs[0]), node, self.txid, self.conf,
                                     self.query.partitions_of(stage_boundary(node)), self.state_stats,
                                     self.run_id, self.scope(node),
                                     self.state_generations.get(id(node.state)))
        if isinstance(node, StateQueryNode):
            from trident_spark.planner.query import stage_boundary
            from trident_spark.planner.state_plan import query_dataframe

            same_query = node.state.node is not None and any(n is node.state.node for n in self.query.nodes)
            return query_dataframe(self.dataframe(node.inputs[0]), node, self.txid, self.conf,
                                   self.query.partitions_of(stage_boundary(node)), same_query,
                                   self.state_stats, self.scope(node))
        if isinstance(node, WindowNode):
            return self._window(node)
        raise TopologyError(f"{node.label}: no Spark plan for {type(node).__name__}")

    def _window(self, node: WindowNode) -> DataFrame:
        import time

        from trident_spark.planner.window_plan import arrival_order_is_stable, window_dataframe

        if self.batch_timestamp_ms is None:
            self.batch_timestamp_ms = int(time.time() * 1000)
        position = next(str(i) for i, n in enumerate(self.query.nodes) if n is node)
        return window_dataframe(self.dataframe(node.inputs[0]), node, self.txid, self.batch_timestamp_ms,
                                self.conf, self.query.partitions_of(node), f"{self.query.name}/{position}",
                                arrival_order_is_stable(self.query, node), self.state_stats, self.scope(node))

    def scope(self, node: Node) -> InstanceScope | None:
        """Which kept instances ``node``'s stage uses: the run's, under the node's place in the
        query (labels may repeat); None outside a run."""
        if not self.run_id:
            return None
        position = next((str(i) for i, n in enumerate(self.query.nodes) if n is node), node.label)
        return InstanceScope(self.run_id, f"{self.query.name}/{position}", stopped_runs())

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
        if node.input_fields:
            df = self.dataframe(node.inputs[0])
            untyped = object_names(df.schema, node.input_fields)
            if untyped:
                # Spark SQL sees an untyped field's tagged bytes: only a form that says it compares
                # group keys right (FilterNull, Equals) runs on them, given all-untyped inputs
                reads_untyped = getattr(operation, "spark_reads_untyped", False)
                if len(untyped) < len(node.input_fields) or not reads_untyped:
                    return None
                columns = key_columns(df, node.input_fields)
        if isinstance(node, EachNode):
            result: list[Column] | None = node.function.spark_columns(columns)
            return result
        condition: Column | None = node.filter.spark_condition(columns)
        return condition

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
        source = run[0].inputs[0]
        df = self.dataframe(source)
        steps = [step for step in (python_step(n) for n in run) if step is not None]
        from trident_spark.planner.query import stage_boundary

        n = self.query.partitions_of(stage_boundary(source))
        from trident_spark.planner.pruning import needed_fields

        needed = tail.reads() if tail is not None else needed_fields(self.query, last)
        if needed is None or any(step.kind != "each" or isinstance(step.operation, Consumer)
                                 for step in steps):
            output: Node | list[str] = needed if tail is not None and needed is not None else last
            return python_stage(df, steps, output, self.txid, self.conf, n, self.state_stats,
                                self.scope(last), tail)
        # Ship to Python only what the operators read or pass on to readers; emit only that.
        read = set(needed).union(*(step.input_fields for step in steps))
        # each(function, out) reads no field: still ship one column, so the stage sees every tuple
        df = df.select(*([f for f in df.columns if f in read] or df.columns[:1]))
        return python_stage(df, steps, needed, self.txid, self.conf, n, self.state_stats, self.scope(last),
                            tail)


def describe_node(node: Node) -> str:
    """One line for ``explain()``."""
    kind = type(node).__name__.removesuffix("Node")
    hint = f" x{node.parallelism}" if node.parallelism else ""
    return f"{node.label or kind} -> {list(node.fields)}{hint}"
