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


@pytest.mark.parametrize(("persistence", "kept"), [("aof", True), ("none", False)])
def test_persistence_is_a_choice(tmp_path, persistence: str, kept: bool) -> None:
    from trident_spark.local.launchers import start_local_redis

    def restart_and_read() -> bytes | None:
        with start_local_redis(persistence=persistence, data_dir=tmp_path) as server:
            client = redis.Redis.from_url(server.address)
            try:
                found = client.get("kept")
                client.set("kept", b"yes")
                if persistence == "aof":
                    client.execute_command("BGREWRITEAOF")   # on disk before the stop
                return found
            finally:
                client.close()

    assert restart_and_read() is None
    assert restart_and_read() == (b"yes" if kept else None)


def test_an_unknown_persistence_is_refused() -> None:
    from trident_spark.local.launchers import start_local_redis

    with pytest.raises(ValueError, match=r"persistence='always'\): one of none, aof, rdb"):
        start_local_redis(persistence="always")
