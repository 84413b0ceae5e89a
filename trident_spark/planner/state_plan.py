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
from trident_spark.executor.instances import InstanceScope, has_lifecycle, hosted
from trident_spark.executor.metrics import StageName, timed
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
from trident_spark.planner.python_plan import named
from trident_spark.planner.shipping import shipped

if TYPE_CHECKING:
    from pyspark import Accumulator
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


def persist_dataframe(df: DataFrame, node: PersistNode, txid: int, conf: dict[str, Any],
                      partitions: int | None, stats: Accumulator[dict[Any, float]] | None,
                      run_id: str = "", scope: InstanceScope | None = None,
                      generation: str | None = None) -> DataFrame:
    """Run ``node``'s StateUpdater on each partition of ``df``; the result is what it emitted.

    ``df`` is partitioned as the stage before it is (``partitions``: its size, for ``prepare``):
    never repartitioned here, so a key a partitionBy or aggregation put in one task stays there.
    ``generation``: the store's generation the driver checked before the batch; a cache filled
    under another is dropped (``executor.state_stage.opened_state``).
    """
    from pyspark.sql.types import StructType

    df = df.select(*node.input_fields)
    # What the updater emits keeps the input's type for a field it passes on (group fields, and a
    # Combiner's value, which has its partial's type); other fields have their declared types.
    declared = {name: node.fields.types[name] for name in node.fields
                if name not in df.columns or name in node.fields.declared_types}
    struct = [_struct_field(name, df, declared) for name in node.fields]
    step = StateStep(node.label, node.state, node.updater, node.input_fields, list(node.fields),
                     {f.name: arrow_type(f.dataType) for f in struct}, stats=stats, run_id=run_id,
                     generation=generation, untyped_in=object_names(df.schema), untyped_out=_untyped(struct))
    n = partitions if partitions is not None else (
        int(df.rdd.getNumPartitions()) if overrides_prepare(node.updater) or not opens_one_state(node.state)
        else -1)
    task: Any = partial(persist, step, txid, conf, n)
    if scope is not None and (has_lifecycle(node.updater) or keeps_cache(node.state)):
        # In the partition's instance host: a kept updater, and a state whose cache the same
        # process reads batch after batch (a task runs on whichever Python worker is idle)
        task = hosted(scope, partial(with_metrics, persist, step, txid, conf, n), stats)
    fn = timed(task, "aggregate", StageName(node.label, "update"), stats)
    return shipped(lambda: df.mapInArrow(named(fn, node.label), StructType(struct)),
                   [(node.label, node.updater), (node.label, node.state)])


def keeps_cache(factory: Any) -> bool:
    """Whether ``factory``'s state keeps an LRU cache in the process that opens it
    (``cache_size`` > 0), so its writes go to the partition's instance host (one process per
    run, executor and partition slot) for the cache to see the keys of the partition again at
    the next batch. A state served by the driver (MemoryState) keeps nothing in the task.

    A user's own ``StateFactory`` makes one state per partition, which may keep anything (a
    cache before a store without conditional writes, a producer, an open transaction): it is
    kept in the partition's instance host too, so a partition's state is one object for the run."""
    if not opens_one_state(factory):
        return True
    return bool(factory.cache_size) and not getattr(factory, "process_local", False)


def check_not_ahead_job(df: DataFrame, node: PersistNode, txid: int, written_before: bool,
                        run_id: str = "", largest_txid: int | None = None,
                        conf: dict[str, Any] | None = None) -> None:
    """Before the first writes after a start: fail if the state holds any of the batch's keys
    with a later txid (a reset checkpoint or another writer), or with this txid when the
    checkpoint never began writing this batch, while nothing is written yet."""
    from pyspark.sql.types import LongType, StructField, StructType

    if node.aggregator is None:
        return  # a user StateUpdater's keys are its own business
    keys = df.select(*node.group_fields) if node.group_fields else df.select()
    step = StateStep(node.label, node.state, node.updater, node.group_fields, [], {}, run_id=run_id,
                     untyped_in=object_names(keys.schema))
    # A user's StateFactory makes each partition's state with the run's conf and the stage's size.
    n = 1 if opens_one_state(node.state) else int(df.rdd.getNumPartitions())
    fn = partial(check_not_ahead, step, txid, written_before, largest_txid=largest_txid, conf=conf,
                 num_partitions=n)
    schema = StructType([StructField("keys", LongType())])
    checked = shipped(lambda: keys.mapInArrow(named(fn, f"check_{node.label}"), schema),
                      [(node.label, node.updater), (node.label, node.state)])
    checked.write.format("noop").mode("overwrite").save()


def query_dataframe(df: DataFrame, node: StateQueryNode, txid: int, conf: dict[str, Any],
                    partitions: int | None, same_query: bool,
                    stats: Accumulator[dict[Any, float]] | None,
                    scope: InstanceScope | None = None) -> DataFrame:
    """Run ``node``'s QueryFunction on each partition of ``df``: its tuples with the fields it appends.

    ``same_query``: the state is written by this query, so reads pass the batch's txid (an
    opaque state answers keys this batch already wrote with their value from before it).
    Queries read the store, not a cache: a cache in one worker cannot see another's writes.
    """
    from pyspark.sql.types import StructType

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
    task: Any = partial(query, step, txid, conf, n)
    if scope is not None and has_lifecycle(node.function):  # kept in the partition's instance host
        task = hosted(scope, partial(with_metrics, query, step, txid, conf, n), stats)
    fn = timed(task, "state_query", node.label, stats)
    return shipped(lambda: df.mapInArrow(named(fn, node.label), StructType(struct)),
                   [(node.label, node.function), (node.label, factory)])


__all__ = ["check_not_ahead_job", "check_reachable", "check_shared", "keeps_cache", "persist_dataframe",
           "query_dataframe", "state_factory"]
