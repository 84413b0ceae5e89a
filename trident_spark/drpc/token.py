"""The DRPC server's optional shared token: where it comes from, how it travels, how it is checked.

A server started with a token (``trident-spark drpc-server --token-file PATH``, the environment
variable ``TRIDENT_SPARK_DRPC_TOKEN``, ``run(drpc_token=...)``) answers ``401`` to every request
that does not carry it: callers (``/drpc/...``) and the topology's side alike (fetching,
answering, failing requests, heartbeats), since any local process could otherwise take the
requests or forge their answers. Only ``GET /health`` stays open (it tells nothing but that a
DRPC server listens).

The token travels as ``Authorization: Bearer <token>`` (``X-DRPC-Token: <token>`` is read
too) and is compared in constant time (:func:`hmac.compare_digest`). It never appears in a
message, a log line, a ``repr`` or progress: messages say "missing" or "wrong", never what was
sent. A token is printable ASCII without spaces (it must fit in a header).
"""

from __future__ import annotations

import hmac
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from trident_spark.errors import InvalidArgumentError

#: The environment variable a token is read from when none is given.
TOKEN_ENV = "TRIDENT_SPARK_DRPC_TOKEN"
#: The second header a token may come in (the first is ``Authorization: Bearer``).
TOKEN_HEADER = "X-DRPC-Token"


def check_token(token: object, where: str) -> str:
    """``token`` if it can be a DRPC token (a non-empty string of printable ASCII, no spaces);
    else :class:`InvalidArgumentError` naming ``where`` and never showing the token.

    Examples
    --------
    >>> check_token("s3cr3t-t0ken", "DRPCClient(token=...)")
    's3cr3t-t0ken'
    >>> check_token("two words", "DRPCClient(token=...)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.InvalidArgumentError: DRPCClient(token=...): a DRPC token is ...
    """
    if not isinstance(token, str) or not token:
        raise InvalidArgumentError(f"{where}: a DRPC token is a non-empty string")
    if not all(33 <= ord(c) < 127 for c in token):
        raise InvalidArgumentError(
            f"{where}: a DRPC token is printable ASCII without spaces (it travels in an HTTP header); "
            "the one given is not (not shown)"
        )
    return token


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The token in the file at ``path`` (surrounding whitespace and the final newline dropped).

    The file must belong to this user and be readable by it alone (``chmod 600``), as ssh asks
    of a private key: a token others can read protects nothing.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", delete=False) as out:
    ...     _ = out.write("s3cr3t\\n")
    >>> read_token_file(out.name)
    's3cr3t'
    """
    where = f"DRPC token file {os.fspath(path)}"
    try:
        with open(path, "rb") as source:
            info = os.fstat(source.fileno())
            data = source.read(65_537)
    except OSError as exc:
        raise InvalidArgumentError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    if info.st_uid != os.geteuid():
        raise InvalidArgumentError(
            f"{where}: belongs to uid {info.st_uid}, not to this user; use a file of yours"
        )
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InvalidArgumentError(
            f"{where}: others may read it (mode {stat.S_IMODE(info.st_mode):04o}); "
            f"make it private: chmod 600 {Path(path)}"
        )
    if len(data) > 65_536:
        raise InvalidArgumentError(f"{where}: holds more than 64 KiB; a token is one short line")
    try:
        text = data.decode("ascii").strip()
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"{where}: a DRPC token is printable ASCII (not shown)") from None
    if not text:
        raise InvalidArgumentError(f"{where}: is empty; put the token in it")
    return check_token(text, where)


def token_from_env() -> str | None:
    """The token in ``TRIDENT_SPARK_DRPC_TOKEN``, or None when it is unset or empty.

    Examples
    --------
    >>> os.environ.pop(TOKEN_ENV, None) and None
    >>> token_from_env() is None
    True
    """
    value = os.environ.get(TOKEN_ENV, "").strip()
    return check_token(value, f"${TOKEN_ENV}") if value else None


def auth_headers(token: str | None) -> dict[str, str]:
    """The header that carries ``token`` (none without a token).

    Examples
    --------
    >>> auth_headers("abc"), auth_headers(None)
    ({'Authorization': 'Bearer abc'}, {})
    """
    return {"Authorization": f"Bearer {token}"} if token else {}


def presented_token(headers: Mapping[str, str] | object) -> str | None:
    """The token a request carries (``Authorization: Bearer`` or ``X-DRPC-Token``), or None.

    Examples
    --------
    >>> presented_token({"Authorization": "Bearer abc"}), presented_token({"X-DRPC-Token": "xyz"})
    ('abc', 'xyz')
    """
    get = getattr(headers, "get", None)
    if get is None:
        return None
    authorization = get("Authorization") or ""
    scheme, _, value = str(authorization).strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    other = get(TOKEN_HEADER)
    return str(other).strip() if other else None


def token_matches(expected: str, presented: str | None) -> bool:
    """Whether ``presented`` is ``expected``, compared in constant time.

    Examples
    --------
    >>> token_matches("abc", "abc"), token_matches("abc", "abd"), token_matches("abc", None)
    (True, False, False)
    """
    if presented is None:
        return False
    return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), expected.encode("utf-8"))


__all__ = [
    "TOKEN_ENV",
    "TOKEN_HEADER",
    "auth_headers",
    "check_token",
    "presented_token",
    "read_token_file",
    "token_from_env",
    "token_matches",
]
