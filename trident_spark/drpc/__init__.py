"""DRPC: ask a running topology a question and wait for its answer (Storm's Distributed RPC).

``topology.newDRPCStream(function, drpc)`` starts a stream of requests (field ``args``); each
request is a batch, and what reaches the end of the stream is its answer, Trident's JSON. A
DRPC server holds the requests: :class:`LocalDRPC` in this process, or ``trident-spark
drpc-server`` (:class:`DRPCServer`) asked with :class:`DRPCClient` or plain HTTP.

Examples
--------
>>> from trident_spark.drpc import DRPCClient, LocalDRPC
>>> with LocalDRPC() as drpc:                                        # doctest: +SKIP
...     topology.newDRPCStream("words", drpc).each(["args"], Split(), ["word"])
...     drpc.execute("words", "cat dog")
"""

from trident_spark.drpc.client import DRPCClient
from trident_spark.drpc.local import LocalDRPC
from trident_spark.drpc.server import DEFAULT_PORT, DRPCServer
from trident_spark.errors import DRPCExecutionException

__all__ = ["DEFAULT_PORT", "DRPCClient", "DRPCExecutionException", "DRPCServer", "LocalDRPC"]
