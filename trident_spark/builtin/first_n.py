"""FirstN: the first n tuples of each batch, in arrival order or sorted by a field (Trident's FirstN).

An assembly, as in Trident: each partition keeps its first n, then one
partition (``global_``) keeps the first n of those.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from trident_spark.errors import WrongTypeError, check_int
from trident_spark.fields import TridentTuple
from trident_spark.operation import Aggregator, Assembly, TridentCollector

if TYPE_CHECKING:
    from trident_spark.stream import Stream


def _check_n(n: Any) -> int:
    return check_int(n, "n", minimum=0, where="FirstN", note=" (how many tuples to keep)")


class _Emitted:
    """FirstNAgg's state: how many tuples it emitted."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class FirstNAgg(Aggregator[_Emitted]):
    """Emit the first ``n`` input tuples (all their fields) as they arrive; the rest are dropped.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.operation import TridentCollector
    >>> agg, out = FirstNAgg(2), TridentCollector()
    >>> state = agg.init(0, out)
    >>> for word in ["a", "b", "c"]:
    ...     agg.aggregate(state, TridentTuple([word], ["word"]), out)
    >>> agg.complete(state, out); out.emitted
    [['a'], ['b']]
    """

    output_types = {}

    def __init__(self, n: int) -> None:
        self.n = _check_n(n)

    def init(self, batch_id: int, collector: TridentCollector) -> _Emitted:
        return _Emitted()

    def aggregate(self, state: _Emitted, tuple: TridentTuple, collector: TridentCollector) -> None:
        if state.count < self.n:
            collector.emit(tuple.getValues())
            state.count += 1

    def complete(self, state: _Emitted, collector: TridentCollector) -> None:
        pass

    def spark_types(self, input_types: list[str]) -> list[str] | None:
        """The input fields' types: whole input tuples are emitted."""
        return list(input_types)

    def __repr__(self) -> str:
        return f"FirstNAgg({self.n})"


def _ascending_key(item: tuple[Any, list[Any]]) -> tuple[bool, Any]:
    return (item[0] is None, item[0])  # None after every value


def _descending_key(item: tuple[Any, list[Any]]) -> tuple[bool, Any]:
    return (item[0] is not None, item[0])  # used with nlargest: None still comes last


class FirstNSortedAgg(Aggregator[list[tuple[Any, list[Any]]]]):
    """Emit the ``n`` input tuples that sort first by ``sort_field``, in that order.

    ``reverse=False`` sorts ascending: the n smallest values, smallest first
    (Storm's PriorityQueue with the natural order hands out its least element
    first). ``reverse=True``: the n largest, largest first. Ties keep arrival
    order; tuples whose value is None sort after all others in both directions
    (Storm would fail on them). Memory stays about 2n tuples per partition.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.operation import TridentCollector
    >>> agg, out = FirstNSortedAgg(2, "n", reverse=True), TridentCollector()
    >>> state = agg.init(0, out)
    >>> for word, n in [("a", 1), ("b", 7), ("c", 3)]:
    ...     agg.aggregate(state, TridentTuple([word, n], ["word", "n"]), out)
    >>> agg.complete(state, out); out.emitted
    [['b', 7], ['c', 3]]
    """

    output_types = {}

    def __init__(self, n: int, sort_field: str, reverse: bool = False) -> None:
        if not isinstance(sort_field, str):
            raise WrongTypeError(f"FirstN: sort_field must be a field name, got {sort_field!r}")
        self.n = _check_n(n)
        self.sort_field = sort_field
        self.reverse = bool(reverse)

    def _first(self, items: list[tuple[Any, list[Any]]]) -> list[tuple[Any, list[Any]]]:
        # heapq.nsmallest / nlargest equal sorted(...)[:n]: stable, so ties keep arrival order.
        if self.reverse:
            return heapq.nlargest(self.n, items, key=_descending_key)
        return heapq.nsmallest(self.n, items, key=_ascending_key)

    def init(self, batch_id: int, collector: TridentCollector) -> list[tuple[Any, list[Any]]]:
        return []

    def aggregate(self, state: list[tuple[Any, list[Any]]], tuple: TridentTuple,
                  collector: TridentCollector) -> None:
        state.append((tuple.getValueByField(self.sort_field), tuple.getValues()))
        if len(state) >= 2 * self.n + 64:
            state[:] = self._first(state)

    def complete(self, state: list[tuple[Any, list[Any]]], collector: TridentCollector) -> None:
        for _, values in self._first(state):
            collector.emit(values)

    def spark_types(self, input_types: list[str]) -> list[str] | None:
        """The input fields' types: whole input tuples are emitted."""
        return list(input_types)

    def __repr__(self) -> str:
        return f"FirstNSortedAgg({self.n}, {self.sort_field!r}{', reverse=True' if self.reverse else ''})"


class FirstN(Assembly["Stream"]):
    """The first ``n`` tuples of each batch: Trident's ``FirstN`` assembly.

    ``stream.applyAssembly(FirstN(n, ...))`` keeps all the stream's fields.
    Without ``sort_field``: the first n tuples to arrive (which n, when the
    batch has several partitions, depends on their order). With it: the n
    tuples that sort first by ``sort_field`` (see :class:`FirstNSortedAgg`).

    Parameters
    ----------
    n : int
        How many tuples to keep per batch.
    sort_field : str, optional
        Sort by this field; None keeps arrival order.
    reverse : bool, default False
        False: smallest values first; True: largest first (top n).

    Examples
    --------
    >>> FirstN(3, "score", reverse=True)
    FirstN(3, 'score', reverse=True)
    >>> FirstN(3).agg
    FirstNAgg(3)
    """

    def __init__(self, n: int, sort_field: str | None = None, reverse: bool = False) -> None:
        self.n = _check_n(n)
        self.sort_field = sort_field
        self.reverse = bool(reverse)
        self.agg: Aggregator[Any] = (FirstNAgg(n) if sort_field is None
                                     else FirstNSortedAgg(n, sort_field, reverse))

    def apply(self, stream: Stream) -> Stream:
        """Trident's plan: first n per partition, then first n of those on one partition."""
        fields = stream.getOutputFields()
        return (stream.partitionAggregate(fields, self.agg, fields)
                .global_()
                .partitionAggregate(fields, self.agg, fields))

    def __repr__(self) -> str:
        args = [str(self.n)]
        if self.sort_field is not None:
            args.append(repr(self.sort_field))
        if self.reverse:
            args.append("reverse=True")
        return f"FirstN({', '.join(args)})"


__all__ = ["FirstN", "FirstNAgg", "FirstNSortedAgg"]
