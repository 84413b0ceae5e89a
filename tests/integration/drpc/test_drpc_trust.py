"""Which DRPC server a run trusts, and what it leaves on disk, on a real Spark session.

* An impostor on 127.0.0.1:3772 (a plain HTTP server answering ``/health`` exactly as ours does)
  is not adopted by ``run()`` without ``drpc=``: the run starts its own server on a free port,
  says so in one INFO line and ``handle.drpc_address``, its requests are answered there, and the
  impostor receives no request at all.
* The server a run starts asks for ``run(drpc_token=...)``: a caller without it gets 401.
* On the Spark path the request's args never reach Spark's offsets log: they wait in an
  owner-only file beside the checkpoint until the batch commits; the token is nowhere on disk.
* ``run(drpc=...)`` naming a server whose token the run does not have is refused at ``run()``.
"""

from __future__ import annotations

import json
import logging
import stat
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.drpc import DRPCClient, DRPCServer
from trident_spark.drpc.client import parse_address
from trident_spark.errors import DRPCExecutionException
from trident_spark.operation import BaseFunction

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])

TOKEN = "run-token-93be1d"


class Upper(BaseFunction):
    """The args in capitals."""

    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([tuple.getString(0).upper()])


class _Impostor(BaseHTTPRequestHandler):
    """Answers ``/health`` as a trident-spark DRPC server would, and logs every request it gets."""

    seen: list[str] = []

    def _any(self) -> None:
        self.seen.append(f"{self.command} {self.path}")
        body = b"trident-spark drpc" if self.path == "/health" else b"[]"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _any

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def impostor() -> Iterator[list[str]]:
    _Impostor.seen = []
    try:
        server = HTTPServer(("127.0.0.1", 3772), _Impostor)
    except OSError as exc:
        pytest.skip(f"127.0.0.1:3772 is in use by another process on this machine ({exc.strerror}): the "
                    "impostor cannot stand there")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield _Impostor.seen
    finally:
        server.shutdown()
        server.server_close()


def test_an_impostor_on_3772_is_not_adopted_and_receives_nothing(
        spark: Any, tmp_path: Path, impostor: list[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="trident_spark")
    topology = TridentTopology()
    topology.newDRPCStream("shout").each(["args"], Upper(), ["up"]).project(["up"])
    handle = topology.run(tmp_path / "ckpt", spark=spark, drpc_token=TOKEN)
    try:
        host, port = parse_address(handle.drpc_address)
        assert (host, port != 3772) == ("127.0.0.1", True)
        said = [r.getMessage() for r in caplog.records]
        lines = [line for line in said if "DRPC streams use the DRPC server" in line]
        assert lines == [
            f"DRPC streams use the DRPC server at 127.0.0.1:{port}, started by this run on a free port: "
            "127.0.0.1:3772 is taken by another process, not adopted (to use a DRPC server you trust there, "
            "give run(drpc='127.0.0.1:3772')), with a token (ask it: trident-spark drpc FUNCTION ARGS "
            f"--port {port})"
        ]
        with pytest.raises(DRPCExecutionException, match="asks for its token and this request carries none"):
            DRPCClient(host, port, timeout=60, token=None).execute("shout", "cat")
        client = DRPCClient(host, port, timeout=60, token=TOKEN)
        answers = [client.execute("shout", w) for w in ("cat", "dog")]
        assert answers == ['[["CAT"]]', '[["DOG"]]']
        assert handle.drpc_direct["drpc-shout"].stats.answered == 2
    finally:
        handle.stop()
    assert impostor == []                          # not one request: not even /health
    assert TOKEN not in caplog.text


def test_on_the_spark_path_args_stay_out_of_the_offsets_log(spark: Any, tmp_path: Path) -> None:
    topology = TridentTopology()
    topology.newDRPCStream("shout").each(["args"], Upper(), ["up"]).project(["up"])
    checkpoint = tmp_path / "ckpt"
    handle = topology.run(checkpoint, spark=spark, drpc="127.0.0.1:0", drpc_path="spark", drpc_token=TOKEN)
    try:
        host, port = parse_address(handle.drpc_address)
        client = DRPCClient(host, port, timeout=120, token=TOKEN)
        answers = [client.execute("shout", f"private args {i}") for i in (1, 2, 3)]
        assert answers == [f'[["PRIVATE ARGS {i}"]]' for i in (1, 2, 3)]
        stream = checkpoint / "drpc-shout"
        logged = [p.read_text() for p in sorted((stream / "offsets").iterdir()) if p.name.isdigit()]
        ids = [json.loads(text.splitlines()[-1]).get("id") for text in logged]
        assert len([i for i in ids if i]) == 3 and not any("private args" in text for text in logged)
        kept = stream / "drpc-args" / "shout"
        assert sorted(p.name for p in kept.iterdir()) == ["3"]   # 1 and 2 went when their batches committed
        assert stat.S_IMODE(kept.stat().st_mode) == 0o700
        assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE((kept / "3").stat().st_mode) == 0o600
        assert json.loads((kept / "3").read_text())["args"] == "private args 3"
    finally:
        handle.stop()
    on_disk = [p for p in checkpoint.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    assert on_disk == []


def test_a_named_server_whose_token_the_run_lacks_is_refused_at_run(spark: Any, tmp_path: Path) -> None:
    with DRPCServer(port=0, token=TOKEN) as server:
        topology = TridentTopology()
        topology.newDRPCStream("shout").each(["args"], Upper(), ["up"])
        address = server.address
        refused = rf"run\(drpc='{address}'\): DRPC heartbeat to {address}: HTTP 401: .*a wrong one"
        with pytest.raises(DRPCExecutionException, match=refused):
            topology.run(tmp_path / "ckpt", spark=spark, drpc=server.address, drpc_token="not-the-token")
        assert server.board.open_requests() == 0
