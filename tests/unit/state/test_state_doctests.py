"""Every docstring example of the state layer runs as written; the layer never imports Spark."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import trident_spark.state as state_package

MODULES = ["trident_spark.state", *(f"trident_spark.state.{m.name}"
                                    for m in pkgutil.iter_modules(state_package.__path__))]
FORBIDDEN = re.compile(r"^(import|from) (pyspark|trident_spark\.(dsl|planner|runtime|spout|cli))", re.M)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=True)
    assert failures == 0
    assert attempted > 0, f"{name} has no docstring example"


def test_no_spark_import_in_the_state_layer():
    for path in Path(state_package.__path__[0]).glob("*.py"):
        assert not FORBIDDEN.search(path.read_text()), path


def test_the_state_layer_works_where_pyspark_cannot_be_imported():
    code = ("import sys; sys.modules['pyspark'] = None\n"
            "from trident_spark.state import MemoryState\n"
            "state = MemoryState.opaque(name='x').open()\n"
            "assert state.multiUpdate(0, [['cat']], [lambda old: 1]) == [1]\n")
    subprocess.run([sys.executable, "-c", code], check=True)
