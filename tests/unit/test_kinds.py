"""Kinds and modes are typed: join types, aggregation scopes, repartition kinds and stage names.

Each is a string enum or a small record that shows as the text it replaced, so
messages, explain output and progress lines are unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark import JoinOutFieldsMode, JoinType, TridentTopology
from trident_spark.builtin import Count
from trident_spark.executor.metrics import StageClock, StageName
from trident_spark.graph import AggregateNode, AggregationScope, RepartitionKind, RepartitionNode
from trident_spark.runtime.metrics import split_counters
from trident_spark.runtime.progress import BatchProgress, StageProgress
from trident_spark.spout import FeederBatchSpout


@pytest.fixture
def streams() -> tuple[TridentTopology, Any, Any]:
    topology = TridentTopology()
    return (topology, topology.newStream("a", FeederBatchSpout(["k", "x"])),
            topology.newStream("b", FeederBatchSpout(["k", "y"])))


def test_a_join_node_holds_join_types_and_its_mode(streams: Any) -> None:
    topology, a, b = streams
    node = topology.join(a, ["k"], b, ["k"], ["k", "x", "y"], "right").node
    assert node.join_types == [JoinType.OUTER, JoinType.INNER]
    assert all(type(t) is JoinType for t in node.join_types)
    assert node.mode is JoinOutFieldsMode.COMPACT
    node = topology.join(a, ["k"], b, ["k"], ["k", "k1", "x", "k2", "y"], "inner",
                         JoinOutFieldsMode.PRESERVE).node
    assert node.join_types == [JoinType.INNER, JoinType.INNER] and node.mode is JoinOutFieldsMode.PRESERVE


@pytest.mark.parametrize(("build", "kind", "label"), [
    (lambda s: s.shuffle(), RepartitionKind.SHUFFLE, "shuffle"),
    (lambda s: s.partitionBy(["k"]), RepartitionKind.PARTITION_BY, "partitionBy(k)"),
    (lambda s: s.global_(), RepartitionKind.GLOBAL, "global"),
    (lambda s: s.batchGlobal(), RepartitionKind.BATCH_GLOBAL, "batchGlobal"),
    (lambda s: s.broadcast(), RepartitionKind.BROADCAST, "broadcast"),
    (lambda s: s.localOrShuffle(), RepartitionKind.LOCAL_OR_SHUFFLE, "localOrShuffle"),
    (lambda s: s.identityPartition(), RepartitionKind.IDENTITY, "identity"),
    (lambda s: s.partition(lambda t, n: 0), RepartitionKind.CUSTOM, "partition(<lambda>)"),
])
def test_each_repartitioning_has_its_kind_and_keeps_its_label(streams: Any, build: Any,
                                                             kind: RepartitionKind, label: str) -> None:
    _, a, _ = streams
    node = build(a).node
    assert isinstance(node, RepartitionNode) and node.kind is kind and node.label == label
    assert type(node.label) is str


def test_every_repartition_kind_is_planned() -> None:
    # the planner's table names each kind: a kind added to the enum and not planned fails here
    import inspect

    from trident_spark.planner import partitioning
    source = inspect.getsource(partitioning.repartition)
    assert all(f"RepartitionKind.{kind.name}" in source for kind in RepartitionKind)


def test_aggregations_have_their_scope(streams: Any) -> None:
    _, a, _ = streams
    per_partition = a.partitionAggregate(["k"], Count(), ["n"]).node
    per_batch = a.aggregate(["k"], Count(), ["n"]).node
    grouped = a.groupBy(["k"]).aggregate(Count(), ["n"]).node
    assert isinstance(per_partition, AggregateNode)
    assert (per_partition.scope, per_batch.scope, grouped.scope) == (
        AggregationScope.PARTITION, AggregationScope.BATCH, AggregationScope.BATCH)
    assert all(type(n.scope) is AggregationScope for n in (per_partition, per_batch, grouped))


def test_a_stage_name_shows_as_the_text_it_replaced() -> None:
    assert str(StageName("persistentAggregate(Count)", "update")) == "persistentAggregate(Count) / update"
    assert str(StageName("each(Split)")) == "each(Split)"
    assert StageName.of("counts / multiPut") == StageName("counts", "multiPut")
    assert StageName.of("a / b") == StageName("a / b")          # not a step: all of it is the label
    assert StageName.of(StageName("x", "final")) == StageName("x", "final")


def test_stages_counted_under_records_and_under_text_come_out_alike() -> None:
    def counted(names: dict[str, Any]) -> list[dict[str, Any]]:
        clock = StageClock()
        clock.add("python", names["split"], ms=10.0, rows_in=3, rows_out=6)
        clock.add("state_get", names["get"], ms=2.0)
        clock.add("aggregate", names["update"], ms=5.0, rows_in=6, rows_out=2)
        clock.add("state_put", names["put"], ms=1.0)
        return split_counters(clock.counters, ["split", "counts"])[1]

    as_records = counted({"split": "split", "get": StageName("counts", "multiGet"),
                          "update": StageName("counts", "update"), "put": StageName("counts", "multiPut")})
    as_text = counted({"split": "split", "get": "counts / multiGet", "update": "counts / update",
                       "put": "counts / multiPut"})
    assert as_records == as_text
    assert [(s["name"], s["ms"]) for s in as_records] == [
        ("split", 10.0), ("counts / multiGet", 2.0), ("counts / update", 2.0), ("counts / multiPut", 1.0)]
    assert all(type(s["name"]) is str for s in as_records)


#: A progress line as the version before typed stages wrote it (BatchProgress.to_json).
OLD_LINE = (
    '{"attempts": 1, "backlog": null, "bytes": 96000, "cores": 2, "duration_ms": 850, "durations_ms": {}, '
    '"end_offsets": {}, "errors_reported": {}, "input_rows_per_second": null, "last_errors": {}, '
    '"latest_offsets": {}, "limited_by": null, "lost_records": 0, "malformed_records": 0, '
    '"partition_rows": {}, "processed_rows_per_second": null, "read_limit_bytes": null, '
    '"record_bytes": 80.0, "rows": 1200, "spark": {"executor_run_ms": 583.75, "tasks": 4}, "stages": '
    '[{"kind": "source", "ms": 41.5, "name": "source", "rows_in": null, "rows_out": 1200, "tasks": null}, '
    '{"kind": "python", "ms": 410.0, "name": "each(Split)", "rows_in": 1200, "rows_out": 4800, "tasks": 2}, '
    '{"kind": "state_get", "ms": 12.25, "name": "persistentAggregate(Count) / multiGet", "rows_in": null, '
    '"rows_out": null, "tasks": 2}, {"kind": "spark", "ms": 120.0, "name": "spark", "rows_in": null, '
    '"rows_out": null, "tasks": 4}], "start_offsets": {}, "state": {"keys_written": 300}, "stream": "wc", '
    '"timestamp": "2026-11-26T22:00:00.000Z", "txid": 4, "warmup": false}')


def test_progress_stages_are_records_and_progress_lines_keep_their_bytes() -> None:
    batch = BatchProgress.from_json(OLD_LINE)
    assert all(type(s) is StageProgress for s in batch.stages)
    split = batch.stages[1]
    assert (split.name, split.kind, split.ms, split.rows_in, split.rows_out, split.tasks) == (
        "each(Split)", "python", 410.0, 1200, 4800, 2)
    assert split["rows_out"] == 4800 and split.get("tasks") == 2 and dict(split)["name"] == "each(Split)"
    assert batch.to_json() == OLD_LINE
    assert batch.slowest_stage() is split
    assert batch.line().endswith("; slowest stage: each(Split) (70% of task time)")


def test_stages_given_as_mappings_become_records() -> None:
    batch = BatchProgress("wc", txid=1, rows=2, duration_ms=3,
                          stages=[{"name": "split", "kind": "python", "ms": 30.0, "future_key": 1}])
    assert batch.stages == [StageProgress("split", "python", ms=30.0)]
    assert batch.stages[0] == {"name": "split", "kind": "python", "ms": 30.0, "rows_in": None,
                               "rows_out": None, "tasks": None}
