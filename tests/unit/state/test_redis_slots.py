"""Redis Cluster hash slots: CRC16 and hash tags against the Redis Cluster specification's values."""

from __future__ import annotations

import pytest

from trident_spark.state.redis_slots import SLOTS, crc16, group_by_slot, hash_tag, key_slot


def test_crc16_matches_the_specifications_test_vector():
    # Redis Cluster spec, "Keys distribution model": the output for "123456789" is 0x31C3.
    assert crc16(b"123456789") == 0x31C3
    assert crc16(b"") == 0


@pytest.mark.parametrize(("key", "slot"), [
    ("123456789", 12739),     # 0x31C3 mod 16384
    ("foo", 12182),
    ("bar", 5061),
    ("", 0),
    ("{user1000}.following", 3443),
    ("{user1000}.followers", 3443),
])
def test_key_slot_of_known_keys(key, slot):
    assert key_slot(key) == slot
    assert key_slot(key.encode()) == slot


@pytest.mark.parametrize(("key", "hashed"), [
    (b"{user1000}.following", b"user1000"),   # the tag
    (b"foo{}{bar}", b"foo{}{bar}"),           # empty first tag: the whole key
    (b"foo{{bar}}zap", b"{bar"),              # from the first { to the first } after it
    (b"foo{bar}{zap}", b"bar"),               # only the first tag counts
    (b"{wc}:cat", b"wc"),
    (b"wc:cat", b"wc:cat"),
    (b"open{only", b"open{only"),
])
def test_hash_tags_follow_the_specifications_rules(key, hashed):
    assert hash_tag(key) == hashed


def test_a_hash_tag_prefix_puts_every_key_in_one_slot_and_a_plain_one_spreads_them():
    tagged = {key_slot(f"{{wc}}:w{i}") for i in range(1000)}
    plain = {key_slot(f"wc:w{i}") for i in range(1000)}
    assert tagged == {key_slot("wc")}
    assert len(plain) > 900 and all(0 <= slot < SLOTS for slot in plain)


def test_utf8_keys_hash_as_their_bytes():
    assert key_slot("wc:café") == key_slot("wc:café".encode())


def test_group_by_slot_keeps_the_order_within_a_group():
    names = ["{a}3", "b", "{a}1", "{a}2", "b"]
    assert group_by_slot(names) == {key_slot("a"): [0, 2, 3], key_slot("b"): [1, 4]}
    assert group_by_slot([]) == {}
