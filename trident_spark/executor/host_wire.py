"""The wire between a task and its instance host (or the launcher): tagged, length-prefixed frames.

Both ends speak it: the task's side (:mod:`trident_spark.executor.instances`) and the host
process with its launcher (:mod:`trident_spark.executor.instance_host`). A frame is one tag byte,
the body's length (8 bytes, big-endian) and the body. A task sends :data:`HEADER` (the pickled
stage), one :data:`BATCH` per input batch (Arrow IPC) and :data:`DONE`; the host answers a
:data:`BATCH` per output batch, then :data:`END` (the pickled counters) or :data:`ERROR` (the
pickled error and its traceback). :data:`STOP` asks a host to clean up and end; it answers
:data:`END`. Nothing here checks who is at the other end: the sockets' directory and peer checks
are :mod:`trident_spark.executor.private_ipc`'s.
"""

from __future__ import annotations

import struct
from typing import Any

#: A frame's head: its tag (one byte) and its body's length.
FRAME = struct.Struct(">cQ")

#: The request's header: the pickled stage (task to host) or the host to fork (task to launcher).
HEADER = b"H"
#: One Arrow record batch, as an IPC stream (:func:`arrow_ipc`).
BATCH = b"B"
#: The task's input is all sent.
DONE = b"D"
#: The answer is complete: the pickled counters (or ``{"cleaned": n}`` after :data:`STOP`).
END = b"E"
#: The stage raised: the pickled ``(error, traceback text)``.
ERROR = b"X"
#: Clean up every kept instance and end.
STOP = b"S"


def send(stream: Any, tag: bytes, body: bytes) -> None:
    """Write one frame (``tag``, ``body``) to ``stream`` (a socket's file; the caller flushes).

    Examples
    --------
    >>> import io
    >>> out = io.BytesIO()
    >>> send(out, END, b"{}")
    >>> receive(io.BytesIO(out.getvalue()))
    (b'E', b'{}')
    """
    stream.write(FRAME.pack(tag, len(body)))
    stream.write(body)


def receive(stream: Any) -> tuple[bytes, bytes]:
    """Read one frame from ``stream``: its (tag, body).

    Raises
    ------
    ConnectionError
        The other end closed the connection before the frame was whole.

    Examples
    --------
    >>> import io
    >>> receive(io.BytesIO(b"E"))
    Traceback (most recent call last):
    ...
    ConnectionError: the instance host closed the connection
    """
    head = stream.read(FRAME.size)
    if len(head) < FRAME.size:
        raise ConnectionError("the instance host closed the connection")
    tag, size = FRAME.unpack(head)
    body = stream.read(size)
    if len(body) < size:
        raise ConnectionError("the instance host closed the connection")
    return bytes(tag), bytes(body)


def arrow_ipc(batch: Any) -> bytes:
    """A ``pyarrow.RecordBatch`` as the body of a :data:`BATCH` frame (an Arrow IPC stream).

    Examples
    --------
    >>> import pyarrow as pa
    >>> body = arrow_ipc(pa.RecordBatch.from_pydict({"n": [1, 2]}))
    >>> pa.ipc.open_stream(body).read_next_batch().to_pydict()
    {'n': [1, 2]}
    """
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


__all__ = ["BATCH", "DONE", "END", "ERROR", "FRAME", "HEADER", "STOP", "arrow_ipc", "receive", "send"]
