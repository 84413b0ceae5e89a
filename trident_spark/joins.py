"""Trident's join kinds as enums: ``JoinType`` (per stream) and ``JoinOutFieldsMode`` (output layout).

Both are string enums, so the string forms ``"inner"``/``"outer"`` that ``join`` accepted
before keep working and compare equal to the members.

Examples
--------
>>> from trident_spark import JoinType, JoinOutFieldsMode
>>> JoinType.INNER == "inner", JoinOutFieldsMode.PRESERVE
(True, <JoinOutFieldsMode.PRESERVE: 'preserve'>)
"""

from __future__ import annotations

from enum import StrEnum


class JoinType(StrEnum):
    """How one stream takes part in a join (Trident's ``JoinType``).

    ``INNER``: a result needs a tuple of this stream with the key. ``OUTER``: this stream
    may be missing from a result; its fields are then None.

    Examples
    --------
    >>> [JoinType.INNER, JoinType.OUTER]        # one per stream: a left outer join of two
    [<JoinType.INNER: 'inner'>, <JoinType.OUTER: 'outer'>]
    """

    INNER = "inner"
    OUTER = "outer"


class JoinOutFieldsMode(StrEnum):
    """The fields a join emits (Trident's ``JoinOutFieldsMode``).

    ``COMPACT`` (the default): the join fields once, then each stream's other fields in order.
    ``PRESERVE``: the join fields, then every field of each stream in that stream's own order,
    its join fields included (None where an outer stream had no tuple), as Trident's
    ``PreservingFieldsOrderJoinerMultiReducer`` emits them after the group values.

    Examples
    --------
    >>> JoinOutFieldsMode("preserve") is JoinOutFieldsMode.PRESERVE
    True
    """

    COMPACT = "compact"
    PRESERVE = "preserve"


__all__ = ["JoinOutFieldsMode", "JoinType"]
