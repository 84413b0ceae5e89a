"""storm-starter's TridentMinMaxOperationsTopology, ported line by line.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentMinMaxOperationsTopology.java`` as added with Trident's min/max operators (commit
83ea6cb7e, January 2016), which "contains different usages of minBy, maxBy, min and max
operations on trident streams"; a review split it into TridentMinMaxOfDevicesTopology and
TridentMinMaxOfVehiclesTopology (see :mod:`.trident_min_max_of_devices_topology` and
:mod:`.trident_min_max_of_vehicles_topology`). Three topologies:

* ``buildIdsTopology``: random ids, and per batch the smallest and the largest;
* ``buildWordsTopology``: the words of a cycling FixedBatchSpout's sentences, and per batch the
  lowest and the highest word;
* ``buildVehiclesTopology``: Vehicle and Driver objects, and per batch the slowest, the fastest
  and the most efficient vehicle.

Java's ``main`` runs the three one after the other in a LocalCluster, a minute each.
``trident-spark run examples/storm_starter/trident_min_max_operations_topology.py`` runs the
first (the words); ``...py:buildIdsTopology`` and ``...py:buildVehiclesTopology`` run the others.
The ``Debug`` filters print on the executors (in local mode, the console).

Differences from the Java:

* Trident's ``testing.NumberGeneratorSpout`` draws a new batch of
  ``ThreadLocalRandom.nextInt(0, maxNumber + 1)`` for every batch id, for ever;
  :class:`NumberGeneratorSpout` here draws ``batches`` batches up front from
  ``random.Random(seed)`` and cycles through them (one partition per batch, as the Java spout's
  max task parallelism of 1 gives), so every run (and the test) sees the same ids;
* ``Vehicle.generateVehicles`` draws from ``random.Random(seed)`` too; the comparators are
  classes with Java's ``compare(tuple1, tuple2) -> int`` (:func:`compare` is
  ``Integer.compare``/``Double.compare``); ``Vehicle`` and ``Driver`` are frozen dataclasses
  whose ``repr`` is Java's ``toString``;
* ``max_batches=N`` bounds a ``trigger="available_now"`` run of a cycling spout to N batches.
"""

# ruff: noqa: N806 (the Java's camelCase local names are kept, for a line-by-line reading)
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trident_spark import Fields, TridentTopology, TridentTuple
from trident_spark.builtin import Debug
from trident_spark.operation import BaseFunction, TridentCollector
from trident_spark.spout import FixedBatchSpout

#: The seed of the random ids and vehicles (the Java draws from ThreadLocalRandom). With this one
#: a batch has two slowest (or fastest) vehicles at the same speed: the later one wins, as in Trident.
SEED = 884


class Split(BaseFunction):
    """Emit each word of the sentence: Java's ``sentence.split(" ")``.

    Examples
    --------
    >>> collector = TridentCollector()
    >>> Split().execute(TridentTuple(["the cow jumped"], Fields("sentence")), collector)
    >>> collector.emitted
    [['the'], ['cow'], ['jumped']]
    """

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        sentence = tuple.getString(0)
        for word in sentence.split(" "):
            collector.emit([word])


def buildIdsTopology(max_batches: int | None = None) -> TridentTopology:
    """Random ids, and per batch the smallest and the largest.

    Examples
    --------
    >>> buildIdsTopology().queries()[0].name
    'numgen-spout'
    """
    spout = NumberGeneratorSpout(Fields("id"), 10, 1000, max_batches=max_batches)

    topology = TridentTopology()
    wordsStream = (topology.newStream("numgen-spout", spout)
                   .each(Fields("id"), Debug("##### ids")))

    (wordsStream.minBy("id")
     .each(Fields("id"), Debug("#### min-id")))

    (wordsStream.maxBy("id")
     .each(Fields("id"), Debug("#### max-id")))

    return topology


def buildWordsTopology(max_batches: int | None = None) -> TridentTopology:
    """The words of five sentences, and per batch the lowest and the highest word.

    Examples
    --------
    >>> buildWordsTopology().queries()[0].name
    'spout1'
    """
    spout = FixedBatchSpout(Fields("sentence"), 3, ["the cow jumped over the moon"],
                            ["the man went to the store and bought some candy"],
                            ["four score and seven years ago"],
                            ["how many apples can you eat"], ["to be or not to be the person"],
                            max_batches=max_batches)
    spout.setCycle(True)

    topology = TridentTopology()
    wordsStream = (topology.newStream("spout1", spout).parallelismHint(16)
                   .each(Fields("sentence"), Split(), Fields("word"))
                   .each(Fields("word"), Debug("##### words")))

    (wordsStream.minBy("word")
     .each(Fields("word"), Debug("#### lowest word")))

    (wordsStream.maxBy("word")
     .each(Fields("word"), Debug("#### highest word")))

    return topology


def buildVehiclesTopology(max_batches: int | None = None) -> TridentTopology:
    """Vehicles and their drivers, and per batch the slowest, the fastest and the most
    efficient vehicle.

    Examples
    --------
    >>> buildVehiclesTopology().queries()[0].name
    'spout1'
    """
    spout = FixedBatchSpout(Fields("vehicle", "driver"), 10, *Vehicle.generateVehicles(20),
                            max_batches=max_batches)
    spout.setCycle(True)

    topology = TridentTopology()
    vehiclesStream = (topology.newStream("spout1", spout)
                      .each(Fields("vehicle"), Debug("##### vehicles")))

    (vehiclesStream.min(SpeedComparator())
     .each(Fields("vehicle"), Debug("#### slowest vehicle"))
     .project(Fields("driver")).each(Fields("driver"), Debug("##### slowest driver")))

    (vehiclesStream.max(SpeedComparator())
     .each(Fields("vehicle"), Debug("#### fastest vehicle"))
     .project(Fields("driver")).each(Fields("driver"), Debug("##### fastest driver")))

    (vehiclesStream.max(EfficiencyComparator())
     .each(Fields("vehicle"), Debug("#### efficient vehicle")))

    return topology


class NumberGeneratorSpout(FixedBatchSpout):
    """Trident's testing NumberGeneratorSpout: batches of ``batchSize`` one-number tuples, a
    random whole number in [0, ``maxNumber``].

    Drawn up front from ``random.Random(seed)``: ``batches`` batches, emitted in turn, then
    again from the first (the Java spout draws a new batch for every batch id).

    Examples
    --------
    >>> NumberGeneratorSpout(Fields("id"), 3, 1000, seed=1).batch(0)
    [[137], [582], [867]]
    """

    def __init__(self, fields: Fields, batchSize: int, maxNumber: int, seed: int = SEED, batches: int = 10,
                 max_batches: int | None = None) -> None:
        rand = random.Random(seed)
        values: list[Sequence[Any]] = []
        for _ in range(batches * batchSize):
            values.append([rand.randint(0, maxNumber)])
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
        vehicle1: Vehicle = tuple1.getValueByField("vehicle")
        vehicle2: Vehicle = tuple2.getValueByField("vehicle")
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
        vehicle1: Vehicle = tuple1.getValueByField("vehicle")
        vehicle2: Vehicle = tuple2.getValueByField("vehicle")
        return compare(vehicle1.efficiency, vehicle2.efficiency)


@dataclass(frozen=True)
class Driver:
    """A driver: a name and an id.

    Examples
    --------
    >>> Driver("Driver-1", 1)
    Driver{name='Driver-1', id=1}
    """

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

    name: str
    maxSpeed: int
    efficiency: float

    def __repr__(self) -> str:
        return ("Vehicle{"
                + "name='" + self.name + "'"
                + ", maxSpeed=" + str(self.maxSpeed)
                + ", efficiency=" + str(self.efficiency)
                + "}")

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


#: What ``trident-spark run`` runs: the first of the three Java's ``main`` runs.
topology = buildWordsTopology()
