"""storm-starter's TridentMinMaxOfVehiclesTopology on Spark: the lines each Debug filter prints.

The expected lines follow the Java: the cycling ``FixedBatchSpout(allFields, 10, 20 vehicles)``
emits vehicles -1..8, then 9..18, then again. ``min``/``max``/``minBy``/``maxBy`` are
``partitionAggregate``s of Storm's ``MinWithComparator``/``MaxWithComparator``
(ComparisonAggregator): a tuple replaces the best so far when ``compare(best, new)`` returns the
new one, so of two equal vehicles the later one of the batch wins, and ``complete`` emits the
whole tuple. The spout runs in one task (FixedBatchSpout's max task parallelism is 1), so a
batch is one partition: one result per batch. With ``SEED`` the vehicles are (speed, efficiency):

* batch 0: -1 (86, 4.05) 0 (94, 2.97) 1 (21, 3.45) 2 (88, 2.22) 3 (5, 2.63) 4 (3, 3.62)
  5 (6, 1.44) 6 (22, 1.37) 7 (26, 3.05) 8 (3, 3.61): slowest 4 and 8 at 3 -> 8 (the later);
  fastest 0; least efficient 6; most efficient -1;
* batch 1: 9 (11, 3.68) 10 (83, 3.08) 11 (91, 3.34) 12 (40, 2.71) 13 (53, 2.60) 14 (45, 1.74)
  15 (48, 2.98) 16 (11, 3.67) 17 (32, 3.11) 18 (91, 3.66): slowest 9 and 16 at 11 -> 16,
  fastest 11 and 18 at 91 -> 18; least efficient 14; most efficient 9.
"""

from __future__ import annotations

from typing import Any

import pytest
from starter_output import DebugOutput, debug_outputs

from examples.storm_starter.trident_min_max_of_vehicles_topology import Vehicle, buildVehiclesTopology

pytestmark = pytest.mark.integration

V8 = "Vehicle{name='Vehicle-8', maxSpeed=3, efficiency=3.6139665807432952}"
V16 = "Vehicle{name='Vehicle-16', maxSpeed=11, efficiency=3.6736819875337314}"
V0 = "Vehicle{name='Vehicle-0', maxSpeed=94, efficiency=2.9747267354815383}"
V18 = "Vehicle{name='Vehicle-18', maxSpeed=91, efficiency=3.6632117170000753}"
V6 = "Vehicle{name='Vehicle-6', maxSpeed=22, efficiency=1.3700852536633121}"
V14 = "Vehicle{name='Vehicle-14', maxSpeed=45, efficiency=1.7443559336717933}"
V_1 = "Vehicle{name='Vehicle--1', maxSpeed=86, efficiency=4.051098736918654}"
V9 = "Vehicle{name='Vehicle-9', maxSpeed=11, efficiency=3.678273058234403}"


def per_batch(prefix: str, field: str, first: str, second: str) -> dict[int, list[str]]:
    """The line printed in each of the 4 batches: ``first`` in batches 0 and 2, ``second`` in 1 and 3."""
    return {txid: [f"{prefix}: [{shown}]"] for txid, shown in enumerate([first, second] * 2)}


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, DebugOutput]:
    topology = buildVehiclesTopology(max_batches=4)
    outputs = debug_outputs(topology)
    checkpoint = tmp_path_factory.mktemp("trident-min-max-of-vehicles")
    handle = topology.run(checkpoint, trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    return outputs


def test_the_vehicles_debug_prints_the_spouts_tuples(run: dict[str, DebugOutput]) -> None:
    vehicles = Vehicle.generateVehicles(20)
    batches = [vehicles[:10], vehicles[10:]] * 2
    assert run["##### vehicles"].lines() == {
        txid: [f"##### vehicles: [{vehicle}, {driver}]"
               for vehicle, driver in batch]
        for txid, batch in enumerate(batches)}


def test_min_by_speed_prints_the_slowest_vehicle_and_its_driver(run: dict[str, DebugOutput]) -> None:
    assert run["#### slowest vehicle"].lines() == per_batch("#### slowest vehicle", "vehicle", V8, V16)
    assert run["##### slowest driver"].lines() == per_batch(
        "##### slowest driver", "driver", "Driver{name='Driver-8', id=8}", "Driver{name='Driver-16', id=16}")


def test_max_by_speed_prints_the_fastest_vehicle_and_its_driver(run: dict[str, DebugOutput]) -> None:
    assert run["#### fastest vehicle"].lines() == per_batch("#### fastest vehicle", "vehicle", V0, V18)
    assert run["##### fastest driver"].lines() == per_batch(
        "##### fastest driver", "driver", "Driver{name='Driver-0', id=0}", "Driver{name='Driver-18', id=18}")


def test_min_by_and_max_by_efficiency_with_a_comparator_of_vehicles(run: dict[str, DebugOutput]) -> None:
    assert run["#### least efficient vehicle"].lines() == per_batch(
        "#### least efficient vehicle", "vehicle", V6, V14)
    assert run["#### most efficient vehicle"].lines() == per_batch(
        "#### most efficient vehicle", "vehicle", V_1, V9)
