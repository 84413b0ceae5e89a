"""The wire between a task and its instance host: frames round-trip, a cut frame is a closed connection."""

from __future__ import annotations

import doctest
import io

import pyarrow as pa
import pytest

from trident_spark.executor import host_wire
from trident_spark.executor.host_wire import BATCH, END, arrow_ipc, receive, send


def test_frames_come_back_in_order_with_their_tags_and_bodies():
    out = io.BytesIO()
    send(out, BATCH, arrow_ipc(pa.RecordBatch.from_pydict({"n": [1, 2, 3]})))
    send(out, END, b"")
    stream = io.BytesIO(out.getvalue())
    tag, body = receive(stream)
    assert tag == BATCH
    assert pa.ipc.open_stream(body).read_next_batch().to_pydict() == {"n": [1, 2, 3]}
    assert receive(stream) == (END, b"")


def test_a_frame_cut_short_is_a_closed_connection():
    out = io.BytesIO()
    send(out, END, b"0123456789")
    with pytest.raises(ConnectionError, match=r"^the instance host closed the connection$"):
        receive(io.BytesIO(out.getvalue()[:-1]))


def test_the_tags_are_distinct_bytes():
    tags = [host_wire.HEADER, host_wire.BATCH, host_wire.DONE, host_wire.END, host_wire.ERROR, host_wire.STOP]
    assert len(set(tags)) == 6 and all(len(tag) == 1 for tag in tags)


def test_docstring_examples():
    failures, attempted = doctest.testmod(host_wire, optionflags=doctest.ELLIPSIS)
    assert attempted and not failures
