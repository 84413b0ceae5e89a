"""storm-starter's TridentWordCount, ported line by line.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentWordCount.java``. A cycling FixedBatchSpout of five sentences, three per batch, is split
into words and counted per word into a map state. The DRPC stream ``words`` reads the counts
of the words of each request with ``stateQuery(wordCounts, ..., MapGet())``.

Run it with ``trident-spark run examples/storm_starter/trident_word_count.py`` (Java's ``main``
submits ``buildTopology()``; the run starts a DRPC server on 127.0.0.1:3772, or on a free port
it names when 3772 is taken), then ask it from another shell as Java's ``main`` does:
``trident-spark drpc words "cat the dog jumped"`` prints ``[["the",10],["jumped",2]]`` (the
counts so far: they grow as the spout cycles).

Differences from the Java, all of the Python's making, none in the operator chain:

* ``new MemoryMapState.Factory()`` is ``MemoryState.opaque(name=...)``: Trident's MemoryMapState
  is opaque, and the Java factory names its store with a random UUID, as the default here does.
  ``buildTopology(state=...)`` takes another state (tests pass a named one to read it afterwards).
* ``buildTopology(drpc=...)`` takes Java's ``LocalDRPC`` (or a server's address); None: the run's
  DRPC server (Java's ``StormSubmitter`` case, ``newDRPCStream("words", null)``).
* ``buildTopology(max_batches=N)`` bounds a ``trigger="available_now"`` run of the cycling spout
  to N batches (a Trident topology runs until it is killed).
"""

# ruff: noqa: N806 (the Java's camelCase local names are kept, for a line-by-line reading)
from __future__ import annotations

import uuid
from typing import Any

from trident_spark import Fields, TridentTopology, TridentTuple
from trident_spark.builtin import Count, FilterNull, MapGet
from trident_spark.operation import BaseFunction, TridentCollector
from trident_spark.spout import FixedBatchSpout
from trident_spark.state import MemoryState, StateFactory


def buildTopology(max_batches: int | None = None, state: StateFactory | None = None,
                  drpc: Any = None) -> TridentTopology:
    """The word-count topology: sentences, split into words, counted per word into ``state``;
    the DRPC function ``words`` answers each word's count (``[["the", 10], ...]``).

    Parameters
    ----------
    max_batches : int, optional
        Batches a ``trigger="available_now"`` run reads from the cycling spout (one pass, two
        batches, when None).
    state : StateFactory, optional
        Where the counts go; default an opaque MemoryState with a random name (Java's
        ``new MemoryMapState.Factory()``).
    drpc : LocalDRPC, str or None
        Java's ``LocalDRPC`` (``newDRPCStream("words", drpc)``); None: the run's DRPC server.

    Examples
    --------
    >>> [query.name for query in buildTopology().queries()]
    ['spout1', 'drpc-words']
    """
    spout = FixedBatchSpout(Fields("sentence"), 3, ["the cow jumped over the moon"],
                            ["the man went to the store and bought some candy"],
                            ["four score and seven years ago"],
                            ["how many apples can you eat"], ["to be or not to be the person"],
                            max_batches=max_batches)
    spout.setCycle(True)
    if state is None:
        state = MemoryState.opaque(name=str(uuid.uuid4()))  # new MemoryMapState.Factory()

    topology = TridentTopology()
    wordCounts = (topology.newStream("spout1", spout).parallelismHint(16)
                  .each(Fields("sentence"), Split(), Fields("word"))
                  .groupBy(Fields("word"))
                  .persistentAggregate(state, Count(), Fields("count"))
                  .parallelismHint(16))

    (topology.newDRPCStream("words", drpc).each(Fields("args"), Split(), Fields("word"))
     .groupBy(Fields("word"))
     .stateQuery(wordCounts, Fields("word"), MapGet(), Fields("count"))
     .each(Fields("count"), FilterNull())
     .project(Fields("word", "count")))
    return topology


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


#: What ``trident-spark run`` runs: Java's ``main`` submits ``buildTopology()``.
topology = buildTopology()
