"""Build-time checks shared by the stream builders: every message names the operator and field."""

from __future__ import annotations

from collections.abc import Sequence

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields

FieldsLike = Fields | str | Sequence[str]


def resolve_inputs(operator: str, available: Fields, wanted: FieldsLike | None) -> Fields:
    """``wanted`` as Fields (all of ``available`` when None), each one known to the stream."""
    if wanted is None:
        return available
    fields = Fields.of(wanted)
    unknown = [f for f in fields if f not in available]
    if unknown:
        raise TopologyError(
            f"{operator}: unknown input field {', '.join(map(repr, unknown))}; "
            f"the stream has {list(available)}"
        )
    dups = fields.duplicates()
    if dups:
        raise TopologyError(f"{operator}: input field {', '.join(map(repr, dups))} is listed twice")
    return Fields(*fields, types={f: available.types[f] for f in fields})


def check_outputs(operator: str, outputs: Fields, existing: Fields | None = None,
                  required: bool = True) -> None:
    """Output field names: present when ``required``, distinct, and new to ``existing``."""
    if required and not outputs:
        raise TopologyError(f"{operator}: declare the output fields, e.g. ['word']")
    dups = outputs.duplicates()
    if dups:
        raise TopologyError(f"{operator}: duplicate output field {', '.join(map(repr, dups))} "
                            f"in {list(outputs)}")
    clash = [f for f in outputs if existing is not None and f in existing]
    if clash:
        raise TopologyError(
            f"{operator}: duplicate output field {', '.join(map(repr, clash))}; "
            f"the stream already has {list(existing or [])}"
        )


def output_fields(outputs: Fields, operation: object) -> Fields:
    """``outputs`` typed: a declared type first (``"n:bigint"``), then the operation's
    ``output_types``; others stay strings."""
    types = {**getattr(operation, "output_types", {}), **outputs.declared_types}
    return Fields(*outputs, types={f: types[f] for f in outputs if f in types})


def concat(*parts: Fields) -> Fields:
    """Fields side by side, keeping their types."""
    types: dict[str, str] = {}
    for part in parts:
        types.update(part.types)
    names = [f for part in parts for f in part]
    return Fields(*names, types=types)


def check_parallelism(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise TopologyError(f"parallelismHint({n!r}): the partition count must be an int >= 1")
    return n
