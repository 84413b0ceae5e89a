"""The settings a tuning plan derives (:class:`TuningPlan`), and the plan as text.

Its rows, aligned lines and Markdown; and the pieces the plan's formulas are written
with: numbers as the formulas write them (:func:`number`) and the terms of a formula that
differ from the simple case (no batch overhead, one record in per Kafka record, no other
stages). :func:`~trident_spark.tuning.plan.plan` derives the settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trident_spark.tuning.plan_inputs import PlanInputs


@dataclass(frozen=True, kw_only=True)
class TuningPlan:
    """Settings derived by :func:`plan`, each with its formula in :attr:`formulas`.

    Attributes
    ----------
    inputs : PlanInputs
        What the plan was made from.
    parallelism : int
        Total executor cores.
    records_per_batch : int
        Kafka records per batch.
    max_offsets_per_trigger, max_fetch_bytes : int
        The spout's read limits: records per batch, and bytes per partition per batch.
    min_partitions : int or None
        ``KafkaSpout(min_partitions=)`` when there are fewer Kafka partitions than cores.
    trigger_ms : int
        Trigger interval in ms; ``trigger`` is the same as Spark writes it (``"800 milliseconds"``).
    stage_partitions : int
        Partitions of the expensive stage: ``spark.sql.shuffle.partitions``, ``parallelismHint``.
    cache_size : int or None
        State ``cache_size`` (per task); None without ``working_set_keys`` / ``distinct_keys_per_batch``.
    max_multi_get_batch_size, max_multi_put_batch_size : int or None
        Keys per store round trip; None without ``store_sweet_spot_keys``.
    expected_batch_ms : float
        What a full batch is expected to take.
    throughput : float
        Records per second by Little's Law, with one batch in flight.
    keeps_up : bool or None
        Whether ``throughput`` covers ``input_records_per_second`` (None: no rate given).
    parallelism_needed : int or None
        The fewest cores that keep up with ``input_records_per_second``.
    warnings : tuple of str
        What in the inputs wastes cores, round trips or time, and what to change.
    formulas : dict
        For each setting above, ``"name = formula = numbers = value"``.
    """

    inputs: PlanInputs
    parallelism: int
    records_per_batch: int
    max_offsets_per_trigger: int
    max_fetch_bytes: int
    min_partitions: int | None
    trigger_ms: int
    trigger: str
    stage_partitions: int
    cache_size: int | None
    max_multi_get_batch_size: int | None
    max_multi_put_batch_size: int | None
    expected_batch_ms: float
    throughput: float
    keeps_up: bool | None
    parallelism_needed: int | None
    warnings: tuple[str, ...] = ()
    formulas: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def settings(self) -> dict[str, Any]:
        """The concrete settings to paste, by where they go.

        ``"kafka_spout"``: keyword arguments of ``KafkaSpout(...)``; ``"trigger"``: for
        ``topology.run(trigger=...)``; ``"spark_conf"``: Spark configuration (strings, for
        ``SparkSession.builder.config`` or ``spark-submit --conf``); ``"parallelism_hint"``:
        for ``.parallelismHint(n)`` on the expensive stage; ``"state"`` (when known):
        keyword arguments of a state factory (``RedisState.opaque(..., **state)``).

        To let the spout find the batch size itself, add
        ``adaptive_target_ms=plan.trigger_ms``: it steers the per-partition byte limit
        toward the target, with ``max_fetch_bytes`` as its upper bound (so raise that
        bound above the planned value to leave the controller room).

        Examples
        --------
        >>> from trident_spark.tuning import plan
        >>> p = plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800, cores=16)
        >>> p.settings()["kafka_spout"]
        {'max_fetch_bytes': 100000, 'max_offsets_per_trigger': 1600}
        """
        spout: dict[str, int] = {"max_fetch_bytes": self.max_fetch_bytes,
                                 "max_offsets_per_trigger": self.max_offsets_per_trigger}
        if self.min_partitions is not None:
            spout["min_partitions"] = self.min_partitions
        result: dict[str, Any] = {
            "kafka_spout": spout,
            "trigger": self.trigger,
            "spark_conf": {"spark.sql.shuffle.partitions": str(self.stage_partitions)},
            "parallelism_hint": self.stage_partitions,
        }
        state = {name: getattr(self, name) for name in
                 ("cache_size", "max_multi_get_batch_size", "max_multi_put_batch_size")
                 if getattr(self, name) is not None}
        if state:
            result["state"] = state
        return result

    def rows(self) -> list[tuple[str, str, str]]:
        """``(setting, value, formula)`` for each derived setting, in the order of the method."""
        return plan_rows(self)

    def explain(self) -> str:
        """The plan as aligned lines: inputs, then setting, value and formula, then warnings.

        Examples
        --------
        >>> from trident_spark.tuning import plan
        >>> p = plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800, cores=16)
        >>> print(p.explain().splitlines()[4])
        max_offsets_per_trigger  1,600             records_per_batch = 1,600
        """
        return explain(self)

    def to_markdown(self) -> str:
        """The plan as a Markdown table (setting, value, formula) and a list of warnings.

        Examples
        --------
        >>> from trident_spark.tuning import plan
        >>> p = plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800, cores=16)
        >>> print(p.to_markdown().splitlines()[5])
        | records_per_batch | 1,600 | `target_batch_ms / per_record_ms x parallelism = 800 / 8 x 16 = 1,600` |
        """
        return to_markdown(self)


def plan_rows(plan: TuningPlan) -> list[tuple[str, str, str]]:
    """``(setting, value, formula)`` for each derived setting, in the order of the method.

    Examples
    --------
    >>> from trident_spark.tuning import plan
    >>> p = plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800, cores=16)
    >>> plan_rows(p)[2]
    ('max_offsets_per_trigger', '1,600', 'records_per_batch = 1,600')
    """
    values: dict[str, str] = {
        "parallelism": number(plan.parallelism),
        "records_per_batch": number(plan.records_per_batch),
        "max_offsets_per_trigger": number(plan.max_offsets_per_trigger),
        "max_fetch_bytes": number(plan.max_fetch_bytes),
        "min_partitions": number(plan.min_partitions) if plan.min_partitions is not None else "",
        "trigger": plan.trigger,
        "stage_partitions": number(plan.stage_partitions),
        "cache_size": number(plan.cache_size) if plan.cache_size is not None else "",
        "max_multi_get_batch_size": number(plan.max_multi_get_batch_size or 0),
        "max_multi_put_batch_size": number(plan.max_multi_put_batch_size or 0),
        "expected_batch_ms": f"{number(plan.expected_batch_ms)} ms",
        "throughput": f"{number(round(plan.throughput))} records/s",
        "keeps_up": "yes" if plan.keeps_up else "no",
        "parallelism_needed": number(plan.parallelism_needed or 0),
    }
    return [(name, values[name], formula.removeprefix(f"{name} = "))
            for name, formula in plan.formulas.items()]


def explain(plan: TuningPlan) -> str:
    """The plan as aligned lines: inputs, then setting, value and formula, then warnings.

    Examples
    --------
    >>> from trident_spark.tuning import plan
    >>> p = plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800, cores=16)
    >>> print(explain(p).splitlines()[1])
    setting                  value             formula
    """
    rows = [("setting", "value", "formula"), *plan_rows(plan)]
    name_width = max(len(row[0]) for row in rows) + 2
    value_width = max(len(row[1]) for row in rows) + 2
    lines = [f"Tuning plan for {_inputs_line(plan)}"]
    lines += [f"{name:<{name_width}}{value:<{value_width}}{formula}".rstrip()
              for name, value, formula in rows]
    if plan.warnings:
        lines.append("warnings:")
        lines += [f"  - {warning}" for warning in plan.warnings]
    return "\n".join(lines)


def to_markdown(plan: TuningPlan) -> str:
    """The plan as a Markdown table (setting, value, formula) and a list of warnings.

    Examples
    --------
    >>> from trident_spark.tuning import plan
    >>> p = plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800, cores=16)
    >>> print(to_markdown(p).splitlines()[2])
    | setting | value | formula |
    """
    lines = [f"Tuning plan for {_inputs_line(plan)}.", "",
             "| setting | value | formula |", "|---|---|---|"]
    lines += [f"| {name} | {value} | `{formula}` |" for name, value, formula in plan_rows(plan)]
    if plan.warnings:
        lines += ["", "**Warnings**", ""]
        lines += [f"* {warning.replace('|', '/')}" for warning in plan.warnings]
    return "\n".join(lines)


def _inputs_line(plan: TuningPlan) -> str:
    i = plan.inputs
    parts = [f"{number(i.kafka_partitions)} Kafka partitions", f"{number(i.record_bytes)}-byte records",
             f"{number(i.per_record_ms)} ms per record in the expensive stage",
             f"{number(i.target_batch_ms)} ms target batch", f"{number(plan.parallelism)} cores"]
    if i.input_records_per_second is not None:
        parts.append(f"{number(i.input_records_per_second)} records/s arriving")
    return ", ".join(parts)


# -- the formulas' terms, written out only when they differ from the simple case ---------


def budget_terms(i: PlanInputs) -> tuple[str, str]:
    """The time a batch has for its records: ``(names, numbers)``.

    Examples
    --------
    >>> from trident_spark.tuning import PlanInputs
    >>> budget_terms(PlanInputs(kafka_partitions=16, record_bytes=1000, per_record_ms=8,
    ...                         target_batch_ms=800, cores=16, batch_overhead_ms=50))
    ('(target_batch_ms - batch_overhead_ms)', '(800 - 50)')
    """
    if i.batch_overhead_ms == 0:
        return "target_batch_ms", number(i.target_batch_ms)
    return ("(target_batch_ms - batch_overhead_ms)",
            f"({number(i.target_batch_ms)} - {number(i.batch_overhead_ms)})")


def overhead_term(i: PlanInputs) -> tuple[str, str]:
    """The fixed time a batch adds, as a leading ``"... + "``: ``(names, numbers)``, empty without one."""
    if i.batch_overhead_ms == 0:
        return "", ""
    return "batch_overhead_ms + ", f"{number(i.batch_overhead_ms)} + "


def cost_terms(i: PlanInputs) -> tuple[str, str]:
    """The task time of a Kafka record over all stages: ``(names, numbers)``.

    Examples
    --------
    >>> from trident_spark.tuning import PlanInputs
    >>> cost_terms(PlanInputs(kafka_partitions=16, record_bytes=1000, per_record_ms=8,
    ...                       target_batch_ms=800, cores=16, fan_out=10, other_stages_per_record_ms=0.5))
    ('(per_record_ms x fan_out + other_stages_per_record_ms)', '(8 x 10 + 0.5)')
    """
    names, numbers = ["per_record_ms"], [number(i.per_record_ms)]
    if i.fan_out != 1:
        names[0] += " x fan_out"
        numbers[0] += f" x {number(i.fan_out)}"
    if i.other_stages_per_record_ms:
        names.append("other_stages_per_record_ms")
        numbers.append(number(i.other_stages_per_record_ms))
    if len(names) == 1 and i.fan_out == 1:
        return names[0], numbers[0]
    return f"({' + '.join(names)})", f"({' + '.join(numbers)})"


def number(value: float) -> str:
    """A number as the formulas write it: ``1,600``, ``0.8``, ``1,828.57``, ``0.8004``.

    Examples
    --------
    >>> [number(v) for v in (1600, 0.8, 12800 / 7, 0.80044)]
    ['1,600', '0.8', '1,828.57', '0.8004']
    """
    if value == int(value):
        return f"{int(value):,}"
    if abs(value) >= 1:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.4g}"


__all__ = ["TuningPlan", "budget_terms", "cost_terms", "explain", "number", "overhead_term", "plan_rows",
           "to_markdown"]
