"""Executor side of Python aggregations, over one partition's Arrow batches.

Three modes, all called inside ``mapInArrow``:

* ``full``: every tuple goes through its aggregators (per group, or once for the
  partition); ``complete`` emits; several chained aggregators emit their cross product.
* ``partial``: CombinerAggregators only: per group, ``init`` each tuple and
  ``combine``; emits the group values and one pickled partial value per aggregator.
* ``final``: combines the pickled partial values per group and emits the results;
  an ungrouped batch with no tuples emits ``zero()`` once (Trident's single emit).
"""

from __future__ import annotations

import dataclasses
import itertools
import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pyarrow as pa

from trident_spark.executor.instances import task_instances
from trident_spark.executor.kernel import AggStep as AggStep  # the stages' and planner's name for it
from trident_spark.executor.kernel import RunningAggregate, combine_all, combiner_inits, tuple_views, zeros
from trident_spark.executor.metrics import StageClock
from trident_spark.executor.python_stage import partition_index, to_arrow_column
from trident_spark.fields import TridentTuple
from trident_spark.object_values import decode_column, hashable
from trident_spark.operation import CombinerAggregator, OperationContext, ReportedErrors
from trident_spark.worker_gc import settle_imports


class StageMode(StrEnum):
    """Which part of an aggregation a stage runs (its value names the stage: ``count / partial``).

    Examples
    --------
    >>> StageMode.PARTIAL, StageMode("final") is StageMode.FINAL
    (<StageMode.PARTIAL: 'partial'>, True)
    """

    FULL = "full"        # every tuple through the aggregators; complete emits
    PARTIAL = "partial"  # CombinerAggregators: init and combine per group, before the shuffle
    FINAL = "final"      # the partials combined per group after the shuffle


@dataclass
class AggLayout:
    """What a stage reads and writes: group fields, Arrow types of the output fields."""

    mode: StageMode
    group_fields: list[str]
    output_fields: list[str]
    output_types: dict[str, pa.DataType]  # Arrow types of the non-group output fields
    single_emit: bool  # ungrouped: init/complete (or zero) run even when no tuple came
    untyped_in: frozenset[str] = frozenset()  # untyped input fields: decoded when read
    untyped_out: frozenset[str] = frozenset()  # untyped output fields: encoded when written

    def __post_init__(self) -> None:
        self.mode = StageMode(self.mode)  # a mode's name ("partial") is taken too


def run_aggregate(steps: Sequence[AggStep], layout: AggLayout, txid: int, conf: dict[str, Any],
                  num_partitions: int, batches: Iterator[pa.RecordBatch],
                  metrics: Any = None) -> Iterator[pa.RecordBatch]:
    """Run one aggregation stage over a partition (the ``mapInArrow`` function body).

    Aggregators are prepared for this task and cleaned up at its end, or, in an instance host
    (``executor.instances``), the partition's kept ones are used. ``metrics``: the batch's
    accumulator, where the errors they reported (``collector.reportError``) are counted.
    """
    settle_imports()
    instances = task_instances()
    partition = partition_index()
    steps = [dataclasses.replace(step, errors=ReportedErrors(step.label), aggregator=instances.acquire(
        i, step.aggregator, dict(conf), OperationContext(partition, num_partitions, txid, step.label)))
        for i, step in enumerate(steps)]
    try:
        if layout.mode is StageMode.FINAL:
            rows = _final(steps, layout, batches)
        elif layout.mode is StageMode.PARTIAL:
            rows = _partial(steps, layout, batches)
        else:
            rows = _full(steps, layout, txid, batches)
        if rows:
            yield _to_batch(rows, layout, steps)
    finally:
        instances.release()
        if metrics is not None:
            clock = StageClock()
            for step in steps:
                clock.errors(step.label, step.errors)
            clock.send(metrics)


# --- full: every aggregator kind ---------------------------------------------------------
def _full(steps: Sequence[AggStep], layout: AggLayout, txid: int,
          batches: Iterator[pa.RecordBatch]) -> list[list[Any]]:
    groups: dict[Any, tuple[list[Any], list[RunningAggregate]]] = {}
    if layout.single_emit:
        groups[()] = ([], [RunningAggregate(step, txid) for step in steps])
    for batch in batches:
        if batch.num_rows == 0:
            continue
        keys = _group_keys(batch, layout)
        if not layout.group_fields and _fast_path(steps, batch, groups[()][1]):
            continue
        tuples = [_tuples(batch, step, layout.untyped_in) for step in steps]
        for row, key in enumerate(keys):
            entry = groups.get(key[0])
            if entry is None:
                entry = groups[key[0]] = (key[1], [RunningAggregate(step, txid) for step in steps])
            for running, spec_tuples in zip(entry[1], tuples, strict=True):
                running.add(spec_tuples[row])
    rows: list[list[Any]] = []
    for group_values, runs in groups.values():
        emitted = [run.finish() for run in runs]
        for combo in itertools.product(*emitted):
            rows.append([*group_values, *(v for values in combo for v in values)])
    return rows


def _fast_path(steps: Sequence[AggStep], batch: pa.RecordBatch, runs: list[RunningAggregate]) -> bool:
    """Ungrouped Combiners with an Arrow form take a whole batch at once."""
    values = []
    for step in steps:
        agg = step.aggregator
        if not isinstance(agg, CombinerAggregator):
            return False
        value = agg.arrow_reduce([batch.column(f) for f in step.input_fields], batch.num_rows)
        if value is None:
            return False
        values.append(value)
    for run, value in zip(runs, values, strict=True):
        run.add_value(value)
    return True


# --- partial / final: Combiners only -----------------------------------------------------
def _partial(steps: Sequence[AggStep], layout: AggLayout,
             batches: Iterator[pa.RecordBatch]) -> list[list[Any]]:
    groups: dict[Any, list[Any]] = {}
    combiners = [step.aggregator for step in steps]
    for batch in batches:
        if batch.num_rows == 0:
            continue
        keys = _group_keys(batch, layout)
        if not layout.group_fields:
            reduced = [c.arrow_reduce([batch.column(f) for f in s.input_fields], batch.num_rows)
                       for c, s in zip(combiners, steps, strict=True)]
            if all(v is not None for v in reduced):
                entry = groups.setdefault((), [[], None])
                entry[1] = reduced if entry[1] is None else combine_all(steps, entry[1], list(reduced))
                continue
        tuples = [_tuples(batch, step, layout.untyped_in) for step in steps]
        for row, key in enumerate(keys):
            inits = combiner_inits(steps, tuples, row)
            found = groups.get(key[0])
            if found is None or found[1] is None:
                groups[key[0]] = [key[1], inits]
            else:
                found[1] = combine_all(steps, found[1], inits)
    return [[*values, *(dump_partial(v) for v in accs)] for values, accs in groups.values()]


def _final(steps: Sequence[AggStep], layout: AggLayout,
           batches: Iterator[pa.RecordBatch]) -> list[list[Any]]:
    groups: dict[Any, list[Any]] = {}
    for batch in batches:
        if batch.num_rows == 0:
            continue
        keys = _group_keys(batch, layout)
        partials = [batch.column(f"__partial{i}").to_pylist() for i in range(len(steps))]
        for row, key in enumerate(keys):
            values = [pickle.loads(p[row]) for p in partials]
            entry = groups.get(key[0])
            if entry is None:
                # Trident combines from zero() (CombinerAggregatorCombineImpl)
                groups[key[0]] = [key[1], combine_all(steps, zeros(steps), values)]
            else:
                entry[1] = combine_all(steps, entry[1], values)
    if layout.single_emit and not groups:
        groups[()] = [[], zeros(steps)]
    return [[*values, *accs] for values, accs in groups.values()]


# --- helpers -----------------------------------------------------------------------------
def dump_partial(value: Any) -> bytes:
    """A partial value as the ``final`` stage reads it: pickled (cloudpickle when pickle cannot)."""
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        from pyspark import cloudpickle

        return bytes(cloudpickle.dumps(value))  # type: ignore[no-untyped-call]


def _values(batch: pa.RecordBatch, name: str, untyped: frozenset[str]) -> list[Any]:
    """Field ``name``'s values in ``batch`` as Python values (an untyped field's decoded)."""
    column = batch.column(name)
    return decode_column(column) if name in untyped else column.to_pylist()


def _group_keys(batch: pa.RecordBatch, layout: AggLayout) -> list[tuple[Any, list[Any]]]:
    """Per row: (hashable key, group values). Keys are Python's: 1, 1.0 and True are one."""
    if not layout.group_fields:
        return [((), [])] * batch.num_rows
    return group_keys([_values(batch, f, layout.untyped_in) for f in layout.group_fields])


def group_keys(columns: Sequence[list[Any]]) -> list[tuple[Any, list[Any]]]:
    """Per row of the group fields' ``columns``: (hashable key, group values); a value Python
    cannot hash (a list, a dict) is keyed by its tagged bytes. Keys are Python's: 1, 1.0 and
    True are one group."""
    rows = []
    for values in zip(*columns, strict=True):
        try:
            key = values if all(v.__hash__ is not None for v in values) else hashable(list(values))
            hash(key)
        except TypeError:
            key = hashable(list(values))
        rows.append((key, list(values)))
    return rows


def _tuples(batch: pa.RecordBatch, step: AggStep,
            untyped: frozenset[str] = frozenset()) -> list[TridentTuple]:
    fields = step.input_fields
    return tuple_views(fields, [_values(batch, f, untyped) for f in fields], batch.num_rows)


def _producer(name: str, steps: Sequence[AggStep]) -> str | None:
    return next((step.label for step in steps if name in step.function_fields), None)


def _to_batch(rows: list[list[Any]], layout: AggLayout, steps: Sequence[AggStep] = ()) -> pa.RecordBatch:
    names = layout.output_fields
    arrays = []
    for j, name in enumerate(names):
        values = [row[j] for row in rows]
        arrays.append(to_arrow_column(name, values, layout.output_types[name],
                                      untyped=name in layout.untyped_out, operator=_producer(name, steps)))
    return pa.RecordBatch.from_arrays(arrays, names=names)
