"""Stores written before keys were encoded once per call still read and update, byte for byte.

The rows below are written as literal bytes (keys as ``keys.py`` documents them, values in
Storm's JSON formats), not through the encoding code, so a change of the stored format fails here.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from trident_spark.state import MemoryState, SqliteState, StateType

#: (key, stored key, stored value at txid 4) for each kind, then the value after batch 5 added 1.
KEYS: list[tuple[list[Any], str]] = [
    (["cat"], "cat"),
    (["Straße"], "Straße"),
    (["~cat"], "%7Ecat"),
    (["a|b"], "a%7Cb"),
    ([""], "~e"),
    (["us", 2024], "us|~i2024"),
    ([(1, "x")], '~j{"~tuple":[1,"x"]}'),
    ([1.5, None], "~d1.5|~n"),
    ([], "~global"),
]
OPAQUE, TX, NON_TX = StateType.OPAQUE, StateType.TRANSACTIONAL, StateType.NON_TRANSACTIONAL
BEFORE = {OPAQUE: b"[4,10,7]", TX: b"[4,10]", NON_TX: b"10"}
AFTER = {OPAQUE: b"[5,11,10]", TX: b"[5,11]", NON_TX: b"11"}
NEW = {OPAQUE: b"[5,1,null]", TX: b"[5,1]", NON_TX: b"1"}


def add_one(old: Any) -> Any:
    return (old or 0) + 1


def _update(state: Any) -> None:
    keys = [key for key, _ in KEYS] + [["dog"]]
    assert state.multiGet(keys) == [10] * len(KEYS) + [None]
    assert state.multiUpdate(5, keys, [add_one] * len(keys)) == [11] * len(KEYS) + [1]


@pytest.mark.parametrize("kind", list(StateType))
@pytest.mark.parametrize("cache_size", [1000, 0])
def test_sqlite_rows_of_earlier_versions_update_in_place(tmp_path: Any, kind: StateType,
                                                         cache_size: int) -> None:
    path = str(tmp_path / "old.db")
    spec = SqliteState(path=path, table="counts", state_type=kind, cache_size=cache_size)
    spec.open().close()  # the table, as every version created it
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO counts (k, v, version) VALUES (?, ?, 1)",
                       [(stored, BEFORE[kind]) for _, stored in KEYS])
    with spec.open() as state:
        _update(state)
    with sqlite3.connect(path) as db:
        rows = dict(db.execute("SELECT k, v FROM counts"))
    assert rows == {stored: AFTER[kind] for _, stored in KEYS} | {"dog": NEW[kind]}


@pytest.mark.parametrize("kind", list(StateType))
def test_memory_entries_of_earlier_versions_update_in_place(kind: StateType) -> None:
    name = f"old-format-{kind.value}"
    store = MemoryState.store(name)
    store.entries.update({stored: (BEFORE[kind], 1) for _, stored in KEYS})
    try:
        _update(MemoryState(name=name, state_type=kind).open())
        assert {k: data for k, (data, _) in store.entries.items()} == (
            {stored: AFTER[kind] for _, stored in KEYS} | {"dog": NEW[kind]})
    finally:
        MemoryState.drop(name)
