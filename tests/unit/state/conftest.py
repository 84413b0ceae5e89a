"""Fixtures of the state unit tests: the same rule tests run on MemoryState and SqliteState."""

from __future__ import annotations

import itertools
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from trident_spark.state import MemoryState, SqliteState, StateFactory, StateType
from trident_spark.state.keys import encode_key

_names = itertools.count()


class Backend:
    """Makes factories of one backend over one store, and writes raw bytes into that store."""

    def __init__(self, kind: str, tmp_path: Any) -> None:
        self.kind = kind
        self.name = f"test-{uuid.uuid4().hex[:8]}-{next(_names)}"
        self.path = str(tmp_path / f"{self.name}.db")

    def spec(self, state_type: StateType | str = StateType.OPAQUE, **settings: Any) -> StateFactory:
        if self.kind == "memory":
            return MemoryState(name=self.name, state_type=StateType(state_type), **settings)
        return SqliteState(path=self.path, table="counts", state_type=StateType(state_type), **settings)

    def raw_put(self, key: list[Any], data: bytes) -> None:
        """Store bytes under a key, bypassing every serializer (as another program would)."""
        if self.kind == "memory":
            MemoryState.store(self.name).raw_put(key, data)
            return
        self.spec().open().close()  # creates the table
        with sqlite3.connect(self.path) as db:
            db.execute("INSERT OR REPLACE INTO counts (k, v, version) VALUES (?, ?, 1)",
                       (encode_key(key), data))

    def stored(self, state_type: StateType | str, key: list[Any]) -> Any:
        """The stored value object of a key (TransactionalValue, OpaqueValue, val), bypassing caches."""
        with self.spec(state_type).open_backing_map() as backing:
            return backing.multiGet([key])[0]


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Backend]:
    made = Backend(request.param, tmp_path)
    yield made
    MemoryState.drop(made.name)

