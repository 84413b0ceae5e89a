"""The collector a spout of your own emits into: each tuple checked against the spout's fields.

A batch's tuples are kept in memory where they are emitted (the driver's data-source
process for a new batch, a Spark task for a replayed transactional batch) until they
become the batch's rows; a tuple of the wrong width fails at ``emit``, naming the spout,
the partition and the batch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from trident_spark.errors import SpoutError

_log = logging.getLogger(__name__)


class SpoutCollector:
    """Trident's ``TridentCollector`` as a spout sees it: ``emit(values)`` and ``reportError(e)``.

    Parameters
    ----------
    fields : list of str
        The spout's output fields: every emitted tuple has one value for each.
    where : str
        Names the spout, partition and batch in errors, e.g. ``"spout Words, partition 'p0', batch 3"``.

    Examples
    --------
    >>> collector = SpoutCollector(["word", "n"], "spout Words, batch 0")
    >>> collector.emit(["cat", 1])
    >>> collector.tuples
    [['cat', 1]]
    >>> collector.emit(["dog"])
    Traceback (most recent call last):
    ...
    trident_spark.errors.SpoutError: spout Words, batch 0: emitted ['dog'] (1 value), but the spout's ...
    """

    def __init__(self, fields: Sequence[str], where: str) -> None:
        self._fields = list(fields)
        self._where = where
        self.tuples: list[list[Any]] = []

    def emit(self, values: Sequence[Any]) -> None:
        """Add one tuple to the batch: a list (or tuple) of values, one per output field."""
        if isinstance(values, str | bytes) or not isinstance(values, Sequence):
            example = ", ".join(f"<{f}>" for f in self._fields)
            raise SpoutError(
                f"{self._where}: emitted {values!r} ({type(values).__name__}), not a list of values; "
                f"emit one list per tuple, e.g. collector.emit([{example}])")
        if len(values) != len(self._fields):
            count = f"{len(values)} value{'s' if len(values) != 1 else ''}"
            raise SpoutError(
                f"{self._where}: emitted {list(values)!r} ({count}), but the spout's output fields are "
                f"{self._fields}; emit one value per field, in that order")
        self.tuples.append(list(values))

    def reportError(self, error: BaseException) -> None:
        """Log ``error`` and go on (Trident's ``reportError``): the batch is not failed."""
        _log.warning("%s reported %s: %s", self._where, type(error).__name__, error)

    def flush(self) -> None:
        """Nothing to do: the tuples are the batch's rows once the call returns."""


__all__ = ["SpoutCollector"]
