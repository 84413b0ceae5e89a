"""Compound keys encode without collisions, equal group values (Python's ==) alike; the global key
collides with no group's key."""

from __future__ import annotations

import datetime
import hashlib
import itertools
import math
import random
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

import pytest

from trident_spark.state import GLOBAL_KEY, StateError, decode_key, encode_key
from trident_spark.state.keys import MAX_KEY_BYTES, check_key, encode_keys, is_hashed

TRICKY_TEXT = ["", "|", "||", "%", "%7C", "%25", "~", "~n", "~i1", "~e", "~global", "~h", "a|b", "a%7Cb",
               "1", "None", "null", "true", "\x00", "\n", "tab\there", "é", "日本", "🐍", " ", "%7E", "~~"]


def typed(key):
    """A key compared with its types (for values whose type survives decoding)."""
    return tuple((type(v).__name__, repr(v)) for v in key)


def same_class(a, b):
    """Equal under Python's ==, counting nan as equal to itself (a key is one group for it)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def random_value(rng):
    """A group value whose type survives a round trip (no integral floats, bools or decimals)."""
    kind = rng.randrange(9)
    if kind == 0:
        return rng.choice(TRICKY_TEXT)
    if kind == 1:
        return "".join(rng.choice("ab|%~7C\x01é ") for _ in range(rng.randrange(6)))
    if kind == 2:
        return rng.choice([0, 1, -1, 7, 2**70])
    if kind == 3:
        return rng.choice([-1.5, 0.1, 1e-300, float("inf")])
    if kind == 4:
        return rng.choice([None, (1, "a|b"), [2, ["~x", None]], {"k": [1, 2]}, {3: "c"}, frozenset({4})])
    if kind == 5:
        return rng.choice([b"", b"\x00", b"|", bytes(range(5))])
    if kind == 6:
        return rng.choice([Decimal("0.1"), Decimal("-0.3"), Fraction(1, 3)])
    if kind == 7:
        return rng.choice([datetime.date(2024, 5, 1), datetime.datetime(2024, 5, 1, 10, 0, 0)])
    return rng.choice(["1", "1.0", "True", "b''", "[1]", '{"~tuple": [1]}'])


UTC = datetime.UTC
PLUS_ONE = datetime.timezone(datetime.timedelta(hours=1))
SCALARS = [
    0, 1, -1, 7, 2**53, 2**53 + 1, 2**70, -(2**70),
    0.0, -0.0, 1.0, 1.5, -1.5, 0.1, 0.5, 7.0, float(2**53), 1e300, 1e-300, math.inf, -math.inf, math.nan,
    True, False, None,
    Decimal("1"), Decimal("1.0"), Decimal("1.50"), Decimal("0.1"), Decimal("-0.10"), Decimal("7E+0"),
    Decimal("0.5"), Decimal("Infinity"), Decimal("1E-30"),
    Fraction(1, 2), Fraction(1, 10), Fraction(1, 3), Fraction(14, 2), Fraction(-2, 6),
    "", "1", "1.0", "True", "None", "~i1", "a|b", "%7C", "日本", "\x00", "[1]",
    b"", b"1", bytearray(b"1"), b"|",
    datetime.date(2024, 5, 1), datetime.datetime(2024, 5, 1), datetime.datetime(2024, 5, 1, 10, tzinfo=UTC),
    datetime.datetime(2024, 5, 1, 11, tzinfo=PLUS_ONE), datetime.datetime(2024, 5, 1, 10),
]


def containers(values):
    """Lists, tuples, dicts and sets built from ``values`` (equal ones built from equal parts)."""
    hashable = [v for v in values if not isinstance(v, bytearray)]
    made = []
    for a, b in itertools.islice(itertools.product(values, repeat=2), 0, None, 37):
        made += [[a, b], (a, b), [a], (a,)]
    for a, b in itertools.islice(itertools.product(hashable, repeat=2), 0, None, 53):
        made += [{a: b}, {"k": a, "j": b}, {a, b}, frozenset({a}), {"~x": a}]
    return made


ALL_VALUES = SCALARS + containers(SCALARS) + [
    [], (), {}, set(), frozenset(), [[]], [()], ([],), {1: {2: (3,)}}, {True: "a"}, {1.0: "a"}, {1: "a"},
    {"~tuple": [1, 2]}, {"~tuple": [1, 2], "n": 1}, [1, [2, [3, (4,)]]], {"b": 1, "a": 2}, {"a": 2, "b": 1},
]


def test_readable_examples():
    assert encode_key(["cat"]) == "cat"
    assert encode_key(["us", 2024]) == "us|~i2024"
    assert encode_key(["a|b", "%"]) == "a%7Cb|%25"
    assert encode_key(["~n", None, ""]) == "%7En|~n|~e"
    assert encode_key([True, 1, 1.0, "1"]) == "~i1|~i1|~i1|1"
    assert encode_key([1.5, Decimal("0.1"), Fraction(1, 3), b"\x00|"]) == "~d1.5|~D0.1|~r1/3|~x007c"
    assert encode_key([[1, "a|b"], (2.0,)]) == '~j[1,"a%7Cb"]|~j{"~tuple":[2]}'
    assert encode_key([{"b": 1, "a": [True]}, {2: "x", 1: "y"}]) == \
        '~j{"a":[1],"b":1}|~j{"~dict":[[1,"y"],[2,"x"]]}'
    assert encode_key([{3, 1.0}, float("nan"), float("-inf")]) == '~j{"~frozenset":[1,3]}|~dnan|~d-inf'


def test_equal_numbers_are_one_key_as_a_python_dict_counts_them():
    ones = [[1], [1.0], [True], [Decimal("1")], [Decimal("1.00")], [Fraction(2, 2)]]
    assert {encode_key(k) for k in ones} == {"~i1"}
    zeros = [[0], [0.0], [-0.0], [False], [Decimal("-0")], [Decimal("0E+3")]]
    assert {encode_key(k) for k in zeros} == {"~i0"}
    assert encode_key([1.5]) == encode_key([Decimal("1.5")]) == encode_key([Fraction(3, 2)]) == "~d1.5"
    assert encode_key([Decimal("0.1")]) == encode_key([Fraction(1, 10)]) != encode_key([0.1])
    assert encode_key([2**53 + 1]) != encode_key([float(2**53 + 1)])     # 2**53 + 1 != 2.0**53 + 1.0


def test_values_python_tells_apart_stay_apart():
    keys = [["1"], [1], [b"1"], [None], ["None"], [""], [0], ["~i1"], [[1]], [(1,)], [{1}], [{1: 1}],
            [[1, 2]], [(1, 2)], [["1"]], [datetime.date(2024, 5, 1)], [datetime.datetime(2024, 5, 1)]]
    assert len({encode_key(k) for k in keys}) == len(keys)


def test_every_pair_of_values_shares_a_key_exactly_when_python_calls_them_equal():
    encoded = [encode_key([v]) for v in ALL_VALUES]
    assert len(ALL_VALUES) > 400
    for (a, ea), (b, eb) in itertools.combinations(zip(ALL_VALUES, encoded, strict=True), 2):
        assert (ea == eb) == same_class(a, b), (a, b, ea, eb)


def test_every_value_decodes_to_an_equal_value_with_the_same_key():
    for value in ALL_VALUES:
        encoded = encode_key([value])
        (decoded,) = decode_key(encoded)
        holds_nan = '{"~float":"nan"}' in encoded       # a new nan inside a container: never == (Python)
        assert holds_nan or same_class(decoded, value), (value, encoded, decoded)
        assert encode_key([decoded]) == encoded
        assert "|" not in encoded and not encoded.startswith(("~g", "~c", "~h"))


def test_a_key_decodes_to_the_representative_of_its_class():
    assert decode_key("~i1|~d1.5|~D0.1|~r1/3") == [1, 1.5, Decimal("0.1"), Fraction(1, 3)]
    assert typed(decode_key(encode_key([True, 2.0]))) == typed([1, 2])
    aware = datetime.datetime(2024, 5, 1, 11, tzinfo=PLUS_ONE)
    assert decode_key(encode_key([aware])) == [aware] and decode_key(encode_key([aware]))[0].tzinfo == UTC
    assert decode_key(encode_key([{"x", "y"}])) == [frozenset({"x", "y"})]


def test_keys_of_earlier_versions_still_decode():
    assert typed(decode_key("~T|~F|~d2.0|~D1.50")) == typed([True, False, 2.0, Decimal("1.50")])


def test_minus_zero_is_zero():
    assert encode_key([-0.0]) == encode_key([0.0]) == encode_key([0]) == "~i0"


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


class Point:
    def __repr__(self):
        return "Point()"


def test_unsupported_group_value_type_is_named():
    with pytest.raises(StateError) as caught:
        encode_key([Point()])
    assert str(caught.value) == (
        "cannot use Point() (Point) in a state key: group values of a state must be str, numbers (int, "
        "float, Decimal, Fraction), bool, None, bytes, date, datetime, or lists, tuples, dicts and sets of "
        "them; convert it (e.g. str(), or a tuple of its fields) before grouping")


def test_unsupported_value_inside_a_container_is_named():
    with pytest.raises(StateError) as caught:
        encode_key([["a", Point()]])
    assert str(caught.value) == (
        "cannot use ['a', Point()] (list) in a state key: it holds Point() (Point), and the values inside "
        "a list, tuple, dict or set group value must themselves be group values (str, numbers, bool, "
        "None, bytes, date, datetime, or lists, tuples, dicts and sets of them); convert it (e.g. str()) "
        "before grouping")


def test_complex_numbers_are_not_group_values():
    with pytest.raises(StateError, match=r"cannot use \(1\+0j\) \(complex\) in a state key"):
        encode_key([1 + 0j])


def test_not_an_encoded_key():
    with pytest.raises(StateError, match="is not an encoded state key"):
        decode_key("~q12")


# -- the fast paths: check_key for lists and tuples, encode_keys for one-word keys ----------------

class Row(list):
    """A list subclass: not the fast path's exact type, still a key."""


class Pair:
    """A Sequence that is neither list nor tuple (registered below)."""

    def __init__(self, *values):
        self.values = values

    def __getitem__(self, i):
        return self.values[i]

    def __len__(self):
        return len(self.values)


Sequence.register(Pair)


def test_check_key_returns_lists_and_tuples_themselves():
    key, pair = ["cat", 1], ("cat", 1)
    assert check_key(key) is key and check_key(pair) is pair
    row, seq = Row(["cat"]), Pair("cat", 1)
    assert check_key(row) is row and check_key(seq) is seq         # the general path: still keys


@pytest.mark.parametrize("bad", ["cat", b"cat", bytearray(b"cat"), 3, 2.5, None, {"cat": 1}, {"cat"},
                                 iter(["cat"])])
def test_bad_keys_get_the_same_error_on_every_path(bad):
    expected = (f"a state key is a list of group values, e.g. ['cat'], got {bad!r}; "
                f"keys are lists of keys: multiGet([['cat'], ['dog']])")
    for call in (check_key, encode_key, lambda key: encode_keys([["ok"], key])):
        with pytest.raises(StateError) as caught:
            call(bad)
        assert str(caught.value) == expected


def test_encode_keys_gives_encode_keys_answers_for_every_value():
    words = ["cat", "Straße", "日本", "²", "x" * 128, "x" * 129, "ab9", "A1b2", "٣"]  # letters, any script
    keys = ([[value] for value in ALL_VALUES] + [(value,) for value in SCALARS]
            + [[text] for text in TRICKY_TEXT] + [[word] for word in words] + [(word,) for word in words]
            + [[a, b] for a, b in zip(SCALARS, reversed(SCALARS), strict=True)]
            + [GLOBAL_KEY, [], Row(["cat"]), Pair("cat", 2)])
    assert encode_keys(keys) == [encode_key(key) for key in keys]
    for max_bytes in (80, 100, 511):
        assert encode_keys(keys, max_bytes) == [encode_key(key, max_bytes) for key in keys]


def test_one_word_keys_are_their_own_encoding():
    assert encode_keys([["cat"], ("dog",), ["Straße"], ["日本"], ["x" * 128]]) == [
        "cat", "dog", "Straße", "日本", "x" * 128]
    assert encode_keys([["~cat"], ["a|b"], [""], ["a b"], ["%"]]) == ["%7Ecat", "a%7Cb", "~e", "a b", "%25"]


def _hashed(encoded: str, max_bytes: int = MAX_KEY_BYTES) -> str:
    """The hashed form of a readable encoding, written out from the format (keys.py's doc)."""
    raw = encoded.encode("utf-8")
    digest = hashlib.sha256(raw).hexdigest()
    readable = raw[:max_bytes - 2 - len(digest) - 1].decode("utf-8", errors="ignore")
    return f"~h{digest}|{readable}"


def test_the_byte_limit_is_counted_in_utf8_bytes_on_every_path():
    fits, over = "é" * 256, "é" * 257                    # 512 and 514 UTF-8 bytes
    snakes, more_snakes = "🐍" * 128, "🐍" * 129          # 512 and 516
    for key, expected in (([fits], fits), ([over], _hashed(over)), ([snakes], snakes),
                          ([more_snakes], _hashed(more_snakes)), (["x" * 512], "x" * 512),
                          (["x" * 513], _hashed("x" * 513)), (["a", "x" * 510], "a|" + "x" * 510),
                          (["a", "x" * 511], _hashed("a|" + "x" * 511))):
        assert encode_key(key) == expected
        assert encode_keys([key]) == [expected]
    assert encode_keys([["y" * 20]], max_bytes=80) == ["y" * 20]
    assert encode_keys([["y" * 81]], max_bytes=80) == [_hashed("y" * 81, 80)]
