"""A spout's batch as its partitions, to be read inside the stream's first Python operations.

A Spark Python data source reads its records in one Python task and hands them to the JVM;
the stream's first Python operations then run in another Python task, so every record
crosses between the JVM and Python twice. Wrapped in :class:`DeferredReadSource`, a spout's
own source still plans every batch on the driver (its offsets, Spark's offset log, replays:
nothing changes there), but its read task outputs one row per input partition (the
partition, pickled) instead of the records. The planner then reads those partitions inside
the stage of the first Python operations (``executor.fused_read``): Trident ran the spout
and the operations up to the first repartition in one executor, and so do we. Only the
operations' output (words, partial counts) reaches the JVM.

:class:`DeferredRead` is what the driver keeps of a wrapped spout: the inner source and its
options (to build its reader for the executors), the schema the inner reader is given, and
the spout's DataFrame schema (its fields, with their untyped marks).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

from trident_spark.errors import TopologyError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from trident_spark.spout.base import PythonSource

#: The Spark data source name of the wrapper.
FORMAT_NAME = "trident_deferred"

#: Its one column: an input partition of the inner source, pickled.
PARTITION_COLUMN = "partition"


def inner_data_source(path: str) -> type[DataSource]:
    """The data source class ``module:Class`` names: only one of trident-spark's own (nothing
    else is imported from the options a wrapper is given).

    Examples
    --------
    >>> inner_data_source("trident_spark.spout.testing.feeder_source:FeederDataSource").name()
    'trident_feeder'
    >>> inner_data_source("os:system")
    Traceback (most recent call last):
    ...
    trident_spark.errors.TopologyError: trident_deferred: 'os:system' is not a trident_spark data source
    """
    module, _, name = path.partition(":")
    if not (module.startswith("trident_spark.") and name.isidentifier()):
        raise TopologyError(f"{FORMAT_NAME}: {path!r} is not a trident_spark data source")
    found = getattr(importlib.import_module(module), name, None)
    if not (isinstance(found, type) and issubclass(found, DataSource)):
        raise TopologyError(f"{FORMAT_NAME}: {path!r} is not a trident_spark data source")
    return found


def _path_of(cls: type[Any]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


@dataclass(frozen=True)
class DeferredRead:
    """A spout whose partitions are read later, in the first Python stage of its stream.

    Parameters
    ----------
    stream : str
        The stream the spout starts (named in metrics and errors).
    data_source : str
        The inner data source, ``module:Class`` (one of trident_spark's).
    options : dict
        The inner data source's options.
    reader_schema : str
        The schema the inner reader is given (``StructType.json()``): its records' columns.
    spout_schema : str
        The spout's DataFrame schema (``StructType.json()``): its fields, untyped ones marked.

    Examples
    --------
    >>> read = DeferredRead("words", "trident_spark.spout.testing.feeder_source:FeederDataSource",
    ...                     {"num_partitions": "1"}, '{"type":"struct","fields":[]}',
    ...                     '{"type":"struct","fields":[]}')
    >>> read.stream, read.fields
    ('words', [])
    """

    stream: str
    data_source: str
    options: dict[str, str] = field(repr=False)
    reader_schema: str = field(repr=False)
    spout_schema: str = field(repr=False)

    @classmethod
    def of(cls, stream: str, source: PythonSource, reader_schema: StructType,
           spout_schema: StructType) -> DeferredRead:
        """The deferred read of a spout read with ``source``."""
        return cls(stream, _path_of(source.data_source), dict(source.options), reader_schema.json(),
                   spout_schema.json())

    @property
    def fields(self) -> list[str]:
        """The spout's fields, in order."""
        return [f["name"] for f in json.loads(self.spout_schema)["fields"]]

    def schema(self) -> StructType:
        """The spout's DataFrame schema (what the planner plans the first stage against)."""
        from pyspark.sql.types import StructType

        return StructType.fromJson(json.loads(self.spout_schema))

    def reader(self) -> DataSourceStreamReader:
        """A reader of the inner source, as Spark would build it (construction opens nothing);
        pickled into the stage that reads the partitions."""
        from pyspark.sql.types import StructType

        schema = StructType.fromJson(json.loads(self.reader_schema))
        return inner_data_source(self.data_source)(dict(self.options)).streamReader(schema)

    def dataframe(self, spark: SparkSession) -> DataFrame:
        """The streaming DataFrame of the batches' partitions (one row per input partition)."""
        from trident_spark.spout.base import PythonSource

        return PythonSource(DeferredReadSource, {"inner": self.data_source, "inner_options": json.dumps(
            self.options), "inner_schema": self.reader_schema}).load(spark)


class DeferredReadSource(DataSource):
    """Spark data source ``trident_deferred``: another of our sources (option ``inner``, with
    ``inner_options`` and ``inner_schema`` as JSON) planning the batches, its partitions read later."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        return f"{PARTITION_COLUMN} binary"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from pyspark.sql.types import StructType

        inner_schema = StructType.fromJson(json.loads(self.options["inner_schema"]))
        inner = inner_data_source(self.options["inner"])(json.loads(self.options["inner_options"]))
        return DeferredStreamReader(inner.streamReader(inner_schema))


class DeferredStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The inner reader for everything but :meth:`read`, which outputs each partition pickled.

    Examples
    --------
    >>> from trident_spark.spout.testing.feeder_source import FeederInputPartition
    >>> rows = list(DeferredStreamReader(None).read(FeederInputPartition(0, 1, 0, 1)))
    >>> rows[0].num_rows, rows[0].schema.names
    (1, ['partition'])
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def initialOffset(self) -> dict[str, Any]:
        offset: dict[str, Any] = self.inner.initialOffset()
        return offset

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        offset: dict[str, Any] = self.inner.latestOffset(start, limit)
        return offset

    def getDefaultReadLimit(self) -> ReadLimit:
        limit: ReadLimit = self.inner.getDefaultReadLimit()
        return limit

    def reportLatestOffset(self) -> dict[str, Any] | None:
        latest: dict[str, Any] | None = self.inner.reportLatestOffset()
        return latest

    def prepareForTriggerAvailableNow(self) -> None:
        if isinstance(self.inner, SupportsTriggerAvailableNow):
            self.inner.prepareForTriggerAvailableNow()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        parts: Sequence[InputPartition] = self.inner.partitions(start, end)
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Runs on an executor: the partition itself, pickled, as one row."""
        import pyarrow as pa
        from pyspark import cloudpickle

        pickled = cloudpickle.dumps(partition)  # type: ignore[no-untyped-call]
        yield pa.RecordBatch.from_arrays([pa.array([pickled], pa.binary())], names=[PARTITION_COLUMN])

    def commit(self, end: dict[str, Any]) -> None:
        self.inner.commit(end)

    def stop(self) -> None:
        self.inner.stop()


__all__ = ["FORMAT_NAME", "PARTITION_COLUMN", "DeferredRead", "DeferredReadSource", "DeferredStreamReader",
           "inner_data_source"]
