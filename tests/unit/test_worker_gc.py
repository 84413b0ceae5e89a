"""worker_gc: the collector paused around a block, and a Python worker's imports frozen once per import."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from trident_spark import worker_gc
from trident_spark.worker_gc import gc_paused, settle_imports


@pytest.fixture
def in_task(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As if in a Spark task (TaskContext.get() answers); the heap unfrozen again afterwards."""
    from pyspark import TaskContext

    monkeypatch.setattr(TaskContext, "get", classmethod(lambda cls: object()))
    monkeypatch.setattr(worker_gc, "_modules_frozen", 0)
    try:
        yield
    finally:
        gc.unfreeze()


def test_outside_a_task_nothing_is_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_gc, "_modules_frozen", 0)
    before = gc.get_freeze_count()
    settle_imports()
    assert gc.get_freeze_count() == before


def walked(obj: object) -> bool:
    """Whether the collector still walks ``obj`` (it is in generation 0, 1 or 2, not frozen)."""
    return any(o is obj for generation in range(3) for o in gc.get_objects(generation))


def test_in_a_task_the_heap_is_frozen_once_then_again_only_after_an_import(
        in_task: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    settle_imports()
    assert gc.get_freeze_count() > 1000  # the modules this process imported
    assert not walked(sys.modules["trident_spark.worker_gc"].__dict__)

    kept = [[i] for i in range(10)]  # what a task makes: not frozen by the next task's start
    settle_imports()
    assert walked(kept)

    monkeypatch.setitem(sys.modules, "a_users_module", types.ModuleType("a_users_module"))
    settle_imports()  # a module imported since: frozen again, with what is alive now
    assert not walked(kept)


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()
