"""The Kafka output's connections: client settings, topic checks, and the committed-txid marker.

Everything that talks to the broker for :class:`~.state.TridentKafkaState` is here, so the
state reads as Trident's order of calls. ``confluent_kafka`` is imported when a connection is
made (on the executor), never when ``trident_spark.kafka`` is imported.

The marker: in exactly-once mode each (state, partition) has a transactional producer
(``transactional.id`` = ``<transactional_id>-<partition>``) and a consumer group of the same
name. Every batch's transaction also commits the group's offset ``txid + 1`` on partition 0
of the marker topic (``send_offsets_to_transaction``): the records and the marker become
visible together or not at all, so the group's committed offset says which txid this
partition last committed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from trident_spark.state.errors import StateConfigError, StateUnavailableError
from trident_spark.state.redaction import redact_text

__all__ = [
    "CLIENT_PREFIXES",
    "check_reachable",
    "consumer_config",
    "ensure_topic",
    "is_unavailable",
    "producer_config",
    "read_marker",
    "topic_exists",
]

#: Settings a consumer (topic checks, the marker) shares with the producer: connection and security.
CLIENT_PREFIXES = ("security.", "sasl.", "ssl.", "socket.", "client.", "reconnect.", "broker.",
                   "api.version", "metadata.", "enable.ssl", "connections.", "retry.backoff",
                   "topic.metadata", "resolve.", "allow.auto.create")

#: Defaults of the output's producer; ``withProducerProperties`` overrides any of them.
#: ``murmur2_random`` places keyed records as Java clients (and Storm) do.
PRODUCER_DEFAULTS: dict[str, Any] = {"enable.idempotence": True, "partitioner": "murmur2_random",
                                     "linger.ms": 5}


def producer_config(bootstrap: str, properties: Mapping[str, Any],
                    transactional_id: str | None, timeout: float) -> dict[str, Any]:
    """The producer's settings: ours, the user's on top, and the transactional id of the partition.

    Examples
    --------
    >>> c = producer_config("k:9092", {"linger.ms": 20}, "wc-out-3", 30.0)
    >>> c["bootstrap.servers"], c["linger.ms"], c["transactional.id"]
    ('k:9092', 20, 'wc-out-3')
    """
    config: dict[str, Any] = {**PRODUCER_DEFAULTS, "bootstrap.servers": bootstrap,
                              "socket.connection.setup.timeout.ms": int(min(timeout, 30.0) * 1000)}
    config.update(properties)
    if transactional_id is not None:
        config["transactional.id"] = transactional_id
        config.setdefault("transaction.timeout.ms", 60_000)
    return config


def consumer_config(bootstrap: str, properties: Mapping[str, Any], group: str) -> dict[str, Any]:
    """A consumer's settings for topic checks and the marker: the producer's connection and
    security settings, never a group join, never a topic created by asking for it.

    Examples
    --------
    >>> c = consumer_config("k:9092", {"sasl.mechanism": "PLAIN", "linger.ms": 5}, "wc-out-0")
    >>> c["group.id"], c["sasl.mechanism"], "linger.ms" in c, c["isolation.level"]
    ('wc-out-0', 'PLAIN', False, 'read_committed')
    """
    shared = {k: v for k, v in properties.items() if k.startswith(CLIENT_PREFIXES)}
    return {"bootstrap.servers": bootstrap, **shared, "group.id": group, "enable.auto.commit": False,
            "allow.auto.create.topics": False, "isolation.level": "read_committed"}


def is_unavailable(error: Any) -> bool:
    """Whether a librdkafka error means the broker did not answer (an outage, not a mistake)."""
    from confluent_kafka import KafkaError

    return error.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN,
                            KafkaError._RESOLVE, KafkaError._MSG_TIMED_OUT, KafkaError.REQUEST_TIMED_OUT,
                            KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR,
                            KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError._WAIT_COORD)


def _error_of(exc: Exception) -> Any:
    return exc.args[0] if exc.args and hasattr(exc.args[0], "code") else None


def check_reachable(consumer: Any, address: str, timeout: float) -> None:
    """Ask the broker for its metadata: no answer within ``timeout`` is a
    :class:`StateUnavailableError` naming it."""
    from confluent_kafka import KafkaException

    try:
        consumer.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise StateUnavailableError(address, f"the Kafka broker did not answer within {timeout:g} s "
                                             f"({redact_text(str(_error_of(exc) or exc))})") from None


def topic_exists(consumer: Any, address: str, topic: str, timeout: float) -> bool:
    """Whether ``topic`` exists, asked without creating it; no answer is a
    :class:`StateUnavailableError` naming the broker."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        metadata = consumer.list_topics(topic, timeout=timeout)
    except KafkaException as exc:
        raise StateUnavailableError(address, f"no metadata for topic {topic!r} within {timeout:g} s "
                                             f"({redact_text(str(_error_of(exc) or exc))})") from None
    found = metadata.topics.get(topic)
    if found is None:
        return False
    if found.error is None:
        return True
    if found.error.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
        return False
    raise StateUnavailableError(address, f"topic {topic!r}: {redact_text(str(found.error))}")


def ensure_topic(consumer: Any, config: Mapping[str, Any], address: str, topic: str, timeout: float) -> None:
    """Create the one-partition ``topic`` (the marker topic) unless it exists.

    Raises
    ------
    StateConfigError
        The broker refused to create it (no permission, a policy): the message says to create it.
    """
    if topic_exists(consumer, address, topic, timeout):
        return
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({k: v for k, v in config.items()
                         if k == "bootstrap.servers" or (k.startswith(CLIENT_PREFIXES)
                         and not k.startswith("allow.auto.create"))})
    future = admin.create_topics([NewTopic(topic, 1, 1)], request_timeout=timeout)[topic]
    try:
        future.result(timeout)
    except KafkaException as exc:
        error = _error_of(exc)
        if error is not None and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return
        raise StateConfigError(
            f"Kafka output: cannot create the marker topic {topic!r} on {address} "
            f"({redact_text(str(error or exc))}); create it with 1 partition, or name an existing "
            f"one with TridentKafkaStateFactory(marker_topic=...)") from None
    deadline = time.monotonic() + timeout
    while not topic_exists(consumer, address, topic, timeout):  # metadata follows the creation
        if time.monotonic() > deadline:
            raise StateUnavailableError(address, f"topic {topic!r} was created but is not in the "
                                                 f"metadata after {timeout:g} s")
        time.sleep(0.1)


def read_marker(consumer: Any, group: str, address: str, topic: str, timeout: float) -> int | None:
    """The txid (+ offset) this partition's group last committed, or ``None`` if it never did.

    The consumer reads committed offsets as ``read_committed`` does: an offset still inside an
    open transaction is not one.
    """
    from confluent_kafka import KafkaException, TopicPartition

    try:
        (found,) = consumer.committed([TopicPartition(topic, 0)], timeout=timeout)
    except KafkaException as exc:
        raise StateUnavailableError(address, f"cannot read the committed txid of group "
                                             f"{group!r} ({_error_of(exc) or exc})") from None
    if found.error is not None:
        raise StateUnavailableError(address, f"cannot read the committed txid of group "
                                             f"{group!r} ({found.error})")
    return None if found.offset < 0 else int(found.offset) - 1

