"""Keys and values of any Python type through real stores: a SQLite file, Redis, the
session's OpenSearch node (and MemoryState), written by a state, read with
``open_state(url).multiGet``: equal keys (Python's ==) find one value, values come back the same."""

from __future__ import annotations

import collections
import datetime
import math
import threading
from decimal import Decimal
from fractions import Fraction

import pytest
import redis as redis_py
from state_backends import unique_name

from trident_spark.state import (
    ElasticsearchState,
    MemoryState,
    RedisState,
    SqliteState,
    StateType,
    UnstorableValueError,
    open_state,
)
from trident_spark.state.keys import encode_key

pytestmark = pytest.mark.integration

TX, OPAQUE, NON_TX = StateType.TRANSACTIONAL, StateType.OPAQUE, StateType.NON_TRANSACTIONAL


class Point:
    """A user object (module level, so it pickles by reference)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (other.x, other.y) == (self.x, self.y)

    def __hash__(self):
        return hash((self.x, self.y))


Pair = collections.namedtuple("Pair", "a b")

#: Group values of every type a key holds, each with equal values written another way.
KEYS = [
    (["cat"], [["cat"]]),
    ([1], [[1.0], [True], [Decimal("1.00")], [Fraction(2, 2)]]),
    ([0], [[0.0], [-0.0], [False]]),
    ([1.5], [[Decimal("1.5")], [Fraction(3, 2)]]),
    (["1"], [["1"]]),
    ([None], [[None]]),
    ([b"\x00|\xff"], [[bytearray(b"\x00|\xff")]]),
    ([[1, "a|b"]], [[[1.0, "a|b"]]]),
    ([(1, 2)], [[(True, 2.0)]]),
    ([{"n": 1, "m": [2]}], [[{"m": [2.0], "n": True}]]),
    ([{3: "c", (1,): "d"}], [[{(1.0,): "d", 3.0: "c"}]]),
    ([frozenset({1, "x"})], [[{"x", 1.0}]]),
    ([datetime.date(2024, 5, 1)], [[datetime.date(2024, 5, 1)]]),
    ([datetime.datetime(2024, 5, 1, 10, tzinfo=datetime.UTC)],
     [[datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))]]),
    ([Decimal("0.1")], [[Fraction(1, 10)]]),
    (["us", 2024, 0.25], [["us", 2024.0, Fraction(1, 4)]]),
]

#: Values of every type a field carries; each comes back equal and of the same type.
VALUES = [
    7, -2**70, 2.5, "é", None, True, [1, "a", None], {"n": 2, "top": ["x"]},
    (1, (2, "b")), b"\x00\xff", datetime.datetime(2024, 5, 1, 10, 30, tzinfo=datetime.UTC),
    datetime.date(2024, 5, 1), Decimal("1.50"), {1: "a", (2, 3): [4]}, {"~x": 1}, {1, 2.5},
    frozenset({"a"}), math.inf, Point(1, {"deep": (b"x",)}), Pair(1, 2), collections.Counter("aab"),
]


def same(a, b):
    """Equal, of the same type all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


class Stores:
    """Factories of one state of each backend, in a fresh place of the session's services."""

    def __init__(self, kind: str, tmp_path, redis_url: str, elasticsearch_url: str) -> None:
        self.kind = kind
        self.name = unique_name("anyv")
        self.path = str(tmp_path / f"{self.name}.db")
        self.redis_url = redis_url
        self.elasticsearch_url = elasticsearch_url

    def spec(self, state_type: StateType, **settings):
        if self.kind == "sqlite":
            return SqliteState(path=self.path, table="counts", state_type=state_type, **settings)
        if self.kind == "redis":
            return RedisState(url=self.redis_url, key_prefix=self.name, state_type=state_type, **settings)
        if self.kind == "elasticsearch":
            return ElasticsearchState(hosts=[self.elasticsearch_url], index=self.name, state_type=state_type,
                                      **settings)
        return MemoryState(name=self.name, state_type=state_type, **settings)

    def drop(self) -> None:
        if self.kind == "redis":
            client = redis_py.Redis.from_url(self.redis_url)
            names = list(client.scan_iter(match=f"{self.name}:*"))
            if names:
                client.delete(*names)
            client.close()
        elif self.kind == "elasticsearch":
            with self.spec(NON_TX).open_backing_map() as admin:
                admin.request("DELETE", f"/{self.name}")
        elif self.kind == "memory":
            MemoryState.drop(self.name)


@pytest.fixture(params=["sqlite", "redis", "elasticsearch", "memory"])
def stores(request, tmp_path, redis_url, elasticsearch_url):
    made = Stores(request.param, tmp_path, redis_url, elasticsearch_url)
    yield made
    made.drop()


@pytest.mark.parametrize("state_type", [OPAQUE, TX, NON_TX], ids=lambda t: t.value)
def test_keys_of_every_type_are_found_by_equal_keys(stores, state_type):
    written = [key for key, _ in KEYS]
    with stores.spec(state_type).open() as state:
        state.multiUpdate(0, written, [lambda old, i=i: i for i in range(len(written))])
        state.multiUpdate(1, written[:2], [lambda old: old + 100] * 2)
    expected = [100, 101, *range(2, len(written))]
    with open_state(stores.spec(state_type).url) as reader:
        assert reader.multiGet(written) == expected
        for i, (_, equal_keys) in enumerate(KEYS):
            assert reader.multiGet(equal_keys) == [expected[i]] * len(equal_keys), equal_keys
        assert reader.multiGet([["1.0"], [2], [[1, 2]], [[(1, 2)]], [(1, 2, 3)], [b"1"]]) == [None] * 6


@pytest.mark.parametrize("state_type", [OPAQUE, TX, NON_TX], ids=lambda t: t.value)
def test_values_of_every_type_come_back_the_same(stores, state_type):
    keys = [["v", i] for i in range(len(VALUES))]
    with stores.spec(state_type).open() as state:
        state.multiUpdate(0, keys, [lambda old, v=v: [v] for v in VALUES])      # opaque prev: a list
        state.multiUpdate(1, keys, [lambda old, v=v: v for v in VALUES])
    with open_state(stores.spec(state_type).url) as reader:
        back = reader.multiGet(keys)
    for value, read in zip(VALUES, back, strict=True):
        assert same(read, value), (value, read)
    if state_type is OPAQUE:
        with stores.spec(OPAQUE).open_backing_map() as backing:
            stored = backing.multiGet(keys)
        assert [s.txid for s in stored] == [1] * len(VALUES)
        assert all(same(s.prev, [v]) for s, v in zip(stored, VALUES, strict=True))


def test_a_sum_over_mixed_numbers_and_a_combiner_of_dicts(stores):
    """What a persistentAggregate hands the state: a Sum of ints and floats, a dict of a user combiner."""
    spec = stores.spec(OPAQUE)
    with spec.open() as state:
        first = {"n": 1, "at": datetime.date(2024, 1, 1)}
        state.multiUpdate(0, [[1], ["a"]], [lambda old: 3, lambda old: first])
        state.multiUpdate(1, [[1.0], ["a"]], [lambda old: old + 0.5, lambda old: {**old, "n": old["n"] + 1}])
        state.multiUpdate(2, [[True]], [lambda old: old + 1])
    with open_state(spec.url) as reader:
        total, combined = reader.multiGet([[1], ["a"]])
    assert (total, type(total)) == (4.5, float)
    assert combined == {"n": 2, "at": datetime.date(2024, 1, 1)}


def test_listing_keys_gives_equal_group_values(stores):
    written = [key for key, _ in KEYS]
    with stores.spec(NON_TX).open() as state:
        state.multiPut(0, written, list(range(len(written))))
    with open_state(stores.spec(NON_TX).url) as reader:
        listed = {encode_key(t[:-1]): t for t in reader.getTuples()}
    assert len(listed) == len(written)
    for i, key in enumerate(written):
        found = listed[encode_key(key)]
        assert found[:-1] == key and found[-1] == i


def test_an_unpicklable_value_is_refused_and_nothing_is_written(stores):
    with stores.spec(OPAQUE).open() as state:
        with pytest.raises(UnstorableValueError) as caught:
            state.multiUpdate(0, [["ok"], ["bad"]], [lambda old: 1, lambda old: {"lock": threading.Lock()}])
        assert state.multiGet([["ok"], ["bad"]]) == [None, None]
        address = state.address
    assert str(caught.value).startswith(
        f"cannot store the value of key ['bad'] in {address}: a _thread.lock value cannot be pickled "
        f"(TypeError: cannot pickle '_thread.lock' object); state values are JSON values or picklable "
        f"objects")


# -- Elasticsearch: copies of mixed-type group values and values share one index's fields -----------

def test_elasticsearch_documents_of_mixed_types_share_the_index_fields(elasticsearch_url):
    index = unique_name("anyv-es")
    spec = ElasticsearchState.nonTransactional(hosts=[elasticsearch_url], index=index, fields=["g"])
    written = {  # one group field holding a value of another type in every document, and values alike
        1: 1, "cat": "two", 2.5: [3], None: {"n": 4}, (3, "x"): (5,), b"\x01": Point(6, 7),
        datetime.date(2024, 5, 1): b"\x08", Decimal("0.1"): {1: 9}, frozenset({2}): 2.5, "nan": math.nan,
    }
    keys = [[group] for group in written] + [[[1, 2]], [{"a": 1}]]
    values = [*written.values(), "list key", "dict key"]
    try:
        with spec.open() as state:
            state.multiPut(0, keys, values)
        with spec.open_backing_map() as admin:
            admin.request("POST", f"/{index}/_refresh")
            status, answer = admin.request("POST", f"/{index}/_search", {"size": 100})
            assert status == 200, answer
            sources = {hit["_id"]: hit["_source"] for hit in answer["hits"]["hits"]}
            status, found = admin.request("POST", f"/{index}/_search",
                                          {"query": {"term": {"g": "cat"}}, "size": 10})
            assert [hit["_source"]["value"] for hit in found["hits"]["hits"]] == ["two"]
        assert len(sources) == len(keys)
        assert sources[encode_key([1])] == {"key": [1], "g": 1, "value": 1, "state": "1"}
        assert sources[encode_key([(3, "x")])] == {
            "key": ['{"~tuple": [3, "x"]}'], "g": '{"~tuple": [3, "x"]}', "value": {"~tuple": [5]},
            "state": '{"~tuple":[5]}'}
        assert sources[encode_key([[1, 2]])]["g"] == "[1, 2]"
        assert sources[encode_key([{"a": 1}])]["g"] == '{"a": 1}'
        assert sources[encode_key([None])]["value"] == {"n": 4}
        assert sources[encode_key(["nan"])]["value"] == {"~float": "nan"}
        assert list(sources[encode_key([b"\x01"])]["value"]) == ["~py"]
        with open_state(spec.url) as reader:
            back = reader.multiGet(keys)
        assert math.isnan(back.pop(9)) and math.isnan(values.pop(9))
        assert [same(a, b) for a, b in zip(back, values, strict=True)] == [True] * len(values)
    finally:
        with spec.open_backing_map() as admin:
            admin.request("DELETE", f"/{index}")
