"""The window operators' arguments, checked and bound into a graph node (build time, no Spark).

``Stream.tumblingWindow``, ``slidingWindow`` and ``window`` call :func:`window_node` with
Trident's argument shapes; a wrong shape, size, field or aggregator is a ``TopologyError``
naming the operator.
"""

from __future__ import annotations

from typing import Any

from trident_spark.errors import TopologyError
from trident_spark.fields import Fields
from trident_spark.graph import AggSpec, Node, WindowNode
from trident_spark.operation import Aggregator, BaseFunction, CombinerAggregator, ReducerAggregator
from trident_spark.validation import (
    FieldsLike,
    aggregator_fields,
    as_fields,
    check_outputs,
    describe,
    resolve_inputs,
)
from trident_spark.windowing.config import (
    BaseWindowConfig,
    SlidingCountWindow,
    SlidingDurationWindow,
    TumblingCountWindow,
    TumblingDurationWindow,
)
from trident_spark.windowing.duration import Duration
from trident_spark.windowing.store import InMemoryWindowsStoreFactory, check_store_factory

_AGGREGATORS = (Aggregator, CombinerAggregator, ReducerAggregator)


def tumbling_config(operator: str, size: object) -> BaseWindowConfig:
    """``tumblingWindow``'s first argument: a tuple count or a Duration."""
    if isinstance(size, Duration):
        return TumblingDurationWindow.of(size)
    if isinstance(size, int) and not isinstance(size, bool):
        return TumblingCountWindow.of(size)
    raise TopologyError(f"{operator}: the window is a tuple count (an int) or a Duration, got "
                        f"{describe(size)}; e.g. tumblingWindow(100, ...) or "
                        "tumblingWindow(Duration.seconds(10), ...)")


def sliding_config(operator: str, size: object, slide: object) -> BaseWindowConfig:
    """``slidingWindow``'s first two arguments: two tuple counts or two Durations."""
    if isinstance(size, Duration) and isinstance(slide, Duration):
        return SlidingDurationWindow.of(size, slide)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (size, slide)):
        return SlidingCountWindow.of(size, slide)  # type: ignore[arg-type]
    raise TopologyError(f"{operator}: the window and its slide are two tuple counts or two Durations, got "
                        f"{describe(size)} and {describe(slide)}; e.g. slidingWindow(100, 10, ...) or "
                        "slidingWindow(Duration.seconds(10), Duration.seconds(2), ...)")


def window_node(parent: Node, kind: str, config: object, store_factory: object, input_fields: FieldsLike,
                aggregator: object, function_fields: FieldsLike, timestamp_field: str | None = None,
                lateness: Duration | None = None) -> WindowNode:
    """The node of a window operator on ``parent``'s stream (``kind``: the method's name)."""
    if not isinstance(config, BaseWindowConfig):
        raise TopologyError(f"{kind}: expected a window config (TumblingCountWindow.of(n), "
                            "SlidingCountWindow.of(n, s), TumblingDurationWindow.of(d), "
                            f"SlidingDurationWindow.of(d, s)), got {describe(config)}")
    label = f"{kind}({config.describe()}, {type(aggregator).__name__})"
    factory = (InMemoryWindowsStoreFactory() if store_factory is None
               else check_store_factory(label, store_factory))
    if not isinstance(aggregator, _AGGREGATORS):
        hint = ("; a Function goes to each()" if isinstance(aggregator, BaseFunction)
                else "; e.g. Count(), Sum() or a subclass of Aggregator")
        raise TopologyError(f"{label}: expected an Aggregator, CombinerAggregator or ReducerAggregator, "
                            f"got {describe(aggregator)}{hint}")
    inputs = resolve_inputs(label, parent.fields, input_fields)
    outputs = as_fields(label, function_fields, "output field")
    check_outputs(label, outputs)
    fields = aggregator_fields(outputs, aggregator, inputs)
    lateness_ms = 0
    if timestamp_field is not None:
        if not config.is_duration:
            raise TopologyError(f"{label}: event time (timestamp_field) needs a duration window; a count "
                                "window counts tuples in arrival order")
        resolve_inputs(f"{label} timestamp_field", parent.fields, Fields(timestamp_field))
        if lateness is not None:
            if not isinstance(lateness, Duration):
                raise TopologyError(f"{label}: lateness is a Duration, got {describe(lateness)}; "
                                    "e.g. lateness=Duration.seconds(5)")
            lateness_ms = lateness.value
    elif lateness is not None:
        raise TopologyError(f"{label}: lateness applies to event time: give timestamp_field= too")
    spec = AggSpec(inputs, aggregator, fields)  # type: ignore[arg-type]
    return WindowNode(fields, label, [parent], config=config, store_factory=factory, spec=spec,
                      timestamp_field=timestamp_field, lateness_ms=lateness_ms)


def bind_window_args(kind: str, args: tuple[Any, ...]) -> tuple[object, FieldsLike, object, FieldsLike]:
    """``(store_factory or None, input_fields, aggregator, function_fields)`` from what follows
    the window's size: Trident's ``(factory, in, agg, out)``, or ``(in, agg, out)`` for ``window``."""
    if len(args) == 4:
        return args[0], args[1], args[2], args[3]
    if len(args) == 3 and kind == "window":
        return None, args[0], args[1], args[2]
    shape = ("window(config, [store_factory,] input_fields, aggregator, function_fields)" if kind == "window"
             else f"{kind}(..., store_factory, input_fields, aggregator, function_fields)")
    raise TopologyError(f"{kind}: got {len(args)} arguments after the window; use {shape}")


__all__ = ["bind_window_args", "sliding_config", "tumbling_config", "window_node"]
