"""The user's code to the executors: modules shipped by value in local mode, ``py_files`` on a cluster.

Spark pickles operations with cloudpickle, which refers to a class or function
by its module's name: the executors must import that module. A pytest module,
a notebook cell or a script next to the topology is imported by the driver but
not installed where Spark's Python workers run. In local mode the runtime
registers every such module for pickling *by value* (the code travels with the
operations), so Trident's LocalCluster habit works with no step by the user.
On a cluster the executors need the code itself: install it there, ship it
with ``spark-submit --py-files`` or ``topology.run(py_files=[...])``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
import sysconfig
import types
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from trident_spark.errors import TopologyError

#: Top-level packages always importable where Spark runs Python (never shipped by value).
ENGINE_PACKAGES = frozenset({"trident_spark", "pyspark", "py4j", "pyarrow", "cloudpickle"})
#: How deep the search follows attributes, captured variables and globals.
MAX_DEPTH = 4
#: What ``py_files`` may name: what ``SparkContext.addPyFile`` ships.
PY_FILE_SUFFIXES = (".py", ".zip", ".egg")


def ship_by_value(queries: Iterable[Any]) -> list[str]:
    """Register for pickling by value every module that defines code the queries' operations
    run and that the executors may not import (not installed); returns their names.

    Examples
    --------
    >>> from trident_spark import TridentTopology
    >>> from trident_spark.spout import FeederBatchSpout
    >>> topology = TridentTopology()
    >>> _ = topology.newStream("s", FeederBatchSpout(["w"])).map(lambda t: [t[0]])
    >>> ship_by_value(topology.queries())   # trident_spark's own code is never shipped by value
    []
    """
    from pyspark import cloudpickle

    shipped = []
    for module in user_modules(queries):
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]
        shipped.append(module.__name__)
    return shipped


def user_modules(queries: Iterable[Any]) -> list[types.ModuleType]:
    """The modules, outside installed packages, that define what the queries' operations run."""
    found: dict[str, types.ModuleType] = {}
    seen: set[int] = set()
    for query in queries:
        for node in query.nodes:
            for value in _node_values(node):
                for name in _modules_of(value, seen, MAX_DEPTH):
                    module = sys.modules.get(name)
                    if module is not None and name not in found and _ships_by_value(module):
                        found[name] = module
    return list(found.values())


def _node_values(node: Any) -> Iterator[Any]:
    """The user objects a graph node holds: operations, spouts, states, aggregator specs."""
    if not is_dataclass(node):
        return
    for field in fields(node):
        if field.name in ("inputs", "fields", "label", "parallelism"):
            continue
        value = getattr(node, field.name)
        if isinstance(value, list):
            for item in value:
                yield getattr(item, "aggregator", item)
        elif value is not None and not isinstance(value, str | int | float | bool):
            yield value


def _modules_of(obj: Any, seen: set[int], depth: int) -> Iterator[str]:
    """Modules whose code ``obj`` uses: its class and bases, its functions' globals and captured
    variables, its attributes' (``depth`` levels deep)."""
    if depth <= 0 or id(obj) in seen or isinstance(obj, str | bytes | int | float | bool | type(None)):
        return
    seen.add(id(obj))
    if isinstance(obj, types.ModuleType):
        return
    if isinstance(obj, type):
        for kind in obj.__mro__:
            if kind.__module__ in ("builtins", "abc", "typing"):
                continue
            yield kind.__module__
            for member in vars(kind).values():
                function = getattr(member, "__func__", member)  # staticmethod, classmethod
                if isinstance(function, types.FunctionType):
                    yield from _modules_of(function, seen, depth - 1)
        return
    if isinstance(obj, types.FunctionType):
        yield obj.__module__
        for cell in obj.__closure__ or ():
            try:
                yield from _modules_of(cell.cell_contents, seen, depth - 1)
            except ValueError:  # an empty cell
                continue
        for name in _global_names(obj.__code__):
            if name in obj.__globals__:
                yield from _modules_of(obj.__globals__[name], seen, depth - 1)
        return
    if isinstance(obj, types.MethodType):
        yield from _modules_of(obj.__func__, seen, depth)
        yield from _modules_of(obj.__self__, seen, depth - 1)
        return
    if isinstance(obj, dict):
        for value in obj.values():
            yield from _modules_of(value, seen, depth - 1)
        return
    if isinstance(obj, list | tuple | set | frozenset):
        for value in obj:
            yield from _modules_of(value, seen, depth - 1)
        return
    yield from _modules_of(type(obj), seen, depth)
    for value in (getattr(obj, "__dict__", None) or {}).values():
        yield from _modules_of(value, seen, depth - 1)


def _global_names(code: types.CodeType) -> Iterator[str]:
    """Names a function's code (and the lambdas and comprehensions inside it) reads."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _ships_by_value(module: types.ModuleType) -> bool:
    """A module the executors may not import: the user's, not installed (``__main__`` already
    ships by value; installed packages, the standard library and the engine never do)."""
    name = module.__name__
    top = name.partition(".")[0]
    if name == "__main__" or top in ENGINE_PACKAGES or top in sys.stdlib_module_names:
        return False
    path = getattr(module, "__file__", None)
    if not path:
        return False  # built in, or a namespace package: nothing to ship
    if top in _installed_packages():
        return False
    resolved = os.path.realpath(path)
    return not any(resolved.startswith(root + os.sep) for root in _library_roots())


@functools.cache
def _library_roots() -> tuple[str, ...]:
    """Installed code: the standard library, site-packages, and trident_spark (an editable install)."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    roots.update(p for p in sys.path if p.rstrip(os.sep).endswith(("site-packages", "dist-packages")))
    # trident_spark's own directory: two up from this module (trident_spark/planner/module_shipping.py).
    roots.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return tuple(sorted(os.path.realpath(root) for root in roots))


@functools.cache
def _installed_packages() -> frozenset[str]:
    return frozenset(importlib.metadata.packages_distributions())


# --- py_files ------------------------------------------------------------------------------
def check_py_files(py_files: Sequence[str | os.PathLike[str]] | None) -> list[str]:
    """``run(py_files=)``: the files to ship to the executors, each checked, as absolute paths
    (``hdfs://``, ``s3a://``, ``https://`` and other URLs pass as given), or a TopologyError.

    Examples
    --------
    >>> check_py_files(None)
    []
    >>> check_py_files(["/no/such/ops.py"])
    Traceback (most recent call last):
    ...
    trident_spark.errors.TopologyError: run(py_files=...): no such file /no/such/ops.py; give the \
.py, .zip or .egg files the executors need (as for spark-submit --py-files)
    """
    if py_files is None:
        return []
    if isinstance(py_files, str | os.PathLike):
        raise TopologyError(f"run(py_files=...): give a list of files, e.g. py_files=[{str(py_files)!r}], "
                            f"not {py_files!r}")
    checked = []
    for entry in py_files:
        text = os.fspath(entry)
        if "://" in text:
            checked.append(text)  # a URL Spark fetches itself
            continue
        path = Path(text).expanduser()
        if path.is_dir():
            raise TopologyError(
                f"run(py_files=...): {text} is a directory; zip the package and give the zip (e.g. "
                f"`cd {path.parent} && python -m zipfile -c {path.name}.zip {path.name}/`), as for "
                "spark-submit --py-files")
        if not path.is_file():
            raise TopologyError(f"run(py_files=...): no such file {text}; give the .py, .zip or .egg files "
                                "the executors need (as for spark-submit --py-files)")
        if not path.name.endswith(PY_FILE_SUFFIXES):
            raise TopologyError(f"run(py_files=...): {text} is not a .py, .zip or .egg file, which is what "
                                "Spark can put on the executors' Python path")
        checked.append(str(path.resolve()))
    return checked


def add_py_files(spark: Any, py_files: Sequence[str]) -> None:
    """Ship ``py_files`` to the executors (``SparkContext.addPyFile``: on their Python path, and
    on the driver's)."""
    for path in py_files:
        spark.sparkContext.addPyFile(path)


__all__ = ["add_py_files", "check_py_files", "ship_by_value", "user_modules"]
