"""Each key of a call is encoded once: the map rules encode, the cache, the batching layer and the
store take the encodings (``multiGetEncoded`` / ``multiPutEncoded``), also when a lost write is
re-read and recomputed; and a program's own store still gets plain ``multiGetVersioned`` calls."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from trident_spark.state import BatchState, OpaqueMap, StateType
from trident_spark.state import keys as keys_module
from trident_spark.state.base import BackingMap

WORDS = [[f"w{i}"] for i in range(50)]
COMPOUND = [["us", i, 1.5] for i in range(10)] + [[("t", i)] for i in range(10)] + [[]]


class EncodingCounter:
    """Counts the keys encoded through ``encode_key`` and ``encode_keys``, whichever module calls them."""

    def __init__(self) -> None:
        self.keys = 0

    def encode_key(self, key: Any, max_bytes: int = keys_module.MAX_KEY_BYTES) -> str:
        self.keys += 1
        return keys_module.encode_key(key, max_bytes)

    def encode_keys(self, keys: Any, max_bytes: int = keys_module.MAX_KEY_BYTES) -> list[str]:
        self.keys += len(keys)
        return keys_module.encode_keys(keys, max_bytes)


@pytest.fixture
def encodings(monkeypatch: pytest.MonkeyPatch) -> Iterator[EncodingCounter]:
    counter = EncodingCounter()
    originals = {"encode_key": keys_module.encode_key, "encode_keys": keys_module.encode_keys}
    for name, module in list(sys.modules.items()):
        if not name.startswith("trident_spark.") or module is keys_module:
            continue  # keys.py's own calls (encode_keys -> encode_key) are one encoding, counted once
        for attr, original in originals.items():
            if getattr(module, attr, None) is original:
                monkeypatch.setattr(module, attr, getattr(counter, attr))
    yield counter


def add(n: int) -> Any:
    return lambda old: (old or 0) + n


@pytest.mark.parametrize("cache_size", [1000, 0])
@pytest.mark.parametrize("keys", [WORDS, COMPOUND], ids=["words", "compound"])
def test_an_update_encodes_each_key_once(backend: Any, encodings: EncodingCounter, cache_size: int,
                                         keys: list[list[Any]]) -> None:
    state = backend.spec(StateType.OPAQUE, cache_size=cache_size, max_multi_get_batch_size=7,
                         max_multi_put_batch_size=7).open()
    for txid in range(3):  # a first batch (all missing), then cache hits (or store reads)
        encodings.keys = 0
        assert BatchState(state, txid).multiUpdate(keys, [add(1)] * len(keys)) == [txid + 1] * len(keys)
        assert encodings.keys == len(keys)
    encodings.keys = 0
    state.multiUpdate(3, keys, [add(1)] * len(keys))
    state.multiPut(4, keys, [9] * len(keys))
    BatchState(state, 5).multiPut(keys, [10] * len(keys))
    assert encodings.keys == 3 * len(keys)
    assert state.multiGet(keys) == [10] * len(keys)


def test_a_lost_write_is_reread_without_encoding_again(backend: Any, encodings: EncodingCounter) -> None:
    spec = backend.spec(StateType.OPAQUE, cache_size=100)
    mine, other = spec.open(), spec.open()
    mine.multiUpdate(0, WORDS, [add(1)] * len(WORDS))      # mine caches every word at 1
    other.multiUpdate(1, WORDS[:5], [add(1)] * 5)           # another task moves five of them to 2
    encodings.keys = 0
    assert BatchState(mine, 2).multiUpdate(WORDS, [add(1)] * len(WORDS)) == [3] * 5 + [2] * 45
    assert mine.stats.write_conflicts == 5                  # five lost, re-read and recomputed
    assert encodings.keys == len(WORDS)


class DictStore(BackingMap):
    """A program's own store: only Trident's multiGet / multiPut, keyed by tuples of group values."""

    def __init__(self) -> None:
        self.data: dict[tuple[Any, ...], Any] = {}

    def multiGet(self, keys: Any) -> list[Any]:
        return [self.data.get(tuple(key)) for key in keys]

    def multiPut(self, keys: Any, values: Any) -> None:
        self.data.update(zip(map(tuple, keys), values, strict=True))


@pytest.mark.parametrize("cache_size", [100, 0])
def test_a_programs_own_store_gets_its_plain_calls(encodings: EncodingCounter, cache_size: int) -> None:
    store = DictStore()
    counts = OpaqueMap.build(store, cache_size=cache_size, max_multi_put_batch_size=3)
    encodings.keys = 0
    assert BatchState(counts, 0).multiUpdate(WORDS[:10], [add(2)] * 10) == [2] * 10
    assert encodings.keys == 10
    assert store.data[("w0",)].curr == 2 and len(store.data) == 10
