"""storm-starter's TridentHBaseWindowingStoreTopology, ported line by line, on a SQLite windows store.

The original: apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/trident/
TridentHBaseWindowingStoreTopology.java``, a "sample application of trident windowing which uses
HBaseWindowsStoreFactory's store for storing tuples in window". A cycling FixedBatchSpout of five
sentences, three per batch, is split into words; a tumbling window of 1000 words counts them with
``CountAsAggregator``, its open window's tuples kept in a durable store; a ``peek`` logs each
count.

Run it with ``trident-spark run examples/storm_starter/trident_hbase_windowing_store_topology.py``.

Differences from the Java, none in the operator chain:

* HBase is not among our stores: ``new HBaseWindowsStoreFactory(conf, "window-state", "cf",
  "tuples")`` is ``SqliteWindowsStoreFactory(path="window-state.db", table="window_state")`` (the
  table is created on first use); Redis, Elasticsearch and PostgreSQL windows stores work alike.
  A durable store keeps the open windows through a killed driver: the restart from the
  checkpoint goes on with the same windows;
* ``topology.max.spout.pending`` and ``TOPOLOGY_TRIDENT_WINDOWING_INMEMORY_CACHE_LIMIT`` have no
  counterpart: one micro-batch runs at a time, and a window task reads the store only for the
  windows a batch closes;
* ``CountAsAggregator`` and ``Split`` are the in-memory example's
  (:mod:`.trident_windowing_inmemory_store_topology`); the ``peek`` logs as there;
* ``buildTopology(..., window_count=, max_batches=)`` let a test use a smaller window and stop a
  ``trigger="available_now"`` run of the cycling spout (Java: 1000 words, until killed).
"""

from __future__ import annotations

import logging

from examples.storm_starter.trident_windowing_inmemory_store_topology import CountAsAggregator, Split
from trident_spark import Fields, TridentTopology
from trident_spark.spout import FixedBatchSpout
from trident_spark.windowing import SqliteWindowsStoreFactory, TumblingCountWindow, WindowsStoreFactory

LOG = logging.getLogger(__name__)


def buildTopology(windowsStore: WindowsStoreFactory, window_count: int = 1000,
                  max_batches: int | None = None) -> TridentTopology:
    """Sentences, split into words, counted per tumbling window of ``window_count`` words.

    Examples
    --------
    >>> import os, tempfile
    >>> store = SqliteWindowsStoreFactory(path=os.path.join(tempfile.mkdtemp(), "w.db"))
    >>> buildTopology(store).queries()[0].name
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
              .window(TumblingCountWindow.of(window_count), windowsStore, Fields("word"), CountAsAggregator(),
                      Fields("count"))
              .peek(lambda input: LOG.info("Received tuple: [%s]", input)))

    return topology


#: What ``trident-spark run`` runs: Java's ``main`` (the window-state table, here a SQLite file).
topology = buildTopology(SqliteWindowsStoreFactory(path="window-state.db", table="window_state"))
