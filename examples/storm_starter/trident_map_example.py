"""storm-starter's TridentMapExample, ported line by line.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentMapExample.java``, "a simple example that demonstrates the usage of ``Stream.map`` and
``Stream.flatMap``". A cycling FixedBatchSpout of five sentences (in a field called ``word``)
is split into words with ``flatMap``, upper-cased with ``map``, filtered down to ``THE``,
printed with ``peek``, and counted into a map state. The DRPC function ``words`` splits its
argument with the same ``flatMap``, reads each word's count (``stateQuery(wordCounts, ...,
MapGet())``), drops the missing ones and sums the rest: Java's ``main`` asks
``drpc.execute("words", "CAT THE DOG JUMPED")``.

Run it with ``trident-spark run examples/storm_starter/trident_map_example.py``: the ``peek``
prints ``THE`` on the executors (in local mode, the console), five times per pass; ask it with
``trident-spark drpc words "CAT THE DOG JUMPED"`` from another shell.

Differences from the Java, none in the operator chain:

* the anonymous ``MapFunction``, ``FlatMapFunction``, ``BaseFilter`` and ``Consumer`` classes are
  plain functions (``map``, ``flatMap``, ``filter`` and ``peek`` take a function of the tuple);
  a ``Values`` is a list;
* ``new MemoryMapState.Factory()`` is an opaque ``MemoryState`` with a random name, as in
  :mod:`.trident_word_count`; ``buildTopology(state=...)`` takes another;
* ``buildTopology(max_batches=N)`` bounds a ``trigger="available_now"`` run of the cycling spout.
"""

# ruff: noqa: N806 (the Java's camelCase local names are kept, for a line-by-line reading)
from __future__ import annotations

import uuid
from typing import Any

from trident_spark import Fields, TridentTopology, TridentTuple
from trident_spark.builtin import Count, FilterNull, MapGet, Sum
from trident_spark.spout import FixedBatchSpout
from trident_spark.state import MemoryState, StateFactory


def toUpper(input: TridentTuple) -> list[Any]:
    """The MapFunction: the upper-cased ``word``.

    Examples
    --------
    >>> toUpper(TridentTuple(["the"], Fields("word")))
    ['THE']
    """
    return [input.getStringByField("word").upper()]


def split(input: TridentTuple) -> list[list[Any]]:
    """The FlatMapFunction: one tuple per word of the first field (Java's ``split(" ")``).

    Examples
    --------
    >>> split(TridentTuple(["the cow jumped"], Fields("word")))
    [['the'], ['cow'], ['jumped']]
    """
    valuesList = []
    for word in input.getString(0).split(" "):
        valuesList.append([word])
    return valuesList


def theFilter(tuple: TridentTuple) -> bool:
    """The Filter: keeps ``THE``.

    Examples
    --------
    >>> theFilter(TridentTuple(["THE"], Fields("uppercased")))
    True
    """
    return tuple.getString(0) == "THE"


def buildTopology(max_batches: int | None = None, state: StateFactory | None = None,
                  drpc: Any = None) -> TridentTopology:
    """The topology: sentences, split, upper-cased, filtered to ``THE``, printed and counted; the
    DRPC function ``words`` sums the counts of its words.

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
    spout = FixedBatchSpout(
        Fields("word"), 3, ["the cow jumped over the moon"],
        ["the man went to the store and bought some candy"], ["four score and seven years ago"],
        ["how many apples can you eat"], ["to be or not to be the person"], max_batches=max_batches)
    spout.setCycle(True)
    if state is None:
        state = MemoryState.opaque(name=str(uuid.uuid4()))  # new MemoryMapState.Factory()

    topology = TridentTopology()
    wordCounts = (topology.newStream("spout1", spout).parallelismHint(16)
                  .flatMap(split)
                  .map(toUpper, Fields("uppercased"))
                  .filter(theFilter)
                  .peek(lambda input: print(input.getString(0)))
                  .groupBy(Fields("uppercased"))
                  .persistentAggregate(state, Count(), Fields("count"))
                  .parallelismHint(16))

    (topology.newDRPCStream("words", drpc)
     .flatMap(split, Fields("word"))
     .groupBy(Fields("word"))
     .stateQuery(wordCounts, Fields("word"), MapGet(), Fields("count"))
     .filter(FilterNull())
     .aggregate(Fields("count"), Sum(), Fields("sum")))
    return topology


#: What ``trident-spark run`` runs: Java's ``main`` submits ``buildTopology()``.
topology = buildTopology()
