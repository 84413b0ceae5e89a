"""The session Redis (redis-server locally) answers real commands."""

from __future__ import annotations

import uuid

import pytest

redis = pytest.importorskip("redis", reason="the redis client is in the [redis] extra")

pytestmark = pytest.mark.integration


def test_set_and_get(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    key = f"local-{uuid.uuid4().hex}"
    try:
        assert client.set(key, b"value") is True
        assert client.get(key) == b"value"
        assert client.get(key + "-missing") is None
    finally:
        client.delete(key)
        client.close()
