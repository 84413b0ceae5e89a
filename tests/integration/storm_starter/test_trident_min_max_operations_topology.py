"""storm-starter's TridentMinMaxOperationsTopology on Spark: the lines each Debug filter prints, for
its three topologies.

The expected lines follow the Java: ``minBy``/``maxBy``/``min``/``max`` are
``partitionAggregate``s of Storm's ComparisonAggregator (of two equal values the later tuple of the
partition wins; the whole tuple is emitted). Every spout here has a max task parallelism of 1
(FixedBatchSpout, NumberGeneratorSpout), and Trident caps the parallelism of the operations that
follow a spout without a repartitioning at it (TridentTopology.getGroupParallelisms), so even
after ``parallelismHint(16)`` each batch is one partition: one result per batch. With ``SEED``:

* ids, batch 0: 851 693 781 95 863 757 505 987 175 626 (min 95, max 987); batch 1: 570 979 706
  312 717 41 418 288 30 671 (min 30, max 979);
* words, batch 0 (sentences 0-2): lowest "ago", highest "years"; batch 1 (sentences 3-4): lowest
  "apples", highest "you";
* vehicles: as in test_trident_min_max_of_vehicles_topology (the same seed): slowest 8 then 16
  (each the later of two at the same speed), fastest 0 then 18 (the later of two), most efficient
  -1 then 9.
"""

from __future__ import annotations

from typing import Any

import pytest
from starter_output import DebugOutput, debug_outputs

from examples.storm_starter.trident_min_max_operations_topology import (
    buildIdsTopology,
    buildVehiclesTopology,
    buildWordsTopology,
)
from trident_spark import TridentTopology

pytestmark = pytest.mark.integration

SENTENCES = ["the cow jumped over the moon", "the man went to the store and bought some candy",
             "four score and seven years ago", "how many apples can you eat", "to be or not to be the person"]


def run(spark: Any, topology: TridentTopology, checkpoint: Any) -> dict[str, DebugOutput]:
    outputs = debug_outputs(topology)
    handle = topology.run(checkpoint, trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    return outputs


def lines(prefix: str, field: str, *values: Any) -> dict[int, list[str]]:
    """One printed line per batch, batch k showing ``values[k]``."""
    return {k: [f"{prefix}: [{value}]"] for k, value in enumerate(values)}


@pytest.fixture(scope="module")
def ids(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, DebugOutput]:
    return run(spark, buildIdsTopology(max_batches=2), tmp_path_factory.mktemp("ids"))


@pytest.fixture(scope="module")
def words(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, DebugOutput]:
    return run(spark, buildWordsTopology(max_batches=2), tmp_path_factory.mktemp("words"))


@pytest.fixture(scope="module")
def vehicles(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, DebugOutput]:
    return run(spark, buildVehiclesTopology(max_batches=2), tmp_path_factory.mktemp("vehicles"))


def test_ids(ids: dict[str, DebugOutput]) -> None:
    assert ids["##### ids"].lines() == {
        0: [f"##### ids: [{n}]" for n in (851, 693, 781, 95, 863, 757, 505, 987, 175, 626)],
        1: [f"##### ids: [{n}]" for n in (570, 979, 706, 312, 717, 41, 418, 288, 30, 671)]}
    assert ids["#### min-id"].lines() == lines("#### min-id", "id", 95, 30)
    assert ids["#### max-id"].lines() == lines("#### max-id", "id", 987, 979)


def test_words(words: dict[str, DebugOutput]) -> None:
    batches = [" ".join(SENTENCES[:3]).split(" "), " ".join(SENTENCES[3:]).split(" ")]
    assert words["##### words"].lines() == {
        k: [f"##### words: [{word}]" for word in batch] for k, batch in enumerate(batches)}


def test_lowest_and_highest_word_per_batch(words: dict[str, DebugOutput]) -> None:
    assert words["#### lowest word"].lines() == lines("#### lowest word", "word", "ago", "apples")
    assert words["#### highest word"].lines() == lines("#### highest word", "word", "years", "you")


def test_vehicles(vehicles: dict[str, DebugOutput]) -> None:
    def vehicle(name: str, speed: int, efficiency: float) -> str:
        return f"Vehicle{{name='{name}', maxSpeed={speed}, efficiency={efficiency}}}"

    def shown(prefix: str, field: str, first: str, second: str) -> dict[int, list[str]]:
        return {0: [f"{prefix}: [{first}]"], 1: [f"{prefix}: [{second}]"]}

    assert [len(batch) for batch in vehicles["##### vehicles"].lines().values()] == [10, 10]
    assert vehicles["#### slowest vehicle"].lines() == shown(
        "#### slowest vehicle", "vehicle", vehicle("Vehicle-8", 3, 3.6139665807432952),
        vehicle("Vehicle-16", 11, 3.6736819875337314))
    assert vehicles["##### slowest driver"].lines() == shown(
        "##### slowest driver", "driver", "Driver{name='Driver-8', id=8}", "Driver{name='Driver-16', id=16}")
    assert vehicles["#### fastest vehicle"].lines() == shown(
        "#### fastest vehicle", "vehicle", vehicle("Vehicle-0", 94, 2.9747267354815383),
        vehicle("Vehicle-18", 91, 3.6632117170000753))
    assert vehicles["##### fastest driver"].lines() == shown(
        "##### fastest driver", "driver", "Driver{name='Driver-0', id=0}", "Driver{name='Driver-18', id=18}")
    assert vehicles["#### efficient vehicle"].lines() == shown(
        "#### efficient vehicle", "vehicle", vehicle("Vehicle--1", 86, 4.051098736918654),
        vehicle("Vehicle-9", 11, 3.678273058234403))
