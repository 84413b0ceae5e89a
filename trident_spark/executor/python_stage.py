"""Executor side of the Python operators: a fused run of each/filter/peek over Arrow batches.

One ``mapInArrow`` call runs a whole chain of Python operators per partition,
with one Python call per tuple per operator and no per-row py4j. Columns the
operators only pass through are never turned into Python objects: output
columns of the input are gathered with Arrow's ``take`` by source row.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from trident_spark.errors import OperatorError, TopologyError
from trident_spark.executor.instances import host_partition, task_instances
from trident_spark.executor.kernel import MAX_TUPLE_CHARS as MAX_TUPLE_CHARS  # the tests' bound
from trident_spark.executor.kernel import TupleColumns, consume, each_columns, keep_indices, map_columns
from trident_spark.executor.metrics import StageClock
from trident_spark.fields import Fields
from trident_spark.object_values import UncarriableValueError, decode_column, encode_column
from trident_spark.operation import (
    BaseFilter,
    BaseFunction,
    Consumer,
    Operation,
    OperationContext,
    ReportedErrors,
)
from trident_spark.worker_gc import gc_paused, settle_imports


@dataclass
class PythonStep:
    """One operator of a fused stage, as the executor needs it."""

    label: str
    operation: Operation
    input_fields: Fields
    function_fields: Fields  # new fields appended by a Function, or a map's output; empty otherwise
    kind: str = "each"  # "each" (Function, Filter, Consumer), "map" or "flatMap"
    keeps_types: bool = False  # a map without output fields: the input types stay


class Partials(Protocol):
    """What a stage's tail keeps of one partition's tuples (``executor.partial_combine``)."""

    def add(self, column: Callable[[str], list[Any]], rows: int) -> None:
        """Take ``rows`` tuples: ``column(name)`` gives a field's values."""

    def batch(self) -> pa.RecordBatch | None:
        """What the partition outputs, once all its tuples came."""

    def count(self, clock: StageClock) -> None:
        """Add the tail's time and rows to the task's counters."""


class StageTail(Protocol):
    """Where a fused stage's tuples go instead of the output: a partial aggregation."""

    def start(self) -> Partials:
        """The tail of one partition, empty."""


class _Batch:
    """Tuples of one Arrow batch while operators transform them.

    ``rows[i]`` is the source row tuple ``i`` came from; ``extra[name][i]`` holds
    fields added by Functions so far.
    """

    def __init__(self, source: pa.RecordBatch, untyped: frozenset[str] = frozenset()) -> None:
        self.source = source
        self.untyped = untyped  # the source's untyped fields: their values are decoded when read
        self.rows: list[int] = list(range(source.num_rows))
        self.identity = True  # rows[i] == i: the source batch unchanged so far
        self.extra: dict[str, list[Any]] = {}
        self._source_values: dict[str, list[Any]] = {}

    def column(self, name: str) -> list[Any]:
        """Values of field ``name`` for the current tuples, in order."""
        if name in self.extra:
            return self.extra[name]
        values = self._source_values.get(name)
        if values is None:
            column = self.source.column(name)
            values = self._source_values[name] = (decode_column(column) if name in self.untyped
                                                  else column.to_pylist())
        return values if self.identity else list(map(values.__getitem__, self.rows))

    def keep(self, indices: list[int]) -> None:
        """Keep tuples ``indices`` (in that order; an index may repeat)."""
        if len(indices) == len(self.rows) and indices == list(range(len(self.rows))):
            return
        self.rows = indices if self.identity else [self.rows[i] for i in indices]
        self.identity = False
        self.extra = {k: [v[i] for i in indices] for k, v in self.extra.items()}


def run_stage(steps: Sequence[PythonStep], output_fields: Sequence[str], new_types: dict[str, pa.DataType],
              txid: int, batches: Iterator[pa.RecordBatch], conf: dict[str, Any] | None = None,
              num_partitions: int = -1, metrics: Any = None,
              untyped: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
              tail: StageTail | None = None) -> Iterator[pa.RecordBatch]:
    """Run ``steps`` over one partition's Arrow batches (called inside ``mapInArrow``).

    ``new_types`` are the Arrow types of the fields Functions add; the other
    output fields keep the types Spark gave the input. ``untyped``: the input's and the
    output's untyped fields (``trident_spark.object_values``): read decoded, written encoded.
    ``metrics``: the batch's
    accumulator, where each operator's time and rows in and out are added, and the errors
    it reported (``collector.reportError``).

    Operations are prepared for this task and cleaned up at its end, or, run in an instance
    host (``executor.instances``), the partition's kept instances are used.

    With a ``tail`` (a partial aggregation fused into the stage), the tuples go to it
    instead, and the stage outputs what it gives when the partition ends.
    """
    settle_imports()
    instances = task_instances()
    partition = partition_index()
    steps = [dataclasses.replace(step, operation=instances.acquire(
        i, step.operation, dict(conf or {}), OperationContext(partition, num_partitions, txid, step.label)))
        for i, step in enumerate(steps)]
    errors = [ReportedErrors(step.label) for step in steps]
    spent = [0.0] * len(steps)
    rows_in = [0] * len(steps)
    rows_out = [0] * len(steps)
    producers = {name: step.label for step in steps for name in step.function_fields}
    partials = tail.start() if tail is not None else None
    try:
        for source in batches:
            if source.num_rows == 0:
                continue
            out = None
            with gc_paused():
                batch = _Batch(source, untyped[0])
                for i, step in enumerate(steps):
                    started = time.perf_counter()
                    rows_in[i] += len(batch.rows)
                    _apply(step, batch, errors[i])
                    rows_out[i] += len(batch.rows)
                    spent[i] += time.perf_counter() - started
                    if not batch.rows:
                        break
                if batch.rows and partials is not None:
                    partials.add(batch.column, len(batch.rows))
                elif batch.rows:
                    started = time.perf_counter()
                    schema = pa.schema([pa.field(n, new_types[n]) if n in new_types
                                        else source.schema.field(n) for n in output_fields])
                    out = _to_arrow(batch, schema, untyped[1], producers)
                    spent[-1] += time.perf_counter() - started  # back to Arrow: the last operator's
            if out is not None:
                yield out
        if partials is not None:
            with gc_paused():
                out = partials.batch()
            if out is not None:
                yield out
    finally:
        instances.release()
        if metrics is not None:
            clock = StageClock()
            if partials is not None:
                partials.count(clock)
            for i, step in enumerate(steps):
                clock.add("python", step.label, ms=spent[i] * 1000, rows_in=rows_in[i], rows_out=rows_out[i])
                clock.errors(step.label, errors[i])
            clock.send(metrics)


def partition_index() -> int:
    """The Spark partition this task runs (0 outside Spark; in an instance host, the task's)."""
    from pyspark import TaskContext

    hosted = host_partition()
    if hosted is not None:
        return hosted
    task = TaskContext.get()
    return task.partitionId() if task else 0


def _apply(step: PythonStep, batch: _Batch, errors: ReportedErrors | None = None) -> None:
    fields = step.input_fields
    tuples = TupleColumns(fields, [batch.column(name) for name in fields], len(batch.rows))
    op = step.operation
    if step.kind in ("map", "flatMap"):
        parents, columns = map_columns(step.label, op.execute, tuples,  # type: ignore[attr-defined]
                                       step.function_fields, flat=step.kind == "flatMap")
        _append(step, batch, parents, columns)
    elif isinstance(op, BaseFilter):
        kept = keep_indices(step.label, op.isKeep, tuples)
        if len(kept) != len(batch.rows):
            batch.keep(kept)
    elif isinstance(op, Consumer):
        consume(step.label, op.accept, tuples)
    elif isinstance(op, BaseFunction):
        parents, columns = each_columns(step.label, op.execute, tuples, step.function_fields, errors)
        _append(step, batch, parents, columns)
    else:
        raise TopologyError(f"{step.label}: unsupported operation {op!r}")


def _append(step: PythonStep, batch: _Batch, parents: list[int], columns: list[list[Any]]) -> None:
    """The emitted tuples as the batch's tuples: each its parent's, with the new fields' values
    (``columns``, one per field; a map's output replaces the fields)."""
    batch.keep(parents)
    if step.kind != "each":
        batch.extra = {}
    for name, values in zip(step.function_fields, columns, strict=True):
        batch.extra[name] = values


def _to_arrow(batch: _Batch, schema: pa.Schema, untyped: frozenset[str] = frozenset(),
              producers: dict[str, str] | None = None) -> pa.RecordBatch:
    take = None  # the source rows the tuples came from, made when a source column is output
    arrays = []
    for field in schema:
        if field.name in batch.extra:
            arrays.append(to_arrow_column(field.name, batch.extra[field.name], field.type,
                                          untyped=field.name in untyped,
                                          operator=(producers or {}).get(field.name)))
        elif batch.identity:
            arrays.append(batch.source.column(field.name))
        else:
            take = pa.array(batch.rows, pa.int64()) if take is None else take
            arrays.append(batch.source.column(field.name).take(take))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def to_arrow_column(name: str, values: list[Any], type_: pa.DataType, *, untyped: bool = False,
                    operator: str | None = None) -> pa.Array:
    """``values`` emitted for field ``name`` as an Arrow array: tagged values for an untyped
    field (``trident_spark.object_values``), else of the field's declared type; or a clear error
    naming ``operator`` (the one that emitted them), the field and the value."""
    where = f"{operator}: " if operator else ""
    if untyped:
        try:
            return encode_column(values)
        except UncarriableValueError as exc:
            raise OperatorError(f"{where}field {name!r}: {exc}") from None
    try:
        return pa.array(values, type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        bad = _first_misfit(values, type_)
        example = _type_name_for(bad)
        raise OperatorError(
            f"{where}field {name!r}: emitted {bad!r:.100} ({type(bad).__name__}), which does not fit its "
            f"declared type {type_} ({exc}). Emit values of the declared type, declare another "
            f"(e.g. ['{name}:{example}']), or declare none (['{name}']): an undeclared field carries "
            f"any Python value."
        ) from exc


def _first_misfit(values: list[Any], type_: pa.DataType) -> Any:
    """The first value that does not convert to ``type_`` (the first non-None if none fails alone)."""
    for value in values:
        if value is None:
            continue
        try:
            pa.array([value], type_)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return value
    return next((v for v in values if v is not None), None)


def _type_name_for(value: Any) -> str:
    """The Spark SQL type a Python value would need (for error messages)."""
    for python_type, name in ((bool, "boolean"), (int, "bigint"), (float, "double"), (str, "string"),
                              (bytes, "binary")):
        if isinstance(value, python_type):
            return name
    return "string"
