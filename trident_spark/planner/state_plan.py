"""Driver side of state operations: the ``mapInArrow`` of a persist or a ``stateQuery``.

A persist runs where its input is partitioned: after ``persistentAggregate``'s
batch aggregation each key is in exactly one partition (Spark's hash exchange
by group), so one task per key range does multiGet -> update -> conditional
multiPut with txid = the batch id. Its output is what the updater emitted (the
``newValuesStream``).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.executor.column_types import arrow_type
from trident_spark.executor.instances import has_lifecycle
from trident_spark.executor.metrics import StageName
from trident_spark.executor.object_columns import OBJECT, is_object, object_names, struct_field
from trident_spark.executor.state_stage import (
    StateStep,
    check_not_ahead,
    opens_one_state,
    persist,
    query,
    with_metrics,
)
from trident_spark.graph import PersistNode, StateQueryNode
from trident_spark.operation import overrides_prepare
from trident_spark.planner.context import BatchContext, arrow_stage
from trident_spark.planner.query import stage_boundary

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructField


def state_factory(node: PersistNode | StateQueryNode) -> Any:
    """The factory a state node opens (a persist holds it; a query reads its TridentState's)."""
    return node.state if isinstance(node, PersistNode) else node.state.factory


def check_shared(node: PersistNode | StateQueryNode) -> None:
    """A state that lives in one process's memory (MemoryState) works in Spark's local mode only:
    the driver serves it to the local Python workers (``serve()``). On a cluster it is refused."""
    factory = state_factory(node)
    if not getattr(factory, "process_local", False):
        return
    master = _active_master()
    if master is not None and not master.startswith("local"):
        raise TopologyError(
            f"{node.label}: {factory.url} keeps its values in the driver's memory, which Spark's executors "
            f"on the cluster ({master}) cannot reach; MemoryState works in local mode only. Use "
            "SqliteState on one machine, or RedisState / ElasticsearchState on a cluster")
    serve = getattr(factory, "serve", None)
    if callable(serve):
        serve()  # the local workers read and write the driver's stores through it


def _active_master() -> str | None:
    """The master of the running SparkContext (None: none yet; run() then starts a local one)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    return None if context is None else str(context.master)


def check_reachable(factories: list[Any]) -> None:
    """Open each state once on the driver and read one key: an unreachable store (or an
    unreadable one) fails before anything starts, naming its address. A user's own
    ``StateFactory`` is asked its ``check_available()`` instead."""
    from trident_spark.state.keys import GLOBAL_KEY

    seen: set[str] = set()
    for factory in factories:
        url = str(getattr(factory, "url", id(factory)))
        if url in seen:
            continue
        if not opens_one_state(factory):
            check_available = getattr(factory, "check_available", None)
            if callable(check_available):  # a user's own StateFactory: its optional hook
                seen.add(url)
                check_available()
            continue
        seen.add(url)
        with factory.open() as state:
            state.multiGet([GLOBAL_KEY])


def _struct_field(name: str, df: DataFrame, types: dict[str, str]) -> StructField:
    existing = {f.name: f for f in df.schema.fields}
    if name in existing and name not in types:
        return existing[name]
    return struct_field(name, types.get(name, OBJECT))


def _untyped(struct: list[StructField]) -> frozenset[str]:
    return frozenset(f.name for f in struct if is_object(f))


def persist_dataframe(df: DataFrame, node: PersistNode, ctx: BatchContext) -> DataFrame:
    """Run ``node``'s StateUpdater on each partition of ``df``; the result is what it emitted.

    ``df`` is partitioned as the stage before it is (its size, for ``prepare``: the stage's
    hint): never repartitioned here, so a key a partitionBy or aggregation put in one task stays
    there. The store's generation the driver checked before the batch
    (``ctx.state_generations``) goes along; a cache filled under another is dropped
    (``executor.state_stage.opened_state``).
    """
    from pyspark.sql.types import StructType

    txid, conf, stats = ctx.txid, ctx.conf, ctx.metrics
    partitions = ctx.query.partitions_of(stage_boundary(node))

    df = df.select(*node.input_fields)
    # What the updater emits keeps the input's type for a field it passes on (group fields, and a
    # Combiner's value, which has its partial's type); other fields have their declared types.
    declared = {name: node.fields.types[name] for name in node.fields
                if name not in df.columns or name in node.fields.declared_types}
    struct = [_struct_field(name, df, declared) for name in node.fields]
    step = StateStep(node.label, node.state, node.updater, node.input_fields, list(node.fields),
                     {f.name: arrow_type(f.dataType) for f in struct}, stats=stats, run_id=ctx.run_id,
                     generation=ctx.state_generations.get(id(node.state)), untyped_in=object_names(df.schema),
                     untyped_out=_untyped(struct))
    n = partitions if partitions is not None else (
        int(df.rdd.getNumPartitions()) if overrides_prepare(node.updater) or not opens_one_state(node.state)
        else -1)
    # In the partition's instance host: a kept updater, and a state whose cache the same
    # process reads batch after batch (a task runs on whichever Python worker is idle)
    kept = has_lifecycle(node.updater) or keeps_cache(node.state)
    return arrow_stage(df, StructType(struct), ctx, name=node.label,
                       task=partial(persist, step, txid, conf, n),
                       operations=[(node.label, node.updater), (node.label, node.state)],
                       kept=partial(with_metrics, persist, step, txid, conf, n) if kept else None,
                       scope=ctx.scope(node) if kept else None,
                       timed_as=("aggregate", StageName(node.label, "update")))


def keeps_cache(factory: Any) -> bool:
    """Whether ``factory``'s state keeps an LRU cache in the process that opens it
    (``cache_size`` > 0), so its writes go to the partition's instance host (one process per
    run, executor and partition slot) for the cache to see the keys of the partition again at
    the next batch. A state served by the driver (MemoryState) keeps nothing in the task.

    A user's own ``StateFactory`` makes one state per partition, which may keep anything (a
    cache before a store without conditional writes, a producer, an open transaction): it is
    kept in the partition's instance host too, so a partition's state is one object for the run;
    so is the state of a built-in factory the program subclassed to ``open()`` a state of its own
    (:func:`opens_its_own_state`)."""
    if not opens_one_state(factory) or opens_its_own_state(factory):
        return True
    return bool(factory.cache_size) and not getattr(factory, "process_local", False)


def opens_its_own_state(factory: Any) -> bool:
    """Whether ``factory`` is a user's subclass of a built-in store's factory whose ``open()`` is
    the user's (Java's ``Factory`` of a ``DebugMemoryMapState``): the state it makes may keep
    anything of its own (a count of updates), so it lives for the partition, as a Trident
    state lives for its task, and outlives a batch that failed.

    Examples
    --------
    >>> from trident_spark.state import MemoryState
    >>> opens_its_own_state(MemoryState.opaque())
    False
    """
    opener = getattr(type(factory), "open", None)
    return not str(getattr(opener, "__module__", "")).startswith("trident_spark.")


def check_not_ahead_job(df: DataFrame, node: PersistNode, ctx: BatchContext, written_before: bool,
                        largest_txid: int | None = None) -> None:
    """Before the first writes after a start: fail if the state holds any of the batch's keys
    with a later txid (a reset checkpoint or another writer), or with this txid when the
    checkpoint never began writing this batch, while nothing is written yet."""
    from pyspark.sql.types import LongType, StructField, StructType

    if node.aggregator is None:
        return  # a user StateUpdater's keys are its own business
    keys = df.select(*node.group_fields) if node.group_fields else df.select()
    step = StateStep(node.label, node.state, node.updater, node.group_fields, [], {}, run_id=ctx.run_id,
                     untyped_in=object_names(keys.schema))
    # A user's StateFactory makes each partition's state with the run's conf and the stage's size.
    n = 1 if opens_one_state(node.state) else int(df.rdd.getNumPartitions())
    fn = partial(check_not_ahead, step, ctx.txid, written_before, largest_txid=largest_txid, conf=ctx.conf,
                 num_partitions=n)
    schema = StructType([StructField("keys", LongType())])
    checked = arrow_stage(keys, schema, ctx, name=f"check_{node.label}", task=fn,
                          operations=[(node.label, node.updater), (node.label, node.state)])
    checked.write.format("noop").mode("overwrite").save()


def query_dataframe(df: DataFrame, node: StateQueryNode, ctx: BatchContext) -> DataFrame:
    """Run ``node``'s QueryFunction on each partition of ``df``: its tuples with the fields it appends.

    When the state is written by this query, reads pass the batch's txid (an opaque state
    answers keys this batch already wrote with their value from before it). Queries read the
    store, not a cache: a cache in one worker cannot see another's writes.
    """
    from pyspark.sql.types import StructType

    txid, conf, stats = ctx.txid, ctx.conf, ctx.metrics
    partitions = ctx.query.partitions_of(stage_boundary(node))
    same_query = node.state.node is not None and any(n is node.state.node for n in ctx.query.nodes)

    factory = node.state.factory
    if opens_one_state(factory) and factory.cache_size:
        factory = factory.with_settings(cache_size=0)
    new = {name: node.function_fields.types[name] for name in node.function_fields}
    # Fields no one downstream reads may have been pruned from the input already.
    fields = [name for name in node.fields if name in new or name in df.columns]
    struct = [_struct_field(name, df, new) for name in fields]
    step = StateStep(node.label, factory, node.function, node.input_fields, fields,
                     {f.name: arrow_type(f.dataType) for f in struct if f.name in new},
                     reads_before_batch=same_query, stats=stats, untyped_in=object_names(df.schema),
                     untyped_out=_untyped(struct))
    n = partitions if partitions is not None else (
        int(df.rdd.getNumPartitions()) if overrides_prepare(node.function) or not opens_one_state(factory)
        else -1)
    kept = has_lifecycle(node.function)  # kept in the partition's instance host
    return arrow_stage(df, StructType(struct), ctx, name=node.label, task=partial(query, step, txid, conf, n),
                       operations=[(node.label, node.function), (node.label, factory)],
                       kept=partial(with_metrics, query, step, txid, conf, n) if kept else None,
                       scope=ctx.scope(node) if kept else None, timed_as=("state_query", node.label))


__all__ = ["check_not_ahead_job", "check_reachable", "check_shared", "keeps_cache", "persist_dataframe",
           "query_dataframe", "state_factory"]
