"""Untyped values: any Python value as one tagged binary and back (trident_spark.object_values)."""

from __future__ import annotations

import datetime
import threading

import pyarrow as pa
import pytest

from trident_spark.object_values import (
    UncarriableValueError,
    decode_column,
    decode_value,
    encode_column,
    encode_value,
    group_key,
)


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __repr__(self):  # a test id the same in every process (pytest-xdist compares them)
        return f"Point({self.x}, {self.y})"


EVERY_KIND = ["word", "", "ünïcode ☃", 0, -7, 2**80, 1.5, -0.25, float("inf"), 2.0, True, False,
              b"\x00bytes", b"", None, [1, "a", None], {"k": [1, 2]}, (1, "t"), {1, 2},
              datetime.datetime(2024, 5, 1, 10, 0), datetime.date(2024, 5, 1), Point(1, 2)]


@pytest.mark.parametrize("value", EVERY_KIND, ids=repr)
def test_every_kind_of_value_comes_back_equal_and_of_its_type(value):
    back = decode_value(encode_value(value))
    assert back == value
    assert type(back) is type(value)


def test_a_column_of_mixed_values_comes_back_as_it_went_in():
    column = encode_column(EVERY_KIND)
    assert column.type == pa.binary()
    assert decode_column(column) == EVERY_KIND
    assert [type(v) for v in decode_column(column)] == [type(v) for v in EVERY_KIND]


@pytest.mark.parametrize("values", [["a", "b", None, "a"], [1, None, -3, 2**62], [None, None], [],
                                    ["a", b"b"], [1, 2.0], [True, 1]], ids=repr)
def test_columns_taken_by_the_vectorised_paths_come_back_exactly(values):
    back = decode_column(encode_column(values))
    assert back == values
    assert [type(v) for v in back] == [type(v) for v in values]


def test_a_chunked_column_is_decoded_whole():
    chunked = pa.chunked_array([encode_column(["a", 1]), encode_column([None, 2.5])])
    assert decode_column(chunked) == ["a", 1, None, 2.5]


def test_numbers_equal_in_python_share_a_group_key_and_strings_do_not():
    keys = {group_key(encode_value(v)) for v in (1, 1.0, True)}
    assert len(keys) == 1
    assert group_key(encode_value("1")) not in keys
    assert group_key(encode_value(0)) == group_key(encode_value(False)) == group_key(encode_value(0.0))
    assert group_key(encode_value(1.5)) != group_key(encode_value(1))
    assert group_key(None) is None


def test_an_int_sorts_before_an_equal_float_or_bool():
    """A group of 1, 1.0 and True shows the int (Spark picks the smallest tagged value)."""
    assert sorted([encode_value(True), encode_value(1.0), encode_value(1)])[0] == encode_value(1)


def test_a_value_that_does_not_pickle_is_refused_naming_it_and_what_to_do():
    lock = threading.Lock()
    with pytest.raises(UncarriableValueError) as info:
        encode_column(["fine", lock])
    message = str(info.value)
    assert message.startswith(f"the value {lock!r} (lock) cannot be carried: an untyped field carries values "
                              "that pickle, and this one does not (TypeError: ")
    assert message.endswith("emit something that pickles (e.g. its data as a dict or str), or give the class "
                            "__getstate__")


def test_bytes_that_are_not_an_untyped_value_are_named():
    with pytest.raises(ValueError, match=r"not an untyped field's value: b'zzz' \(tag 'z'\)"):
        decode_value(b"zzz")
