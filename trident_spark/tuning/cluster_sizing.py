"""Cluster sizing: the source partitions, executor cores and store nodes a target rate needs.

The scale model (:mod:`trident_spark.tuning.scale_model`) turned round. With one batch in
flight, a stream keeps up with ``rate`` at a trigger interval ``T`` when the batch that arrives
in ``T`` (``rate x T`` records, Little's Law) is done within ``T``: ``fixed + rate x T /
capacity <= T``, so every term of the model must carry ``rate x T / (T - fixed)`` records/s.
Each resource gets the fewest units whose term carries that; the term left with the least room
binds first when the rate grows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trident_spark.errors import InvalidArgumentError
from trident_spark.tuning.scale_model import ClusterShape, ScaleConstants, ScalePrediction, ScaleTerm, predict

__all__ = ["ClusterSizing", "size_cluster"]


@dataclass(frozen=True)
class ClusterSizing:
    """The answer of :func:`size_cluster`: the shape, its batch, its bottleneck and the formulas.

    Examples
    --------
    >>> constants = ScaleConstants(read_records_per_s_per_partition=100_000,
    ...     records_per_s_per_core=20_000, keys_per_s_per_store_node=100_000,
    ...     keys_written_per_record=0.2, batch_fixed_ms=200)
    >>> sizing = size_cluster(100_000, constants, batch_interval_ms=1000)
    >>> sizing.settings()  # doctest: +NORMALIZE_WHITESPACE
    {'source_partitions': 2, 'executor_cores': 7, 'store_nodes': 1, 'max_offsets_per_trigger': 100000,
     'trigger': '1000 milliseconds', 'spark.sql.shuffle.partitions': 7}
    """

    target_records_per_s: float
    batch_interval_ms: float
    needed_records_per_s: float
    shape: ClusterShape
    prediction: ScalePrediction
    formulas: tuple[str, ...]

    @property
    def batch_records(self) -> int:
        """Records per batch: what arrives in one interval at the target rate (rounded up)."""
        return math.ceil(round(self.target_records_per_s * self.batch_interval_ms / 1000, 9))

    @property
    def batch_ms(self) -> float:
        """How long that batch takes on the sized shape: fixed cost + records / capacity."""
        capacity = self.prediction.capacity_records_per_s
        return self.prediction.constants.batch_fixed_ms + self.batch_records / capacity * 1000

    @property
    def latency_ms(self) -> float:
        """A record's latency, at most: it waits up to one interval, then its batch runs."""
        return self.batch_interval_ms + self.batch_ms

    @property
    def binds_first(self) -> ScaleTerm:
        """The term with the least room at the sized shape: it binds first as the rate grows."""
        return self.prediction.binding

    @property
    def max_records_per_s(self) -> float:
        """The highest rate the sized shape keeps up with at this interval."""
        fixed = self.prediction.constants.batch_fixed_ms
        interval = self.batch_interval_ms
        return self.prediction.capacity_records_per_s * (interval - fixed) / interval

    def settings(self) -> dict[str, Any]:
        """The shape and the batch as settings to give (spout, trigger, shuffle partitions)."""
        interval = max(1, math.floor(self.batch_interval_ms + 0.5))
        return {"source_partitions": self.shape.source_partitions,
                "executor_cores": self.shape.executor_cores, "store_nodes": self.shape.store_nodes,
                "max_offsets_per_trigger": self.batch_records, "trigger": f"{interval} milliseconds",
                "spark.sql.shuffle.partitions": self.shape.executor_cores}

    def explain(self) -> str:
        """The sizing in words: each formula, the bottleneck, Little's Law."""
        b = self.binds_first
        nxt = self.prediction.next_binding
        tail = (f"; then {nxt.resource} ({_n(nxt.records_per_s)} records/s)" if nxt is not None else "")
        return "\n".join([
            *self.formulas,
            f"binds first: {b.resource} ({b.units} x {_n(b.records_per_s_per_unit)} = "
            f"{_n(b.records_per_s)} records/s){tail}",
            f"keeps up to {_n(self.max_records_per_s)} records/s at this interval; a batch of "
            f"{_n(self.batch_records)} records takes {_n(self.batch_ms)} ms, latency up to "
            f"{_n(self.latency_ms)} ms",
        ])

    def to_markdown(self) -> str:
        """The shape as a markdown table, then the explanation as a list."""
        rows = ["| resource | units | records/s per unit | records/s |", "|---|---:|---:|---:|"]
        for t in self.prediction.terms:
            mark = " (binds first)" if t is self.binds_first else ""
            rows.append(f"| {t.resource}{mark} | {t.units} | {_n(t.records_per_s_per_unit)} | "
                        f"{_n(t.records_per_s)} |")
        notes = "\n".join(f"* {line}" for line in self.explain().splitlines())
        return "\n".join(rows) + "\n\n" + notes + "\n"

    def __rich__(self) -> Any:
        from rich.table import Table

        table = Table(title=f"cluster for {_n(self.target_records_per_s)} records/s, "
                            f"trigger {_n(self.batch_interval_ms)} ms")
        for column in ("resource", "units", "records/s per unit", "records/s"):
            table.add_column(column, justify="left" if column == "resource" else "right")
        for t in self.prediction.terms:
            name = f"[bold red]{t.resource} (binds first)[/]" if t is self.binds_first else t.resource
            table.add_row(name, str(t.units), _n(t.records_per_s_per_unit), _n(t.records_per_s))
        return table


def size_cluster(target_records_per_s: float, constants: ScaleConstants, *,
                 batch_interval_ms: float = 1000.0) -> ClusterSizing:
    """The fewest source partitions, executor cores and store nodes that keep up with a rate.

    Parameters
    ----------
    target_records_per_s : float
        Records arriving per second.
    constants : ScaleConstants
        The measured per-unit rates (``bench/scale.py``; :data:`MEASURED_HERE` for this project's
        2-core machine).
    batch_interval_ms : float, default 1000
        The trigger interval; longer than the constants' ``batch_fixed_ms``.

    Returns
    -------
    ClusterSizing
        ``settings()`` to give, ``explain()`` / ``to_markdown()`` to read.

    Raises
    ------
    InvalidArgumentError
        A target that is not a number > 0, or an interval no longer than the fixed cost; the
        message says what to give.

    Notes
    -----
    ``needed = target x T / (T - fixed)``; ``units = ceil(needed / records_per_s_per_unit)`` per
    resource (at least 1); batch records ``= target x T / 1000``.

    Examples
    --------
    >>> constants = ScaleConstants(read_records_per_s_per_partition=100_000,
    ...     records_per_s_per_core=20_000, keys_per_s_per_store_node=100_000,
    ...     keys_written_per_record=0.2, batch_fixed_ms=200)
    >>> sizing = size_cluster(100_000, constants)
    >>> sizing.shape.executor_cores, sizing.binds_first.resource, round(sizing.batch_ms)
    (7, 'executor cores', 914)
    """
    if isinstance(target_records_per_s, bool) or not isinstance(target_records_per_s, int | float) \
            or not math.isfinite(target_records_per_s) or target_records_per_s <= 0:
        raise InvalidArgumentError(
            f"size_cluster(target_records_per_s={target_records_per_s!r}): the records arriving per second "
            f"must be a number > 0; give e.g. 100000")
    fixed = constants.batch_fixed_ms
    if isinstance(batch_interval_ms, bool) or not isinstance(batch_interval_ms, int | float) \
            or not math.isfinite(batch_interval_ms) or batch_interval_ms <= fixed:
        raise InvalidArgumentError(
            f"size_cluster(batch_interval_ms={batch_interval_ms!r}): a batch's fixed cost is {fixed:g} ms, "
            f"so the interval must be longer; give batch_interval_ms above {fixed:g} (e.g. "
            f"{max(1000, math.ceil(fixed * 4))})")
    needed = target_records_per_s * batch_interval_ms / (batch_interval_ms - fixed)
    one = predict(ClusterShape(source_partitions=1, executor_cores=1, store_nodes=1), constants,
                  batch_records=1)
    units = {t.name: t.units_for(needed) for t in one.terms}
    shape = ClusterShape(source_partitions=units["read"], executor_cores=units["operations"],
                         store_nodes=units["store"])
    batch = math.ceil(round(target_records_per_s * batch_interval_ms / 1000, 9))
    prediction = predict(shape, constants, batch_records=batch)
    formulas = [f"needed = target x T / (T - fixed) = {_n(target_records_per_s)} x {_n(batch_interval_ms)} / "
                f"({_n(batch_interval_ms)} - {_n(fixed)}) = {_n(needed)} records/s (Little's Law, one batch "
                f"in flight)"]
    formulas += [f"{t.resource} = ceil(needed / {_n(t.records_per_s_per_unit)}) = {units[t.name]}"
                 for t in one.terms]
    formulas.append(f"max_offsets_per_trigger = target x T = {_n(batch)} records per batch")
    return ClusterSizing(target_records_per_s=float(target_records_per_s),
                         batch_interval_ms=float(batch_interval_ms), needed_records_per_s=needed,
                         shape=shape, prediction=prediction, formulas=tuple(formulas))


def _n(value: float) -> str:
    if value >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.3g}"
