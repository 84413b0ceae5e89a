"""``trident-spark drpc-server`` as its own process (no Spark), attacked as the issue's probe did:
20 callers at once each sending 10 MB of args. Every one gets 413 naming the limit, the server's
peak memory (``VmHWM``) grows by less than 50 MB (it was 400 MB before the limit), and it still
answers; with ``--token-file`` a caller without the token gets 401, one with it an answer."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from trident_spark.drpc import DRPCClient
from trident_spark.drpc.client import TopologyClient, is_drpc_server
from trident_spark.errors import DRPCExecutionException

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
TOKEN = "proc-token-5d1e"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def peak_rss_kib(pid: int) -> int:
    """The process's peak resident memory (``VmHWM``), in KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert match, status
    return int(match.group(1))


def test_twenty_callers_of_10_mb_args_are_refused_and_the_server_stays_small(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    os.chmod(token_file, 0o600)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "trident_spark.cli.main", "drpc-server", "--port", str(port),
         "--token-file", str(token_file), "--request-timeout", "30"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        deadline = time.monotonic() + 60
        while not is_drpc_server("127.0.0.1", port, timeout=1.0):
            assert server.poll() is None and time.monotonic() < deadline, "the DRPC server did not start"
            time.sleep(0.1)
        before = peak_rss_kib(server.pid)
        client = DRPCClient("127.0.0.1", port, timeout=30, token=TOKEN)
        big = "x" * (10 * 1_048_576)

        def ask(_: int) -> str:
            try:
                return client.execute("words", big)
            except DRPCExecutionException as exc:
                return str(exc)

        def shove(_: int) -> bytes:
            """A caller that sends its 10 MB without waiting for "100 Continue" (raw HTTP)."""
            with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
                head = (f"POST /drpc/words HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                        f"Content-Length: {len(big)}\r\n\r\n").encode()
                with contextlib.suppress(OSError):  # the server answered and closed before the end
                    connection.sendall(head + big.encode())
                answer = b""
                try:
                    while chunk := connection.recv(65536):
                        answer += chunk
                except OSError:
                    pass
                return answer

        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(ask, range(20)))
            shoved = list(pool.map(shove, range(20)))
        refused = ("DRPC request 'words': the args: 10485760 bytes, over this DRPC server's limit of 1048576 "
                   "bytes (drpc-server --max-request-bytes; Storm's drpc.max_buffer_size)")
        assert answers == [refused] * 20
        assert len(shoved) == 20 and all(a == b"" or a.startswith(b"HTTP/1.1 413 ") for a in shoved)
        read_413 = sum(a.startswith(b"HTTP/1.1 413") for a in shoved)
        print(f"raw senders that read the 413 before the close: {read_413} of 20")
        grown_kib = peak_rss_kib(server.pid) - before
        print(f"DRPC server peak RSS: {before} KiB before, grew by {grown_kib} KiB over 20 x 10 MB requests")
        assert grown_kib < 50 * 1024

        with pytest.raises(DRPCExecutionException, match="asks for its token and this request carries none"):
            DRPCClient("127.0.0.1", port, timeout=30, token=None).execute("words", "cat")
        topology = TopologyClient(f"127.0.0.1:{port}", "run/words", TOKEN)

        def serve() -> None:
            while (taken := topology.fetch("words", 1.0)) is None:
                pass
            topology.result(taken.id, "[[3]]")

        threading.Thread(target=serve, daemon=True).start()
        assert client.execute("words", "cat dog the") == "[[3]]"
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    assert TOKEN.encode() not in stderr
    assert b"a token asked" in stderr
