"""Executor side of ``topology.multiReduce``: a partition's tuples of several streams through one reducer.

:func:`run_multi_reduce` (inside ``mapInArrow``) is Trident's MultiReducerProcessor, with
GroupedMultiReducerExecutor's one state per group and GroupCollector's group values first.
The driver side (:mod:`trident_spark.planner.multi_reduce`) tags, unions and brings the
inputs together and describes the task in a :class:`MultiReduceStep`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from trident_spark.executor.instances import task_instances
from trident_spark.executor.kernel import aggregator_call, reduced_values
from trident_spark.executor.python_stage import partition_index, to_arrow_column
from trident_spark.fields import Fields, TridentTuple
from trident_spark.object_values import decode_column, decode_value, hashable
from trident_spark.operation import OperationContext, TridentCollector
from trident_spark.worker_gc import settle_imports

#: The column telling which input stream (its index) a row is from.
STREAM = "__stream"


@dataclass
class MultiReduceStep:
    """What the executor needs: the reducer, each stream's input fields, the output layout."""

    label: str
    reducer: Any
    grouped: bool
    input_fields: list[list[str]]
    group_fields: list[str]  # the group tuple's names (the first stream's group fields)
    output_fields: list[str]
    output_types: dict[str, pa.DataType]
    untyped_inputs: list[frozenset[str]] = dataclasses.field(default_factory=list)  # per stream
    untyped_out: frozenset[str] = frozenset()  # untyped output fields (group fields included)
    untyped_groups: frozenset[int] = frozenset()  # positions of the untyped group values


def run_hosted(step: MultiReduceStep, streams: int, txid: int, conf: dict[str, Any], num_partitions: int,
                  metrics: Any, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """:func:`run_multi_reduce` as an instance host runs it (it counts nothing itself)."""
    return run_multi_reduce(step, streams, txid, conf, num_partitions, batches)


def run_multi_reduce(step: MultiReduceStep, streams: int, txid: int, conf: dict[str, Any],
                     num_partitions: int, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """One partition of a multiReduce (the ``mapInArrow`` body): every tuple through the reducer.

    The reducer is prepared for this task and cleaned up at its end, or, in an instance host
    (``executor.instances``), the partition's kept one is used."""
    settle_imports()
    instances = task_instances()
    reducer = instances.acquire(0, step.reducer, dict(conf),
                                OperationContext(partition_index(), num_partitions, txid, step.label))
    collector = TridentCollector()
    rows: list[list[Any]] = []
    width = len(step.group_fields)
    input_names = [Fields(*names) for names in step.input_fields]
    indexes = [{name: i for i, name in enumerate(names)} for names in step.input_fields]
    group_names = Fields(*step.group_fields)

    def drain(group_values: Sequence[Any]) -> None:
        for values in collector.reset():
            rows.append([*group_values, *reduced_values(step.label, values, step.output_fields, width)])

    try:
        groups: dict[Any, tuple[TridentTuple, Any]] = {}
        state: Any = None
        if not step.grouped:
            state = aggregator_call(step.label, None, reducer.init, collector)
            drain(())
        for batch in batches:
            if batch.num_rows == 0:
                continue
            stream_of = batch.column(STREAM).to_pylist()
            sides = [batch.column(f"__in{i}").to_pylist() if f"__in{i}" in batch.schema.names else None
                     for i in range(streams)]
            group_columns = [decode_column(batch.column(f"__g{j}")) if j in step.untyped_groups
                             else batch.column(f"__g{j}").to_pylist() for j in range(width)]
            for row, i in enumerate(stream_of):
                side = sides[i]
                record = side[row] if side is not None else None
                values = [None if record is None else record.get(name) for name in step.input_fields[i]]
                if step.untyped_inputs and step.untyped_inputs[i]:
                    values = [decode_value(v) if name in step.untyped_inputs[i] else v
                              for name, v in zip(step.input_fields[i], values, strict=True)]
                tuple_ = TridentTuple(values, input_names[i], indexes[i])
                if not step.grouped:
                    aggregator_call(step.label, tuple_, reducer.execute, state, i, tuple_, collector)
                    drain(())
                    continue
                group_values = [column[row] for column in group_columns]
                key = _key(group_values)
                entry = groups.get(key)
                if entry is None:
                    group = TridentTuple(group_values, group_names)
                    entry = groups[key] = (group, aggregator_call(step.label, None, reducer.init, collector,
                                                                  group))
                    drain(group_values)
                aggregator_call(step.label, tuple_, reducer.execute, entry[1], i, entry[0], tuple_, collector)
                drain(group_values)
        if step.grouped:
            for group, group_state in groups.values():
                aggregator_call(step.label, None, reducer.complete, group_state, group, collector)
                drain(group.getValues())
        else:
            aggregator_call(step.label, None, reducer.complete, state, collector)
            drain(())
        if rows:
            arrays = [to_arrow_column(name, [r[j] for r in rows], step.output_types[name],
                                      untyped=name in step.untyped_out, operator=step.label)
                      for j, name in enumerate(step.output_fields)]
            yield pa.RecordBatch.from_arrays(arrays, names=step.output_fields)
    finally:
        instances.release()


def _key(values: list[Any]) -> Any:
    """A dict key for group values: equal values (Python equality) are one group."""
    try:
        key = tuple(values)
        hash(key)
        return key
    except TypeError:
        return hashable(values)


__all__ = ["STREAM", "MultiReduceStep", "run_hosted", "run_multi_reduce"]
