"""The FixedBatchSpout as a Spark Python streaming data source (``trident_fixed_batch``).

Offsets count batches emitted: ``{"batch": n}``; each trigger takes one more batch. Batch
``k`` reads the stored batch ``k mod period``. Without cycling the stream ends at ``period``
batches; with it there is always a next batch, except in an ``availableNow`` run, which
ends at ``max_batches`` (or, without it, after one cycle).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from trident_spark.spout.testing.feeder_source import (
    FeederDataSource,
    FeederInputPartition,
    FeederStreamReader,
    read_partition,
)

FORMAT_NAME = "trident_fixed_batch"


class FixedBatchDataSource(FeederDataSource):
    """Spark data source ``trident_fixed_batch``: the feeder's options (and schema) plus ``period``,
    ``cycle`` and ``max_batches``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return FixedBatchStreamReader(str(self.options["directory"]), int(self.options["num_partitions"]),
                                      schema, int(self.options["period"]), self.options["cycle"] == "true",
                                      int(self.options.get("max_batches", "0")) or None)


class FixedBatchStreamReader(FeederStreamReader):
    """One batch per micro-batch; batch ``k`` is stored batch ``k mod period``."""

    def __init__(self, directory: str, num_partitions: int, schema: StructType, period: int, cycle: bool,
                 max_batches: int | None) -> None:
        super().__init__(directory, num_partitions, schema)
        self.period = period
        self.cycle = cycle
        self.max_batches = max_batches

    def _end(self) -> int | None:
        """The batch count where the stream ends (None: never)."""
        if not self.cycle:
            return self.period
        if self._available_now_target is not None:
            return self.max_batches or self.period
        return self.max_batches

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now_target = self._end() or self.period

    def reportLatestOffset(self) -> dict[str, Any]:
        end = self._end()
        return {"batch": end if end is not None else -1}

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        done = int(start["batch"])
        end = self._end()
        if self.period == 0 or (end is not None and done >= end):
            return {"batch": done}
        return {"batch": done + 1}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, stop = int(start["batch"]), int(end["batch"])
        parts: list[InputPartition] = []
        for batch in range(first, stop):  # one batch per trigger; a range only after a restart
            stored = batch % self.period
            parts.extend(FeederInputPartition(stored, stored + 1, i, self.num_partitions)
                         for i in range(self.num_partitions))
        return parts

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, FeederInputPartition)
        return iter(read_partition(self.directory, self.schema, partition))


__all__ = ["FORMAT_NAME", "FixedBatchDataSource", "FixedBatchStreamReader"]
