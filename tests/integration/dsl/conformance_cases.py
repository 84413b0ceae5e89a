"""Trident conformance: every case, and how a run's sinks are checked against them.

The cases live in ``conformance_cases_stream`` (per-tuple operations, partitionAggregate,
repartitioning), ``conformance_cases_agg`` (aggregate, chainedAgg, groupBy, minBy/maxBy,
FirstN) and ``conformance_cases_join`` (merge, join); importing them registers them in
``conformance_ops.CASES``. The data, the operations and the case registry are in
``conformance_ops``.
"""

from __future__ import annotations

import re
from typing import Any

import conformance_cases_agg  # noqa: F401  (registers its cases)
import conformance_cases_join  # noqa: F401
import conformance_cases_stream  # noqa: F401
import pytest
from conformance_ops import CASES, Case, Env, Streams, View, canonical

from trident_spark import TridentTopology

#: Cases that fail because of a bug outside the files this suite may fix: name -> minimal repro.
#: Marked xfail(strict=True), so they flip to failures once fixed.
XFAIL: dict[str, str] = {
    "merged_query_spout_partitions": (
        "executor/sources.py split_sources: in a query reading several spouts, each spout's DataFrame is "
        "the unioned source filtered by spout, so it keeps every spout's partitions (the others' empty) "
        "and partition-level operations see them. Repro: a, b = FeederBatchSpout(['x:bigint'], "
        "num_partitions=2) twice; sa = t.newStream('a', a); t.merge(sa, t.newStream('b', b)).collect(); "
        "sink = sa.partitionAggregate(Count(), ['c']).collect(); a.feed([[1], [2]]); b.feed([[3]]); "
        "run available_now -> sink.batches[0] == [{'c': 1}, {'c': 1}, {'c': 0}, {'c': 0}], "
        "expected [{'c': 1}, {'c': 1}] (Trident: each spout has its own tasks)"),
}


def params() -> list[Any]:
    """The case names for ``pytest.mark.parametrize``, known failures marked xfail(strict=True)."""
    return [pytest.param(c.name, marks=pytest.mark.xfail(strict=True, reason=XFAIL[c.name]))
            if c.name in XFAIL else c.name for c in CASES]


def build_cases(streams: Streams) -> list[Case]:
    """Add every case's output (with its sink) to the topology; returns the built cases."""
    built = []
    for spec in CASES:
        stream, expect = spec.build(streams)
        built.append(Case(spec.name, spec.fields, spec.build, spec.ordered, spec.plan, spec.doc,
                          stream.collect(), expect, stream.node))
    return built


def check_plan(text: str, kind: str) -> None:
    """How an aggregation runs, from its physical plan.

    ``sql``: Spark SQL aggregates only (Hash/SortAggregate, no Python stage). ``partial``: Trident's
    combiner plan, a Python partial stage, a shuffle, a Python final stage. ``fused`` and
    ``fused_final``: the same plan after Python operators, whose stage does the partial
    aggregation; Spark SQL or a final stage after the shuffle. ``full``: the tuples
    shuffled, then one Python stage that runs the aggregators.
    """
    if kind == "sql":
        assert re.search(r"(Hash|Sort|ObjectHash)Aggregate\(", text) and "MapInArrow" not in text, text
        return
    final, partial_ = text.find("MapInArrow final_"), text.find("MapInArrow partial_")
    if kind == "partial":
        assert 0 <= final < text.find("Exchange", final) < partial_, text
        return
    if kind in ("fused", "fused_final"):
        # the operators' Python stage combines per partition; after the shuffle, Spark SQL
        # merges typed partials (fused), or the final stage pickled ones (fused_final)
        stage = text.find("MapInArrow each_")
        assert partial_ < 0 and stage >= 0, text
        top = (re.search(r"(Hash|Sort|ObjectHash)Aggregate\(", text) if kind == "fused"
               else re.search("MapInArrow final_", text))
        assert top is not None and top.start() < text.find("Exchange", top.start()) < stage, text
        return
    full = text.find("MapInArrow full_")
    assert kind == "full" and partial_ < 0 and final < 0, (kind, text)
    assert 0 <= full < text.find("Exchange", full), text


def spark_plans(spark: Any, topology: TridentTopology, cases: list[Case]) -> dict[str, str]:
    """The physical plan of each case that declares one, planned on an empty batch."""
    from trident_spark.executor.sources import query_source, split_sources
    from trident_spark.planner.compile import BatchFrames
    from trident_spark.planner.explain import spark_plan

    plans: dict[str, str] = {}
    for query in topology.queries():
        empty = spark.createDataFrame([], query_source(spark, query.spouts).schema)
        batch = BatchFrames(query, split_sources(empty, query.spouts), txid=0)
        for built in cases:
            if built.plan is not None and any(built.node is n for n in query.nodes):
                plans[built.name] = spark_plan(batch.dataframe(built.node), "simple")
    return plans


def check_case(built: Case, views: list[View], env: Env) -> None:
    """Assert every batch of one case: its txids, its fields, and its rows exactly."""
    assert built.sink is not None and built.expect is not None
    assert list(built.sink.fields) == built.fields
    batches = built.sink.batches
    assert sorted(batches) == [v.txid for v in views], f"{built.name}: txids {sorted(batches)}"
    for view in views:
        rows = batches[view.txid]
        expected = built.expect(view, env)
        if callable(expected):
            expected(rows)
            continue
        if not built.ordered:
            rows = sorted(rows, key=canonical)
            expected = sorted(expected, key=canonical)
        got, want = [canonical(r) for r in rows], [canonical(r) for r in expected]
        if got != want:
            missing = [w for w in want if w not in got]
            extra = [g for g in got if g not in want]
            raise AssertionError(
                f"{built.name}, batch {view.txid}:\n  got      {got}\n  expected {want}\n"
                f"  missing  {missing}\n  extra    {extra}")
