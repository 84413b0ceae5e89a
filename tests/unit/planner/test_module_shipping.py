"""Operations' code to the executors (planner.module_shipping): which modules ship by value in local mode,
and the checks of run(py_files=...)."""

from __future__ import annotations

import doctest
import sys
import textwrap

import pytest

from trident_spark import TopologyError, TridentTopology
from trident_spark.builtin import Count
from trident_spark.planner import module_shipping
from trident_spark.planner.module_shipping import check_py_files, user_modules
from trident_spark.spout import FeederBatchSpout


@pytest.fixture
def user_package(tmp_path, monkeypatch):
    """A package of the user's, importable by the driver only: ``myops.split`` uses ``myops.words``."""
    package = tmp_path / "myops"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "words.py").write_text("def words(text):\n    return text.split()\n")
    (package / "split.py").write_text(textwrap.dedent("""
        from trident_spark.operation import BaseFunction
        from myops.words import words

        class Split(BaseFunction):
            def execute(self, tuple, collector):
                for word in words(tuple[0]):
                    collector.emit([word])

        def shout(t):
            return [t[0].upper()]
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for name in [n for n in sys.modules if n == "myops" or n.startswith("myops.")]:
        del sys.modules[name]


def test_modules_defining_operations_and_the_code_they_call_ship_by_value(user_package):
    from myops.split import Split, shout

    topology = TridentTopology()
    (topology.newStream("s", FeederBatchSpout(["line"])).each(["line"], Split(), ["word"])
     .map(shout).groupBy(["word"]).aggregate(Count(), ["count"]))
    found = sorted(m.__name__ for m in user_modules(topology.queries()))
    # Split's module, the helper its method calls, shout's module; never trident_spark or pyspark.
    assert found == ["myops.split", "myops.words"]


def test_installed_and_standard_modules_never_ship_by_value():
    import json

    import pyarrow

    assert not module_shipping._ships_by_value(json)
    assert not module_shipping._ships_by_value(pyarrow)
    assert not module_shipping._ships_by_value(module_shipping)
    assert not module_shipping._ships_by_value(sys.modules["__main__"])


def test_py_files_are_checked_before_anything_runs(tmp_path):
    ops = tmp_path / "ops.py"
    ops.write_text("X = 1\n")
    bundle = tmp_path / "deps.zip"
    bundle.write_bytes(b"PK\x05\x06" + b"\x00" * 18)
    assert check_py_files([ops, str(bundle), "hdfs://nn/apps/ops.zip"]) == [
        str(ops.resolve()), str(bundle.resolve()), "hdfs://nn/apps/ops.zip"]
    with pytest.raises(TopologyError) as missing:
        check_py_files([tmp_path / "nope.py"])
    assert str(missing.value) == (f"run(py_files=...): no such file {tmp_path / 'nope.py'}; give the .py, "
                                  ".zip or .egg files the executors need (as for spark-submit --py-files)")
    with pytest.raises(TopologyError, match=r"is a directory; zip the package and give the zip"):
        check_py_files([tmp_path])
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(TopologyError, match=r"notes.txt is not a .py, .zip or .egg file"):
        check_py_files([tmp_path / "notes.txt"])
    with pytest.raises(TopologyError, match=r"give a list of files, e.g. py_files=\["):
        check_py_files(str(ops))  # type: ignore[arg-type]


def test_run_refuses_a_missing_py_file_before_spark_starts(tmp_path):
    topology = TridentTopology()
    topology.newStream("t", FeederBatchSpout(["line"])).map(lambda t: [t[0]])
    with pytest.raises(TopologyError, match=r"^run\(py_files=...\): no such file /no/such/ops.zip"):
        topology.run(checkpoint_location=tmp_path / "ckpt", py_files=["/no/such/ops.zip"])


def test_docstring_examples():
    failures, attempted = doctest.testmod(module_shipping, optionflags=doctest.ELLIPSIS)
    assert attempted and not failures
