"""The spouts' reads: a query's streaming input, and each spout's tuples of one batch.

A query reads all its spouts in one streaming DataFrame (so merged or joined streams share
batch ids): :func:`query_source` builds it on the driver when the query starts; Spark's
sources then read on the executors, once per batch. :func:`split_sources` takes one batch of
it apart again, one DataFrame per spout. Spouts are used only through
:class:`~trident_spark.spout.base.Spout`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from trident_spark.executor.object_columns import marked
from trident_spark.graph import SpoutNode
from trident_spark.object_values import OBJECT
from trident_spark.spout.base import MALFORMED_COLUMN, READ_MS_COLUMN, SpoutRun

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: In the union of several spouts: the column telling which spout (its index) a row is from.
SPOUT_TAG = "__spout"


def spout_dataframe(spark: SparkSession, node: SpoutNode, run: SpoutRun | None = None) -> DataFrame:
    """One spout's streaming DataFrame as ``run`` reads it, records it could not decode counted
    and dropped, its read time counted (see :func:`_observed`)."""
    spout = node.spout.for_run(run or SpoutRun(None))
    return _observed(node.stream_name, spout.to_dataframe(spark))


def query_source(spark: SparkSession, spouts: Sequence[SpoutNode], run: SpoutRun | None = None) -> DataFrame:
    """The streaming input of a query reading ``spouts``: one spout's DataFrame, or several
    tagged and unioned (so merged or joined streams read in one query and share its batch ids)."""
    from pyspark.sql import functions as F

    if len(spouts) == 1:
        return spout_dataframe(spark, spouts[0], run)
    parts = []
    for i, node in enumerate(spouts):
        df = spout_dataframe(spark, node, run)
        parts.append(df.select(F.lit(i).alias(SPOUT_TAG), F.struct(*df.columns).alias(f"__s{i}")))
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part, allowMissingColumns=True)
    return union


def split_sources(df: DataFrame, spouts: Sequence[SpoutNode]) -> dict[int, DataFrame]:
    """Each spout's tuples of one batch of :func:`query_source`, by ``id`` of its node."""
    from pyspark.sql import functions as F

    if len(spouts) == 1:
        return {id(spouts[0]): df}
    return {id(node): _untyped_marked(df.where(F.col(SPOUT_TAG) == i).select(f"__s{i}.*"), node)
            for i, node in enumerate(spouts)}


def _untyped_marked(df: DataFrame, node: SpoutNode) -> DataFrame:
    """A spout's columns out of the union's struct with their untyped marks again (a struct
    keeps no column metadata): the spout's fields of type ``"object"``."""
    types = getattr(node.spout.fields, "types", {})  # plain names (no Fields): nothing untyped
    untyped = [name for name in df.columns if types.get(name) == OBJECT]
    if not untyped:
        return df
    return df.select(*(marked(df[name], name) if name in untyped else df[name] for name in df.columns))


def _observed(stream: str, df: DataFrame) -> DataFrame:
    """Count what the spout reports per batch (observed metrics): records it could not decode
    (then dropped) and its read time; the columns that carried them are dropped."""
    from pyspark.sql import functions as F

    metrics = []
    if MALFORMED_COLUMN in df.columns:
        metrics.append(F.count(F.col(MALFORMED_COLUMN)).alias("malformed_records"))
    if READ_MS_COLUMN in df.columns:
        metrics.append(F.coalesce(F.sum(F.col(READ_MS_COLUMN)), F.lit(0.0)).alias("read_ms"))
    if not metrics:
        return df
    df = df.observe(f"{stream}_spout", *metrics)
    if MALFORMED_COLUMN in df.columns:
        df = df.where(F.col(MALFORMED_COLUMN).isNull()).drop(MALFORMED_COLUMN)
    return df.drop(READ_MS_COLUMN)


__all__ = ["SPOUT_TAG", "query_source", "split_sources", "spout_dataframe"]
