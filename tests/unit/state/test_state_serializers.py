"""Serializers: Storm's JSON formats byte for byte, round trips, unreadable and wrong-kind data."""

from __future__ import annotations

import json
import pickle
from decimal import Decimal

import pytest

from trident_spark.state import (
    JSONNonTransactionalSerializer,
    JSONOpaqueSerializer,
    JSONTransactionalSerializer,
    MemoryState,
    OpaqueValue,
    StateType,
    StateTypeMismatchError,
    TransactionalValue,
    UnreadableValueError,
)
from trident_spark.state.serializers import default_serializer, deserialize_stored

VALUES = [0, -3, 2**70, 1.5, "cat", "日本 🐍", None, True, [1, "a", None], {"n": 2, "top": ["x", "y"]}]


def test_storm_formats_byte_for_byte():
    assert JSONTransactionalSerializer().serialize(TransactionalValue(3, 12)) == b"[3,12]"
    assert JSONOpaqueSerializer().serialize(OpaqueValue(3, 12, 10)) == b"[3,12,10]"
    assert JSONOpaqueSerializer().serialize(OpaqueValue(0, 1, None)) == b"[0,1,null]"
    assert JSONNonTransactionalSerializer().serialize({"n": 1}) == b'{"n":1}'
    assert JSONNonTransactionalSerializer().serialize("é") == '"é"'.encode()


@pytest.mark.parametrize("value", VALUES)
def test_round_trips(value):
    tx, opaque = JSONTransactionalSerializer(), JSONOpaqueSerializer()
    plain = JSONNonTransactionalSerializer()
    assert tx.deserialize(tx.serialize(TransactionalValue(5, value))) == TransactionalValue(5, value)
    assert opaque.deserialize(opaque.serialize(OpaqueValue(5, value, value))) == OpaqueValue(5, value, value)
    assert plain.deserialize(plain.serialize(value)) == value


def test_tuples_come_back_as_tuples():
    plain = JSONNonTransactionalSerializer()
    assert plain.serialize((1, 2)) == b'{"~tuple":[1,2]}'
    assert plain.deserialize(plain.serialize((1, 2))) == (1, 2)


def test_with_json_hooks_tuples_come_back_as_lists_as_in_json():
    plain = JSONNonTransactionalSerializer(object_hook=decimal_hook)
    assert plain.deserialize(plain.serialize((1, 2))) == [1, 2]


@pytest.mark.parametrize(("serializer", "data", "expected", "looks_like"), [
    (JSONOpaqueSerializer(), b"[1,5]", "opaque", "looks like a transactional value [txid, val]"),
    (JSONOpaqueSerializer(), b"5", "opaque", "looks like a non-transactional value"),
    (JSONOpaqueSerializer(), b'["1",5,4]', "opaque", "looks like a non-transactional value"),
    (JSONOpaqueSerializer(), b"[true,5,4]", "opaque", "looks like a non-transactional value"),
    (JSONTransactionalSerializer(), b"[1,5,null]", "transactional",
     "looks like an opaque value [txid, curr, prev]"),
    (JSONTransactionalSerializer(), b'{"txid":1}', "transactional", "looks like a non-transactional value"),
])
def test_values_of_another_kind_are_detected(serializer, data, expected, looks_like):
    with pytest.raises(StateTypeMismatchError) as caught:
        deserialize_stored(serializer, data, key=["cat"], address="memory://wc")
    assert caught.value.key == ["cat"] and caught.value.expected == expected
    article = "an" if expected == "opaque" else "a"
    prefix = f"memory://wc key ['cat']: expected {article} {expected} value, found "
    assert str(caught.value).startswith(prefix)
    assert looks_like in str(caught.value)


def test_long_values_are_shortened_in_messages():
    data = json.dumps([1, "x" * 200]).encode()
    with pytest.raises(StateTypeMismatchError) as caught:
        deserialize_stored(JSONOpaqueSerializer(), data, key=["cat"], address="memory://wc")
    assert '[1, "xxxxxxxx' in str(caught.value) and '...' in str(caught.value)
    assert len(str(caught.value)) < 400


@pytest.mark.parametrize("data", [b"\xff\xfe", b"[1,", b"not json", b""])
def test_unreadable_bytes_name_the_key_and_show_the_bytes(data):
    with pytest.raises(UnreadableValueError) as caught:
        deserialize_stored(JSONOpaqueSerializer(), data, key=["dog", 3], address="memory://wc")
    message = str(caught.value)
    assert message.startswith("cannot read the stored value of key ['dog', 3] in memory://wc: ")
    assert f"(stored bytes: {data!r})" in message


def decimal_default(value):
    if isinstance(value, Decimal):
        return {"$decimal": str(value)}
    raise TypeError(f"{value!r} is not JSON serializable")


def decimal_hook(obj):
    return Decimal(obj["$decimal"]) if set(obj) == {"$decimal"} else obj


def test_json_hooks_carry_types_json_lacks():
    serializer = JSONOpaqueSerializer(default=decimal_default, object_hook=decimal_hook)
    value = OpaqueValue(1, Decimal("10.25"), Decimal("0.75"))
    assert serializer.deserialize(serializer.serialize(value)) == value
    assert pickle.loads(pickle.dumps(serializer)) == serializer


class UpperSerializer:
    """A custom serializer: plain text, upper-cased (module level, so it pickles)."""

    def serialize(self, value):
        return str(value).upper().encode()

    def deserialize(self, data):
        if not data.isupper():
            raise ValueError("not upper case")
        return data.decode()


def test_a_custom_serializer_plugs_into_a_state():
    name = "test-serializer-custom"
    spec = MemoryState.nonTransactional(name=name, serializer=UpperSerializer())
    spec.open().multiPut(0, [["cat"]], ["meow"])
    assert MemoryState.store(name).raw_get(["cat"]) == b"MEOW"
    assert spec.open().multiGet([["cat"]]) == ["MEOW"]
    assert pickle.loads(pickle.dumps(spec)).open().multiGet([["cat"]]) == ["MEOW"]
    MemoryState.store(name).raw_put(["dog"], b"woof")
    with pytest.raises(UnreadableValueError, match=r"key \['dog'\] .*ValueError: not upper case"):
        spec.open().multiGet([["dog"]])
    MemoryState.drop(name)


def test_a_custom_serializer_of_the_wrong_kind_is_caught_by_the_map():
    name = "test-serializer-wrong-kind"
    MemoryState.store(name).raw_put(["cat"], b"PLAIN")
    with pytest.raises(StateTypeMismatchError, match=r"expected an opaque value, found 'PLAIN'"):
        MemoryState.opaque(name=name, serializer=UpperSerializer()).open().multiGet([["cat"]])
    MemoryState.drop(name)


def test_default_serializers_by_kind():
    assert isinstance(default_serializer(StateType.OPAQUE), JSONOpaqueSerializer)
    assert isinstance(default_serializer(StateType.TRANSACTIONAL), JSONTransactionalSerializer)
    assert isinstance(default_serializer(StateType.NON_TRANSACTIONAL), JSONNonTransactionalSerializer)


def test_serializing_the_wrong_value_class_is_a_type_error():
    with pytest.raises(TypeError, match="an opaque state stores OpaqueValue"):
        JSONOpaqueSerializer().serialize(TransactionalValue(1, 2))
