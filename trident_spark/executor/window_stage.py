"""Executor side of the window operators: one partition's windows, batch after batch.

:func:`run_window` (inside ``mapInArrow``, in the partition's instance host so that the windows
store stays open, and an in-memory one alive, from batch to batch) reads the batch's tuples in
the order the driver sorted them, hands them to the partition's
:class:`~trident_spark.windowing.WindowProcessor` with the batch's txid and timestamp, and
emits the aggregate of every window the batch closes, in order (Trident's
WindowTridentProcessor). The driver side is :mod:`trident_spark.planner.window_plan`.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from trident_spark.errors import OperatorError
from trident_spark.executor.instances import task_instances
from trident_spark.executor.kernel import AggStep, RunningAggregate, row_views
from trident_spark.executor.metrics import StageClock
from trident_spark.executor.python_stage import partition_index, to_arrow_column
from trident_spark.object_values import decode_column
from trident_spark.operation import Operation, OperationContext, ReportedErrors
from trident_spark.windowing.config import BaseWindowConfig
from trident_spark.windowing.processor import WindowProcessor
from trident_spark.windowing.store import WindowsStore
from trident_spark.worker_gc import settle_imports

#: The column the driver sorts each partition's tuples by (dropped before the aggregator sees them).
ORDER = "__order"


@dataclass
class WindowStep:
    """What the window task needs: the window, its store, the aggregator and the output layout."""

    label: str
    namespace: str  # the stage's key prefix in the store: "<query>/<node position>"
    config: BaseWindowConfig
    store_factory: Any
    agg: AggStep
    timestamp_field: str | None
    lateness_ms: int
    output_fields: list[str]
    output_types: dict[str, pa.DataType]
    untyped_in: frozenset[str] = frozenset()
    untyped_out: frozenset[str] = frozenset()


class WindowsStoreHolder(Operation):
    """The partition's open windows store, kept by the instance host from batch to batch."""

    def __init__(self, factory: Any) -> None:
        self.factory = factory
        self.store: WindowsStore | None = None

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.store = self.factory.create(dict(conf))

    def cleanup(self) -> None:
        if self.store is not None:
            self.store.shutdown()
            self.store = None


def run_hosted(step: WindowStep, txid: int, batch_ms: int, conf: dict[str, Any], num_partitions: int,
               metrics: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """:func:`run_window` as an instance host runs it."""
    return run_window(step, txid, batch_ms, conf, num_partitions, metrics, batches)


def run_window(step: WindowStep, txid: int, batch_ms: int, conf: dict[str, Any], num_partitions: int,
               metrics: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One partition of a window stage for batch ``txid`` (the ``mapInArrow`` body)."""
    settle_imports()
    instances = task_instances()
    partition = partition_index()
    context = OperationContext(partition, num_partitions, txid, step.label)
    holder = instances.acquire(0, WindowsStoreHolder(step.store_factory), dict(conf), context)
    errors = ReportedErrors(step.label)
    agg = AggStep(step.agg.label, instances.acquire(1, step.agg.aggregator, dict(conf), context),
                  step.agg.input_fields, step.agg.function_fields, errors)
    try:
        values: list[list[Any]] = []
        stamps: list[int] | None = [] if step.timestamp_field else None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            columns = [_column(batch, name, step.untyped_in) for name in step.agg.input_fields]
            values.extend([list(row) for row in zip(*columns, strict=True)] if columns
                          else [[] for _ in range(batch.num_rows)])
            if stamps is not None and step.timestamp_field is not None:
                raw = _column(batch, step.timestamp_field, step.untyped_in)
                stamps.extend(_millis(step, v) for v in raw)
        processor = WindowProcessor(holder.store, f"{step.namespace}/{partition}", step.config,
                                    event_time=stamps is not None, lateness_ms=step.lateness_ms)
        result = processor.run_batch(txid, batch_ms, values, stamps)
        rows: list[list[Any]] = []
        for window in result.windows:
            running = RunningAggregate(agg, txid)
            running.add_all(row_views(agg.input_fields, window))
            rows.extend(running.finish())
        if rows:
            arrays = [to_arrow_column(name, [r[j] for r in rows], step.output_types[name],
                                      untyped=name in step.untyped_out, operator=step.label)
                      for j, name in enumerate(step.output_fields)]
            yield pa.RecordBatch.from_arrays(arrays, names=step.output_fields)
        if metrics is not None:
            clock = StageClock()
            clock.errors(step.label, errors)
            if result.late:
                late = ReportedErrors(f"{step.label} late tuples")
                late.count, late.last = result.late, (
                    f"{result.late} tuple(s) older than the watermark dropped in batch {txid}")
                clock.errors(late.operation_name, late)
            clock.send(metrics)
    finally:
        instances.release()


def _column(batch: pa.RecordBatch, name: str, untyped: frozenset[str]) -> list[Any]:
    column = batch.column(name)
    return decode_column(column) if name in untyped else column.to_pylist()


def _millis(step: WindowStep, value: Any) -> int:
    """An event timestamp in ms since the epoch: an int/float of ms, or a datetime (naive: UTC)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    raise OperatorError(f"{step.label}: timestamp field {step.timestamp_field!r} holds {value!r}; give "
                        "milliseconds since the epoch (an int) or a datetime")


__all__ = ["ORDER", "WindowStep", "WindowsStoreHolder", "run_hosted", "run_window"]
