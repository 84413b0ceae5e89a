"""The scale model: records/s of a cluster shape from measured per-unit rates, its principal bottleneck.

The Storm+Trident tuning notes size a topology by its principal bottleneck and Little's Law.
Here a stream's steady rate is bounded by three resources, each a count times a measured rate:

* **source partitions** x the records/s one partition's reader delivers (a partition is read
  by one task);
* **executor cores** x the records/s one core carries through everything a task does (read,
  operations, the state's client side, Spark's share);
* **store nodes** x the keys/s one node writes / the keys written per record.

``capacity = min(...)``: the smallest term is the principal bottleneck; adding units of its
resource helps until the next smallest term binds. A batch also pays a fixed cost (offset
planning, logs, scheduling) however few records it holds, so by Little's Law (one batch in
flight) a batch of ``B`` records takes ``fixed + B / capacity`` and the stream runs at
``B / (fixed + B / capacity)``. Pure: no Spark, no I/O; the measured constants come from
``bench/scale.py``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from trident_spark.errors import InvalidArgumentError

__all__ = ["MEASURED_HERE", "ClusterShape", "ScaleConstants", "ScalePrediction", "ScaleTerm", "predict"]


def _positive(owner: str, name: str, value: Any, *, whole: bool = False, allow_zero: bool = False) -> None:
    ok = not isinstance(value, bool) and isinstance(value, int if whole else (int, float)) \
        and math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        rule = "a whole number >= 1" if whole else ("a number >= 0" if allow_zero else "a number > 0")
        raise InvalidArgumentError(f"{owner}({name}={value!r}): must be {rule}")


@dataclass(frozen=True, kw_only=True)
class ScaleConstants:
    """The measured per-unit rates the model multiplies (units in the names).

    Parameters
    ----------
    read_records_per_s_per_partition : float
        Records/s one source partition's reader delivers (the spout reading alone).
    records_per_s_per_core : float
        Records/s one executor core carries through all of a task's work.
    keys_per_s_per_store_node : float
        Keys/s one store node writes (its own CPU: a Redis node is one thread).
    keys_written_per_record : float
        State keys written per input record (distinct keys of a batch / its records).
    batch_fixed_ms : float
        Time every batch takes however few records it holds.
    measured : str
        Where the numbers come from (free text, shown in reports).

    Examples
    --------
    >>> ScaleConstants(read_records_per_s_per_partition=150_000, records_per_s_per_core=20_000,
    ...                keys_per_s_per_store_node=200_000, keys_written_per_record=0.2,
    ...                batch_fixed_ms=250).records_per_s_per_store_node
    1000000.0
    """

    read_records_per_s_per_partition: float
    records_per_s_per_core: float
    keys_per_s_per_store_node: float
    keys_written_per_record: float
    batch_fixed_ms: float
    measured: str = ""

    def __post_init__(self) -> None:
        for name in ("read_records_per_s_per_partition", "records_per_s_per_core",
                     "keys_per_s_per_store_node", "keys_written_per_record"):
            _positive("ScaleConstants", name, getattr(self, name))
        _positive("ScaleConstants", "batch_fixed_ms", self.batch_fixed_ms, allow_zero=True)

    @property
    def records_per_s_per_store_node(self) -> float:
        """Records/s one store node keeps up with: its keys/s / keys written per record."""
        return self.keys_per_s_per_store_node / self.keys_written_per_record

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "constants") -> ScaleConstants:
        """Constants from a mapping (a ``scale-constants-*.json`` of bench/scale.py, or a
        ``scale-*.json`` holding them under ``"constants"``); errors name ``where``.

        Examples
        --------
        >>> ScaleConstants.from_mapping({"read_records_per_s_per_partition": 1e5,
        ...     "records_per_s_per_core": 2e4, "keys_per_s_per_store_node": 2e5,
        ...     "keys_written_per_record": 0.2, "batch_fixed_ms": 250}).batch_fixed_ms
        250
        """
        if "constants" in data and isinstance(data["constants"], Mapping):
            data = data["constants"]
        names = [f.name for f in fields(cls)]
        missing = [n for n in names if n != "measured" and n not in data]
        if missing:
            raise InvalidArgumentError(
                f"{where}: the scale constants lack {', '.join(missing)}; give a file written by "
                f"bench/scale.py (bench/results/scale-constants-*.json) or every constant")
        try:
            return cls(**{n: data[n] for n in names if n in data})
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"{where}: {exc}") from None

    @classmethod
    def from_file(cls, path: str | Path) -> ScaleConstants:
        """Constants from a JSON file (see :meth:`from_mapping`).

        Examples
        --------
        >>> ScaleConstants.from_file("no-such-file.json")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        trident_spark.state.errors.InvalidArgumentError: no-such-file.json: cannot read the scale ...
        """
        try:
            data = json.loads(Path(path).read_text())
        except OSError as exc:
            raise InvalidArgumentError(
                f"{path}: cannot read the scale constants ({exc.strerror}); run bench/scale.py, or give "
                f"its bench/results/scale-constants-*.json") from None
        except ValueError as exc:
            raise InvalidArgumentError(f"{path}: not JSON ({exc}); give a file written by bench/scale.py") \
                from None
        if not isinstance(data, Mapping):
            raise InvalidArgumentError(f"{path}: not a JSON object; give a file written by bench/scale.py")
        return cls.from_mapping(data, str(path))

    def to_dict(self) -> dict[str, Any]:
        """The constants as a JSON-ready dict (what :meth:`from_mapping` reads).

        Examples
        --------
        >>> ScaleConstants.from_mapping(MEASURED_HERE.to_dict()) == MEASURED_HERE
        True
        """
        return asdict(self)


#: The constants bench/scale.py measured on this project's 2-core VM (docs/scaling.md): the word
#: count (built-in Split, Count into RedisState.opaque) on 1 executor core of a Spark standalone
#: cluster into 1 redis-server, batches of 25,000 sentences (4-20 words) over 2 Kafka partitions.
#: A word count's own: measure yours (bench/scale.py, or your job's batches) before sizing by them.
MEASURED_HERE = ScaleConstants(
    read_records_per_s_per_partition=270_000, records_per_s_per_core=32_300,
    keys_per_s_per_store_node=269_000, keys_written_per_record=0.382, batch_fixed_ms=648,
    measured="bench/scale.py 20261129T033935Z on a 2-core VM: the word count on 1 executor core "
             "into 1 Redis node, batches of 25,000 sentences (docs/scaling.md)")


@dataclass(frozen=True, kw_only=True)
class ClusterShape:
    """How many of each resource: source partitions, executor cores, store nodes.

    Examples
    --------
    >>> ClusterShape(source_partitions=16, executor_cores=16, store_nodes=3).executor_cores
    16
    """

    source_partitions: int
    executor_cores: int
    store_nodes: int

    def __post_init__(self) -> None:
        for name in ("source_partitions", "executor_cores", "store_nodes"):
            _positive("ClusterShape", name, getattr(self, name), whole=True)


#: The three terms: (name, resource, shape field, per-unit rate of the constants).
_TERMS = (("read", "source partitions", "source_partitions", "read_records_per_s_per_partition"),
          ("operations", "executor cores", "executor_cores", "records_per_s_per_core"),
          ("store", "store nodes", "store_nodes", "records_per_s_per_store_node"))


@dataclass(frozen=True)
class ScaleTerm:
    """One term of the minimum: ``units x records_per_s_per_unit``.

    Examples
    --------
    >>> ScaleTerm("operations", "executor cores", 4, 20_000.0).records_per_s
    80000.0
    """

    name: str
    resource: str
    units: int
    records_per_s_per_unit: float

    @property
    def records_per_s(self) -> float:
        """What this term allows: units x records/s per unit."""
        return self.units * self.records_per_s_per_unit

    def units_for(self, records_per_s: float) -> int:
        """The fewest units of this resource that carry ``records_per_s``.

        Examples
        --------
        >>> ScaleTerm("operations", "executor cores", 1, 20_000.0).units_for(50_000)
        3
        """
        return max(1, math.ceil(round(records_per_s / self.records_per_s_per_unit, 9)))


@dataclass(frozen=True)
class ScalePrediction:
    """What the model says of one cluster shape: the terms, the bottleneck, rates and latency.

    Examples
    --------
    >>> constants = ScaleConstants(read_records_per_s_per_partition=100_000,
    ...     records_per_s_per_core=20_000, keys_per_s_per_store_node=100_000,
    ...     keys_written_per_record=0.2, batch_fixed_ms=250)
    >>> p = predict(ClusterShape(source_partitions=4, executor_cores=8, store_nodes=1), constants,
    ...             batch_records=40_000)
    >>> p.binding.name, p.capacity_records_per_s, p.next_binding.name, p.helps_up_to_units
    ('operations', 160000.0, 'read', 20)
    >>> round(p.records_per_s), p.batch_ms
    (80000, 500.0)
    """

    shape: ClusterShape
    constants: ScaleConstants
    terms: tuple[ScaleTerm, ...]
    batch_records: float
    batch_ms: float

    @property
    def binding(self) -> ScaleTerm:
        """The principal bottleneck: the term with the fewest records/s (first in term order on a tie)."""
        return min(self.terms, key=lambda t: t.records_per_s)

    @property
    def next_binding(self) -> ScaleTerm | None:
        """The term that binds once the bottleneck's resource has grown past it."""
        rest = [t for t in self.terms if t is not self.binding]
        return min(rest, key=lambda t: t.records_per_s) if rest else None

    @property
    def capacity_records_per_s(self) -> float:
        """``min`` of the terms: records/s with no per-batch fixed cost."""
        return self.binding.records_per_s

    @property
    def helps_up_to_units(self) -> int | None:
        """Units of the bottleneck's resource beyond which adding more stops helping."""
        nxt = self.next_binding
        if nxt is None:
            return None
        return math.floor(round(nxt.records_per_s / self.binding.records_per_s_per_unit, 9))

    @property
    def records_per_s(self) -> float:
        """Steady records/s with the per-batch fixed cost: batch_records / batch time."""
        return self.batch_records * 1000 / self.batch_ms

    @property
    def latency_ms(self) -> float:
        """A record's latency, at most: it waits up to one batch, then its batch runs."""
        return 2 * self.batch_ms

    def explain(self) -> str:
        """The prediction in words: the bottleneck, where adding it stops helping, Little's Law."""
        b, nxt = self.binding, self.next_binding
        lines = [f"{t.resource}: {t.units} x {_n(t.records_per_s_per_unit)} = {_n(t.records_per_s)} records/s"
                 + ("  <- principal bottleneck" if t is b else "") for t in self.terms]
        if nxt is not None:
            lines.append(f"adding {b.resource} helps up to {self.helps_up_to_units}; then {nxt.resource} "
                         f"bind at {_n(nxt.records_per_s)} records/s")
        lines.append(f"a batch of {_n(self.batch_records)} records takes "
                     f"{_n(self.constants.batch_fixed_ms)} ms + {_n(self.batch_records)} / "
                     f"{_n(self.capacity_records_per_s)} records/s = {_n(self.batch_ms)} ms: "
                     f"{_n(self.records_per_s)} records/s, latency up to {_n(self.latency_ms)} ms")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The terms as a markdown table, then the bottleneck and Little's Law in one line each."""
        rows = ["| term | resource | units | records/s per unit | records/s |", "|---|---|---:|---:|---:|"]
        for t in self.terms:
            mark = " **(bottleneck)**" if t is self.binding else ""
            rows.append(f"| {t.name}{mark} | {t.resource} | {t.units} | {_n(t.records_per_s_per_unit)} | "
                        f"{_n(t.records_per_s)} |")
        return "\n".join(rows) + "\n\n" + "\n".join(self.explain().splitlines()[len(self.terms):]) + "\n"

    def __rich__(self) -> Any:
        from rich.table import Table

        table = Table(title=f"{self.shape.executor_cores} cores, {self.shape.source_partitions} partitions, "
                            f"{self.shape.store_nodes} store nodes", caption=self.explain().splitlines()[-1])
        for column in ("term", "resource", "units", "records/s per unit", "records/s"):
            table.add_column(column, justify="right" if "records" in column or column == "units" else "left")
        for t in self.terms:
            name = f"[bold red]{t.name} (bottleneck)[/]" if t is self.binding else t.name
            table.add_row(name, t.resource, str(t.units), _n(t.records_per_s_per_unit), _n(t.records_per_s))
        return table


def predict(shape: ClusterShape, constants: ScaleConstants, *, batch_records: float | None = None,
            batch_interval_ms: float | None = None) -> ScalePrediction:
    """The model's answer for ``shape``: its terms, bottleneck, steady rate and batch time.

    Give the batch one of two ways: ``batch_records`` (a backlogged stream whose batches are
    full: the read limit), or ``batch_interval_ms`` (a stream that keeps up: a batch holds what
    arrived in one interval at the shape's capacity). Neither: a 1 s interval.

    Parameters
    ----------
    shape : ClusterShape
        Source partitions, executor cores, store nodes.
    constants : ScaleConstants
        The measured rates.
    batch_records : float, optional
        Records per batch.
    batch_interval_ms : float, optional
        The trigger interval; must be longer than the per-batch fixed cost.

    Returns
    -------
    ScalePrediction

    Raises
    ------
    InvalidArgumentError
        Both batch arguments, a non-positive one, or an interval no longer than the fixed cost.

    Examples
    --------
    >>> constants = ScaleConstants(read_records_per_s_per_partition=100_000,
    ...     records_per_s_per_core=20_000, keys_per_s_per_store_node=100_000,
    ...     keys_written_per_record=0.2, batch_fixed_ms=250)
    >>> shape = ClusterShape(source_partitions=2, executor_cores=2, store_nodes=1)
    >>> p = predict(shape, constants, batch_interval_ms=1000)
    >>> p.binding.resource, p.batch_records, p.batch_ms
    ('executor cores', 30000.0, 1000.0)
    """
    terms = tuple(ScaleTerm(name, resource, getattr(shape, field), float(getattr(constants, rate)))
                  for name, resource, field, rate in _TERMS)
    capacity = min(t.records_per_s for t in terms)
    fixed = constants.batch_fixed_ms
    if batch_records is not None and batch_interval_ms is not None:
        raise InvalidArgumentError("predict(): give batch_records= or batch_interval_ms=, not both")
    if batch_records is not None:
        _positive("predict", "batch_records", batch_records)
        records = float(batch_records)
    else:
        interval = 1000.0 if batch_interval_ms is None else batch_interval_ms
        _positive("predict", "batch_interval_ms", interval)
        if interval <= fixed:
            raise InvalidArgumentError(
                f"predict(batch_interval_ms={interval:g}): a batch's fixed cost is {fixed:g} ms, so an "
                f"interval this short leaves no time for records; give batch_interval_ms above {fixed:g}")
        records = (interval - fixed) / 1000 * capacity  # Little's Law: the batch that fills the interval
    batch_ms = fixed + records / capacity * 1000
    return ScalePrediction(shape=shape, constants=constants, terms=terms, batch_records=records,
                           batch_ms=batch_ms)


def _n(value: float) -> str:
    """A number for people: whole numbers with thousands separators, else 3 significant digits."""
    if value >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.3g}"
