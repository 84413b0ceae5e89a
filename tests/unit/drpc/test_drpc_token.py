"""A DRPC server with a shared token, played as a local impostor over real HTTP (no Spark): without
the token or with a wrong one, nobody asks, takes, answers, fails or heartbeats (401); with it,
everything works; the token never shows in a message, a log line or a repr."""

from __future__ import annotations

import http.client
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from trident_spark.drpc import DRPCClient, DRPCServer
from trident_spark.drpc.client import TopologyClient
from trident_spark.drpc.token import TOKEN_ENV, read_token_file
from trident_spark.errors import DRPCExecutionException, InvalidArgumentError

TOKEN = "tok-7f3a9c1e5b"
WRONG = "tok-guessed-00"


@pytest.fixture
def server() -> Iterator[DRPCServer]:
    with DRPCServer(port=0, lease=5.0, token=TOKEN) as running:
        yield running


def raw(server: DRPCServer, method: str, path: str, headers: dict[str, str] | None = None,
        body: bytes = b"") -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request(method, path, body=body if method == "POST" else None, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_a_caller_without_the_token_or_with_a_wrong_one_gets_401(server: DRPCServer,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="trident_spark")
    server.board.submit("words", "already waiting")  # a request an impostor would like to see
    asks = "asks for its token and this request carries"
    with pytest.raises(DRPCExecutionException, match=f"{asks} none") as none:
        DRPCClient("127.0.0.1", server.port, timeout=5).execute("words", "cat")
    with pytest.raises(DRPCExecutionException, match=f"{asks} a wrong one") as wrong:
        DRPCClient("127.0.0.1", server.port, timeout=5, token=WRONG).execute("words", "cat")
    assert raw(server, "GET", "/drpc/words/cat", {"X-DRPC-Token": WRONG})[0] == 401
    assert raw(server, "GET", "/drpc/words/cat", {"Authorization": f"Basic {TOKEN}"})[0] == 401
    assert raw(server, "GET", "/health") == (200, "trident-spark drpc")   # open: tells nothing else
    assert server.board.pending("words") == 1 and server.board.open_requests() == 1   # nothing submitted
    for shown in (str(none.value), str(wrong.value), caplog.text):
        assert TOKEN not in shown and WRONG not in shown


def test_an_impostor_topology_cannot_take_answer_fail_or_heartbeat(server: DRPCServer,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="trident_spark")
    request = server.board.submit("words", "secret args")
    for token in (None, WRONG):
        impostor = TopologyClient(server.address, "impostor", token)
        with pytest.raises(DRPCExecutionException, match=r"DRPC fetch of 'words' from .*: HTTP 401: "):
            impostor.fetch("words", 0)
        with pytest.raises(DRPCExecutionException, match=r"DRPC result to .*: HTTP 401: "):
            impostor.result(request.id, '[["forged"]]')
        with pytest.raises(DRPCExecutionException, match=r"DRPC fail to .*: HTTP 401: "):
            impostor.fail(request.id, "forged failure")
        with pytest.raises(DRPCExecutionException, match=r"DRPC heartbeat to .*: HTTP 401: "):
            impostor.heartbeat()
    assert server.board.pending("words") == 1 and not request.done.is_set()   # untouched
    assert TOKEN not in caplog.text and WRONG not in caplog.text
    assert TOKEN not in repr(TopologyClient(server.address, "t", TOKEN)) and TOKEN not in repr(server)


def test_with_the_token_callers_and_the_topology_work(server: DRPCServer) -> None:
    topology = TopologyClient(server.address, "run/words", TOKEN)

    def serve() -> None:
        for _ in range(2):
            while (taken := topology.fetch("words", 1.0)) is None:
                pass
            topology.result(taken.id, f'[["{taken.args}"]]')

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    caller = DRPCClient("127.0.0.1", server.port, timeout=30, token=TOKEN)
    assert caller.execute("words", "cat") == '[["cat"]]'
    assert raw(server, "GET", "/drpc/words/dog", {"X-DRPC-Token": TOKEN}) == (200, '[["dog"]]')
    thread.join(30)
    topology.heartbeat()
    assert server.board.open_requests() == 0


def test_the_client_takes_the_token_from_the_environment(server: DRPCServer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    client = DRPCClient("127.0.0.1", server.port, timeout=30)
    assert client.token == TOKEN and TOKEN not in repr(client)
    taker = threading.Thread(target=lambda: server.board.result(
        server.board.fetch("words", "t", 10.0).id, "[[1]]"), daemon=True)  # type: ignore[union-attr]
    taker.start()
    assert client.execute("words", "cat") == "[[1]]"


def test_a_token_file_must_be_private_and_is_never_shown(tmp_path: Path) -> None:
    path = tmp_path / "drpc-token"
    path.write_text(TOKEN + "\n")
    os.chmod(path, 0o644)
    with pytest.raises(InvalidArgumentError, match=r"others may read it \(mode 0644\); make it private: "
                                                   r"chmod 600 ") as shared:
        read_token_file(path)
    assert TOKEN not in str(shared.value)
    os.chmod(path, 0o600)
    assert read_token_file(path) == TOKEN
    path.write_text("two words\n")
    with pytest.raises(InvalidArgumentError, match=r"printable ASCII without spaces") as spaced:
        read_token_file(path)
    assert "two words" not in str(spaced.value)
    with pytest.raises(InvalidArgumentError, match=r"cannot be read"):
        read_token_file(tmp_path / "missing")
