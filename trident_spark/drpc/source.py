"""The DRPC spout as a Spark Python streaming data source (``trident_drpc``).

Where each call runs. ``latestOffset`` and ``partitions`` run on the driver, in the Python
process Spark starts for the source; ``read`` in a Spark task.

* ``latestOffset(start)`` takes one request of the function from the DRPC server (waiting up
  to ``poll`` seconds for one), writes its args to ``<args_dir>/<n>`` (owner-only, ``0600``,
  in a ``0700`` directory on a local checkpoint) and answers the end offset
  ``{"n": n, "id": ...}``, with n = start + 1, which Spark logs before the batch runs: the args
  stay out of Spark's offsets log. No request: ``start`` (no batch this trigger). A server
  that does not answer is asked again at the next trigger (the topology keeps running).
* ``partitions(start, end)``: the batch's one request, its id from ``end`` and its args from
  their file (a replay reads the same; an offset logged by an older version holds the args).
* ``read(partition)``: the batch's one tuple, ``[args]``.
* ``commit(end)``: Spark committed the batches up to ``end``: their args files are removed.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from trident_spark import checkpoint_files as files
from trident_spark.drpc.client import TopologyClient
from trident_spark.errors import DRPCExecutionException

FORMAT_NAME = "trident_drpc"
log = logging.getLogger(__name__)


class DRPCDataSource(DataSource):
    """Spark data source ``trident_drpc``; options ``address``, ``consumer``, ``function``, ``poll``,
    ``args_dir`` (where a batch's args wait until it commits) and ``token`` (the server's)."""

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
        self.client = TopologyClient(options["address"], options["consumer"], options.get("token") or None)
        self.args_dir: str | None = options.get("args_dir") or None
        if self.args_dir is not None:
            _private_dir(self.args_dir)

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
        n = int(start.get("n", 0)) + 1
        if self.args_dir is None:  # no checkpoint to keep them beside: in the offset, as before
            return {"n": n, "id": taken.id, "args": taken.args}
        record = json.dumps({"id": taken.id, "args": taken.args}).encode("utf-8")
        files.write_bytes(files.join(self.args_dir, str(n)), record, private=True, sync=True)
        return {"n": n, "id": taken.id}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        if "id" not in end or end == start:
            return []
        request_id = str(end["id"])
        if "args" in end:  # logged by an older version
            return [DRPCInputPartition(request_id, str(end["args"]))]
        return [DRPCInputPartition(request_id, self._args(int(end["n"]), request_id))]

    def _args(self, n: int, request_id: str) -> str:
        """The args of batch offset ``n`` (request ``request_id``), from their file."""
        if self.args_dir is None:
            raise DRPCExecutionException(
                f"DRPC stream {self.function!r}: the batch of request {request_id} has no args in its "
                "offset and the source no args directory; run it with its checkpoint"
            )
        where = files.join(self.args_dir, str(n))
        try:
            record = json.loads(files.read_bytes(where))
        except (OSError, ValueError) as exc:
            raise DRPCExecutionException(
                f"DRPC stream {self.function!r}: the args of request {request_id} (batch offset {n}) "
                f"cannot be read from {files.describe(where)}: {exc}; they are kept there until the "
                "batch commits: was the checkpoint copied without them?"
            ) from None
        if record.get("id") != request_id:
            raise DRPCExecutionException(
                f"DRPC stream {self.function!r}: {files.describe(where)} holds the args of another "
                f"request than {request_id} (batch offset {n}); was the checkpoint reset?"
            )
        return str(record["args"])

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, DRPCInputPartition)
        return iter([(partition.args,)])

    def commit(self, end: dict[str, Any]) -> None:
        """Spark committed the batches up to ``end`` (the driver answered their requests): their
        args files go (a failure to remove one is logged; the next commit tries again)."""
        if self.args_dir is None:
            return
        upto = int(end.get("n", 0))
        try:
            names = files.list_names(self.args_dir)
            for name in names:
                if name.isdigit() and int(name) <= upto:
                    files.delete(files.join(self.args_dir, name))
        except OSError as exc:
            log.warning("DRPC stream %r: committed args not removed from %s: %s", self.function,
                        files.describe(self.args_dir), exc)


def _private_dir(location: str) -> None:
    """Make the args directory; on a local filesystem readable by this user only (``0700``)."""
    files.mkdirs(location)
    path = files.local_path(location)
    if path is not None:
        for parent in (path.parent, path):  # drpc-args/ and drpc-args/<function>/
            os.chmod(parent, 0o700)


__all__ = ["FORMAT_NAME", "DRPCDataSource", "DRPCStreamReader"]
