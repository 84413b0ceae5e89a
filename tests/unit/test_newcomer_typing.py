"""The mistakes a newcomer makes with the README's example are type errors an IDE shows:
`mypy --strict` reports an error on each of the eleven lines of typing_cases/newcomer_mistakes.py
marked `# mistake:` (a non-spout given to newStream, a path that is no string in a state
factory's opaque(), a cache size that is no int in MemoryState's, a RunHandle.progress item misused, ...) and
on no other line."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CASES = Path(__file__).parent / "typing_cases"
MISTAKES = CASES / "newcomer_mistakes.py"
ROOT = Path(__file__).parents[2]
ERROR = re.compile(r"^newcomer_mistakes\.py:(?P<line>\d+): error: (?P<message>.*)$")


def installed_layout(root: Path) -> Path:
    """The package as a wheel installs it, under ``root``: trident_spark/ with state/ inside
    (in the source tree state/ is mapped there by setuptools' package-dir, which mypy cannot
    follow in an editable install)."""
    package = root / "trident_spark"
    package.mkdir()
    for entry in (ROOT / "trident_spark").iterdir():
        if entry.name != "state":
            (package / entry.name).symlink_to(entry)
    (package / "state").symlink_to(ROOT / "state")
    return root


def test_each_planted_mistake_is_a_mypy_error_on_its_line(tmp_path: Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (pip install -e '.[dev]' brings it)")
    # the same options as test_typed_overloads: only the user's calls are checked
    command = [sys.executable, "-m", "mypy", "--strict", "--config-file", "", "--follow-imports=silent",
               "--ignore-missing-imports", "--no-color-output", "--hide-error-context",
               "--cache-dir", str(ROOT / ".mypy_cache" / "newcomer"), MISTAKES.name]
    env = {**os.environ, "MYPYPATH": str(installed_layout(tmp_path))}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=CASES, env=env)
    assert done.returncode in (0, 1), f"mypy failed to run:\n{done.stdout}\n{done.stderr}"
    reported = {int(m["line"]): m["message"] for m in map(ERROR.match, done.stdout.splitlines()) if m}
    lines = MISTAKES.read_text().splitlines()
    marked = {i for i, text in enumerate(lines, 1) if "  # mistake:" in text}
    assert len(marked) == 11
    assert sorted(marked - set(reported)) == [], f"mistakes mypy accepted:\n{done.stdout}"
    assert {n: reported[n] for n in sorted(set(reported) - marked)} == {}, "errors on lines not marked"
    assert "expected \"EngineSpout | TridentSpout\"" in reported[min(marked)]  # newStream("numbers", 42)
