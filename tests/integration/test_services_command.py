"""`trident-spark services start redis` as a user runs it: the export line on stdout, a Redis that
answers there, and Ctrl-C or SIGTERM stopping it (exit 130 / 143, one `stopping` line)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("number", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_services_start_prints_the_export_line_and_stops_on_a_signal(number, status):
    pytest.importorskip("redis", reason="the redis extra is not installed")
    import redis

    cli = Path(sys.executable).with_name("trident-spark")
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # start one, not the environment's
    proc = subprocess.Popen([str(cli), "services", "start", "redis"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("export REDIS_URL=redis://127.0.0.1:"), line
        url = line.partition("=")[2]
        assert redis.Redis.from_url(url).ping()
        proc.send_signal(number)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    assert [x for x in err.splitlines() if x.startswith("stopping")] == ["stopping"], err
    assert "Traceback" not in err, err
    host, port = url.removeprefix("redis://").split("/")[0].split(":")
    with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=2):
        pass  # the server went with the command
