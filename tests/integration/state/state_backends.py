"""Helpers of the Redis and Elasticsearch state tests: test backends and the reused rule tests.

The unit tests of the rules (tests/unit/state) take a ``backend`` fixture; the
integration modules import those test functions with :func:`reused_rule_tests`
and provide a ``backend`` of their store, so every rule runs against the real
service too.
"""

from __future__ import annotations

import importlib.util
import inspect
import itertools
import sys
import threading
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

from trident_spark.state import StateType

UNIT_STATE_TESTS = Path(__file__).resolve().parents[2] / "unit" / "state"
#: The unit test modules whose ``backend`` tests run on every backend.
RULE_MODULES = ("test_state_map_rules", "test_state_map_api", "test_state_batching", "test_state_scan")

_names = itertools.count()


def unique_name(prefix: str) -> str:
    """A name no other test uses (lowercase: it may be an Elasticsearch index)."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}-{next(_names)}"


def _load(name: str) -> ModuleType:
    module_name = f"reused_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, UNIT_STATE_TESTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def reused_rule_tests() -> dict[str, Any]:
    """The unit tests that take a ``backend`` fixture, by name, to bind into a test module."""
    tests: dict[str, Any] = {}
    for name in RULE_MODULES:
        module = _load(name)
        for attr, value in vars(module).items():
            if attr.startswith("test_") and callable(value) and \
                    "backend" in inspect.signature(value).parameters:
                tests[attr] = value
    return tests


def add(n: int) -> Any:
    return lambda old: (old or 0) + n


def race_in_updater(first, second_update):
    """An updater that runs ``second_update()`` (another writer) the first time it is called.

    So the other writer commits between this writer's read and its write: the
    write must lose, and the key be re-read and recomputed.
    """
    calls = {"n": 0}

    def update(old):
        calls["n"] += 1
        if calls["n"] == 1:
            second_update()
        return first(old)

    return update, calls


def increment_from_threads(spec, workers: int, rounds: int, key=("cat",)) -> list[Any]:
    """``workers`` threads, each with its own opened state (own connection and cache), add 1
    to one key ``rounds`` times each (non-transactional txids). Returns their stats."""
    start = threading.Barrier(workers, timeout=60)
    errors: list[BaseException] = []
    stats: list[Any] = []

    def work() -> None:
        try:
            with spec.open() as state:
                stats.append(state.stats)
                # Connected (and the store's table made) before the race starts: else the first
                # thread can do every round while the other still connects, and nothing races.
                state.multiGet([["warm-up"]])
                start.wait()
                for txid in range(rounds):
                    state.multiUpdate(txid, [list(key)], [add(1)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == [], errors
    return stats


def duplicate_tasks_in_lockstep(spec, batches: int) -> list[Any]:
    """Two opened states apply the same batches at the same time (a speculative duplicate of
    every task): batch t adds 1 to "cat" and 2 to "dog". Returns their stats."""
    step = threading.Barrier(2, timeout=60)
    errors: list[BaseException] = []
    stats: list[Any] = []

    def work() -> None:
        try:
            with spec.open() as state:
                stats.append(state.stats)
                for txid in range(batches):
                    step.wait()
                    state.multiUpdate(txid, [["cat"], ["dog"]], [add(1), add(2)])
        except BaseException as exc:
            errors.append(exc)
            step.abort()

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == [], errors
    return stats


KINDS = (StateType.TRANSACTIONAL, StateType.OPAQUE)
