"""Conformance cases: aggregate, chainedAgg, groupBy, minBy/maxBy, FirstN (see ``conformance_ops``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from conformance_ops import (
    NAMES,
    PARTITION_IDS_FIELDS,
    PROBE_FIELD,
    CountAndSum,
    CountAsAggregator,
    EmitIdMod4,
    Env,
    IdsReducer,
    MinMaxId,
    MixedKey,
    PartitionIds,
    ProbeCombiner,
    Row,
    Streams,
    SumSq,
    TxAgg,
    View,
    best,
    canonical,
    case,
    keyed,
    n_sum,
    probe,
)
from pyspark import cloudpickle

from trident_spark.builtin import Count, FirstN, Max, Min, Sum

# Executors cannot import this file: ship its lambdas by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# =============================================================================================
# aggregate: the whole batch. Trident: one emit per batch, even an empty one (SingleEmitAggregator).
# =============================================================================================
@case("aggregate_count", ["count"], plan="sql")
def _agg_count(s: Streams):
    """aggregate(Count) (Spark SQL path); Trident test-count-agg."""
    return s.main.aggregate(Count(), ["count"]), lambda v, e: [{"count": len(v.tuples)}]


@case("aggregate_sum", ["sum"], plan="sql")
def _agg_sum(s: Streams):
    """aggregate(Sum) over n (Spark SQL path): ints stay ints, nulls are skipped, 0 for no tuples."""
    return s.main.aggregate(["n"], Sum(), ["sum"]), lambda v, e: [{"sum": n_sum(v.tuples)}]


@case("aggregate_python_combiner_partial", ["probe"], plan="partial")
def _agg_probe(s: Streams):
    """aggregate(CombinerAggregator) in Python: Trident's partial aggregation. init and combine
    run in each partition of the spout's stage, then the final stage (1 partition) combines one
    partial value per partition that had tuples (from zero(), as Trident does)."""
    return (s.main.aggregate(["n"], ProbeCombiner(), [PROBE_FIELD]),
            lambda v, e: [{"probe": probe(v.parts, 1) if v.tuples else ProbeCombiner().zero()}])


@case("aggregate_reducer", ["ids"], plan="full")
def _agg_reducer(s: Streams):
    """aggregate(ReducerAggregator): one value per batch; init() alone for an empty batch."""
    return (s.main.aggregate(["id"], IdsReducer(sort=True), ["ids:array<bigint>"]),
            lambda v, e: [{"ids": sorted(t["id"] for t in v.tuples)}])


@case("aggregate_aggregator_txid", ["txid", "count"], plan="full")
def _agg_tx(s: Streams):
    """aggregate(Aggregator): init gets the batch id (txid); init/complete once per batch."""
    return s.main.aggregate(["id"], TxAgg(), ["txid:bigint", "count:bigint"]), \
        lambda v, e: [{"txid": v.txid, "count": len(v.tuples)}]


@case("aggregate_sum_same_name", ["n"], plan="sql")
def _agg_same_name(s: Streams):
    """aggregate(["n"], Sum(), ["n"]): the output may reuse the input's name."""
    return s.main.aggregate(["n"], Sum(), ["n"]), lambda v, e: [{"n": n_sum(v.tuples)}]


@case("aggregate_parallelism_single_emit", ["count"])
def _agg_hint(s: Streams):
    """aggregate(CountAsAggregator).parallelismHint(2): still one emit per batch (Trident
    test-count-agg: "this makes sure batchGlobal is working correctly"; [[0]] for no tuples)."""
    return (s.main.aggregate(CountAsAggregator(), ["count:bigint"]).parallelismHint(2),
            lambda v, e: [{"count": len(v.tuples)}])


@case("aggregate_aggregator_partition", ["txid", "pidx", "nparts", "ids"])
def _agg_where(s: Streams):
    """aggregate(Aggregator) runs on one partition: OperationContext says 0 of 1."""
    return (s.main.aggregate(["id"], PartitionIds(sort=True), PARTITION_IDS_FIELDS),
            lambda v, e: [{"txid": v.txid, "pidx": 0, "nparts": 1, "ids": sorted(t["id"] for t in v.tuples)}])


@case("aggregate_min_sql", NAMES, plan="sql")
def _agg_min(s: Streams):
    """aggregate(all fields, Min(n), all fields): the whole tuple with the smallest n of the batch
    (Storm's Min, a ComparisonAggregator; Spark SQL's min_by); nothing for a batch without n."""
    return (s.main.aggregate(NAMES, Min("n"), NAMES),
            lambda v, e: [r] if (r := best(v.tuples, "n", lambda a, b: a <= b)) else [])


@case("groupBy_max_sql", ["word", "mid", "mn"], plan="sql")
def _g_max(s: Streams):
    """groupBy(word).aggregate([id, n], Max(n), ...) (Spark SQL): per group the tuple with the largest
    n (on a tie any of them); a group whose n are all null emits nothing."""
    stream = s.main.groupBy(["word"]).aggregate(["id", "n"], Max("n"), ["mid:bigint", "mn:bigint"])

    def expect(v: View, e: Env) -> Callable[[list[Row]], None]:
        def check(rows: list[Row]) -> None:
            groups = {k[0]: g for k, g in keyed(v.tuples, ["word"]).items()
                      if any(t["n"] is not None for t in g)}
            assert sorted(map(repr, (r["word"] for r in rows))) == sorted(map(repr, groups)), rows
            for r in rows:
                top = max(t["n"] for t in groups[r["word"]] if t["n"] is not None)
                assert r["mn"] == top and r["mid"] in [t["id"] for t in groups[r["word"]] if t["n"] == top], r
        return check
    return stream, expect


@case("empty_aggregate_count", ["count"])
def _empty_count(s: Streams):
    """Every tuple filtered out: Count still emits 0 once (Trident test-count-agg: [[0]])."""
    return s.main.filter(lambda t: False).aggregate(Count(), ["count"]), lambda v, e: [{"count": 0}]


@case("empty_aggregate_sum", ["sum"])
def _empty_sum(s: Streams):
    """No tuples: Sum emits zero() = 0 once."""
    return s.main.filter(lambda t: False).aggregate(["n"], Sum(), ["sum"]), lambda v, e: [{"sum": 0}]


@case("empty_aggregate_aggregator", ["txid", "count"])
def _empty_tx(s: Streams):
    """No tuples: an Aggregator still sees init(txid) and complete once."""
    return (s.main.filter(lambda t: False).aggregate(["id"], TxAgg(), ["txid:bigint", "count:bigint"]),
            lambda v, e: [{"txid": v.txid, "count": 0}])


@case("empty_aggregate_python_combiner", ["probe"])
def _empty_probe(s: Streams):
    """No tuples: a Python combiner emits zero() once."""
    return (s.main.filter(lambda t: False).aggregate(["n"], ProbeCombiner(), [PROBE_FIELD]),
            lambda v, e: [{"probe": ProbeCombiner().zero()}])


@case("empty_aggregate_reducer", ["ids"])
def _empty_reducer(s: Streams):
    """No tuples: a ReducerAggregator emits init() once."""
    return (s.main.filter(lambda t: False).aggregate(["id"], IdsReducer(), ["ids:array<bigint>"]),
            lambda v, e: [{"ids": []}])


@case("empty_groupBy_count", ["word", "count"])
def _empty_grouped(s: Streams):
    """No tuples, grouped: no group, nothing emitted."""
    return s.main.filter(lambda t: False).groupBy(["word"]).aggregate(Count(), ["count"]), lambda v, e: []


@case("multi_repartition_count", ["count"])
def _multi_repartition(s: Streams):
    """localOrShuffle().shuffle().aggregate(CountAsAggregator): Trident test-multi-repartition."""
    return (s.main.localOrShuffle().shuffle().aggregate(CountAsAggregator(), ["count:bigint"]),
            lambda v, e: [{"count": len(v.tuples)}])


# =============================================================================================
# chainedAgg: several aggregators in one pass, outputs side by side; Trident's ChainedAggregatorImpl
# emits the cross product of what each aggregator emitted.
# =============================================================================================
@case("chained_combiners_sql", ["count", "sum"], plan="sql")
def _chain_sql(s: Streams):
    """chainedAgg of built-in combiners (Spark SQL)."""
    return (s.main.chainedAgg().aggregate(Count(), ["count"]).aggregate(["n"], Sum(), ["sum"]).chainEnd(),
            lambda v, e: [{"count": len(v.tuples), "sum": n_sum(v.tuples)}])


@case("chained_combiners_python", ["count", "sumsq", "probe"], plan="partial")
def _chain_python(s: Streams):
    """chainedAgg of combiners, some Python only: partial aggregation for all of them."""
    chained = (s.main.chainedAgg().aggregate(Count(), ["count"]).aggregate(["n"], SumSq(), ["sumsq:bigint"])
               .aggregate(["n"], ProbeCombiner(), [PROBE_FIELD]).chainEnd())
    return chained, lambda v, e: [{"count": len(v.tuples), "sumsq": sum((t["n"] or 0) ** 2 for t in v.tuples),
                                   "probe": probe(v.parts, 1) if v.tuples else ProbeCombiner().zero()}]


@case("chained_with_aggregator_cross_product", ["count", "stat", "val"], plan="full")
def _chain_cross(s: Streams):
    """Count chained with an Aggregator that emits 2 tuples: 2 rows (also for an empty batch)."""
    chained = (s.main.chainedAgg().aggregate(Count(), ["count"])
               .aggregate(["n"], CountAndSum(), ["stat", "val:bigint"]).chainEnd())
    return chained, lambda v, e: [{"count": len(v.tuples), "stat": "rows", "val": len(v.tuples)},
                                  {"count": len(v.tuples), "stat": "sum", "val": n_sum(v.tuples)}]


@case("chained_two_multi_emitters", ["stat", "val", "end", "eid"])
def _chain_two(s: Streams):
    """Two aggregators emitting 2 tuples each: 4 rows; one emitting none (empty batch): none (the
    cross product is empty; Storm's ChainedAggregatorImpl would fail on captured.get(0) there)."""
    chained = (s.main.chainedAgg().aggregate(["n"], CountAndSum(), ["stat", "val:bigint"])
               .aggregate(["id"], MinMaxId(), ["end", "eid:bigint"]).chainEnd())

    def expect(v: View, e: Env) -> list[Row]:
        if not v.tuples:
            return []
        ids = [t["id"] for t in v.tuples]
        return [{"stat": st, "val": val, "end": end, "eid": eid}
                for st, val in (("rows", len(v.tuples)), ("sum", n_sum(v.tuples)))
                for end, eid in (("min", min(ids)), ("max", max(ids)))]
    return chained, expect


@case("chained_with_reducer", ["count", "ids"])
def _chain_reducer(s: Streams):
    """Count chained with a ReducerAggregator."""
    chained = (s.main.chainedAgg().aggregate(Count(), ["count"])
               .aggregate(["id"], IdsReducer(sort=True), ["ids:array<bigint>"]).chainEnd())
    return chained, lambda v, e: [{"count": len(v.tuples), "ids": sorted(t["id"] for t in v.tuples)}]


# =============================================================================================
# groupBy + aggregate: the group fields, then the outputs, once per group (null is a group value).
# =============================================================================================
@case("groupBy_count", ["word", "count"], plan="sql")
def _g_count(s: Streams):
    """groupBy(word).aggregate(Count) (Spark SQL); the null word is a group."""
    return (s.main.groupBy(["word"]).aggregate(Count(), ["count"]),
            lambda v, e: [{"word": k[0], "count": len(g)} for k, g in keyed(v.tuples, ["word"]).items()])


@case("groupBy_sum", ["word", "sum"], plan="sql")
def _g_sum(s: Streams):
    """groupBy(word).aggregate(Sum) (Spark SQL): a group whose n are all null sums to zero() = 0
    (Trident combines from zero())."""
    return (s.main.groupBy(["word"]).aggregate(["n"], Sum(), ["sum"]),
            lambda v, e: [{"word": k[0], "sum": n_sum(g)} for k, g in keyed(v.tuples, ["word"]).items()])


@case("groupBy_python_combiner", ["word", "sumsq"], plan="partial")
def _g_combiner(s: Streams):
    """groupBy(word).aggregate(Python CombinerAggregator)."""
    return (s.main.groupBy(["word"]).aggregate(["n"], SumSq(), ["sumsq:bigint"]),
            lambda v, e: [{"word": k[0], "sumsq": sum((t["n"] or 0) ** 2 for t in g)}
                          for k, g in keyed(v.tuples, ["word"]).items()])


@case("groupBy_python_combiner_partial", ["tag", "probe"], plan="partial")
def _g_probe(s: Streams):
    """groupBy(tag).aggregate(Python combiner): partial per group in each spout partition, then
    the groups' partial values combined after the shuffle (spark.sql.shuffle.partitions)."""
    def expect(v: View, e: Env) -> list[Row]:
        return [{"tag": k[0], "probe": probe([[t for t in p if t["tag"] == k[0]] for p in v.parts],
                                              e.shuffle_partitions)}
                for k in keyed(v.tuples, ["tag"])]
    return s.main.groupBy(["tag"]).aggregate(["n"], ProbeCombiner(), [PROBE_FIELD]), expect


@case("groupBy_reducer", ["word", "ids"], plan="full")
def _g_reducer(s: Streams):
    """groupBy(word).aggregate(ReducerAggregator)."""
    return (s.main.groupBy(["word"]).aggregate(["id"], IdsReducer(sort=True), ["ids:array<bigint>"]),
            lambda v, e: [{"word": k[0], "ids": sorted(t["id"] for t in g)}
                          for k, g in keyed(v.tuples, ["word"]).items()])


@case("groupBy_aggregator", ["word", "txid", "count"], plan="full")
def _g_agg(s: Streams):
    """groupBy(word).aggregate(Aggregator): init(txid)/complete once per group."""
    return (s.main.groupBy(["word"]).aggregate(["id"], TxAgg(), ["txid:bigint", "count:bigint"]),
            lambda v, e: [{"word": k[0], "txid": v.txid, "count": len(g)}
                          for k, g in keyed(v.tuples, ["word"]).items()])


@case("groupBy_aggregator_parallelism", ["word", "txid", "pidx", "nparts", "ids"])
def _g_parallel(s: Streams):
    """groupBy(word).aggregate(Aggregator).parallelismHint(3): the groups spread over 3 partitions."""
    stream = (s.main.groupBy(["word"]).aggregate(["id"], PartitionIds(sort=True), PARTITION_IDS_FIELDS)
              .parallelismHint(3))

    def expect(v: View, e: Env) -> Callable[[list[Row]], None]:
        def check(rows: list[Row]) -> None:
            assert all(r["nparts"] == 3 and 0 <= r["pidx"] < 3 and r["txid"] == v.txid for r in rows), rows
            got = sorted(canonical({"word": r["word"], "ids": r["ids"]}) for r in rows)
            assert got == sorted(canonical({"word": k[0], "ids": sorted(t["id"] for t in g)})
                                 for k, g in keyed(v.tuples, ["word"]).items())
        return check
    return stream, expect


@case("groupBy_each_aggregate", ["word", "count"])
def _g_each(s: Streams):
    """GroupedStream.each keeps the grouping: groupBy(word).each(id -> 0..3 emits).aggregate(Count)."""
    grouped = s.main.groupBy(["word"]).each(["id"], EmitIdMod4(), ["i:bigint"])

    def expect(v: View, e: Env) -> list[Row]:
        counts = {k[0]: sum(t["id"] % 4 for t in g) for k, g in keyed(v.tuples, ["word"]).items()}
        return [{"word": w, "count": c} for w, c in counts.items() if c]
    return grouped.aggregate(Count(), ["count"]), expect


@case("groupBy_compound_count", ["word", "tag", "count"], plan="sql")
def _g_compound(s: Streams):
    """groupBy(word, tag).aggregate(Count): compound keys, null in one of them."""
    return (s.main.groupBy(["word", "tag"]).aggregate(Count(), ["count"]),
            lambda v, e: [{"word": k[0], "tag": k[1], "count": len(g)}
                          for k, g in keyed(v.tuples, ["word", "tag"]).items()])


@case("groupBy_compound_python", ["tag", "word", "sumsq", "ids"], plan="full")
def _g_compound_python(s: Streams):
    """groupBy(tag, word) with a chained Python combiner and reducer."""
    chained = (s.main.groupBy(["tag", "word"]).chainedAgg().aggregate(["n"], SumSq(), ["sumsq:bigint"])
               .aggregate(["id"], IdsReducer(sort=True), ["ids:array<bigint>"]).chainEnd())
    return chained, lambda v, e: [{"tag": k[0], "word": k[1], "sumsq": sum((t["n"] or 0) ** 2 for t in g),
                                   "ids": sorted(t["id"] for t in g)}
                                  for k, g in keyed(v.tuples, ["tag", "word"]).items()]


@case("groupBy_chained_sql", ["word", "count", "sum"], plan="sql")
def _g_chain(s: Streams):
    """groupBy(word).chainedAgg(Count, Sum)."""
    chained = (s.main.groupBy(["word"]).chainedAgg().aggregate(Count(), ["count"])
               .aggregate(["n"], Sum(), ["sum"]).chainEnd())
    return chained, lambda v, e: [{"word": k[0], "count": len(g), "sum": n_sum(g)}
                                  for k, g in keyed(v.tuples, ["word"]).items()]


@case("groupBy_chained_python_sum", ["word", "sum", "sumsq"], plan="partial")
def _g_chain_python_sum(s: Streams):
    """groupBy(word).chainedAgg(Sum, Python combiner): Sum on the Python path agrees with SQL
    (a group whose n are all null sums to 0)."""
    chained = (s.main.groupBy(["word"]).chainedAgg().aggregate(["n"], Sum(), ["sum"])
               .aggregate(["n"], SumSq(), ["sumsq:bigint"]).chainEnd())
    return chained, lambda v, e: [{"word": k[0], "sum": n_sum(g), "sumsq": sum((t["n"] or 0) ** 2 for t in g)}
                                  for k, g in keyed(v.tuples, ["word"]).items()]


@case("groupBy_chained_cross_product", ["tag", "count", "stat", "val"])
def _g_chain_cross(s: Streams):
    """groupBy(tag).chainedAgg(Count, 2-tuple Aggregator): 2 rows per group."""
    chained = (s.main.groupBy(["tag"]).chainedAgg().aggregate(Count(), ["count"])
               .aggregate(["n"], CountAndSum(), ["stat", "val:bigint"]).chainEnd())
    return chained, lambda v, e: [{"tag": k[0], "count": len(g), "stat": st, "val": val}
                                  for k, g in keyed(v.tuples, ["tag"]).items()
                                  for st, val in (("rows", len(g)), ("sum", n_sum(g)))]


@case("groupBy_partitionAggregate_count", ["word", "count"], ordered=True)
def _g_pagg(s: Streams):
    """groupBy(word).partitionAggregate(Count): per partition, per group (first-seen order)."""
    return (s.main.groupBy(["word"]).partitionAggregate(Count(), ["count"]).toStream(),
            lambda v, e: [{"word": k[0], "count": len(g)}
                          for p in v.parts for k, g in keyed(p, ["word"]).items()])


@case("groupBy_partitionAggregate_sum", ["word", "sum"], ordered=True)
def _g_pagg_sum(s: Streams):
    """groupBy(word).partitionAggregate(Sum): same Sum results as the SQL path (all-null n: 0)."""
    return (s.main.groupBy(["word"]).partitionAggregate(["n"], Sum(), ["sum"]).toStream(),
            lambda v, e: [{"word": k[0], "sum": n_sum(g)}
                          for p in v.parts for k, g in keyed(p, ["word"]).items()])


@case("groupBy_partitionAggregate_reducer", ["tag", "ids"], ordered=True)
def _g_pagg_reducer(s: Streams):
    """groupBy(tag).partitionAggregate(ReducerAggregator): arrival order within each partition."""
    grouped = s.main.groupBy(["tag"]).partitionAggregate(["id"], IdsReducer(), ["ids:array<bigint>"])
    return (grouped.toStream(),
            lambda v, e: [{"tag": k[0], "ids": [t["id"] for t in g]}
                          for p in v.parts for k, g in keyed(p, ["tag"]).items()])


# =============================================================================================
# minBy / maxBy (per partition, whole tuple; Storm's ComparisonAggregator: later tuple wins a tie)
# =============================================================================================
@case("minBy_n", NAMES, ordered=True)
def _min_by(s: Streams):
    """minBy(n): per partition, the whole tuple with the smallest n; null n skipped. A partition
    without any n emits nothing (Storm's ComparisonAggregator would emit a null tuple)."""
    return (s.main.minBy("n"),
            lambda v, e: [r for p in v.parts if (r := best(p, "n", lambda a, b: a <= b)) is not None])


@case("maxBy_n", NAMES, ordered=True)
def _max_by(s: Streams):
    """maxBy(n): per partition, the whole tuple with the largest n (a tie: the later one)."""
    return (s.main.maxBy("n"),
            lambda v, e: [r for p in v.parts if (r := best(p, "n", lambda a, b: a >= b)) is not None])


# =============================================================================================
# FirstN (Trident's assembly: first n per partition, then first n of those on one partition)
# =============================================================================================
def _sorted_check(expected: list[Row], field_: str) -> Callable[[list[Row]], None]:
    """Rows in ``expected``'s order of ``field_``; tied values may come in any order."""
    def check(rows: list[Row]) -> None:
        assert [r[field_] for r in rows] == [r[field_] for r in expected], rows
        assert sorted(map(canonical, rows)) == sorted(map(canonical, expected))
    return check


@case("firstN_sorted_reverse", NAMES)
def _first_n_reverse(s: Streams):
    """FirstN(4, n, reverse=True): the 4 largest n, largest first."""
    def expect(v: View, e: Env) -> Any:
        ranked = sorted((t for t in v.tuples if t["n"] is not None), key=lambda t: -t["n"])
        return _sorted_check(ranked[:4], "n")
    return s.main.applyAssembly(FirstN(4, "n", reverse=True)), expect


@case("firstN_sorted_all", NAMES)
def _first_n_all(s: Streams):
    """FirstN(100, n): every tuple, smallest n first, null n last."""
    def expect(v: View, e: Env) -> Any:
        ranked = sorted(v.tuples, key=lambda t: (t["n"] is None, t["n"] or 0))
        return _sorted_check(ranked, "n")
    return s.main.applyAssembly(FirstN(100, "n")), expect


@case("firstN_unsorted", NAMES)
def _first_n(s: Streams):
    """FirstN(3): 3 tuples (fewer if the batch has fewer), each among the first 3 of its partition."""
    def expect(v: View, e: Env) -> Any:
        def check(rows: list[Row]) -> None:
            firsts = [canonical(t) for p in v.parts for t in p[:3]]
            assert len(rows) == min(3, len(v.tuples)), rows
            assert len({r["id"] for r in rows}) == len(rows), rows
            assert all(canonical(r) in firsts for r in rows), rows
        return check
    return s.main.applyAssembly(FirstN(3)), expect


# =============================================================================================
# Python operators feeding Combiners: the operators' stage aggregates partially (Trident's plan),
# emitting one row per group and partition; Spark SQL (Count, Sum) or the final stage combines.
# =============================================================================================
def _emitted(v: View) -> list[Row]:
    """The tuples after each(["id"], EmitIdMod4(), ["i"]): each tuple id % 4 times, i = 0, 1, ..."""
    return [{**t, "i": i} for t in v.tuples for i in range(t["id"] % 4)]


@case("fused_groupBy_count", ["i", "count"], plan="fused")
def _fused_count(s: Streams):
    """each(Python) -> groupBy(i) -> aggregate(Count): the Python stage counts per partition."""
    return (s.main.each(["id"], EmitIdMod4(), ["i:bigint"]).groupBy(["i"]).aggregate(Count(), ["count"]),
            lambda v, e: [{"i": k[0], "count": len(g)} for k, g in keyed(_emitted(v), ["i"]).items()])


@case("fused_groupBy_chained_sum_count", ["word", "sum", "count"], plan="fused")
def _fused_chain(s: Streams):
    """each(Python) -> groupBy(word) -> chainedAgg(Sum of i, Count): both partials in the stage."""
    chained = (s.main.each(["id"], EmitIdMod4(), ["i:bigint"]).groupBy(["word"]).chainedAgg()
               .aggregate(["i"], Sum(), ["sum"]).aggregate(Count(), ["count"]).chainEnd())
    return chained, lambda v, e: [{"word": k[0], "sum": sum(t["i"] for t in g), "count": len(g)}
                                  for k, g in keyed(_emitted(v), ["word"]).items()]


@case("fused_groupBy_python_combiner", ["word", "sumsq"], plan="fused_final")
def _fused_python(s: Streams):
    """each(Python) -> groupBy(word) -> a Python Combiner: pickled partials, the final stage."""
    return (s.main.each(["id"], EmitIdMod4(), ["i:bigint"]).groupBy(["word"])
            .aggregate(["i"], SumSq(), ["sumsq:bigint"]),
            lambda v, e: [{"word": k[0], "sumsq": sum(t["i"] ** 2 for t in g)}
                          for k, g in keyed(_emitted(v), ["word"]).items()])


@case("fused_aggregate_count_sum", ["count", "sum"], plan="fused")
def _fused_global(s: Streams):
    """each(Python) -> chainedAgg(Count, Sum) of the whole batch: one row, also for a batch with
    no tuples (0 and Sum's zero(), 0)."""
    chained = (s.main.each(["id"], EmitIdMod4(), ["i:bigint"]).chainedAgg().aggregate(Count(), ["count"])
               .aggregate(["i"], Sum(), ["sum"]).chainEnd())
    return chained, lambda v, e: [{"count": len(_emitted(v)), "sum": sum(t["i"] for t in _emitted(v))}]


@case("fused_aggregate_python_combiner", ["sumsq"], plan="fused_final")
def _fused_global_python(s: Streams):
    """each(Python) -> aggregate(Python Combiner): one row per batch, zero() for an empty one."""
    return (s.main.each(["id"], EmitIdMod4(), ["i:bigint"]).aggregate(["i"], SumSq(), ["sumsq:bigint"]),
            lambda v, e: [{"sumsq": sum(t["i"] ** 2 for t in _emitted(v))}])


@case("fused_untyped_key_count", ["key", "count"], plan="fused")
def _fused_untyped(s: Streams):
    """each(Python) into an undeclared field holding ints and strings -> groupBy -> Count:
    0 and "0" are two groups, each shown with its own value."""
    def expect(v: View, e: Env) -> list[Row]:
        keys = [t["id"] % 3 if t["id"] % 2 == 0 else str(t["id"] % 3) for t in v.tuples]
        return [{"key": k, "count": keys.count(k)} for k in dict.fromkeys(keys)]
    return s.main.each(["id"], MixedKey(), ["key"]).groupBy(["key"]).aggregate(Count(), ["count"]), expect
