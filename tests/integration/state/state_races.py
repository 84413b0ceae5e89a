"""Races on a real store, shared by the Redis and Elasticsearch tests: conditional writes end exact.

Each backend's test module imports these test functions and provides its
``backend`` fixture, so every race runs against every real store.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
from state_backends import KINDS, add, duplicate_tasks_in_lockstep, increment_from_threads, race_in_updater

from trident_spark.state import StateType

OPAQUE, NON_TX = StateType.OPAQUE, StateType.NON_TRANSACTIONAL


@pytest.mark.parametrize("kind", KINDS)
def test_a_writer_that_loses_rereads_and_recomputes(backend, kind):
    """A duplicate of the same batch commits between this writer's read and write."""
    mine, other = backend.spec(kind, cache_size=0).open(), backend.spec(kind, cache_size=0).open()
    mine.multiUpdate(0, [["cat"]], [add(10)])
    update, calls = race_in_updater(add(1), lambda: other.multiUpdate(1, [["cat"]], [add(1)]))
    assert mine.multiUpdate(1, [["cat"]], [update]) == [11]
    assert calls["n"] == (2 if kind is OPAQUE else 1)   # transactional: the re-read shows txid 1, skip
    assert mine.stats.write_conflicts == 1
    assert backend.spec(kind).open().multiGet([["cat"]]) == [11]


def test_a_non_transactional_writer_that_loses_applies_on_the_newer_value(backend):
    mine, other = backend.spec(NON_TX, cache_size=0).open(), backend.spec(NON_TX, cache_size=0).open()
    update, calls = race_in_updater(add(1), lambda: other.multiUpdate(0, [["cat"]], [add(100)]))
    assert mine.multiUpdate(0, [["cat"]], [update]) == [101]
    assert calls["n"] == 2 and mine.stats.write_conflicts == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_stale_cache_entry_loses_and_the_key_is_recomputed(backend, kind):
    spec = backend.spec(kind, cache_size=100)
    a, b = spec.open(), spec.open()
    a.multiUpdate(0, [["cat"]], [add(1)])           # a caches cat = 1
    b.multiUpdate(1, [["cat"]], [add(1)])           # the key's partition ran on b: cat = 2
    assert a.multiGet([["cat"]]) == [1]             # a's cache is stale ...
    assert a.multiUpdate(2, [["cat"]], [add(1)]) == [3]   # ... so its write loses, re-reads: 2 + 1
    assert a.stats.write_conflicts == 1
    assert spec.open().multiGet([["cat"]]) == [3]
    stored = backend.stored(kind, ["cat"])
    assert stored.txid == 2


def test_two_states_incrementing_one_key_count_exactly(backend):
    spec = backend.spec(NON_TX, cache_size=10, max_conflict_retries=10_000)
    stats = increment_from_threads(spec, workers=2, rounds=150)
    assert backend.spec(NON_TX).open().multiGet([["cat"]]) == [300]
    assert sum(s.write_conflicts for s in stats) > 0


@pytest.mark.parametrize("kind", KINDS)
def test_duplicate_tasks_of_the_same_batches_racing_end_exact(backend, kind):
    stats = duplicate_tasks_in_lockstep(backend.spec(kind, cache_size=10), batches=60)
    with backend.spec(kind).open() as state:
        assert state.multiGet([["cat"], ["dog"]]) == [60, 120]
    assert backend.stored(kind, ["cat"]).txid == 59
    assert sum(s.write_conflicts for s in stats) > 0


def test_another_process_opens_the_pickled_factory_and_writes(backend):
    spec = backend.spec(OPAQUE)
    spec.open().multiUpdate(0, [["cat"]], [add(1)])
    code = ("import pickle, sys\n"
            "spec = pickle.loads(sys.stdin.buffer.read())\n"
            "with spec.open() as state:\n"
            "    print(state.multiUpdate(1, [['cat']], [lambda old: old + 10]))\n")
    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(spec), capture_output=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == b"[11]"
    assert spec.open().multiGet([["cat"]]) == [11]
