"""The DRPC spout as a Spark Python streaming data source (``trident_drpc``).

Where each call runs. ``latestOffset`` and ``partitions`` run on the driver, in the Python
process Spark starts for the source; ``read`` in a Spark task.

* ``latestOffset(start)`` takes one request of the function from the DRPC server (waiting up
  to ``poll`` seconds for one): the end offset ``{"n": start + 1, "id": ..., "args": ...}``,
  which Spark logs before the batch runs; no request: ``start`` (no batch this trigger). A
  server that does not answer is asked again at the next trigger (the topology keeps running).
* ``partitions(start, end)``: the batch's one request, from ``end`` (a replay reads the same).
* ``read(partition)``: the batch's one tuple, ``[args]``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from trident_spark.drpc.client import TopologyClient
from trident_spark.errors import DRPCExecutionException

FORMAT_NAME = "trident_drpc"
log = logging.getLogger(__name__)


class DRPCDataSource(DataSource):
    """Spark data source ``trident_drpc``; options ``address``, ``consumer``, ``function``, ``poll``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        return "args string"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return DRPCStreamReader(dict(self.options))


class DRPCInputPartition(InputPartition):
    """One batch's request."""

    def __init__(self, request_id: str, args: str) -> None:
        super().__init__(request_id)
        self.args = args


class DRPCStreamReader(DataSourceStreamReader):
    """One DRPC request per micro-batch (see the module's docstring)."""

    def __init__(self, options: dict[str, str]) -> None:
        self.function = options["function"]
        self.poll = float(options.get("poll", "0.5"))
        self.client = TopologyClient(options["address"], options["consumer"])

    def initialOffset(self) -> dict[str, Any]:
        return {"n": 0}

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        try:
            taken = self.client.fetch(self.function, self.poll)
        except DRPCExecutionException as exc:  # the server is down: ask again next trigger
            log.warning("DRPC stream %r: %s", self.function, exc)
            time.sleep(self.poll)
            return start
        if taken is None:
            return start
        return {"n": int(start.get("n", 0)) + 1, "id": taken.id, "args": taken.args}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        if "id" not in end or end == start:
            return []
        return [DRPCInputPartition(str(end["id"]), str(end.get("args", "")))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, DRPCInputPartition)
        return iter([(partition.args,)])

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the driver answered the request when the batch ended."""


__all__ = ["FORMAT_NAME", "DRPCDataSource", "DRPCStreamReader"]
