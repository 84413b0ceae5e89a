"""Conformance cases: merge and join within a batch (see ``conformance_ops``)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from conformance_ops import (
    OTHER_NAMES,
    CountAsAggregator,
    Env,
    Row,
    Streams,
    TxAgg,
    View,
    case,
    keyed,
)
from pyspark import cloudpickle

from trident_spark.builtin import Count
from trident_spark.stream import Stream

# Executors cannot import this file: ship its lambdas by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# =============================================================================================
# merge and join within a batch
# =============================================================================================
@case("merge_same_spout", ["word"])
def _merge_same(s: Streams):
    """merge of two streams of one spout: output fields are the first stream's (test-split-merge)."""
    merged = s.topology.merge(s.main.project(["word"]), s.main.map(lambda t: [str(t["id"])], ["sid"]))
    return merged, lambda v, e: ([{"word": t["word"]} for t in v.tuples]
                                 + [{"word": str(t["id"])} for t in v.tuples])


@case("merge_mixed_types", ["word"])
def _merge_mixed(s: Streams):
    """Trident test-split-merge: words merged with their lengths. The merged field has the first
    stream's type (string), so the lengths arrive as strings."""
    lengths = s.main.map(lambda t: [len(t["word"] or "")], ["len:bigint"])
    return (s.topology.merge(s.main.project(["word"]), lengths),
            lambda v, e: [{"word": t["word"]} for t in v.tuples] + [{"word": str(len(t["word"] or ""))}
                                                                    for t in v.tuples])


@case("merge_groupings_same_stream", ["tag", "count"])
def _merge_groupings(s: Streams):
    """Two groupings of one stream merged: each group twice (test-multiple-groupings-same-stream)."""
    one = s.main.groupBy(["tag"]).aggregate(CountAsAggregator(), ["count:bigint"])
    two = s.main.groupBy(["tag"]).aggregate(CountAsAggregator(), ["count:bigint"])
    return s.topology.merge([one, two]), lambda v, e: [{"tag": k[0], "count": len(g)}
                                                       for k, g in keyed(v.tuples, ["tag"]).items()
                                                       for _ in range(2)]


def _join_sides(s: Streams) -> tuple[Stream, Stream]:
    left = s.main.filter(lambda t: t["tag"] == "a").project(["word", "id"])
    right = s.main.filter(lambda t: t["tag"] == "b").project(["word", "n"])
    return left, right


def _join_model(v: View, keep_left: bool, keep_right: bool) -> list[Row]:
    """Trident's join (a multi-reducer grouped by the join fields: null joins null); an outer side
    with no match gives nulls."""
    left = [t for t in v.tuples if t["tag"] == "a"]
    right = [t for t in v.tuples if t["tag"] == "b"]
    out = [{"word": a["word"], "lid": a["id"], "rn": b["n"]}
           for a in left for b in right if a["word"] == b["word"]]
    if keep_left:
        out += [{"word": a["word"], "lid": a["id"], "rn": None} for a in left
                if not any(b["word"] == a["word"] for b in right)]
    if keep_right:
        out += [{"word": b["word"], "lid": None, "rn": b["n"]} for b in right
                if not any(a["word"] == b["word"] for a in left)]
    return out


JOIN_OUT = ["word", "lid", "rn"]


@case("join_inner", JOIN_OUT)
def _join_inner(s: Streams):
    """Inner join within the batch: one-to-many gives the cross product; null keys join."""
    left, right = _join_sides(s)
    return (s.topology.join(left, ["word"], right, ["word"], JOIN_OUT),
            lambda v, e: _join_model(v, False, False))


@case("join_left", JOIN_OUT)
def _join_left(s: Streams):
    """how="left": left tuples without a match stay, with null right fields."""
    left, right = _join_sides(s)
    return (s.topology.join(left, ["word"], right, ["word"], JOIN_OUT, how="left"),
            lambda v, e: _join_model(v, True, False))


@case("join_right", JOIN_OUT)
def _join_right(s: Streams):
    """how="right"."""
    left, right = _join_sides(s)
    return (s.topology.join(left, ["word"], right, ["word"], JOIN_OUT, how="right"),
            lambda v, e: _join_model(v, False, True))


@case("join_outer", JOIN_OUT)
def _join_outer(s: Streams):
    """how="outer": both sides kept."""
    left, right = _join_sides(s)
    return (s.topology.join(left, ["word"], right, ["word"], JOIN_OUT, how="outer"),
            lambda v, e: _join_model(v, True, True))


@case("join_types_list", JOIN_OUT)
def _join_list(s: Streams):
    """Trident's JoinType list ["inner", "outer"]: the second stream may be missing (a left join)."""
    left, right = _join_sides(s)
    return (s.topology.join([left, right], [["word"], ["word"]], JOIN_OUT, ["inner", "outer"]),
            lambda v, e: _join_model(v, True, False))


@case("join_parallelism", ["count"])
def _join_hint(s: Streams):
    """join(...).partitionAggregate(Count).parallelismHint(3): the join's stage has 3 partitions."""
    left, right = _join_sides(s)
    joined = s.topology.join(left, ["word"], right, ["word"], JOIN_OUT)

    def expect(v: View, e: Env) -> Callable[[list[Row]], None]:
        def check(rows: list[Row]) -> None:
            assert len(rows) == 3 and sum(r["count"] for r in rows) == len(_join_model(v, False, False)), rows
        return check
    return joined.partitionAggregate(Count(), ["count"]).parallelismHint(3), expect


@case("merge_parallelism", ["count"])
def _merge_hint(s: Streams):
    """merge(...).partitionAggregate(Count).parallelismHint(3): the merge's stage has 3 partitions."""
    merged = s.topology.merge(s.main.project(["id"]), s.main.project(["id"]))

    def expect(v: View, e: Env) -> Callable[[list[Row]], None]:
        def check(rows: list[Row]) -> None:
            assert len(rows) == 3 and sum(r["count"] for r in rows) == 2 * len(v.tuples), rows
        return check
    return merged.partitionAggregate(Count(), ["count"]).parallelismHint(3), expect


@case("join_three_streams", ["word", "lid", "rn", "bid"])
def _join_three(s: Streams):
    """Three streams, JoinType list [outer, inner, outer]: Trident's JoinerMultiReducer emits, per key
    of the inner stream, the cross product with each outer stream's tuples (a null tuple if none)."""
    left, right = _join_sides(s)
    big = s.main.filter(lambda t: t["n"] is not None and t["n"] > 5).project(["word", "id"])
    joined = s.topology.join([left, right, big], [["word"], ["word"], ["word"]], ["word", "lid", "rn", "bid"],
                             ["outer", "inner", "outer"])

    def expect(v: View, e: Env) -> list[Row]:
        out = []
        for b in (t for t in v.tuples if t["tag"] == "b"):
            lefts = [t["id"] for t in v.tuples if t["tag"] == "a" and t["word"] == b["word"]] or [None]
            bigs = [t["id"] for t in v.tuples if t["n"] is not None and t["n"] > 5 and t["word"] == b["word"]]
            out += [{"word": b["word"], "lid": lid, "rn": b["n"], "bid": bid} for lid in lefts
                    for bid in bigs or [None]]
        return out
    return joined, expect


@case("merge_two_spouts", OTHER_NAMES)
def _merge_spouts(s: Streams):
    """merge of two spouts: one query, so batch k of both lands in the same txid."""
    return s.topology.merge(s.m1, s.m2), lambda v, e: v.other[0] + v.other[1]


@case("merge_two_spouts_txid", ["txid", "count"])
def _merge_spouts_tx(s: Streams):
    """An Aggregator over the merged spouts: one init(txid) per batch, both spouts' tuples."""
    return (s.topology.merge(s.m1, s.m2).aggregate(TxAgg(), ["txid:bigint", "count:bigint"]),
            lambda v, e: [{"txid": v.txid, "count": len(v.other[0]) + len(v.other[1])}])


@case("merged_query_spout_partitions", ["count"], ordered=True)
def _merged_query_partitions(s: Streams):
    """partitionAggregate(Count) right after spout m1, whose query also reads m2: one result per
    partition of m1, as in Trident, where each spout has its own tasks."""
    return s.m1.partitionAggregate(Count(), ["count"]), lambda v, e: [{"count": len(p)} for p in v.m1_parts]


@case("join_two_spouts", ["k", "v1", "v2"])
def _join_spouts(s: Streams):
    """Inner join of two spouts within a batch (null keys join, one-to-many is a cross product)."""
    return (s.topology.join(s.m1, ["k"], s.m2, ["k"], ["k", "v1", "v2"]),
            lambda v, e: [{"k": a["k"], "v1": a["v"], "v2": b["v"]} for a in v.other[0] for b in v.other[1]
                          if a["k"] == b["k"]])
