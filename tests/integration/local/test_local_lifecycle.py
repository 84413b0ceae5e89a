"""Local binaries (tansu, redis-server, osmem-server): start, answer, stop, leave nothing."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from trident_spark.local import launchers
from trident_spark.local.probes import tcp_answers
from trident_spark.local.process import ServiceStartError
from trident_spark.local.service_handle import ServiceHandle

pytestmark = pytest.mark.integration

LAUNCHERS: dict[str, Callable[..., ServiceHandle]] = {
    "kafka": launchers.start_local_kafka,
    "redis": launchers.start_local_redis,
    "elasticsearch": launchers.start_local_elasticsearch,
}


def _host_port(handle: ServiceHandle) -> tuple[str, int]:
    host_port = handle.address.split("://")[-1].split("/")[0]
    host, port = host_port.rsplit(":", 1)
    return host, int(port)


def _wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_stop_leaves_no_process_port_or_file(name: str) -> None:
    handle = LAUNCHERS[name](timeout=30)
    assert handle.provider == "local"
    assert handle.address.startswith(
        {
            "kafka": "127.0.0.1:",
            "redis": "redis://127.0.0.1:",
            "elasticsearch": "http://127.0.0.1:",
        }[name]
    )
    assert handle.pid is not None and handle.log_path is not None
    host, port = _host_port(handle)
    assert tcp_answers(host, port)
    working_dir = Path(os.readlink(f"/proc/{handle.pid}/cwd"))  # redis: its --dir
    log_dir = handle.log_path.parent

    handle.stop()
    handle.stop()

    assert _wait_gone(handle.pid)
    assert not tcp_answers(host, port)
    assert not log_dir.exists()
    if name == "redis":
        assert working_dir.name.startswith("trident-spark-redis-data-")
        assert not working_dir.exists()


def test_keep_logs_and_log_dir(tmp_path: Path) -> None:
    with launchers.start_local_redis(log_dir=tmp_path, keep_logs=True) as redis:
        assert redis.log_path == tmp_path / "redis.log"
    assert "Ready to accept connections" in (tmp_path / "redis.log").read_text()


def test_log_in_a_given_dir_is_removed_but_not_the_dir(tmp_path: Path) -> None:
    with launchers.start_local_elasticsearch(log_dir=tmp_path):
        pass
    assert tmp_path.exists()
    assert list(tmp_path.iterdir()) == []


def test_readiness_timeout_names_address_log_and_last_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Tansu starts, but the readiness check is made to never pass.
    monkeypatch.setattr(launchers, "kafka_answers", lambda address, timeout: False)
    with pytest.raises(ServiceStartError) as caught:
        launchers.start_local_kafka(timeout=1.0)
    message = str(caught.value)
    log_path = Path(message.split("; log: ", 1)[1].split("\n", 1)[0])
    try:
        assert message.startswith("kafka at 127.0.0.1:")
        assert "was not ready within 1 s; log: " in message
        assert log_path.name == "kafka.log"
        assert "last log lines:\n    tansu broker" in message
        assert "listening on: tcp://127.0.0.1:" in log_path.read_text()
    finally:
        shutil.rmtree(log_path.parent, ignore_errors=True)
