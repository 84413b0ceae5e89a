"""Executor side of the per-batch metrics: what one Spark task counts, sent once to the batch's accumulator.

Executors add to one Spark accumulator per query (a dict summed key by key); the keys are
described in :mod:`trident_spark.runtime.metrics`, which turns a batch's sum into
``BatchProgress.stages`` on the driver. Here: the key names, the accumulator's sum
(:class:`CountersParam`), a task's local counters (:class:`StageClock`) and the wrapper that
times a ``mapInArrow`` function (:func:`timed`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.accumulators import AccumulatorParam

if TYPE_CHECKING:
    from pyspark import Accumulator

STAGE = "stage"
ERRORS = "errors"

#: Stage kinds, in the order a batch's data meets them (the order stages are listed in).
KINDS = ("source", "python", "state_get", "aggregate", "state_query", "state_put", "spark")


@dataclass(frozen=True)
class StageName:
    """A stage's name: the operation's label and, for an operation that runs as several
    stages, which one (``step``): an aggregation's ``partial`` and ``final`` halves, a
    persist's ``update`` and its store round trips ``multiGet`` and ``multiPut``.

    Stages are counted under this record, so the label is never parsed back out of the
    text; the text (``str()``, shown in progress and ``trident-spark status``) is
    ``"<label> / <step>"``, or the label alone.

    Examples
    --------
    >>> str(StageName("persistentAggregate(Count)", "multiGet")), str(StageName("each(Split)"))
    ('persistentAggregate(Count) / multiGet', 'each(Split)')
    >>> StageName.of("counts / update")
    StageName(label='counts', step='update')
    """

    label: str
    step: str = ""

    def __str__(self) -> str:
        return f"{self.label} / {self.step}" if self.step else self.label

    @classmethod
    def of(cls, name: str | StageName) -> StageName:
        """``name`` as a record; a text (counters written as text) is read back: a known step
        after the last ``" / "`` is the step, anything else is all label."""
        if isinstance(name, StageName):
            return name
        label, _, step = name.rpartition(" / ")
        return cls(label, step) if label and step in STEPS else cls(name)


#: The steps of operations that run as several stages (see :class:`StageName`).
STEPS = ("partial", "final", "update", "multiGet", "multiPut")


class CountersParam(AccumulatorParam):  # type: ignore[type-arg]
    """Sums the counters the tasks of a batch report, key by key."""

    def zero(self, value: dict[Any, float]) -> dict[Any, float]:
        return {}

    def addInPlace(self, value1: dict[Any, float], value2: dict[Any, float]) -> dict[Any, float]:
        for name, count in value2.items():
            if isinstance(count, int | float):
                value1[name] = value1.get(name, 0) + count
            else:  # a message (the last error reported): the latest one is kept
                value1[name] = count
        return value1


class StageClock:
    """A task's stage counters, gathered locally and sent to the accumulator once.

    Examples
    --------
    >>> clock = StageClock()
    >>> clock.add("python", "each(Split)", ms=2.5, rows_in=10, rows_out=40)
    >>> clock.counters[("stage", "python", "each(Split)", "rows_out")]
    40
    """

    def __init__(self) -> None:
        self.counters: dict[Any, float] = {}

    def add(self, kind: str, name: str | StageName, ms: float = 0.0, rows_in: int | None = None,
            rows_out: int | None = None) -> None:
        for metric, value in (("ms", ms), ("rows_in", rows_in), ("rows_out", rows_out), ("tasks", 1)):
            if value is not None:
                key = (STAGE, kind, name, metric)
                self.counters[key] = self.counters.get(key, 0) + value

    def errors(self, name: str, errors: Any) -> None:
        """What operator ``name`` reported with ``collector.reportError`` in this task
        (a :class:`~trident_spark.operation.ReportedErrors`; nothing when it reported none)."""
        if errors.count:
            key = (ERRORS, name, "reported")
            self.counters[key] = self.counters.get(key, 0) + errors.count
            self.counters[(ERRORS, name, "last")] = errors.last

    def send(self, accumulator: Accumulator[dict[Any, float]] | None) -> None:
        """Add what this task counted to the batch's accumulator (nothing when there is none)."""
        if accumulator is not None and self.counters:
            accumulator.add(self.counters)
        self.counters = {}


def _rows(batch: Any) -> int:
    return int(getattr(batch, "num_rows", 0))


def timed(fn: Callable[..., Iterator[Any]], kind: str, name: str | StageName,
          accumulator: Accumulator[dict[Any, float]] | None) -> Callable[..., Iterator[Any]]:
    """Wrap a ``mapInArrow`` function so its task time and rows are counted as stage ``name``.

    The time spent pulling input batches (the stages before, in the same task) is taken
    out; time while the output waits downstream is not counted either. Without an
    accumulator the function is returned unchanged.
    """
    if accumulator is None:
        return fn

    @functools.wraps(fn)
    def run(batches: Iterator[Any], *args: Any) -> Iterator[Any]:
        waited = 0.0
        rows_in = rows_out = 0

        def pulled() -> Iterator[Any]:
            nonlocal waited, rows_in
            source = iter(batches)
            while True:
                started = time.perf_counter()
                try:
                    batch = next(source)
                except StopIteration:
                    waited += time.perf_counter() - started
                    return
                waited += time.perf_counter() - started
                rows_in += _rows(batch)
                yield batch

        spent = 0.0
        outputs = fn(pulled(), *args)
        try:
            while True:
                started = time.perf_counter()
                try:
                    out = next(outputs)
                except StopIteration:
                    spent += time.perf_counter() - started
                    break
                spent += time.perf_counter() - started
                rows_out += _rows(out)
                yield out
        finally:
            clock = StageClock()
            clock.add(kind, name, ms=max(0.0, spent - waited) * 1000, rows_in=rows_in, rows_out=rows_out)
            clock.send(accumulator)

    return run


__all__ = ["ERRORS", "KINDS", "STAGE", "CountersParam", "StageClock", "timed"]
