"""Executor side of a fused partial aggregation: Combiners folded at the end of a Python stage.

Trident's plan for ``groupBy(...).aggregate(Combiner)`` and ``persistentAggregate(Combiner)``
combines within each partition before the shuffle. When Python operators feed such an
aggregation, their stage does it itself: instead of turning every tuple into an Arrow row
for the JVM, it keeps one partial value per group and aggregator, and emits one row per
group (group fields, then one partial per aggregator) when the partition ends. The
shuffle and the final combine follow as for any partial aggregation.

Aggregators that combine in Arrow (an ``ArrowCombinerAggregator``, Count, Sum) take a batch at a
time when the stage has its fields as Arrow: ``init_arrow`` over the batch, then pyarrow's hash
aggregation (``Table.group_by(...).aggregate``) per group. The batches' grouped tables are
aggregated again when the partition ends (``arrow_combine`` does what ``combine`` does, so it
combines partials too), and only then become Python values: one per group and aggregator.

Partial values go out either in their own Arrow type (``typed``: a Combiner with a Spark SQL
merge, such as Count or Sum, whose final combine is then Spark SQL), or pickled, for the
Python ``final`` stage (``executor.aggregate_stage``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from trident_spark.arrow_operation import combines_in_arrow
from trident_spark.errors import OperatorError
from trident_spark.executor.aggregate_stage import dump_partial, group_keys
from trident_spark.executor.kernel import AggStep, combine_all, combiner_inits, init_arrow, tuple_views
from trident_spark.executor.metrics import StageClock, StageName
from trident_spark.executor.python_stage import arrow_batch, to_arrow_column
from trident_spark.fields import Fields, TridentTuple


@dataclass(frozen=True)
class PartialCombine:
    """What the fused stage combines: picklable, built on the driver, shipped with the stage.

    Parameters
    ----------
    name : StageName
        The aggregation's partial stage (``"<label> / partial"``), counted in the batch's metrics.
    steps : list of AggStep
        One per CombinerAggregator (a chainedAgg has several).
    group_fields : list of str
        The fields tuples are grouped by (none: the whole partition is one group).
    output_fields : list of str
        The rows' columns: the group fields, then one partial per aggregator.
    output_types : dict
        Arrow type of every output column (a pickled partial's is ``binary``).
    typed : bool
        Partials in their own type (a Spark SQL merge combines them), else pickled.
    untyped_out : frozenset of str
        Group fields that are untyped: written as tagged values (``object_values``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from trident_spark.builtin import Count
    >>> from trident_spark.fields import Fields
    >>> count = AggStep("count", Count(), Fields(), Fields("count"))
    >>> tail = PartialCombine(StageName("count", "partial"), [count], ["word"], ["word", "count"],
    ...                       {"word": pa.string(), "count": pa.int64()}, typed=True)
    >>> partials = tail.start()
    >>> words = ["a", "b", "a"]
    >>> partials.add(lambda name: words, 3)
    >>> partials.batch().to_pylist()
    [{'word': 'a', 'count': 2}, {'word': 'b', 'count': 1}]
    """

    name: StageName
    steps: list[AggStep]
    group_fields: list[str]
    output_fields: list[str]
    output_types: dict[str, pa.DataType]
    typed: bool
    untyped_out: frozenset[str] = frozenset()

    def start(self) -> PartitionPartials:
        """The partials of one partition (one task), empty."""
        return PartitionPartials(self)


@dataclass
class PartitionPartials:
    """One partition's groups and their partial values, fed batch by batch by the Python stage."""

    tail: PartialCombine
    groups: dict[Any, list[Any]] = field(default_factory=dict)  # key -> [group values, partials]
    grouped: list[pa.Table] = field(default_factory=list)  # batches grouped in Arrow, not yet in groups
    grouped_rows: int = 0
    rows_in: int = 0
    seconds: float = 0.0

    def add(self, column: Callable[[str], list[Any]], rows: int,
            arrow: Callable[[str], pa.Array | None] | None = None) -> None:
        """Fold ``rows`` tuples in: ``column(name)`` gives a field's values, one per tuple;
        ``arrow(name)``, when given, the same as an Arrow array (None: not as one)."""
        if rows == 0:
            return
        started = time.perf_counter()
        self.rows_in += rows
        tail = self.tail
        if (arrow is not None and all(combines_in_arrow(step.aggregator) for step in tail.steps)
                and self._add_arrow(arrow, rows)):
            self.seconds += time.perf_counter() - started
            return
        counting = all(getattr(step.aggregator, "counts_tuples", False) for step in tail.steps)
        if counting and len(tail.group_fields) <= 1 and self._add_counts(column, rows):
            self.seconds += time.perf_counter() - started
            return
        keys = self._keys(column, rows)
        steps = tail.steps
        tuples = [_tuples(column, step, rows) for step in steps]
        groups = self.groups
        for row, (key, values) in enumerate(keys):
            inits = combiner_inits(steps, tuples, row)
            found = groups.get(key)
            if found is None:
                groups[key] = [values, inits]
            else:
                found[1] = combine_all(steps, found[1], inits)
        self.seconds += time.perf_counter() - started

    def _add_counts(self, column: Callable[[str], list[Any]], rows: int) -> bool:
        """Aggregators that count tuples (Count): one C-speed count per group. False when a
        group value cannot be hashed (then tuples go the general way)."""
        if self.tail.group_fields:
            try:
                counts: Counter[Any] = Counter(column(self.tail.group_fields[0]))
            except TypeError:  # an unhashable value (a list, a dict)
                return False
        else:
            counts = Counter({(): rows})
        steps, groups = self.tail.steps, self.groups
        for value, n in counts.items():
            key = (value,) if self.tail.group_fields else ()  # as group_keys keys a hashable value
            found = groups.get(key)
            if found is None:
                groups[key] = [[value] if self.tail.group_fields else [], [n] * len(steps)]
            else:
                found[1] = combine_all(steps, found[1], [n] * len(steps))
        return True

    def _add_arrow(self, arrow: Callable[[str], pa.Array | None], rows: int) -> bool:
        """A batch at a time: each aggregator's ``init_arrow``, combined per group by pyarrow's
        hash aggregation (``arrow_combine``). False when a field is not Arrow, an aggregator
        declines the batch, or pyarrow cannot group by these fields: then tuple by tuple."""
        tail = self.tail
        names = [f"__group{i}" for i in range(len(tail.group_fields))]
        arrays: list[pa.Array] = []
        for name in tail.group_fields:
            array = arrow(name)
            if array is None:
                return False
            arrays.append(array)
        aggregations = []
        for i, step in enumerate(tail.steps):
            agg: Any = step.aggregator
            fields = step.input_fields if getattr(agg, "reads_fields", True) else Fields()
            inputs = [arrow(name) for name in fields]
            if any(array is None for array in inputs):
                return False
            values = init_arrow(step.label, agg.init_arrow, arrow_batch(inputs, list(fields), rows))
            if values is None:
                return False
            arrays.append(values)
            names.append(f"__init{i}")
            aggregations.append((f"__init{i}", _hash_aggregation(step)))
        try:
            table = pa.Table.from_arrays(arrays, names=names)
            grouped = _grouped(table, len(tail.group_fields), aggregations)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # e.g. a list as group value
            return False
        if self.grouped and grouped.schema != self.grouped[0].schema:  # e.g. ints, then strings
            self._fold_grouped()
        self.grouped.append(grouped)
        self.grouped_rows += grouped.num_rows
        if self.grouped_rows > _MAX_GROUPED_ROWS:  # bounded memory: the batches so far as one
            self.grouped = [_grouped(pa.concat_tables(self.grouped), len(tail.group_fields), aggregations)]
            self.grouped_rows = self.grouped[0].num_rows
        return True

    def _fold_grouped(self) -> None:
        """The batches grouped in Arrow, aggregated once more and added to ``groups``."""
        if not self.grouped:
            return
        tail = self.tail
        width = len(tail.group_fields)
        table = self.grouped[0] if len(self.grouped) == 1 else _grouped(
            pa.concat_tables(self.grouped), width, [(name, _hash_aggregation(step)) for name, step in
                                                   zip(self.grouped[0].column_names[width:], tail.steps,
                                                       strict=True)])
        self.grouped, self.grouped_rows = [], 0
        group_values = [table.column(i).to_pylist() for i in range(width)]
        partials = [table.column(i).to_pylist() for i in range(width, table.num_columns)]
        keys = group_keys(group_values) if width else [((), [])]
        steps, groups = tail.steps, self.groups
        for row, (key, values) in enumerate(keys):
            combined = [p[row] for p in partials]
            found = groups.get(key)
            if found is None:
                groups[key] = [values, combined]
            else:
                found[1] = combine_all(steps, found[1], combined)

    def _keys(self, column: Callable[[str], list[Any]], rows: int) -> list[tuple[Any, list[Any]]]:
        """Per tuple: (hashable key, group values), as the aggregation stages key groups."""
        names = self.tail.group_fields
        if not names:
            return [((), [])] * rows
        return group_keys([column(name) for name in names])

    def batch(self) -> pa.RecordBatch | None:
        """The partition's rows: one per group (None when no tuple came)."""
        started = time.perf_counter()
        self._fold_grouped()
        self.seconds += time.perf_counter() - started
        if not self.groups:
            return None
        started = time.perf_counter()
        tail = self.tail
        rows = [[*values, *(partials if tail.typed else [dump_partial(p) for p in partials])]
                for values, partials in self.groups.values()]
        arrays = []
        partial_names = tail.output_fields[len(tail.group_fields):]
        producers = {name: step.label for step, name in zip(tail.steps, partial_names, strict=True)}
        for j, name in enumerate(tail.output_fields):
            arrays.append(to_arrow_column(name, [row[j] for row in rows], tail.output_types[name],
                                          untyped=name in tail.untyped_out, operator=producers.get(name)))
        self.seconds += time.perf_counter() - started
        return pa.RecordBatch.from_arrays(arrays, names=tail.output_fields)

    def count(self, clock: StageClock) -> None:
        """Add this partition's time and rows to the task's counters, as the partial stage."""
        clock.add("aggregate", self.tail.name, ms=self.seconds * 1000, rows_in=self.rows_in,
                  rows_out=len(self.groups))


#: Rows of grouped batches kept before they are aggregated into one table.
_MAX_GROUPED_ROWS = 1_000_000


def _grouped(table: pa.Table, width: int, aggregations: list[tuple[str, str]]) -> pa.Table:
    """``table`` grouped by its first ``width`` columns, each other column aggregated as
    ``aggregations`` say, the columns keeping their names."""
    names = table.column_names
    result = table.group_by(names[:width], use_threads=False).aggregate(aggregations)
    return result.select([*names[:width], *(f"{name}_{how}" for name, how in aggregations)]).rename_columns(
        [*names[:width], *(name for name, _ in aggregations)])


def _hash_aggregation(step: AggStep) -> str:
    """``step``'s ``arrow_combine``, checked to name a pyarrow hash aggregation."""
    how = str(step.aggregator.arrow_combine)
    try:
        pc.get_function(f"hash_{how}")
    except (pa.ArrowKeyError, KeyError):
        raise OperatorError(
            f"{step.label}: arrow_combine {how!r} is not a pyarrow hash aggregation; name one that "
            f"combines as combine() does, e.g. 'sum', 'min', 'max', 'product', 'any', 'all'") from None
    return how


def _tuples(column: Callable[[str], list[Any]], step: AggStep, rows: int) -> Sequence[TridentTuple]:
    """The tuples ``step``'s aggregator sees: its input fields' values (none for an aggregator
    that reads no field, such as Count: the stage does not ship the fields it was given)."""
    fields = step.input_fields if getattr(step.aggregator, "reads_fields", True) else Fields()
    return tuple_views(fields, [column(name) for name in fields], rows)


__all__ = ["PartialCombine", "PartitionPartials"]
