"""Which topic a tuple goes to: storm-kafka-client's ``KafkaTopicSelector``.

``getTopic(tuple)`` returns the topic's name, or ``None`` to skip the tuple (Storm logs a
warning and sends nothing; so does this state).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod

from trident_spark.fields import TridentTuple
from trident_spark.state.errors import StateConfigError

__all__ = ["DefaultTopicSelector", "FieldIndexTopicSelector", "FieldNameTopicSelector", "KafkaTopicSelector"]

log = logging.getLogger(__name__)


class KafkaTopicSelector(ABC):
    """storm-kafka-client's ``KafkaTopicSelector``: the topic of a tuple's record.

    Subclass it (picklable: it travels to Spark's executors with the state factory).

    Examples
    --------
    >>> from trident_spark.fields import Fields, TridentTuple
    >>> class ByLanguage(KafkaTopicSelector):
    ...     def getTopic(self, tuple): return f"words-{tuple['lang']}"
    >>> ByLanguage().getTopic(TridentTuple(["en"], Fields(["lang"])))
    'words-en'
    """

    @abstractmethod
    def getTopic(self, tuple: TridentTuple) -> str | None:
        """The topic of ``tuple``'s record, or ``None`` to skip the tuple."""


def _topic_name(owner: str, topic: object) -> str:
    if not isinstance(topic, str) or not topic:
        raise StateConfigError(f"{owner}: the topic must be a non-empty str, got {topic!r}")
    return topic


class DefaultTopicSelector(KafkaTopicSelector):
    """Every tuple to one topic (Storm's ``DefaultTopicSelector``).

    Examples
    --------
    >>> from trident_spark.fields import Fields, TridentTuple
    >>> DefaultTopicSelector("counts").getTopic(TridentTuple(["cat"], Fields(["word"])))
    'counts'
    """

    def __init__(self, topicName: str) -> None:
        self.topicName = _topic_name("DefaultTopicSelector", topicName)

    def getTopic(self, tuple: TridentTuple) -> str:
        return self.topicName

    def __repr__(self) -> str:
        return f"DefaultTopicSelector({self.topicName!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DefaultTopicSelector) and other.topicName == self.topicName

    def __hash__(self) -> int:
        return hash(("DefaultTopicSelector", self.topicName))


class FieldIndexTopicSelector(KafkaTopicSelector):
    """The topic named by the tuple's field at ``fieldIndex``, or ``defaultTopicName`` when the
    tuple is shorter (Storm's ``FieldIndexTopicSelector``, with its warning).

    Examples
    --------
    >>> from trident_spark.fields import Fields, TridentTuple
    >>> FieldIndexTopicSelector(1, "other").getTopic(TridentTuple(["cat", "animals"], Fields(["w", "t"])))
    'animals'
    """

    def __init__(self, fieldIndex: int, defaultTopicName: str) -> None:
        if not isinstance(fieldIndex, int) or isinstance(fieldIndex, bool) or fieldIndex < 0:
            raise StateConfigError(f"FieldIndexTopicSelector: fieldIndex cannot be negative, "
                                   f"got {fieldIndex!r}")
        self.fieldIndex = fieldIndex
        self.defaultTopicName = _topic_name("FieldIndexTopicSelector", defaultTopicName)

    def getTopic(self, tuple: TridentTuple) -> str | None:
        if self.fieldIndex < len(tuple):
            value = tuple.getValue(self.fieldIndex)
            return None if value is None else str(value)
        log.warning("Field index %d is out of bounds. Using default topic %s", self.fieldIndex,
                    self.defaultTopicName)
        return self.defaultTopicName

    def __repr__(self) -> str:
        return f"FieldIndexTopicSelector({self.fieldIndex!r}, {self.defaultTopicName!r})"


class FieldNameTopicSelector(KafkaTopicSelector):
    """The topic named by the tuple's field ``fieldName``, or ``defaultTopicName`` when the tuple
    has no such field (Storm's ``FieldNameTopicSelector``).

    Examples
    --------
    >>> from trident_spark.fields import Fields, TridentTuple
    >>> FieldNameTopicSelector("topic", "other").getTopic(TridentTuple(["cat"], Fields(["w"])))
    'other'
    """

    def __init__(self, fieldName: str, defaultTopicName: str) -> None:
        if not isinstance(fieldName, str):
            raise StateConfigError(f"FieldNameTopicSelector: fieldName must be a str, got {fieldName!r}")
        self.fieldName = fieldName
        self.defaultTopicName = _topic_name("FieldNameTopicSelector", defaultTopicName)

    def getTopic(self, tuple: TridentTuple) -> str | None:
        if tuple.contains(self.fieldName):
            value = tuple.getValueByField(self.fieldName)
            return None if value is None else str(value)
        log.warning("Field %s is not in the tuple. Using default topic %s", self.fieldName,
                    self.defaultTopicName)
        return self.defaultTopicName

    def __repr__(self) -> str:
        return f"FieldNameTopicSelector({self.fieldName!r}, {self.defaultTopicName!r})"
