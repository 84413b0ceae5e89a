"""Fields (names with optional Spark types) and TridentTuple (values by position or name)."""

from __future__ import annotations

import pytest

from trident_spark import Fields, TridentTuple


def test_fields_from_names_and_lists():
    assert list(Fields("a", "b")) == ["a", "b"]
    assert list(Fields(["a", "b"], "c")) == ["a", "b", "c"]
    assert len(Fields("a", "b", "c")) == 3
    assert Fields("a", "b")[1] == "b"
    assert Fields("a", "b", "c")[1:] == ["b", "c"]


def test_fields_types_default_to_object():
    assert Fields("word", "count:bigint", "ratio: double ").types == {
        "word": "object", "count": "bigint", "ratio": "double"}
    assert list(Fields("word", "count:bigint")) == ["word", "count"]


def test_fields_types_from_mapping_and_inline_wins():
    f = Fields("a", "b:int", types={"a": "bigint", "b": "string"})
    assert f.types == {"a": "bigint", "b": "int"}


def test_fields_types_is_a_copy():
    f = Fields("a:int")
    f.types["a"] = "string"
    assert f.types == {"a": "int"}


@pytest.mark.parametrize("spec", ["", ":int", "  "])
def test_empty_field_name(spec):
    with pytest.raises(ValueError, match="Fields: empty field name in"):
        Fields("a", spec)


def test_fields_of():
    f = Fields("x")
    assert Fields.of(f) is f
    assert list(Fields.of("word")) == ["word"]
    assert list(Fields.of(["a", "b"])) == ["a", "b"]
    assert list(Fields.of(None)) == []


def test_fields_equality_and_hash():
    assert Fields("a", "b") == Fields("a", "b")
    assert Fields("a", "b") == ["a", "b"]
    assert Fields("a", "b") == ("a", "b")
    assert Fields("a", "b") != Fields("b", "a")
    assert hash(Fields("a", "b")) == hash(Fields("a:int", "b"))
    assert Fields("a") != "a"


def test_fields_index_contains_repr_and_toList():
    f = Fields("a", "b", "c")
    assert f.index("c") == 2
    with pytest.raises(ValueError):
        f.index("z")
    assert "b" in f and "z" not in f
    assert repr(f) == "Fields('a', 'b', 'c')"
    assert f.toList() == ["a", "b", "c"]


def make_tuple():
    return TridentTuple(["the cat", 3, "2.5", b"\x00", 0], Fields("value", "n", "ratio", "raw", "flag"))


def test_tuple_by_position_and_name():
    t = make_tuple()
    assert t[0] == "the cat"
    assert t["n"] == 3
    assert t[-1] == 0
    assert t[0:2] == ["the cat", 3]
    assert len(t) == 5
    assert t.getValue(1) == 3
    assert t.getValueByField("value") == "the cat"
    assert t.getFields() == ["value", "n", "ratio", "raw", "flag"]
    assert t.getValues() == ["the cat", 3, "2.5", b"\x00", 0]
    assert t.asDict() == {"value": "the cat", "n": 3, "ratio": "2.5", "raw": b"\x00", "flag": 0}
    assert t.contains("n") and not t.contains("word")


def test_tuple_typed_getters():
    t = make_tuple()
    assert t.getString(0) == "the cat"
    assert t.getStringByField("value") == "the cat"
    assert t.getLong(1) == 3 and t.getLongByField("n") == 3
    assert t.getInteger(1) == 3 and t.getIntegerByField("n") == 3
    assert t.getDouble(2) == 2.5 and t.getDoubleByField("ratio") == 2.5
    assert t.getBoolean(4) is False and t.getBooleanByField("n") is True
    assert t.getBinary(3) == b"\x00" and t.getBinaryByField("raw") == b"\x00"


def test_tuple_unknown_field_names_the_fields_it_has():
    t = TridentTuple(["x"], Fields("value"))
    with pytest.raises(KeyError) as info:
        t.getValueByField("word")
    assert info.value.args[0] == "tuple has no field 'word'; its fields are ['value']"
    with pytest.raises(KeyError, match="tuple has no field 'word'"):
        t["word"]
    with pytest.raises(KeyError, match="tuple has no field 'word'"):
        t.getStringByField("word")


def test_tuple_repr_is_field_to_value():
    assert repr(TridentTuple(["a", 1], Fields("w", "n"))) == "{'w': 'a', 'n': 1}"


def test_an_object_type_as_fields_show_it_declares_no_type():
    fields = Fields("word:object", "n:bigint")
    assert fields.types == {"word": "object", "n": "bigint"}
    assert fields.declared_types == {"n": "bigint"}
