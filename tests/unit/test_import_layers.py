"""The package's layers import one way (docs/architecture.md): no import circle but the builder knot.

Every import counts: at module level, inside functions and under ``TYPE_CHECKING``. Read
from the source with ``ast`` (nothing is imported, no Spark).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: (directory, package it installs as): state/ is trident_spark.state (pyproject's package-dir).
TREES = (("trident_spark", "trident_spark"), ("state", "trident_spark.state"))

#: The builders refer to each other (a Stream's groupBy gives a GroupedStream whose aggregate
#: gives a Stream; persist gives a TridentState whose newValuesStream gives a Stream).
BUILDER_KNOT = {"trident_spark.stream", "trident_spark.grouped", "trident_spark.topology",
                "trident_spark.trident_state"}

#: The DSL: what describes a topology. It imports nothing that plans or runs it.
DSL = {"trident_spark.topology", "trident_spark.stream", "trident_spark.grouped",
       "trident_spark.trident_state", "trident_spark.graph", "trident_spark.operation",
       "trident_spark.validation", "trident_spark.fields", "trident_spark.joins", "trident_spark.sink",
       "trident_spark.runner", "trident_spark.errors", "trident_spark.durations",
       "trident_spark.arrow_operation"}
DSL_PACKAGES = ("trident_spark.builtin",)

PLANNER, RUNTIME, EXECUTOR = "trident_spark.planner", "trident_spark.runtime", "trident_spark.executor"
CLI, TUNING, SPOUT_ENGINE = "trident_spark.cli", "trident_spark.tuning", "trident_spark.spout"
#: The Kafka output: state factories users build beside the DSL (on the state API), run by the
#: state stage; it imports no layer that plans or runs a topology, and no pyspark.
KAFKA_OUTPUT = "trident_spark.kafka"
#: Windows: configs, the window logic and its stores, beside the DSL (the builders use its
#: configs); no layer that plans or runs a topology, and no pyspark. The window task is in the
#: executor, its driver half in the planner.
WINDOWING = "trident_spark.windowing"
#: DRPC: the server, its clients and the DRPC spout (on the Spout interface); the runtime posts
#: the results through it. It imports nothing that plans or runs a topology.
DRPC = "trident_spark.drpc"

#: layer (package prefix) -> the packages it must not import: cli -> tuning -> runtime -> planner
#: -> executor -> (spout, state).
FORBIDDEN = {
    SPOUT_ENGINE: (EXECUTOR, PLANNER, RUNTIME, TUNING, CLI),
    EXECUTOR: (PLANNER, RUNTIME, TUNING, CLI),
    PLANNER: (RUNTIME, TUNING, CLI),
    RUNTIME: (TUNING, CLI),
    TUNING: (CLI,),
    KAFKA_OUTPUT: (SPOUT_ENGINE, EXECUTOR, PLANNER, RUNTIME, TUNING, CLI),
    WINDOWING: (SPOUT_ENGINE, EXECUTOR, PLANNER, RUNTIME, TUNING, CLI),
    DRPC: (EXECUTOR, PLANNER, RUNTIME, TUNING, CLI),
}


def modules() -> dict[str, Path]:
    found = {}
    for top, package in TREES:
        base = ROOT / top
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str, int]]:
    """``(imported module, as written, line)`` for every import in the file, resolved to a known
    module where it names one (``from a.b import c`` names ``a.b.c`` if that is a module)."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [(alias.name, f"import {alias.name}") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = ", ".join(alias.name for alias in node.names)
            written = f"from {'.' * node.level}{node.module or ''} import {names}"
            targets = [(f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module, written)
                       for alias in node.names]
        else:
            continue
        for target, written in targets:
            resolved = target
            while resolved and resolved not in known and "." in resolved:
                resolved = resolved.rpartition(".")[0]
            found.append((resolved if resolved in known else target, written, node.lineno))
    return found


def graph() -> dict[str, list[tuple[str, str, int]]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _package_inits() -> set[str]:
    return {name for name, path in modules().items() if path.name == "__init__.py"}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle_but_the_builder_knot():
    # A package's __init__ only re-exports: it is not a layer of its own, so it stays out of circles.
    inits = _package_inits()
    known = set(modules())
    edges = {name: {target for target, _, _ in found if target in known and target not in inits
                    and target != name}
             for name, found in graph().items() if name not in inits}
    bad = [c for c in cycles(edges) if set(c) != BUILDER_KNOT]
    details = []
    for circle in bad:
        members = set(circle)
        links = [f"  {name}:{line}: {written}" for name in circle for target, written, line in graph()[name]
                 if target in members and target != name]
        details.append(f"circle of {len(circle)}: {', '.join(circle)}\n" + "\n".join(links))
    assert not bad, "import circles beyond the builder knot:\n" + "\n".join(details)


def test_state_imports_nothing_outside_itself():
    leaks = [f"{name}:{line}: {written}" for name, found in graph().items()
             if _in(name, "trident_spark.state") for target, written, line in found
             if target.startswith("trident_spark") and not _in(target, "trident_spark.state")]
    assert not leaks, "state/ imports outside itself:\n" + "\n".join(leaks)


def test_the_dsl_imports_nothing_that_plans_or_runs_it_nor_pyspark():
    dsl = [name for name in graph() if name in DSL]
    assert len(dsl) == len(DSL), f"DSL modules not found: {sorted(DSL - set(dsl))}"
    offending = []
    for name, found in graph().items():
        if name not in DSL and not any(_in(name, p) for p in DSL_PACKAGES):
            continue
        for target, written, line in found:
            engine = (PLANNER, RUNTIME, EXECUTOR, CLI, TUNING, SPOUT_ENGINE)
            if any(_in(target, p) for p in engine) or (_in(target, "pyspark") and name in DSL):
                offending.append(f"{name}:{line}: {written}")
    assert not offending, "the DSL imports what plans or runs it:\n" + "\n".join(offending)


def test_each_layer_imports_only_the_layers_below():
    offending = []
    for name, found in graph().items():
        for layer, below_not in FORBIDDEN.items():
            if not _in(name, layer):
                continue
            offending += [f"{name}:{line}: {written}" for target, written, line in found
                          if any(_in(target, p) for p in below_not)]
    assert not offending, "a layer imports one above it:\n" + "\n".join(offending)


def test_the_graph_sees_imports_inside_functions_and_under_type_checking(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import b\n"
                      "def f():\n    import c.d\n", encoding="utf-8")
    found = {target for target, _, _ in imports("x.probe", source, {})}
    assert {"a", "c.d"} <= found


def test_windowing_imports_no_pyspark():
    offending = [f"{name}:{line}: {written}" for name, found in graph().items() if _in(name, WINDOWING)
                 for target, written, line in found if _in(target, "pyspark")]
    assert any(_in(name, WINDOWING) for name in graph()), "trident_spark.windowing not found"
    assert not offending, "trident_spark.windowing imports pyspark:\n" + "\n".join(offending)


def test_the_kafka_output_imports_no_pyspark():
    offending = [f"{name}:{line}: {written}" for name, found in graph().items() if _in(name, KAFKA_OUTPUT)
                 for target, written, line in found if _in(target, "pyspark")]
    assert any(_in(name, KAFKA_OUTPUT) for name in graph()), "trident_spark.kafka not found"
    assert not offending, "the Kafka output imports pyspark:\n" + "\n".join(offending)
