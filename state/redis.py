"""RedisState: map state in Redis, one string key per group, written by a Lua compare-and-set script.

Layout: key ``<key_prefix>:<encoded key>`` (``keys.py``; ``wc:cat``, ``wc:us|~i2024``,
``wc:~global`` for ungrouped state) holding the value in Storm's Redis state JSON
(``serializers.py``): ``[txid, curr, prev]`` (opaque), ``[txid, val]``
(transactional) or ``val`` (non-transactional), the values Storm's
``RedisMapState`` writes. (Storm's default key factory names a key by its one
group value alone; here every key carries the prefix, so one Redis holds many
states and compound keys.)

Versions and the compare-and-set
--------------------------------
Redis keeps no version next to a string, and the value must stay Storm's plain
JSON, so the version of a key is its stored bytes themselves: a token
``b"=" + bytes`` for values of at most 40 bytes (counts and other small
values: comparing them is cheaper than hashing), ``b"#" + sha1hex(bytes)`` for
longer ones (so the cache and the script arguments stay small).

* ``multiGetVersioned``: one ``MGET`` per batch; tokens come from the bytes read.
* ``scanVersioned`` (every key, for ``getTuples``): ``SCAN MATCH <key_prefix>:*``
  in pages of about ``max_multi_get_batch_size`` names, one ``MGET`` per page.
* ``multiPutIfVersion``: ONE script call per batch (``EVALSHA``, falling back to
  ``EVAL`` when the server answers ``NOSCRIPT``, which also caches the script).
  For each key the script compares what is stored with the expected token
  (``GET`` then byte equality, or ``redis.sha1hex``; an empty token means "must
  not exist") and ``SET``s the new bytes only on a match (``PX`` expiry when
  ``expiry_s`` is set), answering 1 (won) or 0 (lost) per key. The script runs
  atomically, so no other client writes between a key's compare and its set.

Comparing contents instead of a counter allows ABA (a key changed and changed
back compares equal), which is harmless here: the map rules compute a key's new
value only from the stored value, so a write conditional on "the stored bytes
are still these" is exactly as safe as one conditional on "nobody wrote since".
(A SHA-1 collision between two states of one key is not a practical concern.)

Expiry: with ``expiry_s`` every write sets ``PX``, so keys not updated for that
long disappear (Storm's ``expireIntervalSec``); a transactional or opaque key
that expired is a new key to the rules (its count restarts).

Redis Cluster
-------------
Without ``cluster=True``: one connection to one Redis server (``redis.Redis``),
one ``MGET`` and one script call per batch. Redis Cluster refuses both when a
batch's keys lie in different hash slots (``CROSSSLOT``); errors that mention
``MOVED`` or ``CROSSSLOT`` say to set ``cluster=True``.

With ``cluster=True`` (``?cluster=true`` in a state URL) the keys spread over
every primary by hash slot (``redis_slots.py``; no hash tag needed, and a hash
tag prefix still works: it puts the state in one slot). Each batch's keys are
grouped by slot: one ``MGET`` and one compare-and-set script call (the same
script as above) per slot, the calls of one primary sent in one pipeline, and
``MOVED``/``ASK``/``TRYAGAIN`` followed (``redis_cluster.py``), so a cluster
resharded mid-run keeps serving. ``url`` names any node (the slot table is read
from it); the database must be 0. A scan covers every primary.

Exactly once across slots: one script per slot means a batch's writes are no
longer one atomic call, but they never were one across calls (a batch is
split by ``max_multi_put_batch_size`` on one server too) and nothing relies on
it: each key's compare-and-set is atomic, transactional and opaque values carry
their txid so a batch written again after a partial failure changes nothing
(transactional) or recomputes from ``prev`` (opaque), and the commit record
(``<prefix>:~commit``, one more slot group) is moved by the driver only after
every write of the batch returned.

Replicas and failover
---------------------
Redis replication is asynchronous: a replica that takes over after its primary
died may lack the last writes the primary acknowledged. With ``wait_replicas=N``
(``?wait_replicas=N&wait_timeout=S`` in a state URL) every write call (the
compare-and-set script, on one server or per cluster node, and so the commit
record too) is followed in the same pipeline by ``WAIT N timeout``; a write
fewer than N replicas acknowledged raises
:class:`~.redis_wait.ReplicasNotAcknowledgedError` (a
:class:`~.errors.StateUnavailableError`: the batch is retried within the outage
budget). So no write of a batch the state reported done is on its primary
alone. Default 0: no WAIT, as Redis itself does (see ``redis_wait.py``).

Connections are opened lazily, on the first read or write, in the process that
uses the state (the factory itself holds only settings and pickles to Spark
executors). An unreachable server fails within about ``2 * connect_timeout``
seconds (a server that accepts but never answers: ``socket_timeout``) with
:class:`~.errors.StateUnavailableError` naming the address. AUTH and
TLS come from the URL: ``redis://:PASSWORD@host:6379/0``,
``redis://USER:PASSWORD@host:6379/0`` (ACL), ``rediss://...`` (TLS, with
``ca_certs=`` / ``verify_certs=``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import Key, Version, Versioned, VersionedBackingMap, check_scan_batch_size
from .errors import StateConfigError, StateError, StateUnavailableError, WrongTypeError
from .extras import require_extra
from .factory import StoreStateFactory
from .keys import decode_scanned_key, encode_key, encode_keys, is_reserved
from .redis_cluster import ClusterClient, RedirectCounts, SlotCall
from .redis_slots import group_by_slot, key_slot
from .redis_wait import DEFAULT_WAIT_TIMEOUT, ReplicaWait, check_wait_settings
from .serializers import Serializer, deserialize_stored, serialize_stored
from .url import Scheme, redact, register_scheme

if TYPE_CHECKING:
    from typing import Self, Unpack

    import redis as redis_py

    from .factory import StoreSettings

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "trident"

#: Values up to this many bytes are their own version token; longer ones are hashed.
INLINE_VERSION_BYTES = 40

_SCHEMES = ("redis", "rediss", "unix")
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")
_RETRIES = 1

#: The compare-and-set script: KEYS are the state's keys; ARGV[1] the expiry in
#: milliseconds ('' for none); ARGV[2i] key i's expected token ('' = must not exist,
#: '=' .. bytes, '#' .. sha1hex of the bytes) and ARGV[2i+1] its new bytes.
#: Answers 1 (written) or 0 (lost) per key.
CAS_SCRIPT = """
local px = ARGV[1]
local won = {}
for i = 1, #KEYS do
  local expected = ARGV[2 * i]
  local current = redis.call('GET', KEYS[i])
  local ok
  if expected == '' then
    ok = not current
  elseif not current then
    ok = false
  elseif string.byte(expected, 1) == 61 then
    ok = (#current + 1 == #expected) and (current == string.sub(expected, 2))
  else
    ok = redis.sha1hex(current) == string.sub(expected, 2)
  end
  if ok then
    if px == '' then
      redis.call('SET', KEYS[i], ARGV[2 * i + 1])
    else
      redis.call('SET', KEYS[i], ARGV[2 * i + 1], 'PX', px)
    end
    won[i] = 1
  else
    won[i] = 0
  end
end
return won
"""

CAS_SCRIPT_SHA = hashlib.sha1(CAS_SCRIPT.encode("utf-8"), usedforsecurity=False).hexdigest()


def version_token(data: bytes) -> bytes:
    """The version of a stored value: its bytes (short values) or their SHA-1 (long ones).

    Examples
    --------
    >>> version_token(b"[3,12,10]")
    b'=[3,12,10]'
    >>> long = version_token(b"x" * 41)
    >>> long[:1], len(long)
    (b'#', 41)
    """
    if len(data) <= INLINE_VERSION_BYTES:
        return b"=" + data
    return b"#" + hashlib.sha1(data, usedforsecurity=False).hexdigest().encode("ascii")


def redis_key(key_prefix: str, key: Key) -> str:
    """The Redis key of a state key: ``<key_prefix>:<encoded key>``.

    Examples
    --------
    >>> redis_key("wc", ["cat"]), redis_key("wc", ["us", 2024]), redis_key("{wc}", ())
    ('wc:cat', 'wc:us|~i2024', '{wc}:~global')
    """
    return f"{key_prefix}:{encode_key(key)}"


def scan_pattern(key_prefix: str) -> str:
    """The ``SCAN MATCH`` pattern of every key of a state: the prefix (glob characters escaped) + ``:*``.

    Examples
    --------
    >>> scan_pattern("wc"), scan_pattern("{wc}")
    ('wc:*', '{wc}:*')
    >>> print(scan_pattern("w*[c]"))
    w\\*\\[c\\]:*
    """
    return _GLOB_SPECIAL.sub(r"\\\1", key_prefix) + ":*"


def _check_url(url: Any) -> urllib.parse.SplitResult:
    if not isinstance(url, str) or "://" not in url:
        raise StateConfigError(f"RedisState needs a Redis URL such as {DEFAULT_URL}, got {url!r}")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 (validates the port)
    except ValueError as exc:
        raise StateConfigError(f"Redis URL {redact(url)} cannot be parsed: {exc}") from None
    if parts.scheme.lower() not in _SCHEMES:
        raise StateConfigError(f"Redis URL {redact(url)} must start with redis://, rediss:// (TLS) "
                               f"or unix://")
    if parts.scheme.lower() != "unix" and not parts.hostname:
        raise StateConfigError(f"Redis URL {redact(url)} needs a host: redis://HOST:PORT/DB")
    return parts


def _positive_number(name: str, value: Any, *, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise StateConfigError(f"{name} must be a number of seconds > 0{' or None' if allow_none else ''}, "
                               f"got {value!r}")


class RedisBackingMap(VersionedBackingMap):
    """The versioned backing map over Redis strings under one key prefix. Connects on first use.

    Parameters
    ----------
    spec : RedisState
        The settings (URL, prefix, expiry, timeouts, TLS).
    serializer : Serializer
        Turns values into the stored bytes and back.

    Examples
    --------
    >>> backing = RedisState.opaque(url="redis://127.0.0.1:6379/0", key_prefix="wc").open_backing_map()
    >>> backing.address, backing.redis_key(["cat"])
    ('redis://127.0.0.1:6379/0?prefix=wc', 'wc:cat')
    """

    def __init__(self, spec: RedisState, serializer: Serializer) -> None:
        self.spec = spec
        self.serializer = serializer
        self._px = b"" if spec.expiry_s is None else str(max(1, round(spec.expiry_s * 1000))).encode()
        self._client: redis_py.Redis | None = None
        self._cluster: ClusterClient | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._wait = None if not spec.wait_replicas else ReplicaWait(self.address, spec.wait_replicas,
                                                                     spec.wait_timeout)

    @property
    def address(self) -> str:
        cluster = "&cluster=true" if self.spec.cluster else ""
        return f"{redact(self.spec.redis_url)}?prefix={self.spec.key_prefix}{cluster}"

    @property
    def node(self) -> str:
        """The server as WAIT errors name it: ``host:port`` (or the socket path), never credentials."""
        parts = urllib.parse.urlsplit(self.spec.redis_url)
        if parts.scheme.lower() == "unix":
            return parts.path
        return f"{parts.hostname}:{parts.port or 6379}"

    @property
    def redirects(self) -> RedirectCounts | None:
        """With ``cluster=True``: how often calls were redirected (MOVED, ASK, ...) so far; else None."""
        return None if self._cluster is None else self._cluster.redirects

    def redis_key(self, key: Key) -> str:
        """The Redis key of a state key."""
        return redis_key(self.spec.key_prefix, key)

    # -- the connection ---------------------------------------------------------------------

    def _redis(self) -> redis_py.Redis:
        if self._closed:
            raise StateError(f"{self.address}: the state was closed; open it again")
        with self._lock:
            if self._client is None:
                self._client = self._connect()
            return self._client

    def _cluster_client(self) -> ClusterClient:
        if self._closed:
            raise StateError(f"{self.address}: the state was closed; open it again")
        with self._lock:
            if self._cluster is None:
                parts = urllib.parse.urlsplit(self.spec.redis_url)
                userinfo = parts.netloc.rpartition("@")[0]

                def connect(host: str, port: int) -> redis_py.Redis:
                    netloc = f"{userinfo}@{host}:{port}" if userinfo else f"{host}:{port}"
                    return self._connect(urllib.parse.urlunsplit(parts._replace(netloc=netloc)))

                self._cluster = ClusterClient((parts.hostname or "127.0.0.1", parts.port or 6379), connect,
                                              self._redis_module("redis.exceptions"),
                                              {CAS_SCRIPT_SHA: CAS_SCRIPT})
            return self._cluster

    def _on_cluster(self, doing: str, calls: list[SlotCall], *, writes: bool = False) -> list[Any]:
        errors = self._redis_module("redis.exceptions")
        client = self._cluster_client()
        try:
            return client.execute(calls, wait=self._wait if writes else None)
        except (errors.RedisError, OSError) as exc:
            raise self._failed(exc, doing) from exc

    def _connect(self, url: str | None = None) -> redis_py.Redis:
        redis_module = self._redis_module("redis")
        ExponentialBackoff = self._redis_module("redis.backoff").ExponentialBackoff  # noqa: N806
        Retry = self._redis_module("redis.retry").Retry  # noqa: N806
        spec = self.spec
        options: dict[str, Any] = {
            "socket_connect_timeout": spec.connect_timeout,
            "socket_timeout": spec.socket_timeout,
            # One retry of a failed connection (refused, reset); a timeout is not retried so
            # that a server that accepts but never answers fails after one socket_timeout.
            "retry": Retry(ExponentialBackoff(cap=0.5, base=0.05), _RETRIES,
                           supported_errors=(redis_module.ConnectionError,)),
            "decode_responses": False,
        }
        if urllib.parse.urlsplit(spec.redis_url).scheme.lower() == "rediss":
            options["ssl_cert_reqs"] = "required" if spec.verify_certs else "none"
            if spec.ca_certs is not None:
                options["ssl_ca_certs"] = spec.ca_certs
            if not spec.verify_certs:
                options["ssl_check_hostname"] = False
        try:
            client: redis_py.Redis = redis_module.Redis.from_url(url or spec.redis_url, **options)
            return client
        except ValueError as exc:
            raise StateConfigError(f"Redis URL {redact(spec.redis_url)}: {exc}") from None

    def _redis_module(self, name: str) -> Any:
        """redis-py's module ``name``, or the error naming the extra that installs it."""
        return require_extra(name, f"the Redis state at {self.address}")

    def _failed(self, exc: Exception, doing: str) -> StateError:
        """The state error for a redis-py exception raised while ``doing`` something."""
        errors = self._redis_module("redis.exceptions")

        message = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, errors.AuthenticationError | errors.AuthorizationError) or \
                any(code in str(exc) for code in ("NOAUTH", "WRONGPASS", "NOPERM")):
            return StateUnavailableError(
                self.address, f"{message} ({doing}); give the password (and ACL user) in the URL: "
                              f"redis://USER:PASSWORD@host:port/db, and check the user may run "
                              f"GET, SET, MGET, DEL, EVAL and EVALSHA")
        if isinstance(exc, errors.ConnectionError | errors.TimeoutError | OSError):
            hint = ("check that Redis runs there and is reachable from this machine; with TLS use "
                    "rediss:// and ca_certs=")
            if self.spec.cluster:
                hint = ("check that every node of the Redis Cluster runs and is reachable from this machine "
                        "(the node named above); with TLS use rediss:// and ca_certs=")
            return StateUnavailableError(self.address, f"{message} ({doing}); {hint}")
        text = str(exc)
        if self.spec.cluster and (isinstance(exc, errors.ClusterDownError | errors.TryAgainError)
                                  or text.startswith(("CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN"))):
            # Slots uncovered (a primary failed and its replica is not promoted yet) or a migration
            # that did not settle: an outage of the cluster, waited out like an unreachable node.
            return StateUnavailableError(
                self.address, f"{message} ({doing}); the cluster does not serve every slot yet (a primary "
                f"is down and no replica has taken over): check CLUSTER INFO on any node; a batch waits "
                f"for a failover within the run's outage budget")
        if not self.spec.cluster and (isinstance(exc, errors.ClusterCrossSlotError) or "MOVED" in text
                                      or "CROSSSLOT" in text or "ASK " in text):
            return StateError(
                f"{self.address}: {message} ({doing}); this is a Redis Cluster: open the state with "
                f"cluster=True (or ?cluster=true in its URL) to spread its keys over the cluster's slots "
                f"(see the trident_spark.state.redis docs)")
        if "WRONGTYPE" in text:
            return StateError(
                f"{self.address}: {message} ({doing}); a key under prefix {self.spec.key_prefix!r} holds "
                f"another Redis type: the prefix collides with other data, choose another key_prefix")
        return StateError(f"{self.address}: {message} ({doing})")

    def _call(self, doing: str, command: Callable[[redis_py.Redis], Any]) -> Any:
        errors = self._redis_module("redis.exceptions")
        client = self._redis()
        try:
            return command(client)
        except (errors.RedisError, OSError) as exc:
            raise self._failed(exc, doing) from exc

    # -- reads and writes -------------------------------------------------------------------

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        return self.multiGetEncoded(keys, encode_keys(keys))

    def multiGetEncoded(self, keys: Sequence[Key], encoded: Sequence[str]) -> list[Versioned | None]:
        if not keys:
            return []
        prefix = self.spec.key_prefix + ":"
        data = zip(keys, self._mget([prefix + enc for enc in encoded]), strict=True)
        address = self.address
        return [None if raw is None else self._versioned(key, raw, address) for key, raw in data]

    def _versioned(self, key: Key, raw: bytes, address: str | None = None) -> Versioned:
        value = deserialize_stored(self.serializer, raw, key=key, address=address or self.address)
        return Versioned(value, version_token(raw))

    def scanVersioned(self, batch_size: int | None = None) -> Iterator[tuple[Key, Versioned]]:
        """Every key under the prefix: ``SCAN MATCH <prefix>:* COUNT batch_size``, one ``MGET`` per page.

        ``SCAN`` may return a name twice (when Redis rehashes meanwhile); each
        key is yielded once (the names seen are remembered). A name that
        expired or was deleted between the ``SCAN`` and the ``MGET``, or holds
        another Redis type, is left out. Keys of other prefixes do not match,
        except a prefix that extends this one after a colon: ``wc:x:cat`` is
        both key ``["x:cat"]`` of prefix ``wc`` and key ``["cat"]`` of prefix
        ``wc:x`` (the layout cannot tell them apart, so never nest prefixes
        that way). On Redis Cluster the scan covers the node of the URL, which
        holds the whole state when its prefix is a hash tag (see the module doc).
        """
        return self._scan(check_scan_batch_size(batch_size))

    def _scan(self, size: int) -> Iterator[tuple[Key, Versioned]]:
        pattern = scan_pattern(self.spec.key_prefix)
        skip = len(self.spec.key_prefix) + 1
        seen: set[bytes] = set()
        nodes: list[tuple[str, int] | None] = [None]
        if self.spec.cluster:
            nodes = list(self._on_cluster_topology())
        for node in nodes:
            cursor: int = 0
            while True:
                cursor, found = self._scan_page(node, cursor, pattern, size)
                names = [name for name in dict.fromkeys(found) if name not in seen]
                seen.update(names)
                for start in range(0, len(names), size):
                    part = names[start:start + size]
                    data = self._mget(part)
                    for name, raw in zip(part, data, strict=True):
                        encoded = name.decode("utf-8", errors="replace")[skip:]
                        if raw is None or is_reserved(encoded):
                            continue
                        key = decode_scanned_key(encoded, self.address)
                        yield key, self._versioned(key, raw)
                if int(cursor) == 0:
                    break

    def _on_cluster_topology(self) -> list[tuple[str, int]]:
        errors = self._redis_module("redis.exceptions")
        try:
            return self._cluster_client().primaries()
        except (errors.RedisError, OSError) as exc:
            raise self._failed(exc, "CLUSTER SLOTS") from exc

    def _scan_page(self, node: tuple[str, int] | None, cursor: int, pattern: str,
                   size: int) -> tuple[int, list[bytes]]:
        doing = f"SCAN MATCH {pattern}" + ("" if node is None else f" on {node[0]}:{node[1]}")
        if node is not None:
            cluster = self._cluster_client()
            errors = self._redis_module("redis.exceptions")
            try:
                scanned: tuple[int, list[bytes]] = cluster.node(node).scan(cursor=cursor, match=pattern,
                                                                           count=size)
            except (errors.RedisError, OSError) as exc:
                raise self._failed(exc, doing) from exc
            return scanned
        found: tuple[int, list[bytes]] = self._call(
            doing, lambda client: client.scan(cursor=cursor, match=pattern, count=size))
        return found

    def _mget(self, names: Sequence[bytes | str]) -> list[bytes | None]:
        if self.spec.cluster:
            groups = group_by_slot(names)
            answers = self._on_cluster(f"MGET of {len(names)} keys in {len(groups)} slots", [
                SlotCall(slot, ("MGET", *(names[i] for i in positions)))
                for slot, positions in groups.items()])
            found: list[bytes | None] = [None] * len(names)
            for positions, answer in zip(groups.values(), answers, strict=True):
                for position, raw in zip(positions, answer, strict=True):
                    found[position] = raw
            return found
        data: list[bytes | None] = self._call(f"MGET of {len(names)} keys", lambda client: client.mget(names))
        return data

    def _expected(self, version: Version | None) -> bytes:
        if version is None:
            return b""
        if not isinstance(version, bytes) or version[:1] not in (b"=", b"#"):
            raise StateError(f"{self.address}: {version!r} is not a version this store gave out")
        return version

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        return self.multiPutEncoded(keys, encode_keys(keys), values, expected_versions)

    def multiPutEncoded(self, keys: Sequence[Key], encoded: Sequence[str], values: Sequence[Any],
                        expected_versions: Sequence[Version | None]) -> list[Version | None]:
        if not len(keys) == len(encoded) == len(values) == len(expected_versions):
            raise StateError(f"{self.address}: multiPutIfVersion needs as many values and versions as keys")
        if not keys:
            return []
        prefix = self.spec.key_prefix + ":"
        names = [prefix + enc for enc in encoded]
        serializer, address = self.serializer, self.address
        data = [serialize_stored(serializer, value, key=key, address=address)
                for key, value in zip(keys, values, strict=True)]
        args: list[bytes] = [self._px]
        for expected, blob in zip(expected_versions, data, strict=True):
            args.append(self._expected(expected))
            args.append(blob)
        won = self._eval(names, args)
        if len(won) != len(keys):
            raise StateError(f"{self.address}: the compare-and-set script answered {len(won)} results "
                             f"for {len(keys)} keys")
        return [version_token(blob) if int(flag) == 1 else None for flag, blob in zip(won, data, strict=True)]

    def _eval(self, names: list[str], args: list[bytes]) -> list[Any]:
        if self.spec.cluster:
            return self._eval_by_slot(names, args)
        errors = self._redis_module("redis.exceptions")
        doing = f"compare-and-set script on {len(names)} keys"
        client = self._redis()
        if self._wait is not None:
            return list(self._eval_and_wait(client, doing, names, args, self._wait))
        try:
            try:
                result = client.evalsha(CAS_SCRIPT_SHA, len(names), *names, *args)
            except errors.NoScriptError:
                # The server does not have the script cached (restarted, SCRIPT FLUSH, new
                # replica): EVAL runs it and caches it for the next EVALSHA.
                result = client.eval(CAS_SCRIPT, len(names), *names, *args)
        except (errors.RedisError, OSError) as exc:
            raise self._failed(exc, doing) from exc
        return list(result)

    def _eval_and_wait(self, client: redis_py.Redis, doing: str, names: list[str], args: list[bytes],
                       wait: ReplicaWait) -> Any:
        """The script and ``WAIT`` in one pipeline (one round trip); EVAL and WAIT again on NOSCRIPT."""
        errors = self._redis_module("redis.exceptions")
        try:
            for command in ("EVALSHA", "EVAL"):
                pipe = client.pipeline(transaction=False)
                script = CAS_SCRIPT_SHA if command == "EVALSHA" else CAS_SCRIPT
                pipe.execute_command(command, script, len(names), *names, *args)  # type: ignore[no-untyped-call]
                pipe.execute_command(*wait.command())  # type: ignore[no-untyped-call]
                result, waited = pipe.execute(raise_on_error=False)
                if command == "EVALSHA" and isinstance(result, errors.NoScriptError):
                    continue
                for answer in (result, waited):
                    if isinstance(answer, BaseException):
                        raise answer
                wait.check(self.node, waited)
                return result
        except (errors.RedisError, OSError) as exc:
            raise self._failed(exc, doing) from exc
        raise StateError(f"{self.address}: the server answered NOSCRIPT to EVAL ({doing})")

    def _eval_by_slot(self, names: list[str], args: list[bytes]) -> list[Any]:
        """The script once per slot group (``args`` as for one call: expiry, then token and bytes per key)."""
        groups = group_by_slot(names)
        calls = []
        for slot, positions in groups.items():
            group_args: list[bytes] = [args[0]]
            for position in positions:
                group_args.extend((args[1 + 2 * position], args[2 + 2 * position]))
            calls.append(SlotCall(slot, ("EVALSHA", CAS_SCRIPT_SHA, len(positions),
                                         *(names[i] for i in positions), *group_args)))
        doing = f"compare-and-set script on {len(names)} keys in {len(groups)} slots"
        answers = self._on_cluster(doing, calls, writes=True)
        won: list[Any] = [0] * len(names)
        for positions, answer in zip(groups.values(), answers, strict=True):
            if len(answer) != len(positions):
                raise StateError(f"{self.address}: the compare-and-set script answered {len(answer)} results "
                                 f"for {len(positions)} keys")
            for position, flag in zip(positions, answer, strict=True):
                won[position] = flag
        return won

    def _single_key(self, doing: str, name: str, *args: Any) -> Any:
        """One command on one key: on the cluster node of its slot, else on the server."""
        if self.spec.cluster:
            return self._on_cluster(doing, [SlotCall(key_slot(name), args)])[0]
        return self._call(doing, lambda client: client.execute_command(*args))  # type: ignore[no-untyped-call]

    def multiRemove(self, keys: Sequence[Key]) -> None:
        if keys and self.spec.cluster:
            names = [self.redis_key(key) for key in keys]
            groups = group_by_slot(names)
            self._on_cluster(f"DEL of {len(keys)} keys in {len(groups)} slots", [
                SlotCall(slot, ("DEL", *(names[i] for i in positions)))
                for slot, positions in groups.items()], writes=True)
        elif keys:
            names = [self.redis_key(key) for key in keys]
            wait = self._wait
            if wait is None:
                self._call(f"DEL of {len(keys)} keys", lambda client: client.delete(*names))
                return

            def delete_and_wait(client: redis_py.Redis) -> None:
                pipe = client.pipeline(transaction=False)
                pipe.delete(*names)
                pipe.execute_command(*wait.command())  # type: ignore[no-untyped-call]
                _, waited = pipe.execute()
                wait.check(self.node, waited)

            self._call(f"DEL of {len(keys)} keys", delete_and_wait)

    def ttl_ms(self, key: Key) -> int:
        """Milliseconds until ``key`` expires: -1 without expiry, -2 if missing (for tests and tools)."""
        name = self.redis_key(key)
        return int(self._single_key("PTTL", name, "PTTL", name))

    def raw_get(self, key: Key) -> bytes | None:
        """The stored bytes of ``key`` as they are in Redis (for tests and debugging)."""
        name = self.redis_key(key)
        raw: bytes | None = self._single_key("GET", name, "GET", name)
        return raw

    def raw_put(self, key: Key, data: bytes) -> None:
        """Store ``data`` under ``key`` as is, bypassing serializers (for tests: corrupt values)."""
        name = self.redis_key(key)
        self._single_key("SET", name, "SET", name, bytes(data))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            client, self._client = self._client, None
            cluster, self._cluster = self._cluster, None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


@dataclass(frozen=True, kw_only=True, init=False)
class RedisState(StoreStateFactory):
    """Settings of a state in Redis: one string key per group, Storm's JSON values.

    Parameters
    ----------
    url : str, default "redis://127.0.0.1:6379/0"
        The server: ``redis://[[USER]:PASSWORD@]HOST:PORT/DB``, ``rediss://...``
        for TLS, or ``unix:///path/redis.sock?db=0``. Kept as ``redis_url``:
        ``.url`` is, as for every state factory, the state's ``open_state`` URL.
    key_prefix : str, default "trident"
        Keys are ``<key_prefix>:<encoded key>``; one prefix per state. For Redis
        Cluster, ``cluster=True`` spreads them by slot; a hash tag, ``"{wc}"``, keeps them in one slot.
    expiry_s : float, optional
        Every write sets the key to expire after this many seconds (``PX``);
        None: keys never expire.
    connect_timeout : float, default 3.0
        Seconds to wait for a TCP connection; an unreachable server fails after
        about twice this (one retry).
    socket_timeout : float or None, default 10.0
        Seconds to wait for an answer (a server that accepts connections but
        never answers fails after this long).
    ca_certs : str, optional
        CA bundle that signed the server's certificate (``rediss://`` only).
    verify_certs : bool, default True
        Check the server's certificate and host name (``rediss://`` only).
    cluster : bool, default False
        The URL names a node of a Redis Cluster: spread the keys over every
        primary by hash slot, one ``MGET`` and one script call per slot per
        batch, redirects followed (see the module doc). The database must be 0.
    wait_replicas : int, default 0
        Replicas that must acknowledge each write call (``WAIT``, sent in the
        same pipeline as the writes) before it counts as done; fewer within
        ``wait_timeout`` raise a retryable :class:`~.errors.StateUnavailableError`.
        0: do not wait (Redis's own default: a failover may lose the last writes).
    wait_timeout : float, default 1.0
        Seconds ``WAIT`` waits for the replicas; less than ``socket_timeout``.
    **settings
        ``cache_size``, ``max_multi_get_batch_size``, ``max_multi_put_batch_size``,
        ``txid_offset``, ``max_conflict_retries``, ``serializer``: see
        :class:`~.factory.StoreStateFactory`.

    Notes
    -----
    ``.url`` carries the password, if any, so that it opens the same state; the
    address in messages, ``repr`` and errors never show it.

    Examples
    --------
    >>> spec = RedisState.opaque(url="redis://127.0.0.1:6379/0", key_prefix="wc", expiry_s=3600)
    >>> spec.redis_url
    'redis://127.0.0.1:6379/0'
    >>> spec.url
    'redis://127.0.0.1:6379/0?prefix=wc&expiry=3600&type=opaque'
    >>> RedisState.transactional(url="redis://:s3cret@cache:6379/1", key_prefix="wc")
    RedisState(state_type='transactional', redis_url='redis://:***@cache:6379/1', key_prefix='wc', ...)
    """

    if TYPE_CHECKING:  # the kinds' keywords for type checkers; at run time, StoreStateFactory's
        @classmethod
        def opaque(cls, *, url: str = ..., redis_url: str = ...,  # type: ignore[override]
                   key_prefix: str = ...,
                   expiry_s: float | None = ..., connect_timeout: float = ...,
                   socket_timeout: float | None = ..., ca_certs: str | None = ...,
                   verify_certs: bool = ..., cluster: bool = ...,
                   wait_replicas: int = ..., wait_timeout: float = ...,
                   **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def transactional(cls, *, url: str = ..., redis_url: str = ...,  # type: ignore[override]
                          key_prefix: str = ...,
                          expiry_s: float | None = ..., connect_timeout: float = ...,
                          socket_timeout: float | None = ..., ca_certs: str | None = ...,
                          verify_certs: bool = ..., cluster: bool = ...,
                          wait_replicas: int = ..., wait_timeout: float = ...,
                          **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def nonTransactional(cls, *, url: str = ..., redis_url: str = ...,  # type: ignore[override]
                             key_prefix: str = ...,
                             expiry_s: float | None = ..., connect_timeout: float = ...,
                             socket_timeout: float | None = ...,
                             ca_certs: str | None = ..., verify_certs: bool = ..., cluster: bool = ...,
                             wait_replicas: int = ..., wait_timeout: float = ...,
                             **settings: Unpack[StoreSettings]) -> Self: ...

    redis_url: str = DEFAULT_URL
    key_prefix: str = DEFAULT_PREFIX
    expiry_s: float | None = None
    connect_timeout: float = 3.0
    socket_timeout: float | None = 10.0
    ca_certs: str | None = None
    verify_certs: bool = True
    cluster: bool = False
    wait_replicas: int = 0
    wait_timeout: float = DEFAULT_WAIT_TIMEOUT

    def __init__(self, *, url: str | None = None, **settings: Any) -> None:
        # A hand-written __init__ so that the server URL is given as ``url=`` (the public
        # API) while ``.url`` stays every factory's open_state URL; ``redis_url=`` is
        # accepted too (dataclasses.replace passes fields by name; ``url`` wins).
        if url is not None:
            settings["redis_url"] = url
        for field in dataclasses.fields(self):
            if field.name in settings:
                value = settings.pop(field.name)
            elif field.default is not dataclasses.MISSING:
                value = field.default
            else:
                raise WrongTypeError(f"{type(self).__name__}() missing keyword argument {field.name!r}")
            object.__setattr__(self, field.name, value)
        if settings:
            raise WrongTypeError(
                f"{type(self).__name__}() got unexpected keyword argument"
                f"{'s' if len(settings) > 1 else ''} {', '.join(map(repr, sorted(settings)))}")
        self.__post_init__()

    def __post_init__(self) -> None:
        super().__post_init__()
        parts = _check_url(self.redis_url)
        if not isinstance(self.key_prefix, str) or not self.key_prefix:
            raise StateConfigError(f"RedisState needs a non-empty key_prefix, got {self.key_prefix!r}")
        _positive_number("expiry_s", self.expiry_s, allow_none=True)
        _positive_number("connect_timeout", self.connect_timeout, allow_none=False)
        _positive_number("socket_timeout", self.socket_timeout, allow_none=True)
        if not isinstance(self.verify_certs, bool):
            raise StateConfigError(f"verify_certs must be True or False, got {self.verify_certs!r}")
        if self.ca_certs is not None and not isinstance(self.ca_certs, str):
            raise StateConfigError(f"ca_certs must be a file path, got {self.ca_certs!r}")
        if not isinstance(self.cluster, bool):
            raise StateConfigError(f"cluster must be True or False, got {self.cluster!r}")
        if self.cluster and parts.scheme.lower() == "unix":
            raise StateConfigError(f"cluster=True needs a node's TCP address (redis://HOST:PORT), not "
                                   f"{redact(self.redis_url)}")
        if self.cluster and parts.path.strip("/") not in ("", "0"):
            raise StateConfigError(f"Redis Cluster has only database 0: use redis://HOST:PORT/0, not "
                                   f"{redact(self.redis_url)}")
        check_wait_settings(self.wait_replicas, self.wait_timeout, self.socket_timeout)
        tls = parts.scheme.lower() == "rediss"
        if not tls and (self.ca_certs is not None or not self.verify_certs):
            raise StateConfigError(f"ca_certs and verify_certs are TLS settings: use a rediss:// URL, "
                                   f"not {redact(self.redis_url)}")

    def __repr__(self) -> str:
        shown = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "redis_url":
                value = redact(value)
            elif field.name == "state_type":
                value = value.value
            elif field.name == "serializer" and value is None:
                continue
            if field.name in ("redis_url", "key_prefix", "state_type") or value != field.default:
                shown.append(f"{field.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)}, ...)"

    def url_location(self) -> tuple[str, dict[str, str]]:
        params = {"prefix": self.key_prefix}
        if self.expiry_s is not None:
            params["expiry"] = f"{self.expiry_s:g}"
        if self.connect_timeout != 3.0:
            params["connect_timeout"] = f"{self.connect_timeout:g}"
        if self.socket_timeout != 10.0:
            params["socket_timeout"] = "none" if self.socket_timeout is None else f"{self.socket_timeout:g}"
        if self.ca_certs is not None:
            params["ca_certs"] = self.ca_certs
        if not self.verify_certs:
            params["verify_certs"] = "false"
        if self.cluster:
            params["cluster"] = "true"
        if self.wait_replicas:
            params["wait_replicas"] = str(self.wait_replicas)
        if self.wait_timeout != DEFAULT_WAIT_TIMEOUT:
            params["wait_timeout"] = f"{self.wait_timeout:g}"
        parts = urllib.parse.urlsplit(self.redis_url)
        location = urllib.parse.urlunsplit(parts._replace(query="", fragment=""))
        if parts.query:   # unix:///path.sock?db=1: the query belongs to the location
            params = {**dict(urllib.parse.parse_qsl(parts.query)), **params}
        return location, params

    def open_backing_map(self) -> RedisBackingMap:
        return RedisBackingMap(self, self.effective_serializer)


# -- open_state URLs: redis://host:port/db?prefix=p&type=opaque&expiry=60 ---------------------------

_URL_PARAMS = ("prefix", "expiry", "connect_timeout", "socket_timeout", "ca_certs", "verify_certs", "cluster",
               "wait_replicas", "wait_timeout")


def _seconds(url: str, name: str, value: str, *, allow_none: bool) -> float | None:
    if allow_none and value.lower() == "none":
        return None
    try:
        return float(value)
    except ValueError:
        raise StateConfigError(
            f"state URL {redact(url)}: {name}={value!r} is not a number of seconds") from None


def _whole_number(url: str, name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise StateConfigError(f"state URL {redact(url)}: {name}={value!r} is not a whole number") from None


def _parse_bool(url: str, name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise StateConfigError(f"state URL {redact(url)}: {name}={value!r} is not true or false")


def _build_redis(url: str, parts: urllib.parse.SplitResult, params: dict[str, str],
                 settings: dict[str, Any]) -> StoreStateFactory:
    extra: dict[str, Any] = {}
    if "prefix" in params:
        extra["key_prefix"] = params.pop("prefix")
    if "expiry" in params:
        extra["expiry_s"] = _seconds(url, "expiry", params.pop("expiry"), allow_none=True)
    if "connect_timeout" in params:
        extra["connect_timeout"] = _seconds(url, "connect_timeout", params.pop("connect_timeout"),
                                            allow_none=False)
    if "socket_timeout" in params:
        extra["socket_timeout"] = _seconds(url, "socket_timeout", params.pop("socket_timeout"),
                                           allow_none=True)
    if "ca_certs" in params:
        extra["ca_certs"] = params.pop("ca_certs")
    if "verify_certs" in params:
        extra["verify_certs"] = _parse_bool(url, "verify_certs", params.pop("verify_certs"))
    if "cluster" in params:
        extra["cluster"] = _parse_bool(url, "cluster", params.pop("cluster"))
    if "wait_replicas" in params:
        extra["wait_replicas"] = _whole_number(url, "wait_replicas", params.pop("wait_replicas"))
    if "wait_timeout" in params:
        extra["wait_timeout"] = _seconds(url, "wait_timeout", params.pop("wait_timeout"), allow_none=False)
    location = urllib.parse.urlunsplit(parts._replace(query="", fragment=""))
    return RedisState(url=location, **extra, **settings)


for _scheme in ("redis", "rediss"):
    register_scheme(_scheme, Scheme(_URL_PARAMS, _build_redis, "redis://127.0.0.1:6379/0?prefix=wc"))

__all__ = ["CAS_SCRIPT", "RedisBackingMap", "RedisState", "redis_key", "scan_pattern", "version_token"]
