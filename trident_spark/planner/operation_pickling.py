"""Operations travel to executors pickled: when one cannot be, name the operator and what holds it back.

Spark pickles (with cloudpickle) the function of every ``mapInArrow`` stage, and
with it the user's operations and their attributes, on the driver each batch. A
lock, socket, open file or client made in ``__init__`` cannot be pickled, and
Spark's own message names neither the operator nor the attribute. Nothing here
runs unless pickling failed: the diagnosis pickles each operation, then each of
its attributes, to find the culprit.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from trident_spark.errors import TopologyError

T = TypeVar("T")

#: How deep the search follows attributes of attributes (``self.client.pool._lock``).
MAX_DEPTH = 4


def shipped(build: Callable[[], T], operations: Sequence[tuple[str, Any]]) -> T:
    """``build()`` (a ``df.mapInArrow(...)`` call, which pickles the stage); if pickling fails,
    a :class:`TopologyError` naming the operator of ``operations`` ((label, object) pairs)
    that cannot be pickled, the attribute that holds it back, and what to do.

    Examples
    --------
    >>> import threading
    >>> class Locked:
    ...     def __init__(self):
    ...         self.lock = threading.Lock()
    >>> def build():
    ...     from pyspark import cloudpickle
    ...     return cloudpickle.dumps(Locked())
    >>> shipped(build, [("each(Locked)", Locked())])
    Traceback (most recent call last):
    ...
    trident_spark.errors.TopologyError: each(Locked): the operation cannot be sent to Spark's executors: ...
    """
    try:
        return build()
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        error = unpicklable_error(operations)
        if error is None:
            raise
        raise error from exc


def unpicklable_error(operations: Sequence[tuple[str, Any]]) -> TopologyError | None:
    """The error for the first of ``operations`` that cannot be pickled (None if all can)."""
    for label, operation in operations:
        problem = _pickling_problem(operation)
        if problem is None:
            continue
        function = _wrapped_callable(operation)
        found = find_unpicklable(operation) if function is None else find_unpicklable(function, "")
        if found is None:
            what = f"it cannot be pickled ({problem})"
        else:
            path, value, reason = found
            if function is None:
                what = f"its attribute {path} holds {_describe(value)}, which cannot be pickled ({reason})"
            else:
                what = (f"{_name(function)} uses {path}: {_describe(value)}, which cannot be pickled "
                        f"({reason})")
        return TopologyError(f"{label}: the operation cannot be sent to Spark's executors: {what}. "
                             f"{_advice(operation if function is None else function)}")
    return None


def _wrapped_callable(operation: Any) -> Any:
    """The user's function inside the wrapper ``map``/``filter``/``peek`` put around a plain callable."""
    if type(operation).__name__.startswith("Callable"):
        return getattr(operation, "fn", None) or getattr(operation, "predicate", None)
    return None


def _name(function: Any) -> str:
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    return f"{name}()" if isinstance(name, str) else repr(function)


def _advice(operation: Any) -> str:
    if hasattr(operation, "prepare") and hasattr(operation, "cleanup"):
        return ("Open connections, clients, locks and files in prepare(conf, context), which runs on the "
                "executor once per task, and close them in cleanup(); not in __init__, which runs on the "
                "driver")
    if hasattr(operation, "makeState") or hasattr(operation, "open_backing_map"):
        return ("A state factory holds settings only; connect to the store in makeState()/open(), "
                "which runs on the executor")
    return ("Create it inside the function, where it runs on the executor, or write a BaseFunction that "
            "opens it in prepare(conf, context)")


def find_unpicklable(obj: Any, path: str = "self", depth: int = MAX_DEPTH) -> tuple[str, Any, str] | None:
    """``(path, value, reason)`` of the innermost attribute of ``obj`` that cannot be pickled.

    Follows instance attributes, class attributes, the items of dicts, lists, tuples
    and sets, and the variables a function or lambda captures, ``depth`` levels deep.

    Examples
    --------
    >>> import threading
    >>> class Client:
    ...     def __init__(self):
    ...         self.pool = {"lock": threading.Lock()}
    >>> class Op:
    ...     def __init__(self):
    ...         self.name, self.client = "op", Client()
    >>> path, value, reason = find_unpicklable(Op())
    >>> path, type(value).__name__, reason
    ("self.client.pool['lock']", 'lock', "TypeError: cannot pickle '_thread.lock' object")
    """
    for child_path, child in _children(obj, path):
        reason = _pickling_problem(child)
        if reason is None:
            continue
        deeper = find_unpicklable(child, child_path, depth - 1) if depth > 1 else None
        return deeper or (child_path, child, reason)
    return None


def _children(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield f"{path}[{key!r}]", value
        return
    if isinstance(obj, list | tuple | set | frozenset):
        for i, value in enumerate(obj):
            yield f"{path}[{i}]", value
        return
    code = getattr(obj, "__code__", None)
    if code is not None:  # a function or lambda: what it captured, the globals it reads, its object
        prefix = f"{path}." if path else ""
        for name, cell in zip(code.co_freevars, getattr(obj, "__closure__", None) or (), strict=False):
            try:
                yield f"{prefix}{name}", cell.cell_contents
            except ValueError:  # an empty cell
                continue
        namespace = getattr(obj, "__globals__", None) or {}
        for name in code.co_names:
            if name in namespace:
                yield f"{prefix}{name}", namespace[name]
        if getattr(obj, "__self__", None) is not None:  # a bound method
            yield "self", obj.__self__
        return
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict):
        for name, value in attributes.items():
            yield f"{path}.{name}", value
    for name in getattr(type(obj), "__slots__", ()):
        if hasattr(obj, name):
            yield f"{path}.{name}", getattr(obj, name)
    if not isinstance(obj, type):  # class attributes travel with a class pickled by value
        for name, value in vars(type(obj)).items():
            if not name.startswith("__") and not callable(value) and not isinstance(value, property):
                yield f"{type(obj).__name__}.{name}", value


def _pickling_problem(obj: Any) -> str | None:
    """Why ``obj`` cannot be pickled the way Spark pickles it (None when it can)."""
    from pyspark import cloudpickle

    try:
        cloudpickle.dumps(obj)  # type: ignore[no-untyped-call]
    except Exception as exc:  # whatever pickling raises is the answer
        return f"{type(exc).__name__}: {exc}"
    return None


def _describe(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    return f"a {kind.__qualname__}" if module in ("builtins", None) else f"a {module}.{kind.__qualname__}"
