"""A :class:`~trident_spark.tuning.plan.TuningPlan` as text: its rows, aligned lines and Markdown.

Also the pieces the plan's formulas are written with: numbers as the formulas
write them (:func:`_num`) and the terms of a formula that differ from the
simple case (no batch overhead, one record in per Kafka record, no other stages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trident_spark.tuning.plan import PlanInputs, TuningPlan


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
        "parallelism": _num(plan.parallelism),
        "records_per_batch": _num(plan.records_per_batch),
        "max_offsets_per_trigger": _num(plan.max_offsets_per_trigger),
        "max_fetch_bytes": _num(plan.max_fetch_bytes),
        "min_partitions": _num(plan.min_partitions) if plan.min_partitions is not None else "",
        "trigger": plan.trigger,
        "stage_partitions": _num(plan.stage_partitions),
        "cache_size": _num(plan.cache_size) if plan.cache_size is not None else "",
        "max_multi_get_batch_size": _num(plan.max_multi_get_batch_size or 0),
        "max_multi_put_batch_size": _num(plan.max_multi_put_batch_size or 0),
        "expected_batch_ms": f"{_num(plan.expected_batch_ms)} ms",
        "throughput": f"{_num(round(plan.throughput))} records/s",
        "keeps_up": "yes" if plan.keeps_up else "no",
        "parallelism_needed": _num(plan.parallelism_needed or 0),
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
    parts = [f"{_num(i.kafka_partitions)} Kafka partitions", f"{_num(i.record_bytes)}-byte records",
             f"{_num(i.per_record_ms)} ms per record in the expensive stage",
             f"{_num(i.target_batch_ms)} ms target batch", f"{_num(plan.parallelism)} cores"]
    if i.input_records_per_second is not None:
        parts.append(f"{_num(i.input_records_per_second)} records/s arriving")
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
        return "target_batch_ms", _num(i.target_batch_ms)
    return ("(target_batch_ms - batch_overhead_ms)",
            f"({_num(i.target_batch_ms)} - {_num(i.batch_overhead_ms)})")


def overhead_term(i: PlanInputs) -> tuple[str, str]:
    """The fixed time a batch adds, as a leading ``"... + "``: ``(names, numbers)``, empty without one."""
    if i.batch_overhead_ms == 0:
        return "", ""
    return "batch_overhead_ms + ", f"{_num(i.batch_overhead_ms)} + "


def cost_terms(i: PlanInputs) -> tuple[str, str]:
    """The task time of a Kafka record over all stages: ``(names, numbers)``.

    Examples
    --------
    >>> from trident_spark.tuning import PlanInputs
    >>> cost_terms(PlanInputs(kafka_partitions=16, record_bytes=1000, per_record_ms=8,
    ...                       target_batch_ms=800, cores=16, fan_out=10, other_stages_per_record_ms=0.5))
    ('(per_record_ms x fan_out + other_stages_per_record_ms)', '(8 x 10 + 0.5)')
    """
    names, numbers = ["per_record_ms"], [_num(i.per_record_ms)]
    if i.fan_out != 1:
        names[0] += " x fan_out"
        numbers[0] += f" x {_num(i.fan_out)}"
    if i.other_stages_per_record_ms:
        names.append("other_stages_per_record_ms")
        numbers.append(_num(i.other_stages_per_record_ms))
    if len(names) == 1 and i.fan_out == 1:
        return names[0], numbers[0]
    return f"({' + '.join(names)})", f"({' + '.join(numbers)})"


def _num(value: float) -> str:
    """A number as the formulas write it: ``1,600``, ``0.8``, ``1,828.57``, ``0.8004``.

    Examples
    --------
    >>> [_num(v) for v in (1600, 0.8, 12800 / 7, 0.80044)]
    ['1,600', '0.8', '1,828.57', '0.8004']
    """
    if value == int(value):
        return f"{int(value):,}"
    if abs(value) >= 1:
        return f"{value:,.2f}".rstrip("0").rstrip(".")
    return f"{value:.4g}"
