"""storm-starter's Trident examples, ported line by line from Apache Storm's Java.

The originals are in apache/storm, ``examples/storm-starter/src/jvm/org/apache/storm/starter/
trident/``. One module per Java class, named after it in snake_case; inside, the Java names
(``buildTopology``, ``Split``, ``SpeedComparator``, ``Vehicle``...) and the operator chains are
kept as they are, so a Trident user can read each port next to its original
(docs/port-guide.md shows them side by side).

* :mod:`.trident_word_count`: TridentWordCount, the counts and the ``words`` DRPC function;
* :mod:`.trident_reach`: TridentReach, DRPC over two static states;
* :mod:`.trident_map_example`: TridentMapExample, ``map``/``flatMap``/``filter``/``peek``, and DRPC;
* :mod:`.trident_min_max_of_devices_topology`: TridentMinMaxOfDevicesTopology, ``minBy``/``maxBy``;
* :mod:`.trident_min_max_of_vehicles_topology`: TridentMinMaxOfVehiclesTopology, ``min``/``max``
  and ``minBy``/``maxBy`` with comparators, over Python objects in the tuples;
* :mod:`.trident_min_max_operations_topology`: TridentMinMaxOperationsTopology (the first
  version of the two above);
* :mod:`.trident_kafka_word_count`: TridentKafkaWordCount on :class:`~trident_spark.spout.KafkaSpout`;
* :mod:`.trident_windowing_inmemory_store_topology`, :mod:`.trident_hbase_windowing_store_topology`:
  the windowing topologies (the HBase one on a SQLite windows store).

Each module is self-contained, as each Java class is, so that ``trident-spark run
examples/storm_starter/<module>.py`` runs it: the command imports the file alone, not this package.
"""
