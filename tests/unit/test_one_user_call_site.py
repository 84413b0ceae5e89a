"""User code is called in one place: only ``executor/kernel.py`` reports a failing user call or
checks an emitted tuple's width (issue 30: no copy of the wrapper or the width check anywhere).

Read from the source with ``ast`` (nothing is imported): every ``OperatorError(...)`` built
outside the kernel is checked against the two texts only the kernel may build.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "trident_spark" / "executor" / "kernel.py"
TREES = ("trident_spark", "state")

#: The user-call report: "<who> failed ...: {type(exc).__name__}: ..." (TYPE marks the class name).
REPORT = re.compile(r"failed.*\{TYPE\}")
#: The width checks: "emitted {n} values", "returned {n} values", "returned {n} results for".
WIDTH = re.compile(r"(emitted|returned) \{\} (values|results for)")


def _text(node: ast.AST) -> str:
    """A message's literal text, ``{}`` for each formatted value (``{TYPE}`` for ``type(x).__name__``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(part) for part in node.values)
    if isinstance(node, ast.FormattedValue):
        value = node.value
        if (isinstance(value, ast.Attribute) and value.attr == "__name__"
                and isinstance(value.value, ast.Call) and isinstance(value.value.func, ast.Name)
                and value.value.func.id == "type"):
            return "{TYPE}"
        return "{}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) + _text(node.right)
    return "{}"


def copies(source: str) -> list[tuple[int, str]]:
    """(line, message) of each OperatorError in ``source`` built as a user-call report or width check."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name != "OperatorError":
            continue
        text = _text(node.args[0])
        if REPORT.search(text) or WIDTH.search(text):
            found.append((node.lineno, text))
    return found


def test_the_scan_finds_a_copy_of_the_wrapper_and_of_the_width_check() -> None:
    wrapper = ('try:\n    fn(t)\nexcept Exception as exc:\n    raise OperatorError('
               'f"{label} failed on tuple {t!r}: {type(exc).__name__}: {exc}") from exc\n')
    width = 'raise OperatorError(f"{label}: emitted {len(values)} values {values!r} but declared " + "x")\n'
    other = 'raise OperatorError(f"{label}: field {name!r}: emitted {bad!r:.100} ({type(bad).__name__})")\n'
    assert sorted(line for line, _ in copies(wrapper + width + other)) == [4, 5]
    assert len(copies(KERNEL.read_text())) == 4  # the kernel's own: report, declared, reduced, results


def test_no_module_but_the_kernel_reports_a_user_call_or_checks_a_width() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {text}"
             for tree in TREES for path in sorted((ROOT / tree).rglob("*.py")) if path != KERNEL
             for line, text in copies(path.read_text())]
    assert found == []
