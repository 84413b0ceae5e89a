"""The FeederBatchSpout as a Spark Python streaming data source (``trident_feeder``).

Offsets count fed batches consumed: ``{"batch": n}``. Each trigger takes at
most one more fed batch (``latestOffset`` returns at most ``start + 1``), so
every ``feed()`` is exactly one micro-batch, one txid, even when several were
fed between triggers. Spark logs the offsets before running a batch, and the
batch files never change, so a replayed batch reads the same rows.

The reader runs in Python processes that Spark starts (the driver's planner
process, the executors' workers); all it knows comes from the options:
``directory``, ``num_partitions`` and ``schema``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from trident_spark.errors import SpoutError
from trident_spark.spout.testing.batch_files import chunk_bounds, count_batches, read_batch

FORMAT_NAME = "trident_feeder"


class FeederDataSource(DataSource):
    """Spark data source ``trident_feeder``; options ``directory``, ``num_partitions``, ``schema`` (DDL)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        return str(self.options["schema"])

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return FeederStreamReader(str(self.options["directory"]), int(self.options["num_partitions"]), schema)


class FeederInputPartition(InputPartition):
    """Chunk ``index`` of ``count`` of the rows of fed batches ``[first, end)`` (one batch in practice)."""

    def __init__(self, first: int, end: int, index: int, count: int) -> None:
        super().__init__((first, end, index, count))
        self.first = first
        self.end = end
        self.index = index
        self.count = count


class FeederStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """One fed batch per micro-batch, cut into ``num_partitions`` contiguous chunks."""

    def __init__(self, directory: str, num_partitions: int, schema: StructType) -> None:
        self.directory = directory
        self.num_partitions = num_partitions
        self.schema = schema
        self._available_now_target: int | None = None

    def _fed(self) -> int:
        try:
            return count_batches(self.directory)
        except FileNotFoundError:
            raise SpoutError(
                f"FeederBatchSpout: its directory {self.directory} is gone (deleted, or not on this "
                f"machine); the batches fed to it cannot be read") from None

    def initialOffset(self) -> dict[str, Any]:
        return {"batch": 0}

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an ``availableNow`` run: the batches fed up to now."""
        self._available_now_target = self._fed()

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, Any]:
        return {"batch": self._fed()}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The next fed batch, if there is one: ``{"batch": start + 1}``; else ``start``.

        Read limits do not apply: a batch is what one ``feed()`` call gave.
        """
        done = int(start["batch"])
        fed = self._fed()
        if done > fed:
            raise SpoutError(
                f"FeederBatchSpout: the checkpoint says {done} batches were read, but {self.directory} "
                f"holds only {fed}. A restarted query must use the directory it read before "
                f"(FeederBatchSpout(..., directory=...)), or a fresh checkpoint.")
        target = fed if self._available_now_target is None else min(fed, self._available_now_target)
        return {"batch": done + 1} if done < target else {"batch": done}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, stop = int(start["batch"]), int(end["batch"])
        return [FeederInputPartition(first, stop, i, self.num_partitions) for i in range(self.num_partitions)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Runs on an executor: this partition's chunk of the batch's rows, as Arrow record batches."""
        assert isinstance(partition, FeederInputPartition)
        return iter(read_partition(self.directory, self.schema, partition))

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: batch files are kept, so the directory can be read again from the start."""


def read_partition(directory: str, schema: StructType,
                   partition: FeederInputPartition) -> list[pa.RecordBatch]:
    """The rows of ``partition``, in the Arrow schema Spark expects for ``schema``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from trident_spark.worker_gc import settle_imports

    settle_imports()
    target = to_arrow_schema(schema, timezone="UTC")
    tables = [_as_schema(read_batch(directory, b), target, directory, b)
              for b in range(partition.first, partition.end)]
    if not tables:
        return []
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    start, stop = chunk_bounds(table.num_rows, partition.count, partition.index)
    if stop <= start:
        return []
    return [b for b in table.slice(start, stop - start).to_batches() if b.num_rows]


def _as_schema(table: pa.Table, target: pa.Schema, directory: str, index: int) -> pa.Table:
    """Cast a batch file's table to the Arrow schema Spark expects for the stream's DDL.

    The file holds each declared type's Arrow form and each undeclared field's tagged
    ``binary``, so the cast changes no value: it aligns what Arrow and Spark spell
    differently (a list's child field name, nullability).
    """
    if table.schema.names != target.names:
        raise SpoutError(
            f"FeederBatchSpout: batch {index} in {directory} has fields {table.schema.names}, but the "
            f"stream expects {target.names}; a directory belongs to one spout's fields")
    try:
        return table.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SpoutError(
            f"FeederBatchSpout: batch {index} in {directory} ({table.schema}) cannot be read as "
            f"the stream's types ({target}): {exc}") from None
