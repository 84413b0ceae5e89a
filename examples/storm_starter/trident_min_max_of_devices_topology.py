"""storm-starter's TridentMinMaxOfDevicesTopology, ported line by line.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentMinMaxOfDevicesTopology.java``, which "demonstrates different usages of ``minBy(String)``
and ``maxBy(String)``": a spout of random whole numbers in the fields ``device-id`` and
``count``, and per batch the device with the smallest id and the one with the largest count.
The file also holds a ``buildVehiclesTopology`` (``min``/``max`` with comparators over Vehicle
and Driver objects, see also :mod:`.trident_min_max_of_vehicles_topology`), ported here too;
Java's ``main`` submits the devices topology.

Run it with ``trident-spark run examples/storm_starter/trident_min_max_of_devices_topology.py``
(the vehicles one with ``...py:buildVehiclesTopology``); the ``Debug`` filters print on the
executors (in local mode, the console).

Differences from the Java:

* storm-starter's ``RandomNumberGeneratorSpout`` (``spout/RandomNumberGeneratorSpout.java``)
  draws a new batch of ``ThreadLocalRandom.nextInt(0, maxNumber + 1)`` numbers for every batch
  id, for ever. :class:`RandomNumberGeneratorSpout` here draws ``batches`` batches up front from
  ``random.Random(seed)`` (``randint(0, maxNumber)``) and then cycles through them, so every run
  (and the test) sees the same numbers. Like the Java spout (max task parallelism 1) it emits
  each batch in one partition;
* ``Vehicle.generateVehicles`` draws from ``random.Random(seed)`` too; the comparators are
  classes with Java's ``compare(tuple1, tuple2) -> int``, and ``Integer.compare``/
  ``Double.compare`` are :func:`compare`; ``Vehicle`` and ``Driver`` are frozen dataclasses whose
  ``repr`` is Java's ``toString``;
* ``max_batches=N`` bounds a ``trigger="available_now"`` run of a cycling spout to N batches.
"""

# ruff: noqa: N806 (the Java's camelCase local names are kept, for a line-by-line reading)
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from trident_spark import Fields, TridentTopology, TridentTuple
from trident_spark.builtin import Debug
from trident_spark.spout import FixedBatchSpout

#: The seed of the random numbers and vehicles (the Java draws from ThreadLocalRandom).
SEED = 25488


def buildDevicesTopology(max_batches: int | None = None) -> TridentTopology:
    """A topology with device-id and count (whole numbers) as tuple fields, and per batch the
    device with the smallest id and the one with the largest count.

    Parameters
    ----------
    max_batches : int, optional
        Batches a ``trigger="available_now"`` run reads (one pass over the spout's drawn batches
        when None).

    Examples
    --------
    >>> buildDevicesTopology().queries()[0].name
    'devicegen-spout'
    """
    deviceId = "device-id"
    count = "count"
    allFields = Fields(deviceId, count)

    spout = RandomNumberGeneratorSpout(allFields, 10, 1000, max_batches=max_batches)

    topology = TridentTopology()
    devicesStream = (topology
                     .newStream("devicegen-spout", spout)
                     .each(allFields, Debug("##### devices")))

    (devicesStream
     .minBy(deviceId)
     .each(allFields, Debug("#### device with min id")))

    (devicesStream
     .maxBy(count)
     .each(allFields, Debug("#### device with max count")))

    return topology


def buildVehiclesTopology(max_batches: int | None = None) -> TridentTopology:
    """A topology of min/max operations on tuples of a vehicle and its driver.

    Parameters
    ----------
    max_batches : int, optional
        Batches a ``trigger="available_now"`` run reads from the cycling spout (one pass over
        the 20 vehicles, two batches, when None).

    Examples
    --------
    >>> buildVehiclesTopology().queries()[0].name
    'spout1'
    """
    driverField = Fields(Driver.FIELD_NAME)
    vehicleField = Fields(Vehicle.FIELD_NAME)
    allFields = Fields(Vehicle.FIELD_NAME, Driver.FIELD_NAME)

    spout = FixedBatchSpout(allFields, 10, *Vehicle.generateVehicles(20), max_batches=max_batches)
    spout.setCycle(True)

    topology = TridentTopology()
    vehiclesStream = (topology
                      .newStream("spout1", spout)
                      .each(allFields, Debug("##### vehicles")))

    slowVehiclesStream = (vehiclesStream
                          .min(SpeedComparator())
                          .each(vehicleField, Debug("#### slowest vehicle")))

    slowDriversStream = (slowVehiclesStream  # noqa: F841 (a name for the stream, as in the Java)
                         .project(driverField)
                         .each(driverField, Debug("##### slowest driver")))

    (vehiclesStream
     .max(SpeedComparator())
     .each(vehicleField, Debug("#### fastest vehicle"))
     .project(driverField)
     .each(driverField, Debug("##### fastest driver")))

    (vehiclesStream
     .max(EfficiencyComparator())
     .each(vehicleField, Debug("#### efficient vehicle")))

    return topology


class RandomNumberGeneratorSpout(FixedBatchSpout):
    """storm-starter's RandomNumberGeneratorSpout: batches of ``batchSize`` tuples, one random
    whole number in [0, ``maxNumber``] per field.

    Drawn up front from ``random.Random(seed)``: ``batches`` batches, emitted in turn, then
    again from the first (the Java spout draws a new batch for every batch id).

    Parameters
    ----------
    fields : Fields
        The tuples' fields.
    batchSize : int
        Tuples per batch.
    maxNumber : int
        The largest number drawn.
    seed : int, default SEED
        The seed of the numbers.
    batches : int, default 10
        Batches drawn before the spout starts again from the first.
    max_batches : int, optional
        Batches a ``trigger="available_now"`` run reads (one pass when None).

    Examples
    --------
    >>> spout = RandomNumberGeneratorSpout(Fields("device-id", "count"), 3, 1000, seed=1)
    >>> spout.batch(0)
    [[137, 582], [867, 821], [782, 64]]
    """

    def __init__(self, fields: Fields, batchSize: int, maxNumber: int, seed: int = SEED, batches: int = 10,
                 max_batches: int | None = None) -> None:
        rand = random.Random(seed)
        values: list[Sequence[Any]] = []
        for _ in range(batches * batchSize):
            numbers = []
            for _ in range(len(fields)):
                numbers.append(rand.randint(0, maxNumber))
            values.append(numbers)
        super().__init__(fields, batchSize, *values, max_batches=max_batches)
        self.setCycle(True)


def compare(x: float, y: float) -> int:
    """Java's ``Integer.compare`` / ``Double.compare``: -1, 0 or 1.

    Examples
    --------
    >>> compare(1, 2), compare(2.5, 2.5), compare(3, 2)
    (-1, 0, 1)
    """
    return (x > y) - (x < y)


class SpeedComparator:
    """Orders tuples by their vehicle's ``maxSpeed`` (a Comparator of TridentTuples).

    Examples
    --------
    >>> slow = TridentTuple([Vehicle("a", 10, 2.0)], Fields("vehicle"))
    >>> fast = TridentTuple([Vehicle("b", 90, 1.0)], Fields("vehicle"))
    >>> SpeedComparator().compare(slow, fast)
    -1
    """

    def compare(self, tuple1: TridentTuple, tuple2: TridentTuple) -> int:
        vehicle1: Vehicle = tuple1.getValueByField(Vehicle.FIELD_NAME)
        vehicle2: Vehicle = tuple2.getValueByField(Vehicle.FIELD_NAME)
        return compare(vehicle1.maxSpeed, vehicle2.maxSpeed)


class EfficiencyComparator:
    """Orders tuples by their vehicle's ``efficiency`` (a Comparator of TridentTuples).

    Examples
    --------
    >>> low = TridentTuple([Vehicle("a", 10, 1.5)], Fields("vehicle"))
    >>> high = TridentTuple([Vehicle("b", 90, 4.5)], Fields("vehicle"))
    >>> EfficiencyComparator().compare(high, low)
    1
    """

    def compare(self, tuple1: TridentTuple, tuple2: TridentTuple) -> int:
        vehicle1: Vehicle = tuple1.getValueByField(Vehicle.FIELD_NAME)
        vehicle2: Vehicle = tuple2.getValueByField(Vehicle.FIELD_NAME)
        return compare(vehicle1.efficiency, vehicle2.efficiency)


@dataclass(frozen=True)
class Driver:
    """A driver: a name and an id.

    Examples
    --------
    >>> Driver("Driver-1", 1)
    Driver{name='Driver-1', id=1}
    """

    FIELD_NAME: ClassVar[str] = "driver"
    name: str
    id: int

    def __repr__(self) -> str:
        return ("Driver{"
                + "name='" + self.name + "'"
                + ", id=" + str(self.id)
                + "}")


@dataclass(frozen=True)
class Vehicle:
    """A vehicle: a name, its top speed and its efficiency.

    Examples
    --------
    >>> Vehicle("Vehicle-1", 64, 1.5)
    Vehicle{name='Vehicle-1', maxSpeed=64, efficiency=1.5}
    """

    FIELD_NAME: ClassVar[str] = "vehicle"
    name: str
    maxSpeed: int
    efficiency: float

    @staticmethod
    def generateVehicles(count: int, seed: int = SEED) -> list[list[Any]]:
        """``count`` tuples ``[vehicle, driver]``, numbered from -1 as in the Java, with a speed
        in [0, 100) and an efficiency in [1, 5] drawn from ``random.Random(seed)``.

        Examples
        --------
        >>> Vehicle.generateVehicles(2)[1]
        [Vehicle{name='Vehicle-0', maxSpeed=33, efficiency=1.5046161005280694}, Driver{name='Driver-0', id=0}]
        """
        rand = random.Random(seed)
        vehicles: list[list[Any]] = []
        for i in range(count):
            id = i - 1
            vehicles.append(
                [Vehicle("Vehicle-" + str(id), rand.randrange(0, 100), rand.uniform(1, 5)),
                 Driver("Driver-" + str(id), id)])
        return vehicles

    def __repr__(self) -> str:
        return ("Vehicle{"
                + "name='" + self.name + "'"
                + ", maxSpeed=" + str(self.maxSpeed)
                + ", efficiency=" + str(self.efficiency)
                + "}")


#: What ``trident-spark run`` runs: Java's ``main`` submits ``buildDevicesTopology()``.
topology = buildDevicesTopology()
