"""spout/deferred_read.py: the wrapper source plans as the inner one and reads only partitions."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark import cloudpickle
from pyspark.sql.streaming.datasource import ReadAllAvailable

from trident_spark.errors import TopologyError
from trident_spark.spout.deferred_read import DeferredRead, DeferredStreamReader, inner_data_source
from trident_spark.spout.testing.feeder_source import FeederDataSource, FeederInputPartition


class Inner:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    def initialOffset(self) -> dict[str, Any]:
        return {"batch": 0}

    def latestOffset(self, start: dict[str, Any], limit: Any) -> dict[str, Any]:
        self.calls.append(("latest", start, limit))
        return {"batch": start["batch"] + 1}

    def getDefaultReadLimit(self) -> Any:
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, Any]:
        return {"batch": 9}

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[Any]:
        return [FeederInputPartition(start["batch"], end["batch"], i, 2) for i in range(2)]

    def commit(self, end: dict[str, Any]) -> None:
        self.calls.append(("commit", end))

    def stop(self) -> None:
        self.calls.append(("stop",))


def test_the_wrapper_plans_batches_as_the_inner_reader_does():
    inner = Inner()
    reader = DeferredStreamReader(inner)
    limit = ReadAllAvailable()
    assert reader.initialOffset() == {"batch": 0}
    assert reader.latestOffset({"batch": 0}, limit) == {"batch": 1}
    assert isinstance(reader.getDefaultReadLimit(), ReadAllAvailable)
    assert reader.reportLatestOffset() == {"batch": 9}
    parts = reader.partitions({"batch": 0}, {"batch": 1})
    assert [(p.first, p.end, p.index) for p in parts] == [(0, 1, 0), (0, 1, 1)]
    reader.commit({"batch": 1})
    reader.stop()
    assert inner.calls == [("latest", {"batch": 0}, limit), ("commit", {"batch": 1}), ("stop",)]


def test_a_partition_is_read_as_one_row_holding_it_pickled():
    part = FeederInputPartition(3, 4, 1, 2)
    [batch] = list(DeferredStreamReader(Inner()).read(part))
    assert batch.schema.names == ["partition"] and batch.num_rows == 1
    back = cloudpickle.loads(batch.column(0)[0].as_py())
    assert (back.first, back.end, back.index, back.count) == (3, 4, 1, 2)


@pytest.mark.parametrize("path", ["os:system", "builtins:eval", "pickle:loads",
                                  "trident_spark.errors:TopologyError",
                                  "trident_spark.spout.deferred_read:os.system"])
def test_only_our_data_sources_are_looked_up(path):
    with pytest.raises(TopologyError, match=r"is not a trident_spark data source"):
        inner_data_source(path)


def test_a_deferred_read_builds_the_inner_reader_from_its_options(tmp_path):
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField("sentence", StringType())])
    read = DeferredRead("s", "trident_spark.spout.testing.feeder_source:FeederDataSource",
                        {"directory": str(tmp_path), "num_partitions": "2", "schema": "sentence string"},
                        schema.json(), schema.json())
    reader = read.reader()
    assert type(reader).__name__ == "FeederStreamReader" and reader.num_partitions == 2
    assert read.fields == ["sentence"] and read.schema() == schema
    assert inner_data_source(read.data_source) is FeederDataSource
