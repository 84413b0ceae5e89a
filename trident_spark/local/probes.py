"""Quick "does it answer?" checks for Kafka, Redis and HTTP services.

Each probe returns ``False`` rather than raising while the service is not
(yet) reachable, and never blocks longer than its ``timeout``.
"""

from __future__ import annotations

import base64
import socket
import struct
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from confluent_kafka import Consumer, KafkaException

__all__ = ["http_answers", "kafka_answers", "postgres_answers", "redis_answers", "tcp_answers"]


def tcp_answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether a TCP connection to ``host:port`` succeeds.

    Examples
    --------
    >>> tcp_answers("127.0.0.1", 1, timeout=0.2)
    False
    """
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _first_broker(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    first = first.split("://", 1)[-1]
    host, _, port = first.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port or 9092)


def kafka_answers(bootstrap: str, timeout: float = 2.0) -> bool:
    """Whether a Kafka broker at ``bootstrap`` answers a metadata request.

    A Consumer (with topic auto-creation off) asks for the metadata: on Tansu
    an AdminClient metadata request for a named topic creates that topic.

    Examples
    --------
    >>> kafka_answers("127.0.0.1:1", timeout=0.2)
    False
    """
    host, port = _first_broker(bootstrap)
    if not tcp_answers(host, port, timeout=min(timeout, 1.0)):
        return False
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "trident-spark-probe",
            "allow.auto.create.topics": False,
            "enable.auto.commit": False,
            # Connection refusals while a broker boots are expected here.
            "log_level": 0,
        }
    )
    try:
        consumer.list_topics(timeout=timeout)
        return True
    except KafkaException:
        return False
    finally:
        consumer.close()


def redis_answers(url: str, timeout: float = 1.0) -> bool:
    """Whether a Redis server at ``url`` answers PING (or asks for AUTH).

    Examples
    --------
    >>> redis_answers("redis://127.0.0.1:1/0", timeout=0.2)
    False
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    if parts.scheme != "redis":
        # TLS or unix sockets: a connection is as far as a bare probe goes.
        return tcp_answers(host, port, timeout)
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            reply = sock.recv(64)
    except OSError:
        return False
    # "-NOAUTH ..." still proves a Redis server is there.
    return reply.startswith((b"+PONG", b"-"))


def http_answers(url: str, timeout: float = 2.0) -> bool:
    """Whether an HTTP server at ``url`` answers ``GET /`` with any status.

    Examples
    --------
    >>> http_answers("http://127.0.0.1:1", timeout=0.2)
    False
    """
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    request = urllib.request.Request(f"{parts.scheme}://{netloc}/")
    if parts.username is not None:
        # urllib does not take credentials from the URL itself.
        token = base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
        return True
    except urllib.error.HTTPError:
        return True  # 401 and friends: a server answered
    except (urllib.error.URLError, OSError, ValueError):
        return False


def postgres_answers(url: str, timeout: float = 1.0) -> bool:
    """Whether a PostgreSQL server at ``url`` accepts a session's start (or asks for a password).

    Sends a protocol 3.0 startup message for the URL's user and database and reads the
    first byte of the answer: ``R`` (an authentication request, "OK" included) means a
    server that takes connections; ``E`` (an error: still starting up, no such
    database) or silence means not (yet). Needs no driver.

    Examples
    --------
    >>> postgres_answers("postgresql://postgres@127.0.0.1:1/postgres", timeout=0.2)
    False
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 5432
    user = parts.username or "postgres"
    database = parts.path.lstrip("/") or user
    body = struct.pack("!i", 196608) + b"".join(
        f"{name}\0{value}\0".encode() for name, value in (("user", user), ("database", database))) + b"\0"
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(struct.pack("!i", len(body) + 4) + body)
            reply = sock.recv(1)
            if reply == b"R":
                sock.sendall(b"X" + struct.pack("!i", 4))   # Terminate
    except OSError:
        return False
    return reply == b"R"
