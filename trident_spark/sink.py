"""Where a stream's output goes after each batch, on the driver: ``stream.collect()`` gathers
its tuples (:class:`CollectSink`); ``stream.foreachBatch(function)`` hands its DataFrame and
txid to the user's function, which may write it to any Spark sink (:class:`DataFrameSink`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeAlias

from trident_spark.fields import Fields


class CollectSink:
    """Tuples of every batch, by txid. A replayed txid replaces its earlier tuples.

    For tests, the demo and small outputs: everything is held in driver memory.

    Examples
    --------
    >>> sink = CollectSink(Fields("word"))
    >>> sink.record(0, [{"word": "cat"}]); sink.record(1, [{"word": "dog"}])
    >>> sink.tuples, sorted(sink.batches)
    ([{'word': 'cat'}, {'word': 'dog'}], [0, 1])
    """

    def __init__(self, fields: Fields) -> None:
        self.fields = fields
        self._batches: dict[int, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def record(self, txid: int, tuples: list[dict[str, Any]]) -> None:
        """Store one batch's tuples (called by the runner on the driver)."""
        with self._lock:
            self._batches[txid] = tuples

    @property
    def batches(self) -> dict[int, list[dict[str, Any]]]:
        """``{txid: [tuple as dict, ...]}`` in txid order."""
        with self._lock:
            return {txid: list(self._batches[txid]) for txid in sorted(self._batches)}

    @property
    def tuples(self) -> list[dict[str, Any]]:
        """All tuples, batch after batch."""
        return [t for batch in self.batches.values() for t in batch]

    def clear(self) -> None:
        with self._lock:
            self._batches.clear()

    def __len__(self) -> int:
        with self._lock:
            return sum(len(b) for b in self._batches.values())


class DRPCResultSink(CollectSink):
    """What reaches the end of a DRPC stream, per batch: the answer of the batch's request.

    ``topology.newDRPCStream`` adds one to the last node of the DRPC stream's part of the
    topology when it runs; the runtime takes each batch's tuples once the batch ends and posts
    them to the DRPC server (``runtime/drpc/answers``).

    Examples
    --------
    >>> sink = DRPCResultSink(Fields("sum"), "drpc-words")
    >>> sink.record(3, [{"sum": 5}])
    >>> sink.take(3), sink.take(3)
    ([{'sum': 5}], [])
    """

    def __init__(self, fields: Fields, stream_name: str) -> None:
        super().__init__(fields)
        self.stream_name = stream_name

    def take(self, txid: int) -> list[dict[str, Any]]:
        """The batch's tuples, forgotten here (each batch is answered once)."""
        with self._lock:
            return self._batches.pop(txid, [])


class DataFrameSink:
    """``stream.foreachBatch(function)``: each batch's DataFrame of the stream and its txid, to ``function``.

    The function runs on the driver after the batch's tuples reach the stream (Spark's
    ``foreachBatch`` shape: ``function(df, txid)``), before the batch commits: if it raises, the
    batch fails (a ``FailedException`` replays it). A replayed batch (a killed driver, a failed
    attempt) calls it again with the same txid and, from a transactional spout, the same rows: a
    sink that writes per txid (``mode("overwrite")`` into ``.../txid=N``) stays exact.

    Parameters
    ----------
    fields : Fields
        The stream's fields: the DataFrame's columns, in order.
    function : callable
        ``function(df, txid)``.
    types : dict of str to str
        Spark SQL types for fields that carry any Python value (declared without a type): the
        DataFrame has them as columns of these types; an untyped field not named here becomes a
        ``string`` column (``str(value)``; None stays null).

    Examples
    --------
    >>> sink = DataFrameSink(Fields("word"), lambda df, txid: None, {"word": "string"})
    >>> sink.label
    'foreachBatch(<lambda>)'
    """

    def __init__(self, fields: Fields, function: Callable[[Any, int], object], types: dict[str, str]) -> None:
        self.fields = fields
        self.function = function
        self.types = dict(types)

    @property
    def label(self) -> str:
        """The operator as messages name it."""
        return f"foreachBatch({getattr(self.function, '__name__', type(self.function).__name__)})"


#: What a stream's output may go to after each batch.
Sink: TypeAlias = CollectSink | DataFrameSink
