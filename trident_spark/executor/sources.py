"""The spouts' reads: a query's streaming input, and each spout's tuples of one batch.

A query reads all its spouts in one streaming DataFrame (so merged or joined streams share
batch ids): :func:`query_source` builds it on the driver when the query starts; Spark's
sources then read on the executors, once per batch. :func:`split_sources` takes one batch of
it apart again, one DataFrame per spout. Spouts are used only through
:class:`~trident_spark.spout.base.Spout`.

A query reading one spout read by a Python data source reads it *deferred*
(``spout.deferred_read``): Spark's source plans the batches as before, but a batch's
DataFrame holds the spout's partitions, read by the planner inside the first Python
operations (fused: :class:`DeferredBatch`). :func:`query_input` decides, and says why not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError
from trident_spark.executor.object_columns import marked
from trident_spark.graph import SpoutNode
from trident_spark.object_values import OBJECT
from trident_spark.spout.base import MALFORMED_COLUMN, READ_MS_COLUMN, SpoutRun
from trident_spark.spout.deferred_read import DeferredRead

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: In the union of several spouts: the column telling which spout (its index) a row is from.
SPOUT_TAG = "__spout"

#: The topology configuration key that turns fusing spouts with their first operations off.
FUSION_CONF = "trident.fusion"


@dataclass(frozen=True)
class DeferredBatch:
    """One batch of a spout read deferred: its partitions, one row each, and how to read them.

    Examples
    --------
    >>> DeferredBatch.__dataclass_fields__.keys() == {"partitions", "read"}
    True
    """

    partitions: DataFrame
    read: DeferredRead


@dataclass
class QueryInput:
    """A query's streaming input (:func:`query_input`).

    Attributes
    ----------
    df : DataFrame
        The streaming DataFrame the query runs on.
    deferred : dict
        ``{id(spout node): DeferredRead}`` for a spout read inside its first operations.
    not_deferred : dict
        ``{id(spout node): why}`` for the others (``explain()`` says it).
    records : DataFrame or None
        With a spout read deferred: the spout's own DataFrame of records, the input to run on
        instead when the stream's first operations turn out not to read its partitions
        (:meth:`read_alone`).
    """

    df: DataFrame
    deferred: dict[int, DeferredRead] = field(default_factory=dict)
    not_deferred: dict[int, str] = field(default_factory=dict)
    records: DataFrame | None = None

    def read_alone(self, why: dict[int, str]) -> QueryInput:
        """The input with its spout read by its own source, as without fusion (``why``: for each
        spout, why its first operations do not read it)."""
        assert self.records is not None, "only a spout read deferred has its records' DataFrame"
        return QueryInput(self.records, not_deferred=why)


def fusion_enabled(conf: dict[str, Any] | None) -> bool:
    """``conf[FUSION_CONF]`` (default true), read as a boolean: ``True``/``False``, or their text
    (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``, any case); anything else is
    a :class:`~trident_spark.errors.TopologyError` naming the key and the value, not silently on.

    Examples
    --------
    >>> fusion_enabled({}), fusion_enabled({"trident.fusion": "false"}), fusion_enabled({FUSION_CONF: False})
    (True, False, False)
    >>> fusion_enabled({FUSION_CONF: "flase"})
    Traceback (most recent call last):
    ...
    trident_spark.errors.TopologyError: run(conf={'trident.fusion': 'flase'}): give True or False ...
    """
    value = (conf or {}).get(FUSION_CONF, True)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE_TEXTS:
        return True
    if text in _FALSE_TEXTS:
        return False
    raise TopologyError(
        f"run(conf={{{FUSION_CONF!r}: {value!r}}}): give True or False (whether a spout is read in one "
        "task with the stream's first Python operations; on by default, docs/reference/configuration.md)")


_TRUE_TEXTS = frozenset(("true", "1", "yes", "on"))
_FALSE_TEXTS = frozenset(("false", "0", "no", "off"))


def query_input(spark: SparkSession, spouts: Sequence[SpoutNode], run: SpoutRun | None = None,
                fuse: bool = True) -> QueryInput:
    """The streaming input of a query reading ``spouts`` (:func:`query_source`), its one spout
    read deferred when it can be (``fuse``, and a spout read by a Python data source)."""
    if len(spouts) != 1:
        why = f"the query reads {len(spouts)} spouts in one union (merged or joined streams)"
        return QueryInput(query_source(spark, spouts, run), not_deferred={id(node): why for node in spouts})
    node = spouts[0]
    if not fuse:
        return QueryInput(query_source(spark, spouts, run),
                          not_deferred={id(node): f"fusion is off ({FUSION_CONF}=false)"})
    spout = node.spout.for_run(run or SpoutRun(None))
    df = _observed(node.stream_name, spout.to_dataframe(spark))
    source = spout.python_source()  # asked after to_dataframe, which resolves what it needs first
    if source is None:
        return QueryInput(df, not_deferred={id(node): f"{type(spout).__name__} is not read by a Python data "
                                                      "source (its records are read in the JVM)"})
    reader_schema = _schema_of(source.data_source(dict(source.options)).schema())
    read = DeferredRead.of(node.stream_name, source, reader_schema, df.schema)
    return QueryInput(read.dataframe(spark), deferred={id(node): read}, records=df)


def _schema_of(schema: Any) -> Any:
    """A data source's ``schema()`` (a StructType or DDL text) as a StructType."""
    from pyspark.sql.types import StructType

    return schema if isinstance(schema, StructType) else StructType.fromDDL(schema)


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


def split_sources(df: DataFrame, spouts: Sequence[SpoutNode], deferred: dict[int, DeferredRead] | None = None
                  ) -> dict[int, DataFrame | DeferredBatch]:
    """Each spout's tuples of one batch of :func:`query_input`, by ``id`` of its node (a spout
    read deferred: its partitions, :class:`DeferredBatch`)."""
    from pyspark.sql import functions as F

    if len(spouts) == 1:
        read = (deferred or {}).get(id(spouts[0]))
        return {id(spouts[0]): df if read is None else DeferredBatch(df, read)}
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


__all__ = ["FUSION_CONF", "SPOUT_TAG", "DeferredBatch", "QueryInput", "fusion_enabled", "query_input",
           "query_source", "split_sources", "spout_dataframe"]
