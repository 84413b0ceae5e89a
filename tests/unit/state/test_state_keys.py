"""Compound keys encode without collisions; the global key collides with no group's key."""

from __future__ import annotations

import datetime
import random
from decimal import Decimal

import pytest

from trident_spark.state import GLOBAL_KEY, StateError, decode_key, encode_key
from trident_spark.state.keys import MAX_KEY_BYTES, check_key, is_hashed

TRICKY_TEXT = ["", "|", "||", "%", "%7C", "%25", "~", "~n", "~i1", "~e", "~global", "~h", "a|b", "a%7Cb",
               "1", "None", "null", "true", "\x00", "\n", "tab\there", "é", "日本", "🐍", " ", "%7E", "~~"]


def typed(key):
    """A key compared with its types, since Python's 1 == 1.0 == True."""
    return tuple((type(v).__name__, repr(v)) for v in key)


def random_value(rng):
    kind = rng.randrange(9)
    if kind == 0:
        return rng.choice(TRICKY_TEXT)
    if kind == 1:
        return "".join(rng.choice("ab|%~7C\x01é ") for _ in range(rng.randrange(6)))
    if kind == 2:
        return rng.choice([0, 1, -1, 7, 2**70])
    if kind == 3:
        return rng.choice([0.0, 1.0, -1.5, 1e300, float("inf")])
    if kind == 4:
        return rng.choice([True, False, None])
    if kind == 5:
        return rng.choice([b"", b"\x00", b"|", bytes(range(5))])
    if kind == 6:
        return rng.choice([Decimal("1.5"), Decimal("-0.10")])
    if kind == 7:
        return rng.choice([datetime.date(2024, 5, 1), datetime.datetime(2024, 5, 1, 10, 0, 0)])
    return rng.choice(["1", "1.0", "True", "b''"])


def test_readable_examples():
    assert encode_key(["cat"]) == "cat"
    assert encode_key(["us", 2024]) == "us|~i2024"
    assert encode_key(["a|b", "%"]) == "a%7Cb|%25"
    assert encode_key(["~n", None, ""]) == "%7En|~n|~e"
    assert encode_key([True, 1, 1.0, "1"]) == "~T|~i1|~d1.0|1"


def test_types_stay_apart_where_python_equality_would_merge_them():
    keys = [["1"], [1], [1.0], [True], [Decimal("1")], [b"1"], [None], ["None"], [""], [0], [False], [0.0]]
    assert len({encode_key(k) for k in keys}) == len(keys)


def test_minus_zero_is_zero_as_spark_groups_it():
    assert encode_key([-0.0]) == encode_key([0.0])


def test_random_compound_keys_never_collide_and_decode_back():
    rng = random.Random(20240501)
    by_encoding = {}
    for _ in range(20_000):
        key = [random_value(rng) for _ in range(rng.randrange(1, 4))]
        encoded = encode_key(key)
        assert by_encoding.setdefault(encoded, typed(key)) == typed(key), (encoded, key)
        assert typed(decode_key(encoded)) == typed(key)
        assert encoded != encode_key(GLOBAL_KEY)
    assert len(by_encoding) > 5000


def test_splitting_a_value_across_fields_changes_the_key():
    assert encode_key(["a|b"]) != encode_key(["a", "b"])
    assert encode_key(["a", ""]) != encode_key(["a"])
    assert encode_key(["", ""]) != encode_key([""])


def test_global_key_is_the_empty_key_and_no_group_key_encodes_like_it():
    assert GLOBAL_KEY == ()
    assert encode_key(GLOBAL_KEY) == "~global"
    assert decode_key("~global") == []
    for text in TRICKY_TEXT:
        assert encode_key([text]) != "~global"
    assert encode_key(["~global"]) == "%7Eglobal"


def test_long_keys_are_hashed_deterministically_within_the_elasticsearch_id_limit():
    long_a = ["x" * 600, 1]
    long_b = ["x" * 600, 2]
    encoded = encode_key(long_a)
    assert is_hashed(encoded) and encoded.startswith("~h")
    assert len(encoded.encode()) <= MAX_KEY_BYTES
    assert encoded == encode_key(["x" * 600, 1])
    assert encode_key(long_b) != encoded                         # same readable prefix, other hash
    assert encoded.endswith("|" + "x" * (MAX_KEY_BYTES - 67))    # readable tail kept for humans
    assert not is_hashed(encode_key(["x" * 500]))


def test_long_multibyte_keys_fit_in_bytes_not_characters():
    encoded = encode_key(["日本" * 300])
    assert len(encoded.encode("utf-8")) <= MAX_KEY_BYTES
    assert encoded.encode("utf-8").decode("utf-8") == encoded


def test_a_smaller_limit_hashes_sooner():
    assert is_hashed(encode_key(["y" * 100], max_bytes=80))
    with pytest.raises(StateError, match="max_bytes must be at least 80"):
        encode_key(["y"], max_bytes=10)


def test_hashed_keys_cannot_be_decoded():
    with pytest.raises(StateError, match="was hashed because it is long; it cannot be decoded"):
        decode_key(encode_key(["z" * 700]))


@pytest.mark.parametrize("bad", ["cat", b"cat", 3, None])
def test_a_key_must_be_a_list_of_group_values(bad):
    with pytest.raises(StateError) as caught:
        check_key(bad)
    assert f"a state key is a list of group values, e.g. ['cat'], got {bad!r}" in str(caught.value)
    assert "multiGet([['cat'], ['dog']])" in str(caught.value)


def test_unsupported_group_value_type_is_named():
    with pytest.raises(StateError, match=r"cannot use \{'a': 1\} \(dict\) in a state key"):
        encode_key([{"a": 1}])


def test_not_an_encoded_key():
    with pytest.raises(StateError, match="is not an encoded state key"):
        decode_key("~q12")
