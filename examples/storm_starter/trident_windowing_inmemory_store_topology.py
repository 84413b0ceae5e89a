"""storm-starter's TridentWindowingInmemoryStoreTopology, ported line by line.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentWindowingInmemoryStoreTopology.java``, a "sample application of trident windowing which
uses inmemory store for storing tuples in window". A cycling FixedBatchSpout of five sentences,
three per batch, is split into words; a window of ``windowConfig`` counts the words in each
window with ``CountAsAggregator``; a ``peek`` logs each count.

Run it with ``trident-spark run examples/storm_starter/trident_windowing_inmemory_store_topology.py``
(Java's ``main`` submits ``buildTopology(new InMemoryWindowsStoreFactory(),
SlidingCountWindow.of(1000, 100))``).

Differences from the Java, none in the operator chain:

* Trident's testing ``CountAsAggregator`` is defined here (an Aggregator counting its tuples);
* the anonymous ``Consumer`` of ``peek`` is a function logging ``Received tuple: [...]``;
* Trident runs the window in the bolt of the spout's stream, in its 16 tasks; here the window is
  a stage of its own, in one partition unless a ``parallelismHint`` follows it (each partition
  keeps its own windows, as each Trident task does): the counts are the same for one task;
* ``buildTopology(..., max_batches=N)`` bounds a ``trigger="available_now"`` run of the cycling
  spout (a Trident topology runs until it is killed).
"""

from __future__ import annotations

import logging
from typing import Any

from trident_spark import Fields, TridentTopology, TridentTuple
from trident_spark.operation import Aggregator, BaseFunction, TridentCollector
from trident_spark.spout import FixedBatchSpout
from trident_spark.windowing import (
    InMemoryWindowsStoreFactory,
    SlidingCountWindow,
    WindowConfig,
    WindowsStoreFactory,
)

LOG = logging.getLogger(__name__)


def buildTopology(windowStore: WindowsStoreFactory, windowConfig: WindowConfig,
                  max_batches: int | None = None) -> TridentTopology:
    """Sentences, split into words, counted per window of ``windowConfig`` in ``windowStore``.

    Examples
    --------
    >>> topology = buildTopology(InMemoryWindowsStoreFactory(), SlidingCountWindow.of(1000, 100))
    >>> topology.queries()[0].name
    'spout1'
    """
    spout = FixedBatchSpout(Fields("sentence"), 3, ["the cow jumped over the moon"],
                            ["the man went to the store and bought some candy"],
                            ["four score and seven years ago"],
                            ["how many apples can you eat"], ["to be or not to be the person"],
                            max_batches=max_batches)
    spout.setCycle(True)

    topology = TridentTopology()

    stream = (topology.newStream("spout1", spout).parallelismHint(16)  # noqa: F841 (as the Java's)
              .each(Fields("sentence"), Split(), Fields("word"))
              .window(windowConfig, windowStore, Fields("word"), CountAsAggregator(), Fields("count"))
              .peek(lambda input: LOG.info("Received tuple: [%s]", input)))

    return topology


class Split(BaseFunction):
    """Trident's testing ``Split``: each word of the sentence (``split(" ")``).

    Examples
    --------
    >>> collector = TridentCollector()
    >>> Split().execute(TridentTuple(["to be"], Fields("sentence")), collector)
    >>> collector.emitted
    [['to'], ['be']]
    """

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        for word in tuple.getString(0).split(" "):
            collector.emit([word])


class CountAsAggregator(Aggregator[list[int]]):
    """Trident's testing ``CountAsAggregator``: emits how many tuples it saw.

    Examples
    --------
    >>> agg, collector = CountAsAggregator(), TridentCollector()
    >>> state = agg.init(0, collector)
    >>> for word in ("a", "b"):
    ...     agg.aggregate(state, TridentTuple([word], Fields("word")), collector)
    >>> agg.complete(state, collector); collector.emitted
    [[2]]
    """

    def init(self, batch_id: Any, collector: TridentCollector) -> list[int]:
        return [0]

    def aggregate(self, state: list[int], tuple: TridentTuple, collector: TridentCollector) -> None:
        state[0] += 1

    def complete(self, state: list[int], collector: TridentCollector) -> None:
        collector.emit([state[0]])


#: What ``trident-spark run`` runs: Java's ``main`` submits this.
topology = buildTopology(InMemoryWindowsStoreFactory(), SlidingCountWindow.of(1000, 100))
