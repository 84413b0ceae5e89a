"""The kinds of map state and the values a transactional or opaque state stores per key."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any


class StateType(Enum):
    """Trident's three kinds of map state.

    Examples
    --------
    >>> StateType("opaque") is StateType.OPAQUE
    True
    """

    NON_TRANSACTIONAL = "non_transactional"
    TRANSACTIONAL = "transactional"
    OPAQUE = "opaque"


@dataclass(frozen=True)
class TransactionalValue:
    """A transactional state's stored value: the txid of the batch that last updated it, and the value.

    Stored as JSON ``[txid, val]`` (Storm's Redis state format).

    Attributes
    ----------
    txid : int
        The txid of the batch whose update this value includes last.
    val : Any
        The aggregated value.

    Examples
    --------
    >>> TransactionalValue(txid=3, val=12)
    TransactionalValue(txid=3, val=12)
    """

    txid: int
    val: Any


@dataclass(frozen=True)
class OpaqueValue:
    """An opaque state's stored value: the last txid, the value after it, and the value before it.

    Stored as JSON ``[txid, curr, prev]`` (Storm's Redis state format). Keeping
    ``prev`` lets a replay of batch ``txid`` recompute ``curr`` from the value
    before that batch, even when the replay's tuples differ.

    Attributes
    ----------
    txid : int
        The txid of the batch that produced ``curr``.
    curr : Any
        The value including batch ``txid``; what queries read.
    prev : Any
        The value before batch ``txid`` (None for a key that batch created).

    Examples
    --------
    >>> OpaqueValue(txid=3, curr=12, prev=10).curr
    12
    """

    txid: int
    curr: Any
    prev: Any = None


__all__ = ["OpaqueValue", "StateType", "TransactionalValue"]
