"""FixedBatchSpout: Trident's example spout. Fixed tuples, cut into batches, optionally cycling.

Batch ``k`` holds the next ``max_batch_size`` tuples after batch ``k - 1``, as Storm's
``FixedBatchSpout.emitBatch`` takes them: a batch never wraps around the end of the tuples, so
the last batch of a cycle may be short, and with ``setCycle(True)`` the next starts again at
the first tuple. The batches of one cycle are stored once, as a FeederBatchSpout's are; the
data source (:mod:`trident_spark.spout.testing.fixed_source`) serves batch ``k`` from stored batch
``k mod period``, so a replayed batch id emits the same tuples.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trident_spark.errors import InvalidArgumentError, WrongTypeError, check_int
from trident_spark.fields import Fields
from trident_spark.spout.base import PythonSource, Spout
from trident_spark.spout.testing.feeder import FeederBatchSpout

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class FixedBatchSpout(Spout):
    """Trident's ``FixedBatchSpout(fields, maxBatchSize, *values)``, for examples and tests.

    Without ``setCycle(True)`` the spout emits each tuple once: ``ceil(len(values) /
    max_batch_size)`` batches, then nothing more (Trident's further batches are empty).

    Parameters
    ----------
    fields : Fields or list of str
        The tuples' fields (a declared type, or none: any Python value, as for
        :class:`FeederBatchSpout`).
    max_batch_size : int
        Tuples per batch (the last batch of the tuples may be shorter).
    *values : list
        The tuples, one list of values each.
    num_partitions : int, default 1
        Spark partitions per batch (Storm runs this spout in one task).
    directory : str, optional
        Where the batches are stored (default: a temporary directory).
    max_batches : int, optional
        With ``setCycle(True)``: how many batches a ``trigger="available_now"`` run reads
        before it ends. Without it such a run ends after one cycle. With a processing-time
        trigger a cycling spout never runs out: stop the run with ``handle.stop()``.

    Examples
    --------
    >>> spout = FixedBatchSpout(Fields("sentence"), 3,
    ...                         ["the cow jumped over the moon"],
    ...                         ["the man went to the store and bought some candy"],
    ...                         ["four score and seven years ago"],
    ...                         ["how many apples can you eat"])
    >>> spout.setCycle(True)
    >>> [spout.batch(k) for k in range(3)][1]
    [['how many apples can you eat']]
    >>> spout.period
    2
    """

    def __init__(self, fields: Fields | Sequence[str], max_batch_size: int, *values: Sequence[Any],
                 num_partitions: int = 1, directory: str | os.PathLike[str] | None = None,
                 max_batches: int | None = None) -> None:
        check_int(max_batch_size, "max_batch_size", message="FixedBatchSpout(max_batch_size={value!r}): give "
                  "an int >= 1, the number of tuples per batch")
        if max_batches is not None:
            check_int(max_batches, "max_batches",
                      message="FixedBatchSpout(max_batches={value!r}): give an int >= 1 or None")
        if len(values) == 1 and isinstance(values[0], list) and values[0] \
                and all(isinstance(v, list | tuple) for v in values[0]):
            raise InvalidArgumentError("FixedBatchSpout: give the tuples as separate arguments, "
                                       "FixedBatchSpout(fields, 3, ['a'], ['b']), or unpack a list: "
                                       "FixedBatchSpout(fields, 3, *tuples)")
        self._feeder = FeederBatchSpout(fields, num_partitions=num_partitions, directory=directory)
        self._values = [list(v) for v in values]
        self._max_batch_size = max_batch_size
        self._max_batches = max_batches
        self._cycle = False
        if self._feeder.batches == 0:
            for k in range(self.period):
                self._feeder.feed(self.batch(k))  # checks each tuple against the fields
        elif self._feeder.batches != self.period:
            raise InvalidArgumentError(
                f"FixedBatchSpout: {self._feeder.directory} holds {self._feeder.batches} "
                f"batches, not the {self.period} of these tuples; give this spout another "
                "directory")

    def max_task_parallelism(self) -> int:
        """Trident's FixedBatchSpout sets ``topology.max.task.parallelism`` to 1: its stage runs in
        one task whatever ``parallelismHint`` asks (here: in its ``num_partitions``, 1 by default).

        Examples
        --------
        >>> FixedBatchSpout(["word"], 2, ["a"]).max_task_parallelism()
        1
        """
        return self._feeder.num_partitions

    def setCycle(self, cycle: bool) -> None:
        """Start again at the first tuple once all were emitted (Trident's ``setCycle``)."""
        if not isinstance(cycle, bool):
            raise WrongTypeError(f"FixedBatchSpout.setCycle takes True or False, got {cycle!r}")
        self._cycle = cycle

    @property
    def cycle(self) -> bool:
        """Whether the spout cycles."""
        return self._cycle

    @property
    def period(self) -> int:
        """Batches in one pass over the tuples (0 without tuples)."""
        return -(-len(self._values) // self._max_batch_size)

    def batch(self, k: int) -> list[list[Any]]:
        """The tuples of batch ``k`` (from 0), as Trident's ``emitBatch`` gives them."""
        if self.period == 0 or (k >= self.period and not self._cycle):
            return []
        start = (k % self.period) * self._max_batch_size
        return [list(v) for v in self._values[start:start + self._max_batch_size]]

    @property
    def fields(self) -> Fields:
        """The fields with their types (see :attr:`FeederBatchSpout.fields`)."""
        return self._feeder.fields

    def __repr__(self) -> str:
        return (f"FixedBatchSpout(fields={list(self._feeder.fields)}, max_batch_size={self._max_batch_size}, "
                f"tuples={len(self._values)}, cycle={self._cycle})")

    def check(self) -> None:
        """Fail fast if the batch directory is gone."""
        self._feeder.check()

    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        """The spout as a streaming DataFrame (Spark data source ``trident_fixed_batch``)."""
        source = self.python_source()
        assert source is not None
        return self._feeder.mark_untyped(source.load(spark))

    def python_source(self) -> PythonSource | None:
        """The Spark data source ``trident_fixed_batch`` cycling through the spout's batches."""
        from trident_spark.spout.testing.fixed_source import FixedBatchDataSource

        return PythonSource(FixedBatchDataSource, {
            "directory": self._feeder.directory, "num_partitions": str(self._feeder.num_partitions),
            "schema": self._feeder.schema_ddl(), "period": str(self.period),
            "cycle": "true" if self._cycle else "false", "max_batches": str(self._max_batches or 0)})

__all__ = ["FixedBatchSpout"]
