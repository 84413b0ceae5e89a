"""Executor side of the Python operators: a fused run of each/filter/peek over Arrow batches.

One ``mapInArrow`` call runs a whole chain of Python operators per partition,
with one Python call per tuple per operator and no per-row py4j. Columns the
operators only pass through are never turned into Python objects: output
columns of the input are gathered with Arrow's ``take`` by source row.

An Arrow-batch operation (``trident_spark.arrow_operation``) is called once per batch
instead: its input fields as Arrow arrays, its output kept as Arrow arrays up to the
stage's output (or read as Python values by a per-tuple operator after it).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from trident_spark.arrow_operation import ArrowFilter, ArrowFunction, takes_arrow_batches
from trident_spark.errors import OperatorError, TopologyError
from trident_spark.executor.instances import host_partition, task_instances
from trident_spark.executor.kernel import MAX_TUPLE_CHARS as MAX_TUPLE_CHARS  # the tests' bound
from trident_spark.executor.kernel import (
    TupleColumns,
    consume,
    each_arrow,
    each_columns,
    keep_arrow,
    keep_indices,
    map_columns,
)
from trident_spark.executor.metrics import StageClock
from trident_spark.fields import Fields
from trident_spark.object_values import (
    UncarriableValueError,
    decode_arrow,
    decode_column,
    encode_arrow,
    encode_column,
    one_type_array,
)
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

    def add(self, column: Callable[[str], list[Any]], rows: int,
            arrow: Callable[[str], pa.Array | None] | None = None) -> None:
        """Take ``rows`` tuples: ``column(name)`` gives a field's values; ``arrow(name)``, when
        given, the same as an Arrow array (None: they hold no one Arrow type)."""

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
    fields added by Functions so far. Both are Python lists after per-tuple operators, Arrow
    arrays after Arrow-batch ones; each form is made from the other only when an operator
    of the other kind reads it.
    """

    def __init__(self, source: pa.RecordBatch, untyped: frozenset[str] = frozenset()) -> None:
        self.source = source
        self.untyped = untyped  # the source's untyped fields: their values are decoded when read
        self.rows: list[int] | pa.Array = list(range(source.num_rows))
        self.identity = True  # rows[i] == i: the source batch unchanged so far
        self.extra: dict[str, list[Any] | pa.Array] = {}
        self._source_values: dict[str, list[Any]] = {}
        self._source_arrays: dict[str, pa.Array | ValueError] = {}
        self._lists: dict[str, list[Any]] = {}  # extra Arrow fields as Python values, once read
        self._arrays: dict[str, pa.Array] = {}  # extra Python fields as Arrow arrays, once read

    def column(self, name: str) -> list[Any]:
        """Values of field ``name`` for the current tuples, in order."""
        if name in self.extra:
            extra = self.extra[name]
            if isinstance(extra, list):
                return extra
            listed = self._lists.get(name)
            if listed is None:
                listed = self._lists[name] = extra.to_pylist()
            return listed
        values = self._source_values.get(name)
        if values is None:
            column = self.source.column(name)
            values = self._source_values[name] = (decode_column(column) if name in self.untyped
                                                  else column.to_pylist())
        if self.identity:
            return values
        rows = self.rows if isinstance(self.rows, list) else self._row_list()
        return list(map(values.__getitem__, rows))

    def _row_list(self) -> list[int]:
        assert not isinstance(self.rows, list)
        listed: list[int] = self.rows.to_pylist()
        self.rows = listed
        return listed

    def arrow(self, name: str, operator: str) -> pa.Array:
        """Field ``name`` for the current tuples as an Arrow array, for an Arrow-batch operation
        (``operator``): an untyped field's values decoded to their one Arrow type, or an error."""
        array = self.arrow_column(name)
        if array is None:
            why = self._source_arrays.get(name, "its values have no one type")
            raise OperatorError(
                f"{operator}: field {name!r}: {why}; "
                f"an Arrow-batch operation needs one Arrow type per field. Declare the field's type "
                f"where it is made (e.g. ['{name}:string']), or use a per-tuple operation")
        return array

    def arrow_column(self, name: str) -> pa.Array | None:
        """Field ``name`` for the current tuples as an Arrow array (None: an untyped field or a
        per-tuple operator's field whose values hold no one Arrow type)."""
        extra = self.extra.get(name)
        if extra is not None:
            if isinstance(extra, pa.Array):
                return extra
            array = self._arrays.get(name)  # a per-tuple operator's values, kept as they are
            if array is None:
                try:
                    array = self._arrays[name] = one_type_array(extra)
                except ValueError as exc:
                    self._source_arrays[name] = exc
                    return None
            return array
        found = self._source_arrays.get(name)
        if found is None:
            column = self.source.column(name)
            try:
                found = decode_arrow(column) if name in self.untyped else column
            except ValueError as exc:
                found = exc
            self._source_arrays[name] = found
        if isinstance(found, ValueError):
            return None
        return found if self.identity else found.take(self._row_array())

    def set_extra(self, name: str, values: list[Any] | pa.Array) -> None:
        """Field ``name``'s values for the current tuples (a Function's new field)."""
        self.extra[name] = values
        self._lists.pop(name, None)
        self._arrays.pop(name, None)

    def _row_array(self) -> pa.Array:
        return self.rows if isinstance(self.rows, pa.Array) else pa.array(self.rows, pa.int64())

    def inputs(self, fields: Fields, operator: str) -> pa.RecordBatch:
        """The current tuples' ``fields`` as one Arrow batch (no fields: a batch of no columns
        with one row per tuple)."""
        return arrow_batch([self.arrow(name, operator) for name in fields], list(fields), len(self.rows))

    def keep(self, indices: list[int] | pa.Array) -> None:
        """Keep tuples ``indices`` (in that order; an index may repeat)."""
        if isinstance(indices, list):
            if len(indices) == len(self.rows) and indices == list(range(len(self.rows))):
                return
            if self.identity:
                self.rows = indices
            elif isinstance(self.rows, list):
                self.rows = [self.rows[i] for i in indices]
            else:
                self.rows = self.rows.take(pa.array(indices, pa.int64()))
        else:
            self.rows = indices if self.identity else self._row_array().take(indices)
        self.identity = False
        taken: pa.Array | None = None
        listed: list[int] | None = None
        extra: dict[str, list[Any] | pa.Array] = {}
        for k, v in self.extra.items():
            if isinstance(v, pa.Array):
                if taken is None:
                    taken = indices if isinstance(indices, pa.Array) else pa.array(indices, pa.int64())
                extra[k] = v.take(taken)
            else:
                if listed is None:
                    listed = indices if isinstance(indices, list) else indices.to_pylist()
                extra[k] = [v[i] for i in listed]
        self.extra = extra
        self._lists = {}
        self._arrays = {}


def arrow_batch(arrays: Sequence[pa.Array | None], names: list[str], rows: int) -> pa.RecordBatch:
    """``arrays`` as one batch of ``rows`` rows (no arrays: a batch of no columns, ``rows`` rows).

    Examples
    --------
    >>> arrow_batch([], [], 3).num_rows
    3
    """
    if not arrays:
        return pa.record_batch([pa.nulls(rows)], names=["rows"]).select([])
    return pa.RecordBatch.from_arrays(list(arrays), names=names)


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
                    partials.add(batch.column, len(batch.rows), batch.arrow_column)
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
    if step.kind == "each" and takes_arrow_batches(step.operation) and _apply_arrow(step, batch):
        return
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


def _apply_arrow(step: PythonStep, batch: _Batch) -> bool:
    """An Arrow-batch Function or Filter over the batch's tuples, in one call. An input field
    that holds no one Arrow type (untyped, of mixed types) is an error naming it, unless the
    operation writes its own per-tuple method (the built-ins): then False, and the tuples go
    through that."""
    op = step.operation
    if _own_per_tuple(op) and any(batch.arrow_column(name) is None for name in step.input_fields):
        return False
    inputs = batch.inputs(step.input_fields, step.label)
    if isinstance(op, ArrowFilter):
        mask = keep_arrow(step.label, op.keep_arrow, inputs)
        if pc.sum(mask).as_py() != len(mask):
            batch.keep(pc.indices_nonzero(mask))
        return True
    assert isinstance(op, ArrowFunction), "takes_arrow_batches: an ArrowFunction or ArrowFilter"
    parents, columns = each_arrow(step.label, op.execute_arrow, inputs, step.function_fields)
    if parents is not None:
        batch.keep(parents)
    for name, column in zip(step.function_fields, columns, strict=True):
        batch.set_extra(name, column)
    return True


def _own_per_tuple(op: Operation) -> bool:
    """Whether an Arrow-batch operation writes its own per-tuple method (not the one-row batch)."""
    if isinstance(op, ArrowFilter):
        return type(op).isKeep is not ArrowFilter.isKeep
    return isinstance(op, ArrowFunction) and type(op).execute is not ArrowFunction.execute


def _append(step: PythonStep, batch: _Batch, parents: list[int], columns: list[list[Any]]) -> None:
    """The emitted tuples as the batch's tuples: each its parent's, with the new fields' values
    (``columns``, one per field; a map's output replaces the fields)."""
    batch.keep(parents)
    if step.kind != "each":
        batch.extra = {}
    for name, values in zip(step.function_fields, columns, strict=True):
        batch.set_extra(name, values)


def _to_arrow(batch: _Batch, schema: pa.Schema, untyped: frozenset[str] = frozenset(),
              producers: dict[str, str] | None = None) -> pa.RecordBatch:
    take = None  # the source rows the tuples came from, made when a source column is output
    arrays = []
    for field in schema:
        if field.name in batch.extra:
            extra = batch.extra[field.name]
            operator = (producers or {}).get(field.name)
            if isinstance(extra, pa.Array):
                arrays.append(arrow_to_field(field.name, extra, field.type, untyped=field.name in untyped,
                                             operator=operator))
                continue
            arrays.append(to_arrow_column(field.name, extra, field.type,
                                          untyped=field.name in untyped,
                                          operator=operator))
        elif batch.identity:
            arrays.append(batch.source.column(field.name))
        else:
            take = batch._row_array() if take is None else take
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


def arrow_to_field(name: str, array: pa.Array, type_: pa.DataType, *, untyped: bool = False,
                   operator: str | None = None) -> pa.Array:
    """An Arrow-batch operation's ``array`` for field ``name``: tagged values for an untyped
    field, else cast to the declared type where that loses nothing (ints to wider ints or
    floats, strings and binaries to their large forms); any other type goes the per-tuple way
    (:func:`to_arrow_column`), so it converts, or fails with its error, exactly as there."""
    if untyped:
        try:
            return encode_arrow(array)
        except UncarriableValueError as exc:
            where = f"{operator}: " if operator else ""
            raise OperatorError(f"{where}field {name!r}: {exc}") from None
    if array.type == type_:
        return array
    if _losslessly_castable(array.type, type_):
        try:
            return array.cast(type_)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    return to_arrow_column(name, array.to_pylist(), type_, operator=operator)


def _losslessly_castable(given: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether a safe cast of ``given`` to ``wanted`` gives what ``pa.array(values, wanted)`` would."""
    t = pa.types
    if t.is_null(given):
        return True
    if t.is_integer(given):
        return bool(t.is_integer(wanted) or t.is_floating(wanted))
    if t.is_floating(given):
        return bool(t.is_floating(wanted))
    strings = (t.is_string, t.is_large_string)
    binaries = (t.is_binary, t.is_large_binary)
    return any(any(c(given) for c in kind) and any(c(wanted) for c in kind) for kind in (strings, binaries))


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
