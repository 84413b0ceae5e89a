"""storm-starter's TridentMinMaxOfVehiclesTopology, ported line by line.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentMinMaxOfVehiclesTopology.java``, which "demonstrates different usages of
``minBy(String, Comparator)``, ``min(Comparator)``, ``maxBy(String, Comparator)`` and
``max(Comparator)``". Its tuples carry two Python objects, a :class:`Vehicle` and its
:class:`Driver`, in fields declared without a type, as Java's ``Values`` carry any object.
Each ``min``/``max`` works per partition of the batch; the spout's batches are one partition
each, so every batch prints its slowest and fastest vehicle, the slowest and fastest driver,
and its least and most efficient vehicle.

Run it with ``trident-spark run examples/storm_starter/trident_min_max_of_vehicles_topology.py``;
the ``Debug`` filters print on the executors (in local mode, the console).

Differences from the Java:

* Java's ``Vehicle.generateVehicles(20)`` draws speeds and efficiencies from
  ``ThreadLocalRandom``; here from ``random.Random(seed)`` with a fixed seed (:data:`SEED`), so
  every run (and the test) sees the same vehicles: ``randrange(0, 100)`` for ``nextInt(0, 100)``,
  ``uniform(1, 5)`` for ``nextDouble(1, 5)``;
* the comparators are classes with Java's ``compare(tuple1, tuple2) -> int`` (no
  ``Serializable`` needed: they are pickled); ``Integer.compare`` and ``Double.compare`` are
  :func:`compare`;
* ``Vehicle`` and ``Driver`` are frozen dataclasses (Java's ``final`` fields); their ``repr``
  is Java's ``toString``, so ``Debug`` prints what the Java prints;
* ``buildVehiclesTopology(max_batches=N)`` bounds a ``trigger="available_now"`` run of the
  cycling spout to N batches (a Trident topology runs until it is killed).
"""

# ruff: noqa: N806 (the Java's camelCase local names are kept, for a line-by-line reading)
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, ClassVar

from trident_spark import Fields, TridentTopology, TridentTuple
from trident_spark.builtin import Debug
from trident_spark.spout import FixedBatchSpout

#: The seed of :meth:`Vehicle.generateVehicles` (the Java draws from ThreadLocalRandom). With this
#: one each batch has two slowest vehicles, or two fastest, at the same speed: as in Trident, the
#: later one of the batch wins.
SEED = 884


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

    slowVehiclesStream = (
        vehiclesStream
        .min(SpeedComparator())
        .each(vehicleField, Debug("#### slowest vehicle")))

    slowDriversStream = (  # noqa: F841 (a name for the stream, as in the Java)
        slowVehiclesStream
        .project(driverField)
        .each(driverField, Debug("##### slowest driver")))

    (vehiclesStream
     .max(SpeedComparator())
     .each(vehicleField, Debug("#### fastest vehicle"))
     .project(driverField)
     .each(driverField, Debug("##### fastest driver")))

    (vehiclesStream
     .minBy(Vehicle.FIELD_NAME, EfficiencyComparator())  # type: ignore[arg-type]  # (minBy's hint: callables only)
     .each(vehicleField, Debug("#### least efficient vehicle")))

    (vehiclesStream
     .maxBy(Vehicle.FIELD_NAME, EfficiencyComparator())  # type: ignore[arg-type]
     .each(vehicleField, Debug("#### most efficient vehicle")))

    return topology


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
    """Orders vehicles by ``efficiency`` (a Comparator of Vehicles, for ``minBy``/``maxBy``).

    Examples
    --------
    >>> EfficiencyComparator().compare(Vehicle("a", 10, 2.0), Vehicle("b", 90, 1.0))
    1
    """

    def compare(self, vehicle1: Vehicle, vehicle2: Vehicle) -> int:
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
        [Vehicle{name='Vehicle-0', maxSpeed=94, efficiency=2.9747267354815383}, Driver{name='Driver-0', id=0}]
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


#: What ``trident-spark run`` runs: Java's ``main`` submits ``buildVehiclesTopology()``.
topology = buildVehiclesTopology()
