"""``trident_spark.state`` is code to type checkers outside the repository, in the install
``make setup`` makes (editable, setuptools' compat mode: the checkout on ``sys.path``, where
``trident_spark/state`` links to ``state/``).

From a directory outside the checkout, with no configuration and no ``MYPYPATH``: mypy reveals
the real classes of a snippet's state factory and states (not ``Any``) and reports the snippet's
one type error; Pyright the same when it is installed; ``python -c`` imports the package from
``state/``. The default editable mode's import hook fails the first two: the message says so.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import distributions
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """\
from trident_spark.state import SqliteState, StateSource, open_state

factory = SqliteState.opaque(path="/tmp/counts.db")
source: StateSource = factory
reveal_type(factory)
reveal_type(factory.open())
reveal_type(open_state("memory://wc"))
SqliteState.opaque(path=3)
"""

REVEALED = {
    5: "trident_spark.state.sqlite.SqliteState",
    6: "trident_spark.state.map.MapState",
    7: "trident_spark.state.map.MapState",
}
MISTAKE = (8, 'Argument "path" to "opaque" of "SqliteState" has incompatible type "int"; expected "str"')

REINSTALL = ("reinstall as `make setup` does: pip install --config-settings editable_mode=compat "
             "-e '.[dev]' (the default editable mode is an import hook type checkers cannot follow)")


def outside(tmp_path: Path) -> Path:
    """A directory outside the checkout holding the snippet."""
    assert not tmp_path.resolve().is_relative_to(ROOT)
    (tmp_path / "snippet.py").write_text(SNIPPET)
    return tmp_path


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}


def test_the_install_is_the_makefiles() -> None:
    """What the other tests check: an editable install of this checkout, in compat mode (its
    .pth file names the checkout), or a wheel's."""
    # the installed one: in the checkout (on sys.path under pytest) an editable install in compat
    # mode leaves trident_spark.egg-info, which importlib.metadata would find first
    [dist] = distributions(name="trident-spark", path=[sysconfig.get_paths()["purelib"]])
    direct = dist.read_text("direct_url.json")
    if direct is None or not json.loads(direct).get("dir_info", {}).get("editable"):
        return  # a wheel (or sdist) install: trident_spark/state is a real directory there
    assert Path(json.loads(direct)["url"].removeprefix("file://")).resolve() == ROOT
    pth = [f for f in dist.files or () if f.name.endswith(".pth") and "trident_spark" in f.name]
    assert [Path(str(f.locate())).read_text().strip() for f in pth] == [str(ROOT)], REINSTALL


def test_python_outside_the_checkout_imports_trident_spark_state(tmp_path: Path) -> None:
    code = "import os, trident_spark.state as s; print(os.path.realpath(s.__file__))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=outside(tmp_path), env=clean_env())
    assert done.returncode == 0, done.stderr
    wheel = Path(os.path.realpath(sysconfig.get_paths()["purelib"])) / "trident_spark" / "state"
    assert done.stdout.strip() in (str(ROOT / "state" / "__init__.py"), str(wheel / "__init__.py"))


def test_mypy_outside_the_checkout_sees_the_state_types(tmp_path: Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed in this environment (pip install -e '.[dev]' brings it)")
    where = outside(tmp_path)
    command = [sys.executable, "-m", "mypy", "--strict", "--config-file", "", "--no-color-output",
               "--hide-error-context", "--no-error-summary", "--cache-dir", str(where / ".mypy_cache"),
               "snippet.py"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=where, env=clean_env())
    assert done.returncode in (0, 1), f"mypy failed to run:\n{done.stdout}\n{done.stderr}"
    assert "import-not-found" not in done.stdout, f"{REINSTALL}:\n{done.stdout}"
    lines = done.stdout.splitlines()
    revealed = {int(m[1]): m[2] for m in (re.match(r'snippet\.py:(\d+): note: Revealed type is "(.*)"$', line)
                                          for line in lines) if m}
    errors = [(int(m[1]), m[2]) for m in (re.match(r"snippet\.py:(\d+): error: (.*?)  \[[a-z-]+\]$", line)
                                          for line in lines) if m]
    assert revealed == REVEALED, done.stdout
    assert errors == [MISTAKE], done.stdout
    assert len(lines) == len(REVEALED) + 1, done.stdout


def test_pyright_outside_the_checkout_sees_the_state_types(tmp_path: Path) -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.skip("Pyright is not installed in this environment (pip install pyright; it fetches node)")
    where = outside(tmp_path)
    done = subprocess.run([pyright, "--pythonpath", sys.executable, "snippet.py"], capture_output=True,
                          text=True, timeout=300, cwd=where, env=clean_env())
    assert done.returncode in (0, 1), f"Pyright failed to run:\n{done.stdout}\n{done.stderr}"
    assert "reportMissingImports" not in done.stdout, f"{REINSTALL}:\n{done.stdout}"
    found = re.findall(r'snippet\.py:(\d+):\d+ - (information|error): (.*)', done.stdout)
    assert found == [
        ("5", "information", 'Type of "factory" is "SqliteState"'),
        ("6", "information", 'Type of "factory.open()" is "MapState"'),
        ("7", "information", 'Type of "open_state("memory://wc")" is "MapState"'),
        ("8", "error", 'Argument of type "Literal[3]" cannot be assigned to parameter "path" of type "str" '
                       'in function "opaque"'),
    ], done.stdout
