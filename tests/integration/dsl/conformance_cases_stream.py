"""Conformance cases: per-tuple operations, partitionAggregate, repartitioning (see ``conformance_ops``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from conformance_ops import (
    NAMES,
    PARTITION_IDS_FIELDS,
    TAG_FIELDS,
    TAGGED,
    Describe,
    EmitIdMod4,
    EmitsAnywhere,
    Env,
    EvenN,
    IdsReducer,
    PartitionIds,
    PartitionTag,
    PlusMinus,
    PositiveN,
    Row,
    Streams,
    SumSq,
    View,
    case,
    check_repartition,
    n_sum,
    tagged,
)
from pyspark import cloudpickle

from trident_spark.builtin import Count, FilterNull, Negate, Sum

# Executors cannot import this file: ship its lambdas by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# =============================================================================================
# Per-tuple operations: unshuffled, so every output keeps the spout's partition order.
# =============================================================================================
@case("each_function_0_1_n_emits", [*NAMES, "i"], ordered=True)
def _each_emits(s: Streams):
    """Trident each(): every emit appends the function fields to the input tuple; 0 emits drop it,
    n emits make n tuples; the function sees only its input fields."""
    return (s.main.each(["id"], EmitIdMod4(), ["i:bigint"]),
            lambda v, e: [{**t, "i": i} for t in v.tuples for i in range(t["id"] % 4)])


@case("each_function_context", TAGGED, ordered=True)
def _each_context(s: Streams):
    """OperationContext in the spout's stage: the spout's partition index and count, the txid."""
    return (s.main.each(["id"], PartitionTag(), TAG_FIELDS),
            lambda v, e: [r for i, p in enumerate(v.parts) for r in tagged(p, i, len(v.parts), v.txid)])


@case("filter_class", NAMES, ordered=True)
def _filter_class(s: Streams):
    """filter(Filter): the filter sees every field; tuples whose isKeep is false are dropped."""
    return (s.main.filter(EvenN()),
            lambda v, e: [t for t in v.tuples if t["n"] is not None and t["n"] % 2 == 0])


@case("filter_predicate", NAMES, ordered=True)
def _filter_predicate(s: Streams):
    """filter(callable): a plain predicate over the tuple."""
    return (s.main.filter(lambda t: t["word"] is not None and t["word"] < "d"),
            lambda v, e: [t for t in v.tuples if t["word"] is not None and t["word"] < "d"])


@case("each_fields_filter", NAMES, ordered=True)
def _each_filter(s: Streams):
    """Trident each(fields, Filter): the filter sees only the named fields, all fields pass on."""
    return (s.main.each(["n"], PositiveN()),
            lambda v, e: [t for t in v.tuples if t["n"] is not None and t["n"] > 0])


@case("builtin_filter_null_negate", NAMES, ordered=True)
def _filter_null(s: Streams):
    """Trident's FilterNull (drops tuples with a null input field) and Negate (keeps those it drops)."""
    kept = s.main.each(["word"], FilterNull()).each(["n"], Negate(FilterNull()))
    return kept, lambda v, e: [t for t in v.tuples if t["word"] is not None and t["n"] is None]


@case("peek_passes_through", NAMES, ordered=True)
def _peek(s: Streams):
    """peek(fn): fn sees every tuple on the executors; the stream passes on unchanged."""
    return s.main.peek(lambda t: t.getValues()), lambda v, e: v.tuples


@case("project", ["tag", "id"], ordered=True)
def _project(s: Streams):
    """project(fields): only those fields, in that order."""
    return s.main.project(["tag", "id"]), lambda v, e: [{"tag": t["tag"], "id": t["id"]} for t in v.tuples]


@case("map_with_fields", ["id10", "upper"], ordered=True)
def _map_fields(s: Streams):
    """map(fn, fields): one tuple out per tuple, replaced by the new fields."""
    return (s.main.map(lambda t: [t["id"] * 10, (t["word"] or "-").upper()], ["id10:bigint", "upper"]),
            lambda v, e: [{"id10": t["id"] * 10, "upper": (t["word"] or "-").upper()} for t in v.tuples])


@case("map_single_value", ["double"], ordered=True)
def _map_single(s: Streams):
    """map(fn, [one field]) where fn returns a bare value rather than a list."""
    return s.main.map(lambda t: t["id"] * 2, ["double:bigint"]), lambda v, e: [{"double": t["id"] * 2}
                                                                               for t in v.tuples]


@case("map_keeps_fields", NAMES, ordered=True)
def _map_keeps(s: Streams):
    """map(fn) without output fields: the fields (and their types) stay."""
    return (s.main.map(lambda t: [t["id"] + 100, t["word"], t["n"], t["tag"]]),
            lambda v, e: [{**t, "id": t["id"] + 100} for t in v.tuples])


@case("map_class", ["desc"], ordered=True)
def _map_class(s: Streams):
    """map(MapFunction, fields)."""
    return (s.main.map(Describe(), ["desc"]),
            lambda v, e: [{"desc": f"{t['id']}:{t['tag']}"} for t in v.tuples])


@case("flatMap_with_fields", ["id", "ch"], ordered=True)
def _flat_fields(s: Streams):
    """flatMap(fn, fields): 0, 1 or n tuples per tuple (the first id % 3 letters of the word)."""
    def letters(t: Any) -> list[list[Any]]:
        return [[t["id"], ch] for ch in (t["word"] or "")[:t["id"] % 3]]
    return (s.main.flatMap(letters, ["id:bigint", "ch"]),
            lambda v, e: [{"id": t["id"], "ch": ch} for t in v.tuples
                          for ch in (t["word"] or "")[:t["id"] % 3]])


@case("flatMap_keeps_fields", NAMES, ordered=True)
def _flat_keeps(s: Streams):
    """flatMap(fn) without output fields: the tuple repeated id % 3 times, fields unchanged."""
    return (s.main.flatMap(lambda t: [t.getValues()] * (t["id"] % 3)),
            lambda v, e: [t for t in v.tuples for _ in range(t["id"] % 3)])


@case("flatMap_class", ["id", "pm"], ordered=True)
def _flat_class(s: Streams):
    """flatMap(FlatMapFunction, fields)."""
    return (s.main.flatMap(PlusMinus(), ["id:bigint", "pm:bigint"]),
            lambda v, e: [{"id": t["id"], "pm": x} for t in v.tuples if t["n"] is not None
                          for x in (t["n"], -t["n"])])


# =============================================================================================
# partitionAggregate: one result per partition of the spout. Trident: TridentBoltExecutor.finishBatch
# sends a coordination tuple to every task of the next stage, so every task finishes every batch
# (init/complete run, an empty partition emits its zero too).
# =============================================================================================
@case("partitionAggregate_count", ["count"], ordered=True)
def _pagg_count(s: Streams):
    """partitionAggregate(Count): the tuple count of each partition, 0 for an empty one."""
    return s.main.partitionAggregate(Count(), ["count"]), lambda v, e: [{"count": len(p)} for p in v.parts]


@case("partitionAggregate_sum", ["sum"], ordered=True)
def _pagg_sum(s: Streams):
    """partitionAggregate(Sum) over n: nulls skipped (Storm's Sum would fail on a null), 0 for an
    empty partition."""
    return (s.main.partitionAggregate(["n"], Sum(), ["sum"]),
            lambda v, e: [{"sum": n_sum(p)} for p in v.parts])


@case("partitionAggregate_aggregator", ["txid", "pidx", "nparts", "ids"], ordered=True)
def _pagg_agg(s: Streams):
    """partitionAggregate(Aggregator): init(txid) / aggregate in arrival order / complete, per partition."""
    return (s.main.partitionAggregate(["id"], PartitionIds(), PARTITION_IDS_FIELDS),
            lambda v, e: [{"txid": v.txid, "pidx": i, "nparts": len(v.parts), "ids": [t["id"] for t in p]}
                          for i, p in enumerate(v.parts)])


@case("partitionAggregate_reducer", ["ids"], ordered=True)
def _pagg_reducer(s: Streams):
    """partitionAggregate(ReducerAggregator): init() then reduce per tuple, in arrival order."""
    return (s.main.partitionAggregate(["id"], IdsReducer(), ["ids:array<bigint>"]),
            lambda v, e: [{"ids": [t["id"] for t in p]} for p in v.parts])


@case("partitionAggregate_python_combiner", ["sumsq"], ordered=True)
def _pagg_combiner(s: Streams):
    """partitionAggregate(CombinerAggregator) in Python: zero() for an empty partition."""
    return (s.main.partitionAggregate(["n"], SumSq(), ["sumsq:bigint"]),
            lambda v, e: [{"sumsq": sum((t["n"] or 0) ** 2 for t in p)} for p in v.parts])


@case("partitionAggregate_emits_anywhere", ["stage", "val"], ordered=True)
def _pagg_anywhere(s: Streams):
    """An Aggregator's emits from init, aggregate and complete, in that order, per partition."""
    return (s.main.partitionAggregate(["id"], EmitsAnywhere(), ["stage", "val:bigint"]),
            lambda v, e: [r for p in v.parts
                          for r in [{"stage": "init", "val": v.txid},
                                    *({"stage": "tuple", "val": t["id"]} for t in p),
                                    {"stage": "complete", "val": len(p)}]])


@case("partitionAggregate_output_replaces_input", ["n"], ordered=True)
def _pagg_same_name(s: Streams):
    """partitionAggregate(["n"], agg, ["n"]): the output replaces the input tuples, so it may reuse a name."""
    return (s.main.partitionAggregate(["n"], SumSq(), ["n"]),
            lambda v, e: [{"n": sum((t["n"] or 0) ** 2 for t in p)} for p in v.parts])


@case("global_partitionAggregate_count", ["count"])
def _global_pagg(s: Streams):
    """global() then partitionAggregate: one partition holds the whole batch (deterministic)."""
    return s.main.global_().partitionAggregate(Count(), ["count"]), lambda v, e: [{"count": len(v.tuples)}]


@case("global_partitionAggregate_aggregator", ["txid", "pidx", "nparts", "ids"])
def _global_pagg_agg(s: Streams):
    """global() then partitionAggregate(Aggregator): init/complete once, on partition 0 of 1."""
    return (s.main.global_().partitionAggregate(["id"], PartitionIds(sort=True), PARTITION_IDS_FIELDS),
            lambda v, e: [{"txid": v.txid, "pidx": 0, "nparts": 1, "ids": sorted(t["id"] for t in v.tuples)}])


@case("global_parallelism", ["txid", "pidx", "nparts", "ids"], ordered=True)
def _global_hint(s: Streams):
    """global() into a stage of 3 (parallelismHint(3)): Trident's GlobalGrouping sends the whole batch
    to one task; the other tasks of the stage finish the batch with no tuples."""
    stream = (s.main.global_().partitionAggregate(["id"], PartitionIds(sort=True), PARTITION_IDS_FIELDS)
              .parallelismHint(3))
    return stream, lambda v, e: [{"txid": v.txid, "pidx": i, "nparts": 3,
                                  "ids": sorted(t["id"] for t in v.tuples) if i == 0 else []}
                                 for i in range(3)]


@case("batchGlobal_partitionAggregate_reducer", ["ids"])
def _batch_global_pagg(s: Streams):
    """batchGlobal() then partitionAggregate(ReducerAggregator)."""
    return (s.main.batchGlobal().partitionAggregate(["id"], IdsReducer(sort=True), ["ids:array<bigint>"]),
            lambda v, e: [{"ids": sorted(t["id"] for t in v.tuples)}])


@case("chained_partitionAggregate", ["count", "ids"], ordered=True)
def _chain_pagg(s: Streams):
    """chainedAgg().partitionAggregate(...)...: per partition, the outputs side by side."""
    chained = (s.main.chainedAgg().partitionAggregate(Count(), ["count"])
               .partitionAggregate(["id"], IdsReducer(), ["ids:array<bigint>"]).chainEnd())
    return chained, lambda v, e: [{"count": len(p), "ids": [t["id"] for t in p]} for p in v.parts]


@case("shuffle_partitionAggregate_parallelism", ["txid", "pidx", "nparts", "ids"])
def _shuffle_pagg(s: Streams):
    """shuffle().partitionAggregate(...).parallelismHint(3): one result per partition of the 3, empty
    ones included (every task of a Trident stage finishes every batch)."""
    stream = (s.main.shuffle().partitionAggregate(["id"], PartitionIds(sort=True), PARTITION_IDS_FIELDS)
              .parallelismHint(3))

    def expect(v: View, e: Env) -> Callable[[list[Row]], None]:
        def check(rows: list[Row]) -> None:
            assert sorted(r["pidx"] for r in rows) == [0, 1, 2], rows
            assert all(r["nparts"] == 3 and r["txid"] == v.txid for r in rows), rows
            assert sorted(i for r in rows for i in r["ids"]) == sorted(t["id"] for t in v.tuples)
        return check
    return stream, expect


@case("broadcast_partitionAggregate", ["count"])
def _broadcast_pagg(s: Streams):
    """broadcast().partitionAggregate(Count).parallelismHint(3): every partition counts the batch."""
    return (s.main.broadcast().partitionAggregate(Count(), ["count"]).parallelismHint(3),
            lambda v, e: [{"count": len(v.tuples)}] * 3)




# =============================================================================================
# Repartitioning: checked through the OperationContext an operation sees after it.
# =============================================================================================
@case("shuffle", TAGGED)
def _shuffle(s: Streams):
    """shuffle(): every tuple once, over Spark's default parallelism."""
    def expect(v: View, e: Env) -> Any:
        return lambda rows: check_repartition(rows, v, e.default_parallelism)
    return s.main.shuffle().each(["id"], PartitionTag(), TAG_FIELDS), expect


@case("shuffle_parallelism", TAGGED)
def _shuffle_hint(s: Streams):
    """shuffle().each(...).parallelismHint(3): the stage has 3 partitions."""
    def expect(v: View, e: Env) -> Any:
        def check(rows: list[Row]) -> None:
            check_repartition(rows, v, 3)
            # round-robin: a partition of m tuples reaches min(m, 3) partitions
            assert len({r["pidx"] for r in rows}) >= min(3, max(map(len, v.parts), default=0))
        return check
    return s.main.shuffle().each(["id"], PartitionTag(), TAG_FIELDS).parallelismHint(3), expect


@case("partitionBy", TAGGED)
def _partition_by(s: Streams):
    """partitionBy(word): equal words (null too) in one partition; spark.sql.shuffle.partitions."""
    def expect(v: View, e: Env) -> Any:
        return lambda rows: check_repartition(rows, v, e.shuffle_partitions, key=["word"])
    return s.main.partitionBy(["word"]).each(["id"], PartitionTag(), TAG_FIELDS), expect


@case("partitionBy_parallelism", TAGGED)
def _partition_by_hint(s: Streams):
    """partitionBy(word, tag) with parallelismHint(4): 4 partitions, equal keys together."""
    def expect(v: View, e: Env) -> Any:
        return lambda rows: check_repartition(rows, v, 4, key=["word", "tag"])
    return (s.main.partitionBy(["word", "tag"]).each(["id"], PartitionTag(), TAG_FIELDS).parallelismHint(4),
            expect)


@case("global", TAGGED)
def _global(s: Streams):
    """global(): every tuple in partition 0 of 1."""
    return (s.main.global_().each(["id"], PartitionTag(), TAG_FIELDS),
            lambda v, e: lambda rows: check_repartition(rows, v, 1))


@case("batchGlobal", TAGGED)
def _batch_global(s: Streams):
    """batchGlobal(): the batch in one partition."""
    return (s.main.batchGlobal().each(["id"], PartitionTag(), TAG_FIELDS),
            lambda v, e: lambda rows: check_repartition(rows, v, 1))


@case("broadcast_parallelism", TAGGED)
def _broadcast(s: Streams):
    """broadcast() into 3 partitions: each tuple once in every partition."""
    def expect(v: View, e: Env) -> Any:
        return [r for t in v.tuples for i in range(3) for r in tagged([t], i, 3, v.txid)]
    return s.main.broadcast().each(["id"], PartitionTag(), TAG_FIELDS).parallelismHint(3), expect


@case("broadcast", TAGGED)
def _broadcast_default(s: Streams):
    """broadcast(): each tuple once in each of the default parallelism's partitions."""
    def expect(v: View, e: Env) -> Any:
        n = e.default_parallelism
        return [r for t in v.tuples for i in range(n) for r in tagged([t], i, n, v.txid)]
    return s.main.broadcast().each(["id"], PartitionTag(), TAG_FIELDS), expect


@case("localOrShuffle", TAGGED, ordered=True)
def _local(s: Streams):
    """localOrShuffle(): tuples stay in the spout's partitions."""
    return (s.main.localOrShuffle().each(["id"], PartitionTag(), TAG_FIELDS),
            lambda v, e: [r for i, p in enumerate(v.parts) for r in tagged(p, i, len(v.parts), v.txid)])
