"""storm-starter's TridentMinMaxOfDevicesTopology on Spark: the lines each Debug filter prints, for
both of its topologies.

The expected lines follow the Java: ``minBy(field)``/``maxBy(field)`` are ``partitionAggregate``s
of Storm's ``Min``/``Max`` (ComparisonAggregator): a tuple replaces the best so far when
``compare(best, new)`` returns the new value, so of two equal values the later tuple of the
batch wins, and the whole tuple is emitted. The spouts run in one task (max task parallelism 1),
so a batch is one partition: one result per batch. With ``SEED`` the devices are:

* batch 0: [272, 486] [237, 847] [269, 129] [646, 983] [460, 817] [334, 983] [190, 903]
  [421, 149] [403, 716] [479, 463]: min id 190; max count 983 twice -> [334, 983] (the later);
* batch 1: [91, 97] [46, 32] [847, 376] [761, 563] [642, 710] [248, 747] [507, 107] [616, 393]
  [46, 50] [890, 372]: min id 46 twice -> [46, 50] (the later); max count 747.

and the vehicles (speed, efficiency): batch 0, -1 (34, 2.90) 0 (33, 1.50) 1 (57, 4.95)
2 (41, 4.84) 3 (52, 1.58) 4 (89, 2.87) 5 (11, 1.38) 6 (4, 4.31) 7 (95, 3.20) 8 (88, 1.97): slowest
6, fastest 7, most efficient 1; batch 1, 9 (63, 1.42) 10 (49, 1.18) 11 (46, 3.70) 12 (13, 2.79)
13 (43, 2.45) 14 (82, 3.69) 15 (34, 1.50) 16 (71, 2.35) 17 (94, 2.55) 18 (78, 1.24): slowest 12,
fastest 17, most efficient 11.
"""

from __future__ import annotations

from typing import Any

import pytest
from starter_output import DebugOutput, debug_outputs

from examples.storm_starter.trident_min_max_of_devices_topology import (
    SEED,
    RandomNumberGeneratorSpout,
    Vehicle,
    buildDevicesTopology,
    buildVehiclesTopology,
)
from trident_spark import Fields, TridentTopology

pytestmark = pytest.mark.integration


def run(spark: Any, topology: TridentTopology, checkpoint: Any) -> dict[str, DebugOutput]:
    outputs = debug_outputs(topology)
    handle = topology.run(checkpoint, trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    return outputs


@pytest.fixture(scope="module")
def devices(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, DebugOutput]:
    return run(spark, buildDevicesTopology(max_batches=2), tmp_path_factory.mktemp("devices"))


@pytest.fixture(scope="module")
def vehicles(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, DebugOutput]:
    return run(spark, buildVehiclesTopology(max_batches=2), tmp_path_factory.mktemp("vehicles"))


def test_the_devices_debug_prints_the_spouts_numbers(devices: dict[str, DebugOutput]) -> None:
    spout = RandomNumberGeneratorSpout(Fields("device-id", "count"), 10, 1000, seed=SEED)
    assert devices["##### devices"].lines() == {
        k: [f"##### devices: [{i}, {n}]" for i, n in spout.batch(k)] for k in (0, 1)}


def test_min_by_device_id_ties_go_to_the_later_device(devices: dict[str, DebugOutput]) -> None:
    assert devices["#### device with min id"].lines() == {
        0: ["#### device with min id: [190, 903]"],
        1: ["#### device with min id: [46, 50]"]}


def test_max_by_count_ties_go_to_the_later_device(devices: dict[str, DebugOutput]) -> None:
    assert devices["#### device with max count"].lines() == {
        0: ["#### device with max count: [334, 983]"],
        1: ["#### device with max count: [248, 747]"]}


def test_the_vehicles_topology_of_the_same_file(vehicles: dict[str, DebugOutput]) -> None:
    generated = Vehicle.generateVehicles(20)
    assert vehicles["##### vehicles"].lines() == {
        k: [f"##### vehicles: [{vehicle}, {driver}]"
            for vehicle, driver in generated[10 * k:10 * k + 10]] for k in (0, 1)}
    assert vehicles["#### slowest vehicle"].lines() == {
        0: ["#### slowest vehicle: [Vehicle{name='Vehicle-6', maxSpeed=4, "
            "efficiency=4.310071360113423}]"],
        1: ["#### slowest vehicle: [Vehicle{name='Vehicle-12', maxSpeed=13, "
            "efficiency=2.7921302700189945}]"]}
    assert vehicles["##### slowest driver"].lines() == {
        0: ["##### slowest driver: [Driver{name='Driver-6', id=6}]"],
        1: ["##### slowest driver: [Driver{name='Driver-12', id=12}]"]}
    assert vehicles["#### fastest vehicle"].lines() == {
        0: ["#### fastest vehicle: [Vehicle{name='Vehicle-7', maxSpeed=95, "
            "efficiency=3.2029024251618683}]"],
        1: ["#### fastest vehicle: [Vehicle{name='Vehicle-17', maxSpeed=94, "
            "efficiency=2.5539808315337083}]"]}
    assert vehicles["##### fastest driver"].lines() == {
        0: ["##### fastest driver: [Driver{name='Driver-7', id=7}]"],
        1: ["##### fastest driver: [Driver{name='Driver-17', id=17}]"]}
    assert vehicles["#### efficient vehicle"].lines() == {
        0: ["#### efficient vehicle: [Vehicle{name='Vehicle-1', maxSpeed=57, "
            "efficiency=4.947691911421597}]"],
        1: ["#### efficient vehicle: [Vehicle{name='Vehicle-11', maxSpeed=46, "
            "efficiency=3.703897471912009}]"]}
