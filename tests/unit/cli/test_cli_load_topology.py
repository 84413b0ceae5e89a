"""`trident-spark run FILE[:ATTR]`: finding the topology in a user's file."""

from __future__ import annotations

import sys
import textwrap
import uuid

import pytest

from trident_spark import TridentTopology
from trident_spark.cli.run import TopologyFileError, load_topology

HEADER = """
from trident_spark import TridentTopology
from trident_spark.spout import KafkaSpout
"""


@pytest.fixture
def app(tmp_path, monkeypatch):
    """Write a user file with a unique module name; undo what importing it changes."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    written = []

    def write(body):
        path = tmp_path / f"app_{uuid.uuid4().hex[:8]}.py"
        path.write_text(HEADER + textwrap.dedent(body))
        written.append(path.stem)
        return path

    yield write
    for stem in written:
        sys.modules.pop(f"trident_spark_app_{stem}", None)


def test_module_level_topology(app):
    path = app("""
        topology = TridentTopology()
        topology.newStream("words", KafkaSpout("127.0.0.1:1", ["sentences"]))
    """)
    topology = load_topology(str(path))
    assert isinstance(topology, TridentTopology)
    assert list(topology._spouts) == ["words"]


def test_build_topology_function_is_called(app):
    path = app("""
        def build_topology():
            t = TridentTopology()
            t.newStream("built", KafkaSpout("127.0.0.1:1", ["sentences"]))
            return t
    """)
    assert list(load_topology(str(path))._spouts) == ["built"]


def test_attr_naming_a_function(app):
    path = app("""
        calls = []

        def make():
            calls.append(1)
            t = TridentTopology()
            t.newStream("made", KafkaSpout("127.0.0.1:1", ["sentences"]))
            return t

        topology = "not this one"
    """)
    topology = load_topology(f"{path}:make")
    assert list(topology._spouts) == ["made"]
    assert sys.modules[f"trident_spark_app_{path.stem}"].calls == [1]


def test_attr_naming_a_topology_object_is_not_called(app):
    path = app("""
        other = TridentTopology()
        other.newStream("other", KafkaSpout("127.0.0.1:1", ["sentences"]))
    """)
    assert list(load_topology(f"{path}:other")._spouts) == ["other"]


def test_the_file_can_import_its_neighbours(app, tmp_path):
    (tmp_path / f"helpers_{uuid.uuid4().hex[:8]}.py").write_text("STREAM = 'from-helper'\n")
    helper = next(tmp_path.glob("helpers_*.py")).stem
    path = app(f"""
        from {helper} import STREAM
        topology = TridentTopology()
        topology.newStream(STREAM, KafkaSpout("127.0.0.1:1", ["sentences"]))
    """)
    try:
        assert list(load_topology(str(path))._spouts) == ["from-helper"]
    finally:
        sys.modules.pop(helper, None)


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.py"
    with pytest.raises(TopologyFileError) as info:
        load_topology(f"{missing}:topology")
    assert str(info.value) == f"no such file: {missing}"


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(TopologyFileError, match="no such file"):
        load_topology(str(tmp_path))


def test_missing_named_attribute(app):
    path = app("topology = TridentTopology()\n")
    with pytest.raises(TopologyFileError) as info:
        load_topology(f"{path}:build")
    assert str(info.value) == f"{path} has no build; name it with {path}:ATTR"


def test_missing_default_attribute(app):
    path = app("x = 1\n")
    with pytest.raises(TopologyFileError) as info:
        load_topology(str(path))
    assert str(info.value) == f"{path} has no topology or build_topology; name it with {path}:ATTR"


def test_operations_defined_in_the_file_pickle_for_executors_that_cannot_import_it(app, tmp_path):
    # Executors have neither the file's directory on sys.path nor its module: user
    # classes must travel by value, as Spark pickles them (pyspark's cloudpickle).
    import subprocess

    from pyspark import cloudpickle

    path = app("""
        from trident_spark.operation import BaseFunction

        class Shout(BaseFunction):
            def execute(self, tuple, collector):
                collector.emit([tuple[0].upper() + "!"])

        def build_topology():
            return Shout()
    """)
    pickled = tmp_path / "op.pkl"
    pickled.write_bytes(cloudpickle.dumps(load_topology(str(path))))
    elsewhere = tmp_path / "executor"
    elsewhere.mkdir()
    code = ("import pickle, sys; from trident_spark.operation import TridentCollector; "
            "op = pickle.loads(open(sys.argv[1], 'rb').read()); c = TridentCollector(); "
            "op.execute(['hi'], c); print(c.emitted)")
    result = subprocess.run([sys.executable, "-c", code, str(pickled)], cwd=elsewhere,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[['HI!']]"


def test_a_file_named_like_a_standard_module_loads(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = tmp_path / "types.py"
    path.write_text(HEADER + "topology = TridentTopology()\n"
                    "topology.newStream('typed', KafkaSpout('127.0.0.1:1', ['t']))\n")
    topology = load_topology(str(path))
    assert list(topology._spouts) == ["typed"]
    assert sys.modules["types"].__name__ == "types"  # the standard module is untouched
    sys.modules.pop("trident_spark_app_types", None)
