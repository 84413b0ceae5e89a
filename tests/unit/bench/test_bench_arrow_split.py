"""bench/arrow_split.py: the Arrow-batch Split splits as ``str.split()`` does, and without
``trident_spark.arrow_operation`` the bench says why ``split=arrow`` cannot run."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

SENTENCES = ["four score and seven", " leading and  double\tspaces ", "", "one", "x\u00a0y\nz"]


def _bench_state() -> types.ModuleType:
    """bench/state.py as a module (by path: the name ``state`` is the state layer's package)."""
    path = Path(__file__).resolve().parents[3] / "bench" / "state.py"
    spec = importlib.util.spec_from_file_location("bench_state_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def arrow_split_with(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    """bench/arrow_split.py imported against a stand-in ``trident_spark.arrow_operation`` (the
    agreed API: ``ArrowFunction`` with ``execute_arrow``), whether or not the real one exists."""
    stand_in = types.ModuleType("trident_spark.arrow_operation")
    stand_in.ArrowFunction = type("ArrowFunction", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "trident_spark.arrow_operation", stand_in)
    monkeypatch.delitem(sys.modules, "arrow_split", raising=False)
    yield importlib.import_module("arrow_split")
    sys.modules.pop("arrow_split", None)


def test_words_and_their_sentences_are_those_of_str_split(arrow_split_with: types.ModuleType) -> None:
    batch = pa.record_batch([pa.array(SENTENCES)], names=["value"])

    parents, columns = arrow_split_with.ArrowSplit().execute_arrow(batch)

    expected = [(i, w) for i, s in enumerate(SENTENCES) for w in s.split()]
    assert arrow_split_with.ARROW_MISSING is None
    assert len(columns) == 1
    assert list(zip(parents.to_pylist(), columns[0].to_pylist(), strict=True)) == expected


def test_without_the_arrow_operations_split_arrow_stops_before_anything_runs(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "trident_spark.arrow_operation", None)  # import fails
    monkeypatch.delitem(sys.modules, "arrow_split", raising=False)
    try:
        module = importlib.import_module("arrow_split")

        assert module.ArrowSplit is None
        assert module.ARROW_MISSING.startswith(
            "split=arrow needs trident_spark.arrow_operation (issue 31's Arrow-batch operations), which the "
            "trident_spark this bench imports does not have (")
        assert module.ARROW_MISSING.endswith(
            "); run from a tree that has it, or leave split=arrow out of --backends")

        state = _bench_state()
        with pytest.raises(SystemExit) as stopped:
            state.parse_args(["--backends", "native,sqlite,sqlite[split=arrow]"])
        assert stopped.value.code == 2
        assert capsys.readouterr().err.endswith(f"error: {module.ARROW_MISSING}\n")
        assert state.parse_args(["--backends", "native,sqlite[split=python]"]).contenders[1].split == "python"
    finally:
        sys.modules.pop("arrow_split", None)
