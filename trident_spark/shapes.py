"""The method shapes of Trident's interfaces, checked when a topology is built.

A Java program ported to Python may give a method the wrong number of parameters (Storm's
``Function.execute(tuple, collector)`` declared as ``execute(self, tuple)``). Python finds it only
when the method is called: inside a Spark task, after the task's retries. :func:`check_shape`
finds it when the operation is added to the topology instead, with ``inspect.signature``, and
names Storm's signature and the Python one to declare. Only methods the program defines are
checked (the interfaces' own defaults fit), and only where Python can tell (a builtin or a C
callable is let through).

Examples
--------
>>> from trident_spark.operation import BaseFunction
>>> class Split(BaseFunction):
...     def execute(self, tuple):
...         pass
>>> check_shape("each(Split)", Split())
Traceback (most recent call last):
  ...
trident_spark.errors.TopologyError: each(Split): Split.execute(tuple) does not take the arguments of \
Storm's Function.execute(TridentTuple tuple, TridentCollector collector); declare it as \
def execute(self, tuple, collector)
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from trident_spark.errors import TopologyError
from trident_spark.operation import (
    Aggregator,
    BaseFilter,
    BaseFunction,
    CombinerAggregator,
    Operation,
    QueryFunction,
    ReducerAggregator,
    StateUpdater,
)

#: (method, Storm's declaration, our Python parameters) per interface.
MethodShape = tuple[str, str, tuple[str, ...]]

_LIFECYCLE: tuple[MethodShape, ...] = (
    ("prepare", "prepare(Map conf, TridentOperationContext context)", ("conf", "context")),
    ("cleanup", "cleanup()", ()),
)

OPERATION_SHAPES: tuple[tuple[type, str, tuple[MethodShape, ...]], ...] = (
    (BaseFunction, "Function", (
        ("execute", "execute(TridentTuple tuple, TridentCollector collector)", ("tuple", "collector")),)),
    (BaseFilter, "Filter", (("isKeep", "isKeep(TridentTuple tuple)", ("tuple",)),)),
    (Aggregator, "Aggregator", (
        ("init", "init(Object batchId, TridentCollector collector)", ("batch_id", "collector")),
        ("aggregate", "aggregate(T val, TridentTuple tuple, TridentCollector collector)",
         ("state", "tuple", "collector")),
        ("complete", "complete(T val, TridentCollector collector)", ("state", "collector")))),
    (CombinerAggregator, "CombinerAggregator", (
        ("init", "init(TridentTuple tuple)", ("tuple",)),
        ("combine", "combine(T val1, T val2)", ("val1", "val2")),
        ("zero", "zero()", ()))),
    (ReducerAggregator, "ReducerAggregator", (
        ("init", "init()", ()),
        ("reduce", "reduce(T curr, TridentTuple tuple)", ("curr", "tuple")))),
    (QueryFunction, "QueryFunction", (
        ("batchRetrieve", "batchRetrieve(S state, List<TridentTuple> args)", ("state", "tuples")),
        ("execute", "execute(TridentTuple tuple, T result, TridentCollector collector)",
         ("tuple", "result", "collector")))),
    (StateUpdater, "StateUpdater", (
        ("updateState", "updateState(S state, List<TridentTuple> tuples, TridentCollector collector)",
         ("state", "tuples", "collector")),)),
)


def takes(method: Any, count: int) -> bool | None:
    """Whether ``method`` (bound) accepts ``count`` positional arguments; None when Python cannot tell.

    Examples
    --------
    >>> takes(lambda a, b=1: 0, 1), takes(lambda a: 0, 2), takes(len, 1)
    (True, False, True)
    """
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def _defined_by_program(owner: type, name: str) -> bool:
    """Whether ``name`` comes from a class other than an interface's (whose defaults fit)."""
    for klass in owner.__mro__:
        if name in klass.__dict__:
            module = klass.__module__
            return not (module == "trident_spark.operation" or module.startswith("trident_spark.spout."))
    return False


def check_methods(label: str, obj: Any, interface: str, shapes: Iterable[MethodShape]) -> None:
    """Raise :class:`TopologyError` if a method of ``obj`` its program defines does not take the
    arguments of Storm's, naming Storm's signature and the Python one to declare.

    Examples
    --------
    >>> class Spout:
    ...     def nextTuple(self, collector): pass
    >>> check_methods("newStream('s')", Spout(), "ISpout", [("nextTuple", "nextTuple()", ())])
    Traceback (most recent call last):
      ...
    trident_spark.errors.TopologyError: newStream('s'): Spout.nextTuple(collector) does not take the \
arguments of Storm's ISpout.nextTuple(); declare it as def nextTuple(self)
    """
    owner = type(obj)
    for name, storm, ours in shapes:
        method = getattr(obj, name, None)
        if not callable(method) or not _defined_by_program(owner, name):
            continue
        if takes(method, len(ours)) is not False:
            continue
        declared = ", ".join(inspect.signature(method).parameters)
        wanted = ", ".join(("self", *ours))
        raise TopologyError(f"{label}: {owner.__name__}.{name}({declared}) does not take the arguments of "
                            f"Storm's {interface}.{storm}; declare it as def {name}({wanted})")


def check_shape(label: str, operation: Any) -> None:
    """Check an operation's methods against its Trident interface's (see the module's docstring).

    Examples
    --------
    >>> from trident_spark.builtin import Count
    >>> check_shape("aggregate(Count)", Count())
    """
    if not isinstance(operation, Operation):
        return
    for kind, interface, shapes in OPERATION_SHAPES:
        if isinstance(operation, kind):
            check_methods(label, operation, interface, (*shapes, *_LIFECYCLE))
            return


def node_operations(node: Any) -> list[Any]:
    """The operations a graph node holds (a function, a filter, aggregators, an updater...).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> node_operations(SimpleNamespace(function="f", specs=[SimpleNamespace(aggregator="a")]))
    ['f', 'a']
    """
    found = [getattr(node, name, None) for name in ("function", "filter", "updater", "aggregator", "reducer")]
    found += [getattr(spec, "aggregator", None) for spec in getattr(node, "specs", None) or []]
    return [op for op in found if op is not None]


__all__ = ["OPERATION_SHAPES", "MethodShape", "check_methods", "check_shape", "node_operations", "takes"]
