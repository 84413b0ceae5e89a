"""planner/context.py: the batch context every plan is given, and the one task wrapper of every stage."""

from __future__ import annotations

import functools
import inspect
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest

from trident_spark import TridentTopology
from trident_spark.errors import TopologyError
from trident_spark.executor.instances import InstanceScope
from trident_spark.graph import EachNode, FilterNode, MapNode, Node, PeekNode, SpoutNode
from trident_spark.planner import compile as compile_module
from trident_spark.planner.context import BatchContext, arrow_stage, named
from trident_spark.spout import FeederBatchSpout

PLANNER = Path(compile_module.__file__).parent
#: What the stub frame is told the stage emits (it never looks).
SCHEMA: Any = "schema"


class StubFrame:
    """What arrow_stage asks of a DataFrame: mapInArrow(fn, schema), which pickles fn in Spark."""

    def __init__(self, pickles: bool = True) -> None:
        self.pickles = pickles
        self.calls: list[tuple[Any, Any]] = []

    def mapInArrow(self, fn: Any, schema: Any) -> str:
        if not self.pickles:
            raise pickle.PicklingError("cannot pickle '_thread.lock' object")
        self.calls.append((fn, schema))
        return "mapped"


class Locked:
    def __init__(self) -> None:
        self.lock = threading.Lock()


def _query() -> Any:
    topology = TridentTopology()
    topology.newStream("words", FeederBatchSpout(["word"])).map(lambda t: [t[0]]).map(lambda t: [t[0]])
    return topology.queries()[0]


def _task(batches: Any) -> Any:
    return batches


def _kept(metrics: Any, batches: Any) -> Any:
    return batches


def test_the_context_names_a_node_by_its_place_and_scopes_it_to_the_run() -> None:
    query = _query()
    ctx = BatchContext(query, txid=7, conf={"k": 1}, run_id="run1")
    assert [ctx.place(n) for n in query.nodes] == ["words/0", "words/1", "words/2"]
    scope: Any = ctx.scope(query.nodes[2], "final")
    plain: Any = ctx.scope(query.nodes[1])
    assert (scope.run_id, scope.stage, plain.stage) == ("run1", "words/2/final", "words/1")
    assert BatchContext(query, txid=7).scope(query.nodes[1]) is None  # no run: nothing is kept


def test_the_batch_timestamp_is_the_offset_logs_else_fixed_when_first_asked() -> None:
    query = _query()
    assert BatchContext(query, txid=1, batch_timestamp_ms=1234).timestamp_ms() == 1234
    ctx = BatchContext(query, txid=1)
    first = ctx.timestamp_ms()
    assert ctx.batch_timestamp_ms == first and ctx.timestamp_ms() == first


def test_a_stage_runs_its_task_named_after_its_operators() -> None:
    frame: Any = StubFrame()
    ctx = BatchContext(_query(), txid=1)
    task = functools.partial(_task)
    result: Any = arrow_stage(frame, SCHEMA, ctx, name="each(Upper) -> filter", task=task, operations=[])
    assert result == "mapped"
    [(fn, schema)] = frame.calls
    assert (fn, fn.__name__, schema) == (task, "each_Upper_filter", "schema")


def test_a_kept_stage_runs_in_the_instance_host_and_is_timed() -> None:
    frame: Any = StubFrame()
    ctx = BatchContext(_query(), txid=1, run_id="run1")
    scope = InstanceScope("run1", "words/1")
    arrow_stage(frame, SCHEMA, ctx, name="map", task=_task, operations=[],
                kept=_kept, scope=scope, timed_as=("aggregate", "map"))
    fn: Any = frame.calls[0][0]
    # the instance host's function, and no accumulator: timed() leaves it as it is
    assert isinstance(fn, functools.partial) and fn.args == (scope, _kept, None)
    fn = frame.calls[0][0]
    assert (fn.func.__name__, fn.__name__) == ("_run_hosted", "map")


def test_kept_without_a_scope_runs_the_task() -> None:
    frame: Any = StubFrame()
    arrow_stage(frame, SCHEMA, BatchContext(_query(), txid=1), name="m",
                task=functools.partial(_task), operations=[], kept=_kept, scope=None)
    assert frame.calls[0][0].func is _task


def test_an_operation_that_cannot_be_pickled_is_named() -> None:
    frame: Any = StubFrame(pickles=False)
    expected = r"each\(Locked\): the operation cannot be sent to Spark's executors"
    with pytest.raises(TopologyError, match=expected):
        arrow_stage(frame, SCHEMA, BatchContext(_query(), txid=1), name="each(Locked)",
                    task=functools.partial(_task), operations=[("each(Locked)", Locked())])


def test_named_keeps_a_name_spark_shows() -> None:
    assert named(functools.partial(_task), "!!!").__name__ == "trident_stage"
    assert len(named(functools.partial(_task), "x" * 200).__name__) == 80


def test_every_node_kind_has_one_plan_given_frame_node_ctx() -> None:
    import trident_spark.graph as graph

    kinds = {k for k in vars(graph).values() if isinstance(k, type) and issubclass(k, Node) and k is not Node}
    per_tuple = {SpoutNode, EachNode, FilterNode, PeekNode, MapNode}  # built by BatchFrames itself
    assert set(compile_module.PLANS) == kinds - per_tuple
    for plan in compile_module.PLANS.values():
        assert list(inspect.signature(plan).parameters)[:3] in (["df", "node", "ctx"], ["dfs", "node", "ctx"])


def test_no_plan_module_wraps_a_task_itself() -> None:
    """hosted -> timed -> named -> shipped is written once, in planner/context.py."""
    for path in sorted(PLANNER.glob("*.py")):
        if path.name in ("context.py", "shipping.py"):
            continue
        text = path.read_text()
        for call in ("hosted(", "timed(", "named(", "shipped(", "mapInArrow("):
            assert call not in text, f"{path.name} calls {call}...): use planner.context.arrow_stage"
