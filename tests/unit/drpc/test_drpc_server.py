"""The DRPC server and its clients over real HTTP, without Spark: a topology's side played by
TopologyClient (as the DRPC spout and the driver do), callers by DRPCClient, LocalDRPC and curl-like
plain HTTP."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest

from trident_spark.drpc import DRPCClient, DRPCServer, LocalDRPC
from trident_spark.drpc.board import RequestBoard
from trident_spark.drpc.client import TopologyClient
from trident_spark.errors import DRPCExecutionException, InvalidArgumentError


@pytest.fixture
def server() -> Iterator[DRPCServer]:
    with DRPCServer(port=0, lease=1.0) as running:
        yield running


def serve(server: DRPCServer, function: str, answer: dict[str, str], count: int) -> threading.Thread:
    """A topology taking ``count`` requests: it answers each with ``answer[args]`` (``!msg`` fails it)."""
    client = TopologyClient(server.address, f"test/{function}")

    def loop() -> None:
        done = 0
        while done < count:
            taken = client.fetch(function, 1.0)
            if taken is None:
                continue
            reply = answer[taken.args]
            if reply.startswith("!"):
                client.fail(taken.id, reply[1:])
            else:
                client.result(taken.id, reply)
            done += 1

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_a_client_gets_the_result_the_topology_posts(server: DRPCServer) -> None:
    topology = serve(server, "words", {"cat dog": "[[5]]"}, 1)
    assert DRPCClient("127.0.0.1", server.port, timeout=30).execute("words", "cat dog") == "[[5]]"
    topology.join(10)


def test_many_concurrent_callers_each_get_their_own_answer(server: DRPCServer) -> None:
    asked = [f"q{i}" for i in range(50)]
    topology = serve(server, "echo", {a: f'[["{a}"]]' for a in asked}, len(asked))
    client = DRPCClient("127.0.0.1", server.port, timeout=30)
    with ThreadPoolExecutor(25) as pool:
        answers = list(pool.map(lambda a: client.execute("echo", a), asked))
    assert answers == [f'[["{a}"]]' for a in asked]
    topology.join(10)
    assert server.board.open_requests() == 0


def test_a_failed_request_raises_the_topologys_message(server: DRPCServer) -> None:
    serve(server, "words", {"boom": "!Split failed: ValueError: no"}, 1)
    with pytest.raises(DRPCExecutionException, match="Split failed: ValueError: no"):
        DRPCClient("127.0.0.1", server.port, timeout=30).execute("words", "boom")


def test_a_request_nobody_takes_times_out_naming_the_function(server: DRPCServer) -> None:
    with pytest.raises(DRPCExecutionException, match=r"'nobody' timed out after 0\.5 s: no topology serving"):
        DRPCClient("127.0.0.1", server.port, timeout=0.5).execute("nobody", "x")
    assert server.board.open_requests() == 0


def test_a_topology_that_stops_answering_fails_its_requests_after_the_lease(server: DRPCServer) -> None:
    client = DRPCClient("127.0.0.1", server.port, timeout=60)
    failure: list[str] = []

    def ask() -> None:
        try:
            client.execute("words", "cat")
        except DRPCExecutionException as exc:
            failure.append(str(exc))

    caller = threading.Thread(target=ask)
    caller.start()
    taken = TopologyClient(server.address, "killed-driver").fetch("words", 10)  # then silence
    assert taken is not None and taken.args == "cat"
    caller.join(30)
    assert failure and "the topology serving 'words' stopped answering" in failure[0]
    assert not TopologyClient(server.address, "killed-driver").result(taken.id, "[[1]]")  # too late: ignored


def test_heartbeats_keep_the_lease() -> None:
    board = RequestBoard(lease=0.3)
    request = board.submit("words", "cat")
    assert board.fetch("words", "driver") is request
    for _ in range(5):
        threading.Event().wait(0.1)
        board.heartbeat("driver")
        assert board.expire() == 0
    threading.Event().wait(0.5)
    assert board.expire() == 1


def test_the_http_api_answers_get_and_post_and_names_errors(server: DRPCServer) -> None:
    serve(server, "words", {"cat dog/x": "[[2]]", "post body": "[]"}, 2)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", f"/drpc/words/{quote('cat dog/x', safe='')}")
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"[[2]]")
    connection.request("POST", "/drpc/words", body=b"post body")
    response = connection.getresponse()
    assert (response.status, response.read()) == (200, b"[]")
    connection.request("POST", "/drpc/other?timeout=0.2", body=b"x")
    response = connection.getresponse()
    assert response.status == 504 and b"timed out" in response.read()
    connection.close()


def test_a_caller_that_disconnects_leaves_no_request_behind(server: DRPCServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as caller:
        caller.sendall(b"POST /drpc/words HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\ncat")
        for _ in range(50):
            if server.board.open_requests() == 1:
                break
            threading.Event().wait(0.05)
        assert server.board.open_requests() == 1
    for _ in range(50):
        if server.board.open_requests() == 0:
            break
        threading.Event().wait(0.1)
    assert server.board.open_requests() == 0
    assert TopologyClient(server.address, "late").fetch("words", 0) is None


def test_an_unreachable_server_fails_fast_naming_its_address() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DRPCExecutionException, match=f"no DRPC server at 127.0.0.1:{port}"):
        DRPCClient("127.0.0.1", port, timeout=30).execute("words", "cat")


def test_a_server_that_goes_away_fails_its_waiting_caller() -> None:
    server = DRPCServer(port=0).start()
    failure: list[str] = []

    def ask() -> None:
        try:
            DRPCClient("127.0.0.1", server.port, timeout=60).execute("words", "cat")
        except DRPCExecutionException as exc:
            failure.append(str(exc))

    caller = threading.Thread(target=ask)
    caller.start()
    while server.board.open_requests() == 0:
        threading.Event().wait(0.05)
    server.shutdown()
    caller.join(30)
    assert failure and "failed" in failure[0]


def test_local_drpc_executes_in_process_and_is_reachable_over_http() -> None:
    with LocalDRPC() as drpc:
        serve(drpc.server, "words", {"a": "[[1]]", "b": "[[2]]"}, 2)
        assert drpc.execute("words", "a") == "[[1]]"
        assert DRPCClient("127.0.0.1", drpc.port, timeout=30).execute("words", "b") == "[[2]]"


def test_bad_arguments_are_named() -> None:
    with pytest.raises(InvalidArgumentError, match="timeout"):
        DRPCClient(timeout=0)
    with pytest.raises(InvalidArgumentError, match="args must be a string"):
        DRPCClient().execute("words", 3)  # type: ignore[arg-type]
