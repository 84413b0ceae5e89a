"""bench/state.py's Arrow-batch Split (``split=arrow``): the user's word splitter written as an
``ArrowFunction`` (issue 31), splitting a whole batch of sentences with pyarrow's compute functions.

``trident_spark.arrow_operation`` comes with issue 31's Arrow-batch operations; in a tree without
it this module still imports (so the other contenders run), ``ArrowSplit`` is None and
:data:`ARROW_MISSING` says why ``split=arrow`` cannot run.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

ARROW_MISSING: str | None
try:
    from trident_spark.arrow_operation import ArrowFunction
except ImportError as missing:
    ARROW_MISSING = (f"split=arrow needs trident_spark.arrow_operation (issue 31's Arrow-batch operations), "
                     f"which the trident_spark this bench imports does not have ({missing}); run from a "
                     "tree that has it, or leave split=arrow out of --backends")
    ArrowSplit: Any = None
else:
    ARROW_MISSING = None

    class ArrowSplit(ArrowFunction):  # type: ignore[no-redef,misc]
        """Split each sentence on runs of whitespace, as ``str.split()`` does, a batch at a time.

        Examples
        --------
        >>> batch = pa.record_batch([pa.array(["a b", " c  d "])], names=["value"])
        >>> parents, (words,) = ArrowSplit().execute_arrow(batch)
        >>> parents.to_pylist(), words.to_pylist()
        ([0, 0, 1, 1], ['a', 'b', 'c', 'd'])
        """

        def execute_arrow(self, batch: pa.RecordBatch) -> tuple[pa.Array, Sequence[pa.Array]]:
            lists = pc.utf8_split_whitespace(batch.column(0))
            parents, words = pc.list_parent_indices(lists), pc.list_flatten(lists)
            # Leading or trailing whitespace leaves empty strings, which str.split() never gives.
            keep = pc.not_equal(words, "")
            return pc.filter(parents, keep), [pc.filter(words, keep)]


def ship_by_value() -> None:
    """Executors import ``trident_spark`` but not this file: ship ``ArrowSplit`` by value
    (as bench/dsl.py does for its ``Split``)."""
    from pyspark import cloudpickle

    module = sys.modules[__name__]
    if module.__name__ != "__main__":
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
