"""``stream.collect()``: a stream's output gathered on the driver after each batch."""

from __future__ import annotations

import threading
from typing import Any

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
