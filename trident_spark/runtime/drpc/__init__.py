"""DRPC's runtime half: a DRPC stream's requests answered, on either path.

A DRPC stream's batch is one request. It runs one of two ways, chosen per stream by
``run(drpc_path=...)``:

* **on Spark** (:mod:`~trident_spark.runtime.drpc.answers`): the request is a micro-batch of
  the stream's query; when the batch ends on the driver, its result (or its error) is
  posted to the DRPC server;
* **on the driver** (:mod:`~trident_spark.runtime.drpc.driver_path`): a stream the driver can
  run without Spark (each, filter, map, aggregations, stateQuery of states Spark's workers
  share) answers each request in the driver's process, its operations called through
  :mod:`trident_spark.executor.kernel` as Spark's tasks call them
  (:mod:`~trident_spark.runtime.drpc.driver_stream`), each request retried by the same policy
  as a Spark batch (:mod:`trident_spark.runtime.retry`), its txid reserved in the checkpoint
  (:mod:`~trident_spark.runtime.drpc.txids`).

The server, its clients and the DRPC spout are :mod:`trident_spark.drpc`.
"""
