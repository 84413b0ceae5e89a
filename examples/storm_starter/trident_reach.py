"""storm-starter's TridentReach, ported line by line: the reach of a URL, computed per DRPC request.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentReach.java``. ``reach(url)`` looks up who tweeted the URL (``TWEETERS_DB``), then each
tweeter's followers (``FOLLOWERS_DB``), and counts the distinct followers: the URL's reach.
Java's ``main`` asks ``drpc.execute("reach", "aaa")`` (``[[0]]``), ``"foo.com/blog/1"``
(``[[16]]``) and ``"engineering.twitter.com/blog/5"`` (``[[14]]``).

Run it with ``trident-spark run examples/storm_starter/trident_reach.py`` and ask it with
``trident-spark drpc reach foo.com/blog/1``.

Differences from the Java, all of the Python's making, none in the operator chain:

* ``new StaticSingleKeyMapState.Factory(TWEETERS_DB)`` is a non-transactional MemoryState loaded
  with the map (:func:`static_state`): ``newStaticState`` reads it, nothing writes it.
* ``buildTopology(drpc=...)`` takes Java's ``LocalDRPC``; None: the run's DRPC server.
"""

# ruff: noqa: N806 (the Java's camelCase local names are kept, for a line-by-line reading)
from __future__ import annotations

import uuid
from typing import Any

from trident_spark import Fields, TridentTopology, TridentTuple
from trident_spark.builtin import MapGet, Sum
from trident_spark.operation import BaseFunction, CombinerAggregator, TridentCollector
from trident_spark.state import MemoryState, StateFactory

TWEETERS_DB: dict[str, list[str]] = {
    "foo.com/blog/1": ["sally", "bob", "tim", "george", "nathan"],
    "engineering.twitter.com/blog/5": ["adam", "david", "sally", "nathan"],
    "tech.backtype.com/blog/123": ["tim", "mike", "john"],
}

FOLLOWERS_DB: dict[str, list[str]] = {
    "sally": ["bob", "tim", "alice", "adam", "jim", "chris", "jai"],
    "bob": ["sally", "nathan", "jim", "mary", "david", "vivian"],
    "tim": ["alex"],
    "nathan": ["sally", "bob", "adam", "harry", "chris", "vivian", "emily", "jordan"],
    "adam": ["david", "carissa"],
    "mike": ["john", "bob"],
    "john": ["alice", "nathan", "jim", "mike", "bob"],
}


def static_state(data: dict[str, list[str]], name: str | None = None) -> StateFactory:
    """Java's ``StaticSingleKeyMapState.Factory(data)``: a map state holding ``data`` (one key field).

    Examples
    --------
    >>> factory = static_state({"a": ["b"]})
    >>> factory.open().multiGet([["a"], ["z"]])
    [['b'], None]
    """
    factory = MemoryState.nonTransactional(name=name or f"static-{uuid.uuid4()}")
    keys = sorted(data)
    factory.open().multiPut(1, [[k] for k in keys], [data[k] for k in keys])
    return factory


def buildTopology(drpc: Any = None, tweeters: StateFactory | None = None,
                  followers: StateFactory | None = None) -> TridentTopology:
    """The reach topology: DRPC function ``reach`` answers ``[[n]]``, the distinct followers of
    the URL's tweeters.

    Examples
    --------
    >>> [query.name for query in buildTopology("127.0.0.1:3772").queries()]
    ['drpc-reach']
    """
    topology = TridentTopology()
    urlToTweeters = topology.newStaticState(tweeters or static_state(TWEETERS_DB))
    tweetersToFollowers = topology.newStaticState(followers or static_state(FOLLOWERS_DB))

    (topology.newDRPCStream("reach", drpc)
     .stateQuery(urlToTweeters, Fields("args"), MapGet(), Fields("tweeters"))
     .each(Fields("tweeters"), ExpandList(), Fields("tweeter"))
     .shuffle()
     .stateQuery(tweetersToFollowers, Fields("tweeter"), MapGet(), Fields("followers"))
     .each(Fields("followers"), ExpandList(), Fields("follower"))
     .groupBy(Fields("follower"))
     .aggregate(One(), Fields("one"))
     .aggregate(Fields("one"), Sum(), Fields("reach")))
    return topology


class ExpandList(BaseFunction):
    """Each element of the list in the tuple's first field (none for a missing list).

    Examples
    --------
    >>> collector = TridentCollector()
    >>> ExpandList().execute(TridentTuple([["a", "b"]], Fields("l")), collector)
    >>> collector.emitted
    [['a'], ['b']]
    """

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        values = tuple.getValue(0)
        if values is not None:
            for value in values:
                collector.emit([value])


class One(CombinerAggregator):
    """1 for any group: ``aggregate(One())`` keeps one tuple per group (Java's ``One``).

    Examples
    --------
    >>> One().combine(One().init(None), One().zero())
    1
    """

    def init(self, tuple: Any) -> int:
        return 1

    def combine(self, val1: int, val2: int) -> int:
        return 1

    def zero(self) -> int:
        return 1


#: What ``trident-spark run`` runs: Java's ``main`` submits ``buildTopology()``.
topology = buildTopology()
