"""Consumers kept open in a Spark Python worker between tasks, closed when idle.

A Python worker process serves many tasks; opening a consumer per task costs
a connection and a metadata round trip. Idle consumers are closed after
``IDLE_SECONDS`` so a worker left alone (the query stopped, the broker gone)
does not keep reconnecting.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

IDLE_SECONDS = 30.0
LIBRDKAFKA_LOG = logging.getLogger("trident_spark.librdkafka")

_lock = threading.Lock()
_idle: dict[str, list[tuple[Any, float]]] = {}
_evictor: threading.Thread | None = None


@contextmanager
def borrowed_consumer(conf: dict[str, Any]) -> Iterator[Any]:
    """A consumer with settings ``conf``, reused from an earlier task when one is idle.

    Examples
    --------
    >>> with borrowed_consumer({"bootstrap.servers": "127.0.0.1:9092"}) as c:   # doctest: +SKIP
    ...     c.assign([...])
    """
    from confluent_kafka import Consumer

    key = json.dumps(conf, sort_keys=True, default=str)
    with _lock:
        pool = _idle.get(key)
        consumer = pool.pop()[0] if pool else None
    if consumer is None:
        consumer = Consumer(conf, logger=LIBRDKAFKA_LOG)
    healthy = False
    try:
        yield consumer
        healthy = True
    finally:
        if healthy:
            with _lock:
                _idle.setdefault(key, []).append((consumer, time.monotonic()))
            _start_evictor()
        else:
            consumer.close()


def close_idle(older_than: float = IDLE_SECONDS) -> int:
    """Close consumers idle for more than ``older_than`` seconds; return how many."""
    now = time.monotonic()
    closing = []
    with _lock:
        for key, pool in list(_idle.items()):
            keep = [(c, t) for c, t in pool if now - t <= older_than]
            closing += [c for c, t in pool if now - t > older_than]
            if keep:
                _idle[key] = keep
            else:
                del _idle[key]
    for consumer in closing:
        consumer.close()
    return len(closing)


def _start_evictor() -> None:
    global _evictor
    if _evictor is not None and _evictor.is_alive():
        return

    def evict() -> None:
        while True:
            time.sleep(IDLE_SECONDS / 3)
            close_idle()

    _evictor = threading.Thread(target=evict, name="trident-kafka-consumer-evictor", daemon=True)
    _evictor.start()
