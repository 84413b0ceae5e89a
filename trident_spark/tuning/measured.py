"""The measured inputs of :func:`~trident_spark.tuning.plan.plan`, from finished batches.

:func:`measured_inputs` reads the plan's keyword arguments off finished batches
(``BatchProgress``, their dicts, or lines of ``trident-progress.jsonl``);
:func:`plan_from_progress` makes the plan from them, with what could not be
measured given by hand.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from trident_spark.errors import InvalidArgumentError
from trident_spark.tuning.plan import TuningPlan, plan
from trident_spark.tuning.plan_inputs import ARGUMENTS


def measured_inputs(batches: Iterable[Any]) -> dict[str, Any]:
    """:func:`plan` keyword arguments measured from finished batches.

    Each batch is a ``BatchProgress``, a dict of its fields, any object with those
    attributes, or one line of ``trident-progress.jsonl``. Batches that read no
    records are skipped; drop warm-up batches yourself (``batches[1:]``). Fields
    a batch does not have are skipped, so what cannot be measured is left out:

    * ``per_record_ms``: the stage with the most task time over the batches (``stages``,
      ``ms`` summed over tasks): its ms / its ``rows_in``;
    * ``fan_out``: that stage's ``rows_in`` / the batches' ``rows``;
    * ``other_stages_per_record_ms``: the other stages' ms / the batches' ``rows``;
    * ``record_bytes``: the average ``record_bytes``, weighted by rows (or ``bytes / rows``);
    * ``kafka_partitions``: the partitions in ``partition_rows`` (or ``end_offsets``);
    * ``cores``: the last batch's ``cores``;
    * ``batch_overhead_ms``: the average of ``durations_ms["triggerExecution"] -
      durations_ms["addBatch"]`` (offset planning, logs, commit);
    * ``distinct_keys_per_batch``: the average keys written to state per batch
      (``state["keys_written"]``, or the keys looked up: cache hits + misses).

    ``target_batch_ms``, ``store_sweet_spot_keys``, ``working_set_keys`` and
    ``input_records_per_second`` are choices or measurements of other things:
    give them to :func:`plan_from_progress`.

    Examples
    --------
    >>> batch = {"rows": 1600, "record_bytes": 1000.0, "cores": 16,
    ...          "partition_rows": {f"events[{n}]": 100 for n in range(16)},
    ...          "stages": [{"name": "enrich", "kind": "python", "ms": 12800.0,
    ...                      "rows_in": 1600, "rows_out": 1600}]}
    >>> measured_inputs([batch])
    {'per_record_ms': 8.0, 'record_bytes': 1000.0, 'kafka_partitions': 16, 'cores': 16}
    """
    used = [b for b in (_as_batch(item) for item in batches) if (_field(b, "rows", 0) or 0) > 0]
    if not used:
        raise InvalidArgumentError(
            "plan_from_progress(): none of the batches read any records; run the query on "
            "real traffic first, or call plan() with the numbers you measured")
    measured: dict[str, Any] = {}
    measured.update(_stage_costs(used))
    sized = [b for b in used if _field(b, "record_bytes") is not None]
    if sized:
        measured["record_bytes"] = sum(_field(b, "record_bytes") * _field(b, "rows") for b in sized) \
            / sum(_field(b, "rows") for b in sized)
    elif any(_field(b, "bytes") is not None for b in used):
        with_bytes = [b for b in used if _field(b, "bytes") is not None]
        measured["record_bytes"] = sum(_field(b, "bytes") for b in with_bytes) \
            / sum(_field(b, "rows") for b in with_bytes)
    partitions = _partitions(used)
    if partitions:
        measured["kafka_partitions"] = partitions
    cores = [_field(b, "cores") for b in used if _field(b, "cores") is not None]
    if cores:
        measured["cores"] = int(cores[-1])
    durations = [_field(b, "durations_ms") or {} for b in used]
    overheads = [d["triggerExecution"] - d["addBatch"] for d in durations
                 if "triggerExecution" in d and "addBatch" in d]
    if overheads:
        measured["batch_overhead_ms"] = max(0.0, sum(overheads) / len(overheads))
    keys = [_keys_touched(_field(b, "state") or {}) for b in used]
    if any(keys):
        measured["distinct_keys_per_batch"] = math.ceil(sum(keys) / len(keys))
    return measured


def plan_from_progress(batches: Iterable[Any], **overrides: Any) -> TuningPlan:
    """:func:`plan` with the inputs measured from finished batches; ``overrides`` win.

    See :func:`measured_inputs` for what is measured and how. ``target_batch_ms``
    must be given (a choice, not a measurement), and whatever could not be measured.

    Examples
    --------
    >>> batch = {"rows": 1600, "record_bytes": 1000.0, "cores": 16,
    ...          "partition_rows": {f"events[{n}]": 100 for n in range(16)},
    ...          "stages": [{"name": "enrich", "kind": "python", "ms": 12800.0,
    ...                      "rows_in": 1600, "rows_out": 1600}]}
    >>> plan_from_progress([batch], target_batch_ms=800).records_per_batch
    1600
    """
    measured = measured_inputs(batches)
    if "cores" not in overrides and ("executors" in overrides or "cores_per_executor" in overrides):
        measured.pop("cores", None)  # the given split of the cores replaces the measured total
    arguments = {**measured, **overrides}
    missing = [name for name in ("kafka_partitions", "record_bytes", "per_record_ms", "target_batch_ms")
               if name not in arguments]
    if "cores" not in arguments and "executors" not in arguments:
        missing.append("cores")
    if missing:
        examples = ", ".join(f"{name}={ARGUMENTS[name][1]}" for name in missing)
        raise InvalidArgumentError(f"plan_from_progress(): the batches do not show {', '.join(missing)}; "
                                   f"give {examples} (your numbers)")
    return plan(**arguments)


def _as_batch(item: Any) -> Any:
    return json.loads(item) if isinstance(item, str) else item


def _field(batch: Any, name: str, default: Any = None) -> Any:
    if isinstance(batch, Mapping):
        return batch.get(name, default)
    return getattr(batch, name, default)


def _stage_costs(batches: list[Any]) -> dict[str, float]:
    totals: dict[tuple[str, str], list[float]] = {}  # (name, kind) -> [ms, rows_in]
    rows = 0
    for batch in batches:
        stages = _field(batch, "stages") or []
        if stages:
            rows += _field(batch, "rows", 0)
        for stage in stages:
            key = (str(_field(stage, "name", "")), str(_field(stage, "kind", "")))
            total = totals.setdefault(key, [0.0, 0.0])
            total[0] += float(_field(stage, "ms", 0.0) or 0.0)
            total[1] += float(_field(stage, "rows_in") or 0)
    if not totals or rows == 0:
        return {}
    slowest = max(totals, key=lambda key: totals[key][0])
    ms, rows_in = totals[slowest]
    if ms <= 0:
        return {}
    result = {"per_record_ms": ms / rows_in if rows_in else ms / rows}
    fan_out = rows_in / rows if rows_in else 1.0
    if fan_out != 1.0:
        result["fan_out"] = fan_out
    other = sum(total[0] for key, total in totals.items() if key != slowest)
    if other:
        result["other_stages_per_record_ms"] = other / rows
    return result


def _partitions(batches: list[Any]) -> int:
    names: set[str] = set()
    for batch in batches:
        names.update(str(name) for name in (_field(batch, "partition_rows") or {}))
    if names:
        return len(names)
    for batch in batches:
        for topic, offsets in (_field(batch, "end_offsets") or {}).items():
            names.update(f"{topic}[{partition}]" for partition in offsets)
    return len(names)


def _keys_touched(state: Mapping[str, int]) -> int:
    if state.get("keys_written"):
        return int(state["keys_written"])
    return int(state.get("cache_hits", 0) + state.get("cache_misses", 0))
