"""pyproject.toml: one version source, PySpark 4.3's dependency floors, an extra for every optional
package the code imports (state/extras.py), the LICENSE."""

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


def test_floors_are_pyspark_4_3s_own():
    sql_extra = [r for r in importlib.metadata.requires("pyspark") or [] if 'extra == "sql"' in r]
    pyspark_floors = _floors(sql_extra)
    ours = _floors(PROJECT["dependencies"])
    for name in ("pyarrow", "pandas", "numpy"):
        assert ours[name] == pyspark_floors[name], name
    assert "pyspark>=4.3,<4.4" in PROJECT["dependencies"]


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
    assert named == set(extras) - {"all", "dev", "containers"}  # containers: make test-containers adds it


def test_the_license_file():
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
