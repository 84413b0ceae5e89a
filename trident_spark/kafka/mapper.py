"""What a tuple becomes in Kafka: storm-kafka-client's ``TridentTupleToKafkaMapper``.

A mapper gives a tuple's record key and value (Storm's ``getKeyFromTuple`` and
``getMessageFromTuple``) and, a Python extension, its headers (``getHeadersFromTuple``).
The state turns each into bytes with :func:`to_bytes`: bytes as they are, ``None`` as no
key (or a null value), anything else ``str(value)`` in UTF-8.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from trident_spark.fields import TridentTuple
from trident_spark.state.errors import StateConfigError

__all__ = ["FieldNameBasedTupleToKafkaMapper", "TridentTupleToKafkaMapper", "to_bytes"]


def to_bytes(value: Any) -> bytes | None:
    """A key, value or header as Kafka bytes: bytes as they are, ``None`` stays ``None``
    (no key, or a null value), anything else ``str(value)`` encoded as UTF-8.

    Examples
    --------
    >>> to_bytes("cat"), to_bytes(3), to_bytes(b"\\x00\\x01"), to_bytes(None)
    (b'cat', b'3', b'\\x00\\x01', None)
    """
    if value is None:
        return None
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return str(value).encode("utf-8")


class TridentTupleToKafkaMapper(ABC):
    """storm-kafka-client's ``TridentTupleToKafkaMapper``: a tuple's record key and value.

    Subclass it (picklable: it travels to Spark's executors with the state factory) and
    implement ``getKeyFromTuple`` and ``getMessageFromTuple``; override
    ``getHeadersFromTuple`` to give the record headers. :meth:`fieldFor` names the field a
    part comes from, for error messages.

    Examples
    --------
    >>> from trident_spark.fields import Fields, TridentTuple
    >>> class Upper(TridentTupleToKafkaMapper):
    ...     def getKeyFromTuple(self, tuple): return tuple["word"]
    ...     def getMessageFromTuple(self, tuple): return tuple["word"].upper()
    >>> t = TridentTuple(["cat"], Fields(["word"]))
    >>> Upper().getKeyFromTuple(t), Upper().getMessageFromTuple(t), Upper().getHeadersFromTuple(t)
    ('cat', 'CAT', None)
    """

    @abstractmethod
    def getKeyFromTuple(self, tuple: TridentTuple) -> Any:
        """The record's key (``None``: no key)."""

    @abstractmethod
    def getMessageFromTuple(self, tuple: TridentTuple) -> Any:
        """The record's value."""

    def getHeadersFromTuple(self, tuple: TridentTuple) -> Sequence[tuple[str, Any]] | None:
        """The record's headers as ``(name, value)`` pairs, or ``None`` (a Python extension)."""
        return None

    def fieldFor(self, part: str) -> str | None:
        """The tuple field ``part`` (``"key"``, ``"value"`` or a header's name) comes from, if one."""
        return None


class FieldNameBasedTupleToKafkaMapper(TridentTupleToKafkaMapper):
    """Key and value from two named fields (Storm's ``FieldNameBasedTupleToKafkaMapper``).

    Parameters
    ----------
    keyFieldName : str or None
        The field whose value is the record key; ``None``: records without a key.
    msgFieldName : str
        The field whose value is the record value.
    header_fields : sequence of str, optional
        Fields sent as headers, each under its field name (a Python extension).

    Examples
    --------
    >>> from trident_spark.fields import Fields, TridentTuple
    >>> mapper = FieldNameBasedTupleToKafkaMapper("word", "count", header_fields=["source"])
    >>> t = TridentTuple(["cat", 3, "web"], Fields(["word", "count", "source"]))
    >>> mapper.getKeyFromTuple(t), mapper.getMessageFromTuple(t), mapper.getHeadersFromTuple(t)
    ('cat', 3, [('source', 'web')])
    """

    def __init__(self, keyFieldName: str | None, msgFieldName: str,
                 header_fields: Sequence[str] = ()) -> None:
        for what, name in (("keyFieldName", keyFieldName), ("msgFieldName", msgFieldName)):
            if not (name is None and what == "keyFieldName") and not isinstance(name, str):
                raise StateConfigError(f"FieldNameBasedTupleToKafkaMapper: {what} must be a field name "
                                       f"(str), got {name!r}")
        if isinstance(header_fields, str) or not all(isinstance(h, str) for h in header_fields):
            raise StateConfigError("FieldNameBasedTupleToKafkaMapper: header_fields must be a list of "
                                   f"field names, got {header_fields!r}")
        self.keyFieldName = keyFieldName
        self.msgFieldName = msgFieldName
        self.header_fields = tuple(header_fields)

    def getKeyFromTuple(self, tuple: TridentTuple) -> Any:
        return None if self.keyFieldName is None else tuple.getValueByField(self.keyFieldName)

    def getMessageFromTuple(self, tuple: TridentTuple) -> Any:
        return tuple.getValueByField(self.msgFieldName)

    def getHeadersFromTuple(self, tuple: TridentTuple) -> Sequence[tuple[str, Any]] | None:
        if not self.header_fields:
            return None
        return [(name, tuple.getValueByField(name)) for name in self.header_fields]

    def fieldFor(self, part: str) -> str | None:
        if part == "key":
            return self.keyFieldName
        if part == "value":
            return self.msgFieldName
        return part if part in self.header_fields else None

    def __repr__(self) -> str:
        headers = f", header_fields={list(self.header_fields)!r}" if self.header_fields else ""
        return f"FieldNameBasedTupleToKafkaMapper({self.keyFieldName!r}, {self.msgFieldName!r}{headers})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldNameBasedTupleToKafkaMapper) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(repr(self))
