"""Any Python value as JSON: plain JSON as itself, every other value tagged, and back, same type."""

from __future__ import annotations

import base64
import collections
import datetime
import json
import math
import pickle
import threading
from decimal import Decimal
from fractions import Fraction

import pytest

from trident_spark.state import (
    JSONNonTransactionalSerializer,
    JSONOpaqueSerializer,
    JSONTransactionalSerializer,
    OpaqueValue,
    TransactionalValue,
    UnreadableValueError,
    UnstorableValueError,
)
from trident_spark.state.pyvalues import decode_object, from_json, is_plain_json, to_json
from trident_spark.state.serializers import deserialize_stored, serialize_stored


class Point:
    """A user object (module level, so it pickles)."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (other.x, other.y) == (self.x, self.y)

    def __hash__(self):
        return hash((self.x, self.y))

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


Pair = collections.namedtuple("Pair", "a b")

PLUS_TWO = datetime.timezone(datetime.timedelta(hours=2))

#: Every kind of value a field may carry; each must come back equal and of the same type.
VALUES = [
    0, -3, 2**70, 1.5, -0.0, 1e300, "cat", "日本 🐍", "", None, True, False,
    [1, "a", None], {"n": 2, "top": ["x", "y"]}, [], {},
    math.inf, -math.inf,
    (1, "a"), (), ((1,), [2, (3,)]), b"\x00\xffhi", b"", bytearray(b"ab"),
    datetime.datetime(2024, 5, 1, 10, 30, 15, 123456), datetime.datetime(2024, 5, 1, 10, tzinfo=PLUS_TWO),
    datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC), datetime.date(2024, 5, 1),
    datetime.time(10, 30), datetime.timedelta(days=2),
    Decimal("1.50"), Decimal("-0"), Decimal("NaN"), Fraction(1, 3),
    {1: "a", 2.5: "b", None: "c", (1, 2): "d"}, {True: 1}, {"~py": "not a pickle"}, {"~x": 1},
    {"~tuple": [1, 2], "other": 3}, {1, 2.5, "x"}, frozenset({(1, 2)}), set(),
    collections.OrderedDict(a=1), collections.defaultdict(list, a=[1]), collections.Counter("aab"),
    Pair(1, [2]), Point(1, (2, b"3")), [Point(0, 0), {"p": Point(1, 1)}],
    {"when": datetime.date(2024, 1, 1), "tags": {"a", "b"}, "raw": b"x"},
]


def same(a, b):
    """Equal, of the same type all the way down (nan counts as equal to nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, Decimal) and a.is_nan():
        return b.is_nan()
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a) and \
            getattr(a, "default_factory", None) == getattr(b, "default_factory", None)
    if isinstance(a, datetime.datetime):
        return a == b and a.tzinfo == b.tzinfo
    return bool(a == b)


def round_trip(value):
    return from_json(json.loads(json.dumps(to_json(value), allow_nan=False)))


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_value_comes_back_the_same(value):
    assert same(round_trip(value), value)


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_value_comes_back_the_same_through_each_serializer(value):
    tx, opaque = JSONTransactionalSerializer(), JSONOpaqueSerializer()
    plain = JSONNonTransactionalSerializer()
    back = tx.deserialize(tx.serialize(TransactionalValue(5, value)))
    assert back.txid == 5 and same(back.val, value)
    back = opaque.deserialize(opaque.serialize(OpaqueValue(5, value, [value])))
    assert back.txid == 5 and same(back.curr, value) and same(back.prev, [value])
    assert same(plain.deserialize(plain.serialize(value)), value)
    json.loads(plain.serialize(value))                # valid JSON, with no NaN or Infinity


def test_nan_comes_back_as_nan():
    assert math.isnan(round_trip(math.nan))
    assert JSONNonTransactionalSerializer().serialize(math.nan) == b'{"~float":"nan"}'


def test_json_values_are_stored_as_they_are_in_storms_layouts():
    assert JSONOpaqueSerializer().serialize(OpaqueValue(3, {"n": [1, 2.5]}, None)) == \
        b'[3,{"n":[1,2.5]},null]'
    assert JSONTransactionalSerializer().serialize(TransactionalValue(3, "é")) == '[3,"é"]'.encode()
    for value in VALUES:
        if is_plain_json(value):
            assert to_json(value) == value


def test_tagged_forms():
    assert to_json((1, b"hi")) == {"~tuple": [1, {"~bytes": "aGk="}]}
    assert to_json(datetime.datetime(2024, 5, 1, 10, tzinfo=PLUS_TWO)) == \
        {"~datetime": "2024-05-01T10:00:00+02:00"}
    assert to_json(datetime.date(2024, 5, 1)) == {"~date": "2024-05-01"}
    assert to_json(Decimal("1.50")) == {"~decimal": "1.50"}
    assert to_json({1: "a"}) == {"~dict": [[1, "a"]]}
    assert to_json({"~x": 1}) == {"~dict": [["~x", 1]]}         # a user dict never reads as a tag
    assert to_json({2}) == {"~set": [2]} and to_json(frozenset()) == {"~frozenset": []}
    assert to_json(-math.inf) == {"~float": "-inf"}
    assert list(to_json(Point(1, 2))) == ["~py"]
    assert list(to_json(Pair(1, 2))) == ["~py"]                  # a namedtuple stays a namedtuple


def test_a_value_of_an_unknown_tag_written_by_another_program_stays_a_dict():
    assert json.loads('{"~other": 1}', object_hook=decode_object) == {"~other": 1}


def test_unpicklable_values_name_their_type_and_what_to_do():
    with pytest.raises(UnstorableValueError) as caught:
        to_json({"ok": 1, "lock": threading.Lock()})
    assert caught.value.value_type == "_thread.lock"
    assert str(caught.value) == (
        "cannot store a value: a _thread.lock value cannot be pickled (TypeError: cannot pickle "
        "'_thread.lock' object); state values are JSON values or picklable objects: make it picklable (a "
        "class defined at module level, with no lambda, lock, socket or open file among its attributes) or "
        "convert it (e.g. to a dict) before it is aggregated into the state")
    assert isinstance(caught.value, TypeError)


def test_storing_an_unpicklable_value_names_the_key_and_the_state():
    with pytest.raises(UnstorableValueError) as caught:
        serialize_stored(JSONOpaqueSerializer(), OpaqueValue(1, lambda: 1), key=["cat", 2],
                         address="memory://wc")
    assert str(caught.value).startswith(
        "cannot store the value of key ['cat', 2] in memory://wc: a function value cannot be pickled "
        "(AttributeError: Can't pickle local object ")
    assert (caught.value.key, caught.value.address, caught.value.value_type) == (["cat", 2], "memory://wc",
                                                                                 "function")
    again = pickle.loads(pickle.dumps(caught.value))
    assert (str(again), again.key, again.value_type) == (str(caught.value), ["cat", 2], "function")


def test_a_pickle_that_cannot_be_loaded_here_names_the_key_and_what_to_do():
    pickled = pickle.dumps(Point(1, 2), protocol=4).replace(b"Point", b"Poinx")   # a class not here
    data = json.dumps({"~py": base64.b64encode(pickled).decode()}).encode()
    with pytest.raises(UnreadableValueError) as caught:
        deserialize_stored(JSONNonTransactionalSerializer(), data, key=["cat"], address="memory://wc")
    assert "cannot read the stored value of key ['cat'] in memory://wc: ValueError: a pickled value (~py) " \
           "cannot be unpickled here: " in str(caught.value)
    assert "the module that defines its class must be importable where the state is read" in str(caught.value)


@pytest.mark.parametrize(("text", "message"), [
    ('{"~bytes": "%%"}', "cannot read a ~bytes value from '%%': Error: "),
    ('{"~date": "May 1"}', "cannot read a ~date value from 'May 1': ValueError: Invalid isoformat string"),
    ('{"~dict": [1]}', "a ~dict value holds [key, value] pairs, found [1]"),
    ('{"~float": "big"}', "a ~float value is 'inf', '-inf' or 'nan', found 'big'"),
    ('{"~py": 3}', "a ~py value holds base64 text, found 3"),
])
def test_unreadable_tagged_values_say_what_is_wrong(text, message):
    with pytest.raises(UnreadableValueError) as caught:
        deserialize_stored(JSONNonTransactionalSerializer(), text.encode(), key=["k"], address="memory://wc")
    assert message in str(caught.value)


def test_is_plain_json():
    assert is_plain_json({"a": [1, 2.5, None, True, "x"]})
    for value in [(1,), {1: 2}, {"~x": 1}, math.nan, b"", Decimal(1), [datetime.date(2024, 1, 1)]]:
        assert not is_plain_json(value), value
