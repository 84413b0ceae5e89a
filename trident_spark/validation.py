"""Build-time checks shared by the stream builders: every message names the operator and field,
and says what to do."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from trident_spark.errors import TopologyError, is_int
from trident_spark.fields import Fields
from trident_spark.operation import (
    Aggregator,
    Assembly,
    BaseFilter,
    BaseFunction,
    CombinerAggregator,
    Consumer,
    FlatMapFunction,
    GroupedMultiReducer,
    MapFunction,
    MultiReducer,
    QueryFunction,
    ReducerAggregator,
    StateUpdater,
)
from trident_spark.state.redaction import redact_text

FieldsLike = Fields | str | Sequence[str]

_KINDS: tuple[tuple[type, str], ...] = (
    (BaseFunction, "a Function"),
    (BaseFilter, "a Filter"),
    (Aggregator, "an Aggregator"),
    (CombinerAggregator, "a CombinerAggregator"),
    (ReducerAggregator, "a ReducerAggregator"),
    (QueryFunction, "a QueryFunction"),
    (StateUpdater, "a StateUpdater"),
    (MapFunction, "a MapFunction"),
    (FlatMapFunction, "a FlatMapFunction"),
    (Consumer, "a Consumer"),
    (Assembly, "an Assembly"),
    (MultiReducer, "a MultiReducer"),
    (GroupedMultiReducer, "a GroupedMultiReducer"),
)
_MAX_SHOWN = 80


def describe(value: object) -> str:
    """How messages show an object users passed: ``Count() (a CombinerAggregator)``,
    ``memory://wc?type=opaque (a MemoryState)``, ``<lambda> (a plain function)``, ``42 (an int)``.

    Examples
    --------
    >>> describe(42)
    '42 (an int)'
    >>> describe(lambda t: t)
    '<lambda> (a plain function)'
    """
    if isinstance(value, type):
        return f"the class {value.__name__} (pass an instance: {value.__name__}(...))"
    kind = next((k for cls, k in _KINDS if isinstance(value, cls)), None)
    url = getattr(value, "url", None)
    if isinstance(url, str) and url:
        shown = url
    elif callable(value) and hasattr(value, "__name__") and not isinstance(value, type):
        shown = str(value.__name__)
        kind = kind or "a plain function"
    elif type(value).__repr__ is object.__repr__:
        shown = type(value).__name__
    else:
        shown = repr(value)
    shown = redact_text(shown)  # a state's URL or a spout's options may carry a password
    if len(shown) > _MAX_SHOWN:
        shown = shown[:_MAX_SHOWN] + "..."
    if kind is None:
        name = type(value).__name__
        kind = f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
    return f"{shown} ({kind})"


def as_fields(operator: str, value: FieldsLike | None, what: str = "field") -> Fields:
    """What users pass where fields are expected, as Fields, or a TopologyError naming ``operator``."""
    if value is None or isinstance(value, Fields):
        return Fields.of(value)
    if not isinstance(value, str):
        if not isinstance(value, Sequence):
            raise TopologyError(f"{operator}: {what}s must be a list of field names such as ['word'], "
                                f"got {describe(value)}")
        bad = [item for item in value if not isinstance(item, str)]
        if bad:
            raise TopologyError(f"{operator}: {what} names must be strings, got {bad[0]!r} in "
                                f"{list(value)!r}; write them as ['word', 'count']")
    try:
        return Fields.of(value)
    except ValueError as exc:
        raise TopologyError(f"{operator}: {exc}; give every {what} a name") from None


def _names(fields: Sequence[str]) -> str:
    return ", ".join(map(repr, fields))


def resolve_inputs(operator: str, available: Fields, wanted: FieldsLike | None,
                   what: str = "input field", owner: str = "the stream") -> Fields:
    """``wanted`` as Fields (all of ``available`` when None), each one known to the stream.

    ``what`` names the kind of field in messages ("join field"), ``owner`` the stream that
    lacks it ("stream 1 (from 'b')").
    """
    if wanted is None:
        return available
    fields = as_fields(operator, wanted, what)
    unknown = [f for f in fields if f not in available]
    if unknown:
        close = {u: m[0] for u in unknown
                 if (m := difflib.get_close_matches(u, list(available), n=1, cutoff=0.75))}
        if len(unknown) == 1 and close:
            hint = f"; did you mean {close[unknown[0]]!r}?"
        elif close:
            hint = f"; did you mean {', '.join(f'{m!r} for {u!r}' for u, m in close.items())}?"
        else:
            hint = ""
        raise TopologyError(
            f"{operator}: unknown {what} {_names(unknown)}; {owner} has {list(available)}{hint}"
        )
    dups = fields.duplicates()
    if dups:
        raise TopologyError(f"{operator}: {what} {_names(dups)} is listed twice in {list(fields)}; "
                            "list each field once")
    return Fields(*fields, types={f: available.types[f] for f in fields})


def check_outputs(operator: str, outputs: Fields, existing: Fields | None = None,
                  required: bool = True, existing_are_group: bool = False) -> None:
    """Output field names: present when ``required``, distinct, and new to ``existing``.

    ``existing`` are the stream's fields (a Function appends to them) or, with
    ``existing_are_group``, the group fields an aggregation emits first.
    """
    if required and not outputs:
        raise TopologyError(f"{operator}: declare the output fields, e.g. ['word']")
    dups = outputs.duplicates()
    if dups:
        raise TopologyError(f"{operator}: duplicate output field {_names(dups)} in {list(outputs)}; "
                            "give each output field its own name")
    clash = [f for f in outputs if existing is not None and f in existing]
    if clash:
        if existing_are_group:
            raise TopologyError(
                f"{operator}: output field {_names(clash)} is also a group field; a grouped aggregation "
                f"emits the group fields {list(existing or [])} followed by its output fields, so name "
                "the output something else"
            )
        raise TopologyError(
            f"{operator}: duplicate output field {_names(clash)}; the stream already has "
            f"{list(existing or [])}; choose another name (or project() the old field away first)"
        )


def output_fields(outputs: Fields, operation: object) -> Fields:
    """``outputs`` typed: a declared type first (``"n:bigint"``), then the operation's
    ``output_types``; others stay strings."""
    types = {**getattr(operation, "output_types", {}), **outputs.declared_types}
    return Fields(*outputs, types={f: types[f] for f in outputs if f in types})


def concat(*parts: Fields) -> Fields:
    """Fields side by side, keeping their types."""
    types: dict[str, str] = {}
    declared: set[str] = set()
    for part in parts:
        types.update(part.types)
        declared.update(part.declared_types)
    names = [f for part in parts for f in part]
    return Fields(*names, types=types, declared=declared)


def aggregator_fields(outputs: Fields, aggregator: object, inputs: Fields) -> Fields:
    """An aggregator's output fields, typed as far as the build can tell: declared, the
    aggregator's ``output_types``, else what its ``spark_types`` says for these inputs (a
    guess, not a declaration: the batch's real input types decide at run time)."""
    typed = output_fields(outputs, aggregator)
    guess = getattr(aggregator, "spark_types", None)
    guessed: list[str] | None = None
    if guess is not None:
        try:
            bind = getattr(aggregator, "bind", None)
            if bind is not None:
                bind(list(inputs))
            guessed = guess([inputs.types[f] for f in inputs])
        except TopologyError:
            raise  # e.g. Max("n") over inputs without "n"
        except Exception:  # a guess only; the planner asks again with the real types
            guessed = None
    types = typed.types
    for name, type_ in zip(outputs, guessed or [], strict=False):
        if name not in typed.declared_types and type_:
            types[name] = type_
    return Fields(*outputs, types=types, declared=typed.declared_types)


def check_parallelism(n: object, where: str = "") -> int:
    """``n`` if it is a valid ``parallelismHint``; ``where`` names the operation it applies to."""
    if not is_int(n, 1):
        on = f" on {where}" if where else ""
        raise TopologyError(f"parallelismHint({n!r}){on}: the partition count must be an int >= 1, "
                            "e.g. parallelismHint(4)")
    return n


def check_state_factory(operator: str, factory: Any) -> None:
    """``factory`` must be a state factory (``SqliteState.opaque(...)``, ``parse_state_url(url)``).

    Examples
    --------
    >>> check_state_factory("persistentAggregate(Count)", "sqlite:///tmp/wc.db")
    Traceback (most recent call last):
      ...
    trident_spark.errors.TopologyError: persistentAggregate(Count): got the string \
'sqlite:///tmp/wc.db'; pass a state factory: parse_state_url('sqlite:///tmp/wc.db') from \
trident_spark.state, or e.g. SqliteState.opaque(path='/tmp/wc.db')
    """
    from trident_spark.state import MapState, StateSource

    if callable(getattr(factory, "newValuesStream", None)):  # a TridentState (persist's result)
        raise TopologyError(
            f"{operator}: got the TridentState {factory.describe()}; persisting takes a state factory "
            "such as SqliteState.opaque(path='/tmp/wc.db') (to read a TridentState use stateQuery)")
    if isinstance(factory, str):
        raise TopologyError(
            f"{operator}: got the string {factory!r}; pass a state factory: parse_state_url({factory!r}) "
            "from trident_spark.state, or e.g. SqliteState.opaque(path='/tmp/wc.db')")
    if isinstance(factory, MapState):
        raise TopologyError(
            f"{operator}: got the opened state {factory!r} (what open_state(url) returns, for reads "
            "outside Spark); a topology takes the state's settings, which it opens on the executors: "
            "parse_state_url(url) from trident_spark.state, or e.g. SqliteState.opaque(path='/tmp/wc.db')")
    if isinstance(factory, type) or not (isinstance(factory, StateSource)
                                         or callable(getattr(factory, "makeState", None))):
        raise TopologyError(
            f"{operator}: expected a state factory (with Storm's makeState(conf, metrics, partitionIndex, "
            f"numPartitions) or makeState(conf, partition_index, num_partitions), or a built-in store's), "
            f"got {describe(factory)}; e.g. "
            "SqliteState.opaque(path='/tmp/wc.db') or parse_state_url('sqlite:///tmp/wc.db?table=wc')")
    if not isinstance(factory, StateSource):
        from trident_spark.state import StateConfigError
        from trident_spark.state.state_api import make_state_arity

        try:
            make_state_arity(factory)
        except StateConfigError as exc:
            raise TopologyError(f"{operator}: {exc}") from None
