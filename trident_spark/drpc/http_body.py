"""An HTTP request's body, read within a byte limit, or refused with a status and a reason.

The DRPC server reads every body through :func:`read_body`: a ``Content-Length`` body or a
chunked one (``Transfer-Encoding: chunked``), never more than the server's
``max_request_bytes`` (Storm's ``drpc.max_buffer_size``, 1 MB). A declared length over the limit
is refused before a byte of the body is read; a chunked body is refused as soon as its chunks
pass the limit. A bad ``Content-Length``, a malformed chunk or a body that is not UTF-8 is a
:class:`BodyRefused` with status 400 and a message that says what was wrong (the server answers
it; the connection is never just dropped).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Protocol

from trident_spark.errors import TridentSparkError

#: Longest line of a chunked body's framing (a chunk size with its extensions, a trailer).
MAX_CHUNK_LINE = 4096
#: Most trailer lines after a chunked body's last chunk.
MAX_TRAILERS = 64


class BodyRefused(TridentSparkError):  # noqa: N818 (an answer, not a failure of ours)
    """The body cannot be taken: answer ``status`` with ``message``.

    ``unread`` is True when bytes of the body may still be on the connection (it cannot serve
    another request: the server answers, then closes it).

    Examples
    --------
    >>> refused = BodyRefused(HTTPStatus.BAD_REQUEST, "bad length")
    >>> int(refused.status), refused.message, refused.unread
    (400, 'bad length', True)
    """

    def __init__(self, status: HTTPStatus, message: str, unread: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.unread = unread


class Reader(Protocol):
    """What :func:`read_body` reads from (the connection's buffered reader)."""

    def read(self, size: int, /) -> bytes: ...

    def readline(self, size: int, /) -> bytes: ...


class Headers(Protocol):
    """What :func:`read_body` needs of a request's headers (``email.message.Message``)."""

    def get_all(self, name: str, failobj: None = None) -> list[str] | None: ...


def declared_length(headers: Headers, limit: int, what: str) -> int | None:
    """The body's ``Content-Length``, or None for a chunked body; 0 with neither header.

    Raises :class:`BodyRefused`: 400 for a length that is not a byte count (or two that
    differ, or a length beside chunked), 501 for a transfer coding other than chunked, 413 for
    a length over ``limit``. Reads nothing: the server asks it before it answers
    ``100 Continue`` too.

    Examples
    --------
    >>> from email.message import Message
    >>> headers = Message(); headers["Content-Length"] = "12"
    >>> declared_length(headers, 100, "the args")
    12
    >>> headers.replace_header("Content-Length", "-1")
    >>> declared_length(headers, 100, "the args")
    Traceback (most recent call last):
    ...
    trident_spark.drpc.http_body.BodyRefused: the args: Content-Length '-1' is not a number of bytes
    """
    codings = [c.strip().lower() for v in headers.get_all("Transfer-Encoding") or [] for c in v.split(",")]
    lengths = [v.strip() for v in headers.get_all("Content-Length") or []]
    if codings:
        if lengths:
            raise BodyRefused(HTTPStatus.BAD_REQUEST,
                              f"{what}: a request has Content-Length or Transfer-Encoding, not both")
        if codings != ["chunked"]:
            raise BodyRefused(HTTPStatus.NOT_IMPLEMENTED,
                              f"{what}: Transfer-Encoding {', '.join(codings)!r} is not supported; send "
                              "the body with a Content-Length, or chunked")
        return None
    if not lengths:
        return 0
    if len(set(lengths)) > 1:
        raise BodyRefused(HTTPStatus.BAD_REQUEST, f"{what}: {len(lengths)} different Content-Length headers")
    text = lengths[0]
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise BodyRefused(HTTPStatus.BAD_REQUEST,
                          f"{what}: Content-Length {text[:40]!r} is not a number of bytes")
    length = int(text)
    if length > limit:
        raise BodyRefused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, over_limit(what, f"{length} bytes", limit))
    return length


def read_body(rfile: Reader, headers: Headers, limit: int, what: str) -> bytes:
    """The request's body, at most ``limit`` bytes (see :func:`declared_length` for refusals).

    A body that ends early (the caller closed the connection) is a 400 too.

    Examples
    --------
    >>> import io
    >>> from email.message import Message
    >>> headers = Message(); headers["Transfer-Encoding"] = "chunked"
    >>> read_body(io.BytesIO(b"3\\r\\ncat\\r\\n4\\r\\n dog\\r\\n0\\r\\n\\r\\n"), headers, 100, "the args")
    b'cat dog'
    """
    length = declared_length(headers, limit, what)
    if length is None:
        return _read_chunked(rfile, limit, what)
    data = rfile.read(length) if length else b""
    if len(data) < length:
        raise BodyRefused(HTTPStatus.BAD_REQUEST,
                          f"{what}: the body ended after {len(data)} of its {length} bytes")
    return data


def decode_utf8(body: bytes, what: str) -> str:
    """``body`` as text; a body that is not UTF-8 is a 400 naming the first bad byte's position.

    Examples
    --------
    >>> decode_utf8(b"caf\\xc3\\xa9", "the args")
    'café'
    >>> decode_utf8(b"caf\\xe9", "args")
    Traceback (most recent call last):
    ...
    trident_spark.drpc.http_body.BodyRefused: args: the body is not UTF-8 (byte 3 of 4); send UTF-8
    """
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyRefused(HTTPStatus.BAD_REQUEST,
                          f"{what}: the body is not UTF-8 (byte {exc.start} of {len(body)}); send UTF-8",
                          unread=False) from None


def over_limit(what: str, size: str, limit: int) -> str:
    """The message of a body over the server's limit (it names the limit and how to change it)."""
    return (f"{what}: {size}, over this DRPC server's limit of {limit} bytes (drpc-server "
            "--max-request-bytes; Storm's drpc.max_buffer_size)")


def _read_chunked(rfile: Reader, limit: int, what: str) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        line = rfile.readline(MAX_CHUNK_LINE + 1)
        if not line.endswith(b"\n"):
            raise BodyRefused(HTTPStatus.BAD_REQUEST,
                              f"{what}: a chunk's size line is missing, cut or too long")
        size_text = line.split(b";", 1)[0].strip()
        try:
            if not size_text or len(size_text) > 16:
                raise ValueError
            size = int(size_text, 16)
        except ValueError:
            raise BodyRefused(HTTPStatus.BAD_REQUEST,
                              f"{what}: chunk size {size_text[:20]!r} is not a hexadecimal number") from None
        if size == 0:
            break
        if total + size > limit:
            raise BodyRefused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                              over_limit(what, f"over {limit} bytes (chunked)", limit))
        data = rfile.read(size)
        if len(data) < size or rfile.read(2) != b"\r\n":
            raise BodyRefused(HTTPStatus.BAD_REQUEST, f"{what}: a chunk ended early or without CRLF")
        parts.append(data)
        total += size
    for _ in range(MAX_TRAILERS):
        trailer = rfile.readline(MAX_CHUNK_LINE + 1)
        if trailer in (b"\r\n", b"\n"):
            return b"".join(parts)
        if not trailer.endswith(b"\n"):
            break
    raise BodyRefused(HTTPStatus.BAD_REQUEST, f"{what}: the chunked body's trailer does not end")


__all__ = ["BodyRefused", "declared_length", "decode_utf8", "over_limit", "read_body"]
