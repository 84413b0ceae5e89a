"""Redis Cluster hash slots: which of the 16384 slots a key lives in, and a batch's keys grouped by slot.

The slot of a key is ``CRC16(key) mod 16384`` (CRC16-CCITT, XMODEM variant:
polynomial 0x1021, initial value 0), computed over the key's *hash tag* when it
has one: the bytes between the first ``{`` and the first ``}`` after it, if
that span is not empty (Redis Cluster specification, "Keys hash tags"). A
state whose prefix is ``{wc}`` thus has every key in one slot; a plain prefix
``wc`` spreads its keys over every slot.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Redis Cluster's number of hash slots.
SLOTS = 16384


def _crc16_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
        table.append(crc & 0xFFFF)
    return tuple(table)


_TABLE = _crc16_table()


def crc16(data: bytes) -> int:
    """CRC16-CCITT (XMODEM) of ``data``, the checksum Redis Cluster hashes keys with.

    Examples
    --------
    >>> hex(crc16(b"123456789"))
    '0x31c3'
    """
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _TABLE[((crc >> 8) ^ byte) & 0xFF]
    return crc


def hash_tag(key: bytes) -> bytes:
    """The part of ``key`` that is hashed: the non-empty ``{...}`` tag if there is one, else all of it.

    Examples
    --------
    >>> hash_tag(b"{user1000}.following"), hash_tag(b"foo{}{bar}"), hash_tag(b"foo{{bar}}")
    (b'user1000', b'foo{}{bar}', b'{bar')
    """
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return key[start + 1:end]
    return key


def key_slot(key: bytes | str) -> int:
    """The hash slot (0-16383) of a Redis key; a ``str`` is hashed as its UTF-8 bytes.

    Examples
    --------
    >>> key_slot("123456789"), key_slot("{wc}:cat") == key_slot("{wc}:dog")
    (12739, True)
    """
    data = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    return crc16(hash_tag(data)) % SLOTS


def group_by_slot(names: Sequence[bytes | str]) -> dict[int, list[int]]:
    """The positions of ``names`` grouped by hash slot, each group in the order given.

    Examples
    --------
    >>> group_by_slot(["{a}x", "b", "{a}y"]) == {key_slot("a"): [0, 2], key_slot("b"): [1]}
    True
    """
    groups: dict[int, list[int]] = {}
    for position, name in enumerate(names):
        groups.setdefault(key_slot(name), []).append(position)
    return groups


__all__ = ["SLOTS", "crc16", "group_by_slot", "hash_tag", "key_slot"]
