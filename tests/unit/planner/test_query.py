"""planner.query: the stages' parallelism, as Trident's getGroupParallelisms gives it (the largest
hint of a stage, capped at its spout's max task parallelism)."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark import TridentTopology
from trident_spark.builtin import Count, Debug
from trident_spark.errors import TopologyError
from trident_spark.fields import Fields
from trident_spark.planner.query import plan_queries
from trident_spark.spout import FeederBatchSpout, FixedBatchSpout, IBatchSpout


class Words(IBatchSpout):
    """A user's batch spout whose component configuration is ``conf``."""

    def __init__(self, conf: Any) -> None:
        self.conf = conf

    def open(self, conf: Any, context: Any) -> None:
        pass

    def emitBatch(self, batch_id: int, collector: Any) -> None:
        collector.emit(["cat"])

    def ack(self, batch_id: int) -> None:
        pass

    def getOutputFields(self) -> Fields:
        return Fields("word")

    def getComponentConfiguration(self) -> Any:
        return self.conf


def planned(spout: Any, *hints: int) -> tuple[Any, Any]:
    """The query of ``newStream -> each(Debug) ...`` (a spout of field ``word``) with ``hints``
    on the spout's stage."""
    topology = TridentTopology()
    stream = topology.newStream("s", spout)
    for hint in hints:
        stream = stream.each(Fields("word"), Debug()).parallelismHint(hint)
    [query] = plan_queries(topology._nodes, [])
    return query, query.spouts[0]


def test_a_hint_above_fixed_batch_spouts_one_task_is_capped_without_a_shuffle() -> None:
    query, spout = planned(FixedBatchSpout(Fields("word"), 2, ["a"], ["b"]), 16)
    assert query.cap_of(spout) == 1
    assert query.partitions_of(spout) is None


def test_a_spout_without_a_cap_keeps_its_hint() -> None:
    query, spout = planned(FeederBatchSpout(["word"]), 4)
    assert query.cap_of(spout) is None
    assert query.partitions_of(spout) == 4


def test_a_stage_runs_in_its_largest_hint() -> None:
    query, spout = planned(FeederBatchSpout(["word"]), 3, 5, 2)
    assert query.partitions_of(spout) == 5


@pytest.mark.parametrize(("conf", "cap", "partitions"), [
    ({"topology.max.task.parallelism": 2}, 2, None),
    ({"topology.max.task.parallelism": 8}, None, 8),  # the hint is within the cap
    ({}, None, 8),
    (None, None, 8),
])
def test_a_users_spout_caps_by_its_component_configuration(conf: Any, cap: int | None,
                                                            partitions: int | None) -> None:
    query, spout = planned(Words(conf), 8)
    assert query.cap_of(spout) == cap
    assert query.partitions_of(spout) == partitions


def test_a_cap_that_is_not_a_count_fails_naming_the_spout() -> None:
    with pytest.raises(TopologyError) as info:
        planned(Words({"topology.max.task.parallelism": "one"}), 8)
    assert str(info.value) == (
        "newStream('s'): Words.getComponentConfiguration() sets 'topology.max.task.parallelism' to "
        "'one'; give an int >= 1 (the most tasks the spout's stage runs in) or leave it out")


def test_no_hint_no_cap() -> None:
    topology = TridentTopology()
    topology.newStream("s", FixedBatchSpout(Fields("word"), 2, ["a"])).aggregate(Count(), ["n"])
    [query] = plan_queries(topology._nodes, [])
    assert query.cap_of(query.spouts[0]) is None
    assert query.partitions_of(query.spouts[0]) is None
