"""The operators' declared shapes, as a user's type checker sees them: `mypy --strict` passes on a
script calling every shape (typing_cases/every_shape.py, which also builds at run time) and reports
an error on each line of typing_cases/wrong_shapes.py marked `# wrong:`, and on no other line; each
of those lines raises TopologyError when it runs."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from trident_spark import TopologyError

CASES = Path(__file__).parent / "typing_cases"
EVERY_SHAPE = CASES / "every_shape.py"
WRONG_SHAPES = CASES / "wrong_shapes.py"
ROOT = Path(__file__).parents[2]
ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*)$")


def mypy_errors() -> dict[str, dict[int, str]]:
    """mypy's errors on the two scripts, by file name and line."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (pip install -e '.[dev]' brings it)")
    # --follow-imports=silent: the package is checked by `make typecheck`; here only the user's
    # calls count. --ignore-missing-imports: pyspark has no stubs for some modules, and mypy cannot
    # follow trident_spark.state's package-dir mapping (see the Makefile's typecheck note).
    cache = ROOT / ".mypy_cache" / "typed-overloads"
    command = [sys.executable, "-m", "mypy", "--strict", "--config-file", "", "--follow-imports=silent",
               "--ignore-missing-imports", "--no-color-output", "--hide-error-context",
               "--cache-dir", str(cache), str(EVERY_SHAPE), str(WRONG_SHAPES)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=CASES)
    assert done.returncode in (0, 1), f"mypy failed to run:\n{done.stdout}\n{done.stderr}"
    errors: dict[str, dict[int, str]] = {EVERY_SHAPE.name: {}, WRONG_SHAPES.name: {}}
    for line in done.stdout.splitlines():
        found = ERROR.match(line)
        if found:
            errors.setdefault(Path(found["path"]).name, {})[int(found["line"])] = found["message"]
    return errors


@pytest.fixture(scope="module")
def errors() -> dict[str, dict[int, str]]:
    return mypy_errors()


def test_every_declared_shape_type_checks(errors: dict[str, dict[int, str]]) -> None:
    assert errors[EVERY_SHAPE.name] == {}


def test_every_wrong_shape_is_a_type_error_on_its_line(errors: dict[str, dict[int, str]]) -> None:
    lines = WRONG_SHAPES.read_text().splitlines()
    marked = {i for i, text in enumerate(lines, 1) if "  # wrong:" in text}
    assert len(marked) >= 20
    reported = errors[WRONG_SHAPES.name]
    assert sorted(marked - set(reported)) == [], "wrong shapes mypy accepted"
    assert {n: reported[n] for n in sorted(set(reported) - marked)} == {}, "errors on lines not marked wrong"


def test_every_declared_shape_builds_at_run_time() -> None:
    spec = importlib.util.spec_from_file_location("typing_cases_every_shape", EVERY_SHAPE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    topology = module.build()
    labels = [node.label for node in topology._nodes]
    assert labels.count("join") == 12
    assert sum(label.startswith("multiReduce(") for label in labels) == 8
    assert sum(label.startswith("partitionPersist(") for label in labels) == 4
    assert sum(label.startswith("persistentAggregate(") for label in labels) == 4


def test_every_wrong_shape_raises_topology_error_at_run_time() -> None:
    # wrong() builds a topology, then makes one wrong call per marked line: run the building lines,
    # then each marked line on its own.
    lines = WRONG_SHAPES.read_text().splitlines()
    start = lines.index("def wrong() -> None:")
    header = "\n".join(lines[:start])
    body = [line.strip() for line in lines[start + 1:] if line.strip() and not line.strip().startswith("#")]
    names: dict[str, Any] = {}
    exec(compile(header, str(WRONG_SHAPES), "exec"), names)
    for line in (b for b in body if "  # wrong:" not in b):
        exec(line, names)
    calls = [b for b in body if "  # wrong:" in b]
    assert len(calls) >= 20
    for call in calls:
        with pytest.raises(TopologyError):
            exec(call, dict(names))
