"""The DRPC server's limits, played as the attack over real HTTP (no Spark): 10 MB args, a full
queue, 500 idle connections, ``?timeout=nan``, chunked and malformed bodies. Each ends with an
HTTP answer that names what was refused (never a dropped connection) and exact counts."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator

import pytest

from trident_spark.drpc import DRPCClient, DRPCServer
from trident_spark.drpc.client import TopologyClient
from trident_spark.errors import DRPCExecutionException

MB = 1_048_576
POST = b"POST /drpc/words HTTP/1.1\r\nHost: x\r\n"


@pytest.fixture
def server() -> Iterator[DRPCServer]:
    with DRPCServer(port=0, lease=5.0) as running:
        yield running


def answer_of(connection: socket.socket) -> tuple[int, str, dict[str, str]]:
    """Read one HTTP answer from ``connection``: (status, body, headers)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        assert chunk, f"the server closed the connection without an answer (got {data!r})"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = connection.recv(65536)
        assert chunk, "the answer's body was cut"
        body += chunk
    return int(lines[0].split(" ")[1]), body[:length].decode("utf-8"), headers


def ask_raw(server: DRPCServer, request: bytes) -> tuple[int, str, dict[str, str]]:
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as connection:
        connection.sendall(request)
        return answer_of(connection)


def serve_one(server: DRPCServer, function: str, reply: str | None = None) -> threading.Thread:
    """A topology taking one request of ``function``: it answers ``[[args]]`` (or ``reply``)."""
    client = TopologyClient(server.address, f"test/{function}")

    def loop() -> None:
        while (taken := client.fetch(function, 1.0)) is None:
            pass
        client.result(taken.id, reply if reply is not None else f'[["{taken.args}"]]')

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_10_mb_args_are_refused_with_413_before_the_body_is_read(server: DRPCServer) -> None:
    body_size = 10 * MB
    sent = [0]
    answered_after = [-1]
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        connection.sendall(b"POST /drpc/words HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % body_size)

        def send_body() -> None:
            chunk = b"x" * 65536
            try:
                while sent[0] < body_size:
                    connection.sendall(chunk)
                    sent[0] += len(chunk)
            except OSError:  # the server closed its side: the rest is never sent
                pass

        sender = threading.Thread(target=send_body, daemon=True)
        sender.start()
        status, text, headers = answer_of(connection)
        answered_after[0] = sent[0]
        sender.join(30)
    assert status == 413 and headers["connection"] == "close"
    assert text == ("DRPC request 'words': the args: 10485760 bytes, over this DRPC server's limit of "
                    "1048576 bytes (drpc-server --max-request-bytes; Storm's drpc.max_buffer_size)")
    assert answered_after[0] < body_size // 2      # answered long before the caller finished sending
    assert sent[0] < body_size                     # and the rest was never sent: the server closed
    assert server.board.open_requests() == 0

    # DRPCClient waits for "100 Continue" before a large body: the refusal comes first, as an exception.
    refused = r"the args: 10485760 bytes, over this DRPC server's limit of 1048576 bytes \(drpc-server "
    with pytest.raises(DRPCExecutionException, match=refused):
        DRPCClient("127.0.0.1", server.port, timeout=30).execute("words", "x" * body_size)
    serve_one(server, "words")                     # the server goes on answering
    assert DRPCClient("127.0.0.1", server.port, timeout=30).execute("words", "cat") == '[["cat"]]'


def test_args_at_the_limit_pass_and_one_byte_more_is_refused() -> None:
    with DRPCServer(port=0, max_request_bytes=100_000) as server:
        serve_one(server, "words", reply="[[1]]")
        client = DRPCClient("127.0.0.1", server.port, timeout=30)
        assert client.execute("words", "y" * 100_000) == "[[1]]"
        with pytest.raises(DRPCExecutionException, match=r"the args: 100001 bytes, over this DRPC server's "
                                                         r"limit of 100000 bytes"):
            client.execute("words", "y" * 100_001)
        assert server.board.open_requests() == 0


def test_a_result_over_the_limit_fails_its_request_saying_so() -> None:
    with DRPCServer(port=0, max_request_bytes=1000) as server:
        serve_one(server, "big", reply="[" + ",".join(["[1]"] * 500) + "]")   # 2001 bytes
        refused = (r"its result was refused: the result of DRPC request '[0-9a-f]+': 2001 bytes, over this "
                   r"DRPC server's limit of 1000 bytes")
        with pytest.raises(DRPCExecutionException, match=refused):
            DRPCClient("127.0.0.1", server.port, timeout=30).execute("big", "x")
        assert server.board.open_requests() == 0


def test_a_function_queues_128_requests_and_the_129th_is_refused_with_503(server: DRPCServer) -> None:
    for i in range(128):
        server.board.submit("words", f"waiting {i}")
    status, text, headers = ask_raw(server, POST + b"Content-Length: 3\r\n\r\ncat")
    assert (status, headers["retry-after"]) == (503, "1")
    expected = ("DRPC request 'words' refused: 128 requests of 'words' already wait to be taken, this DRPC "
                "server's limit (drpc-server --max-queue; Storm's drpc.queue.size)")
    assert text.startswith(expected)
    with pytest.raises(DRPCExecutionException, match=re.escape(expected)):
        DRPCClient("127.0.0.1", server.port, timeout=30).execute("words", "cat")
    assert server.board.pending("words") == 128
    serve_one(server, "other")                     # another function's queue is its own
    assert DRPCClient("127.0.0.1", server.port, timeout=30).execute("other", "dog") == '[["dog"]]'


def test_500_idle_connections_are_closed_after_the_idle_timeout_and_requests_are_still_answered() -> None:
    threads_before = threading.active_count()
    with DRPCServer(port=0, idle_timeout=5.0) as server:
        idle = [socket.create_connection(("127.0.0.1", server.port), timeout=60) for _ in range(500)]
        try:
            for _ in range(600):
                if server.connections == 500:
                    break
                threading.Event().wait(0.05)
            assert server.connections == 500
            serve_one(server, "words")             # answered while the 500 are open
            assert DRPCClient("127.0.0.1", server.port, timeout=30).execute("words", "cat") == '[["cat"]]'
            closed = 0
            for connection in idle:                # each sent nothing: the server closes it (EOF)
                if connection.recv(1) == b"":
                    closed += 1
            assert closed == 500
            for _ in range(200):
                if server.connections == 0:
                    break
                threading.Event().wait(0.05)
            assert server.connections == 0
            serve_one(server, "words")
            assert DRPCClient("127.0.0.1", server.port, timeout=30).execute("words", "dog") == '[["dog"]]'
        finally:
            for connection in idle:
                connection.close()
    for _ in range(100):
        if threading.active_count() <= threads_before:
            break
        threading.Event().wait(0.05)
    assert threading.active_count() <= threads_before


def test_connections_over_the_limit_get_503() -> None:
    with DRPCServer(port=0, max_connections=3) as server:
        held = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(3)]
        try:
            for _ in range(200):
                if server.connections == 3:
                    break
                threading.Event().wait(0.05)
            status, text, _ = ask_raw(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert status == 503
            assert text == (f"the DRPC server {server.address} serves 3 connections at once, its limit; "
                            "try again later")
        finally:
            for connection in held:
                connection.close()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "0", "soon"])
def test_a_timeout_that_is_not_a_finite_number_of_seconds_gets_400_naming_it(server: DRPCServer,
                                                                             value: str) -> None:
    status, text, _ = ask_raw(server, b"POST /drpc/words?timeout=%s HTTP/1.1\r\nHost: x\r\n"
                                      b"Content-Length: 3\r\n\r\ncat" % value.encode())
    assert status == 400
    assert text == (f"DRPC request 'words': query parameter timeout='{value}' is not a finite number of "
                    "seconds > 0; give e.g. timeout=30")
    status, text, _ = ask_raw(server, b"GET /drpc/words/cat?timeout=%s HTTP/1.1\r\n\r\n" % value.encode())
    assert status == 400 and "query parameter timeout=" in text
    assert server.board.open_requests() == 0


def test_a_fetch_wait_that_is_not_finite_gets_400(server: DRPCServer) -> None:
    status, text, _ = ask_raw(server, b"POST /topology/fetch?function=w&consumer=c&wait=nan HTTP/1.1\r\n"
                                      b"Host: x\r\nContent-Length: 0\r\n\r\n")
    assert status == 400 and "query parameter wait='nan' is not a finite number of seconds >= 0" in text


def test_a_chunked_post_is_read_whole(server: DRPCServer) -> None:
    serve_one(server, "words")
    status, text, _ = ask_raw(server, POST + b"Transfer-Encoding: chunked\r\n\r\n"
                                      b"4\r\ncat \r\n3;ext=1\r\ndog\r\n0\r\n\r\n")
    assert (status, text) == (200, '[["cat dog"]]')


def test_a_chunked_body_over_the_limit_is_refused_with_413_at_the_chunk_that_passes_it() -> None:
    with DRPCServer(port=0, max_request_bytes=1000) as server:
        chunks = b"".join(b"1f4\r\n" + b"z" * 500 + b"\r\n" for _ in range(3)) + b"0\r\n\r\n"
        status, text, _ = ask_raw(server, b"POST /drpc/words HTTP/1.1\r\nHost: x\r\n"
                                          b"Transfer-Encoding: chunked\r\n\r\n" + chunks)
        assert status == 413
        assert text.startswith("DRPC request 'words': the args: over 1000 bytes (chunked), over this DRPC "
                               "server's limit of 1000 bytes")
        assert server.board.open_requests() == 0


@pytest.mark.parametrize(("framing", "message"), [
    (b"Transfer-Encoding: chunked\r\n\r\nzz\r\ncat\r\n0\r\n\r\n",
     "chunk size b'zz' is not a hexadecimal number"),
    (b"Transfer-Encoding: gzip\r\n\r\n", "Transfer-Encoding 'gzip' is not supported"),
    (b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\ncat",
     "Content-Length or Transfer-Encoding, not both"),
])
def test_a_malformed_or_unsupported_body_framing_gets_an_answer(server: DRPCServer, framing: bytes,
                                                                message: str) -> None:
    status, text, _ = ask_raw(server, b"POST /drpc/words HTTP/1.1\r\nHost: x\r\n" + framing)
    assert status in (400, 501) and message in text
    assert server.board.open_requests() == 0


@pytest.mark.parametrize("length", [b"abc", b"-5", b"1e3", b"3, 4", b""])
def test_a_bad_content_length_gets_400(server: DRPCServer, length: bytes) -> None:
    status, text, headers = ask_raw(server, POST + b"Content-Length: %s\r\n\r\ncat" % length)
    assert status == 400 and headers["connection"] == "close"
    assert text.startswith("DRPC request 'words': the args: ") and "Content-Length" in text
    assert server.board.open_requests() == 0


def test_two_different_content_lengths_get_400(server: DRPCServer) -> None:
    status, text, _ = ask_raw(server, b"POST /drpc/words HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                                      b"Content-Length: 4\r\n\r\ncat")
    assert (status, text) == (400, "DRPC request 'words': the args: 2 different Content-Length headers")


def test_a_body_not_in_utf8_gets_400_and_the_connection_serves_the_next_request(server: DRPCServer) -> None:
    serve_one(server, "words")
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as connection:
        connection.sendall(b"POST /drpc/words HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\ncaf\xe9")
        status, text, _ = answer_of(connection)
        assert (status, text) == (400, "DRPC request 'words': the args: the body is not UTF-8 (byte 3 of 4); "
                                       "send UTF-8")
        connection.sendall(b"POST /drpc/words HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\ncaf\xc3\xa9")
        assert answer_of(connection)[:2] == (200, '[["café"]]')
    status, text, _ = ask_raw(server, b"GET /drpc/words/caf%E9 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (status, text) == (400, "the args in the path: not URL-encoded UTF-8")
    assert server.board.open_requests() == 0
