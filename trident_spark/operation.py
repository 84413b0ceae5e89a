"""The interfaces user code implements: Trident's operations, in Python.

Operations are pickled to executors and run there, once per partition of a
batch: ``prepare(conf, context)`` first, ``cleanup()`` at the end. They must not
hold driver-side objects (SparkSession, open connections made on the driver).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from trident_spark.fields import TridentTuple


@dataclass
class OperationContext:
    """Where an operation runs: ``partition_index`` of ``num_partitions``, and the txid."""

    partition_index: int
    num_partitions: int
    txid: int
    operation_name: str = ""


class TridentCollector:
    """Receives what an operation emits; one ``emit`` makes one output tuple.

    Examples
    --------
    >>> c = TridentCollector()
    >>> c.emit(["cat"]); c.emit(["dog"])
    >>> c.emitted
    [['cat'], ['dog']]
    """

    def __init__(self) -> None:
        self.emitted: list[list[Any]] = []

    def emit(self, values: Sequence[Any]) -> None:
        self.emitted.append(list(values))

    def reportError(self, error: BaseException) -> None:
        raise error

    def reset(self) -> list[list[Any]]:
        out, self.emitted = self.emitted, []
        return out


class Operation:
    """Lifecycle shared by every operation."""

    def prepare(self, conf: dict[str, Any], context: OperationContext) -> None:
        """Called on the executor before the first tuple of a partition."""

    def cleanup(self) -> None:
        """Called on the executor after the last tuple of a partition."""


class BaseFunction(Operation):
    """Trident's Function: emit zero or more tuples of new fields per input tuple.

    Examples
    --------
    >>> class Split(BaseFunction):
    ...     def execute(self, tuple, collector):
    ...         for word in tuple.getString(0).split():
    ...             collector.emit([word])
    >>> c = TridentCollector(); Split().execute(TridentTuple(["a b"], ["value"]), c); c.emitted
    [['a'], ['b']]
    """

    output_types: dict[str, str] = {}

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        raise NotImplementedError(f"{type(self).__name__}.execute(tuple, collector)")


class BaseFilter(Operation):
    """Trident's Filter: keep the tuples for which ``isKeep`` is true.

    Examples
    --------
    >>> class Short(BaseFilter):
    ...     def isKeep(self, tuple):
    ...         return len(tuple[0]) < 4
    >>> Short().isKeep(TridentTuple(["cat"], ["word"]))
    True
    """

    def isKeep(self, tuple: TridentTuple) -> bool:
        raise NotImplementedError(f"{type(self).__name__}.isKeep(tuple)")


class Consumer(Operation):
    """Trident's Consumer, for ``peek``: sees every tuple, changes nothing."""

    def accept(self, tuple: TridentTuple) -> None:
        raise NotImplementedError(f"{type(self).__name__}.accept(tuple)")


class CallableConsumer(Consumer):
    """A plain callable used where a Consumer (``peek``) is expected."""

    def __init__(self, fn: Callable[[TridentTuple], Any]) -> None:
        self.fn = fn

    def accept(self, tuple: TridentTuple) -> None:
        self.fn(tuple)

    def __repr__(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))
