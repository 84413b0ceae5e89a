"""pyproject.toml: one version source, the PySpark range and its dependency floors, an extra for
every optional package the code imports (state/extras.py), the LICENSE."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import trident_spark
from trident_spark.state.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _floors(requirements):
    """{name: floor} of requirements written `name>=X` (`name[extra]>=X,<Y` too)."""
    found = {}
    for requirement in requirements:
        match = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*(?:[^;]*?)>=\s*([0-9][^,;\s]*)", requirement)
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def test_one_version_source():
    assert PROJECT["dynamic"] == ["version"] and "version" not in PROJECT
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["dynamic"]["version"] == {"attr": "trident_spark.__version__"}
    assert importlib.metadata.version("trident-spark") == trident_spark.__version__


def _version(text):
    return tuple(int(part) for part in text.split("."))


def test_floors_are_those_of_the_newest_pyspark_supported():
    """Ours are PySpark 4.3's [sql] floors; the oldest supported PySpark (4.2, which the quick tests
    also run on: `make test-lowest-pyspark`) asks no more."""
    sql_extra = [r for r in importlib.metadata.requires("pyspark") or [] if 'extra == "sql"' in r]
    pyspark_floors = _floors(sql_extra)
    ours = _floors(PROJECT["dependencies"])
    assert {name: ours[name] for name in ("pyarrow", "pandas", "numpy")} == {
        "pyarrow": "18.0.0", "pandas": "2.2.0", "numpy": "1.23.2"}
    for name in ("pyarrow", "pandas", "numpy"):
        assert _version(ours[name]) >= _version(pyspark_floors[name]), name
    assert any(r.startswith("pyspark>=4.2,<4.4") for r in PROJECT["dependencies"])


def test_every_optional_package_has_its_extra():
    extras = PROJECT["optional-dependencies"]
    for module, extra in EXTRAS.items():
        assert extra.extra in extras, module
        assert any(r.startswith(extra.package) for r in extras[extra.extra]), (module, extras[extra.extra])
        assert extra.package not in " ".join(PROJECT["dependencies"]), f"{extra.package} is not optional"


def test_dev_installs_what_the_tests_import():
    extras = PROJECT["optional-dependencies"]
    assert "trident-spark[all]" in extras["dev"]
    [everything] = extras["all"]
    named = set(re.search(r"\[(.*)\]", everything).group(1).split(","))
    # containers: make test-containers adds it; docs and release: make docs and make dist add them
    assert named == set(extras) - {"all", "dev", "containers", "docs", "release"}


def test_the_license_file():
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_every_package_of_the_source_tree_is_installed():
    """setuptools installs the packages pyproject lists: a package left out works from a checkout
    (editable install) and is missing from the wheel."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    inits = (ROOT / "trident_spark").rglob("__init__.py")
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in inits}
    assert found - listed == set()
