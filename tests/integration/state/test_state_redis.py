"""RedisState against a real Redis: the rules, the Lua compare-and-set, races, expiry, failures, URLs."""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
import redis as redis_py
from state_backends import (
    add,
    reused_rule_tests,
    unique_name,
)
from state_races import (  # noqa: F401  (collected here, run on this backend)
    test_a_non_transactional_writer_that_loses_applies_on_the_newer_value,
    test_a_stale_cache_entry_loses_and_the_key_is_recomputed,
    test_a_writer_that_loses_rereads_and_recomputes,
    test_another_process_opens_the_pickled_factory_and_writes,
    test_duplicate_tasks_of_the_same_batches_racing_end_exact,
    test_two_states_incrementing_one_key_count_exactly,
)

from trident_spark.local.process import free_port
from trident_spark.state import (
    GLOBAL_KEY,
    OpaqueValue,
    RedisState,
    StateError,
    StateType,
    StateUnavailableError,
    TransactionalValue,
    open_state,
    parse_state_url,
)
from trident_spark.state.redis import CAS_SCRIPT_SHA, RedisBackingMap, version_token

pytestmark = pytest.mark.integration

TX, OPAQUE, NON_TX = StateType.TRANSACTIONAL, StateType.OPAQUE, StateType.NON_TRANSACTIONAL


class RedisBackend:
    """Factories over one key prefix of the session's Redis, and raw access to its keys."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.prefix = unique_name("t")
        self.client = redis_py.Redis.from_url(url)

    def spec(self, state_type=OPAQUE, **settings) -> RedisState:
        settings.setdefault("key_prefix", self.prefix)
        return RedisState(url=self.url, state_type=StateType(state_type), **settings)

    def raw_put(self, key, data: bytes) -> None:
        with self.spec().open_backing_map() as backing:
            backing.raw_put(key, data)

    def stored(self, state_type, key):
        with self.spec(state_type).open_backing_map() as backing:
            return backing.multiGet([key])[0]

    def raw(self, name: str) -> bytes | None:
        return self.client.get(name)

    def drop(self) -> None:
        names = list(self.client.scan_iter(match=f"{self.prefix}:*", count=1000))
        if names:
            self.client.delete(*names)
        self.client.close()


@pytest.fixture
def backend(redis_url):
    made = RedisBackend(redis_url)
    yield made
    made.drop()


# Every rule, API and batching test of tests/unit/state, on Redis.
globals().update(reused_rule_tests())


def command_calls(client, *names: str) -> dict[str, int]:
    """How many times the server ran each command (INFO commandstats)."""
    stats = client.info("commandstats")
    return {name: int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in names}


# -- layout: Storm's Redis state format ------------------------------------------------------------

#: Keys as earlier versions stored them (literal, not through keys.py), with what they hold.
EARLIER_KEYS = [(["cat"], "cat"), (["~cat"], "%7Ecat"), (["a|b"], "a%7Cb"), (["us", 2024], "us|~i2024"),
                ([(1, "x")], '~j{"~tuple":[1,"x"]}'), ([], "~global")]


@pytest.mark.parametrize("cache_size", [1000, 0])
def test_keys_written_by_earlier_versions_update_in_place(backend, cache_size):
    for _, stored in EARLIER_KEYS:
        backend.client.set(f"{backend.prefix}:{stored}", b"[4,10,7]")
    keys = [key for key, _ in EARLIER_KEYS] + [["dog"]]
    state = backend.spec(OPAQUE, cache_size=cache_size).open()
    assert state.multiUpdate(5, keys, [add(1)] * len(keys)) == [11] * len(EARLIER_KEYS) + [1]
    assert {stored: backend.raw(f"{backend.prefix}:{stored}") for _, stored in EARLIER_KEYS} == \
        {stored: b"[5,11,10]" for _, stored in EARLIER_KEYS}
    assert backend.raw(f"{backend.prefix}:dog") == b"[5,1,null]"


def test_keys_are_prefix_and_encoded_key_and_values_are_storms_json(backend):
    backend.spec(OPAQUE).open().multiUpdate(3, [["cat"], ["us", 2024]], [add(2), add(5)])
    assert backend.raw(f"{backend.prefix}:cat") == b"[3,2,null]"
    assert backend.raw(f"{backend.prefix}:us|~i2024") == b"[3,5,null]"
    backend.spec(OPAQUE).open().multiUpdate(4, [["cat"]], [add(1)])
    assert backend.raw(f"{backend.prefix}:cat") == b"[4,3,2]"

    tx = RedisState.transactional(url=backend.url, key_prefix=backend.prefix + "-tx")
    tx.open().multiUpdate(7, [["cat"]], [add(1)])
    assert backend.raw(f"{backend.prefix}-tx:cat") == b"[7,1]"
    plain = RedisState.nonTransactional(url=backend.url, key_prefix=backend.prefix + "-nt")
    plain.open().update(0, add(9))
    assert backend.raw(f"{backend.prefix}-nt:~global") == b"9"
    backend.client.delete(f"{backend.prefix}-tx:cat", f"{backend.prefix}-nt:~global")


def test_a_value_written_by_storm_reads_back(backend):
    backend.client.set(f"{backend.prefix}:dog", b'[12,{"n":4},{"n":3}]')
    assert backend.stored(OPAQUE, ["dog"]) == OpaqueValue(12, {"n": 4}, {"n": 3})
    assert backend.spec(OPAQUE).open().multiGet([["dog"]]) == [{"n": 4}]


def test_global_and_compound_keys_live_under_their_encoded_names(backend):
    state = backend.spec(TX).open()
    state.update(0, add(5))
    state.multiUpdate(0, [["a|b", "c"], ["a", "b|c"], [None, ""], [""]], [add(1), add(2), add(3), add(4)])
    assert backend.raw(f"{backend.prefix}:~global") == b"[0,5]"
    assert backend.raw(f"{backend.prefix}:a%7Cb|c") == b"[0,1]"
    assert backend.raw(f"{backend.prefix}:a|b%7Cc") == b"[0,2]"
    assert backend.raw(f"{backend.prefix}:~n|~e") == b"[0,3]"
    assert backend.raw(f"{backend.prefix}:~e") == b"[0,4]"
    assert backend.spec(TX).open().get() == 5


# -- versions and the compare-and-set script -------------------------------------------------------

def test_versions_are_the_stored_bytes_or_their_sha1(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        [short] = backing.multiPutIfVersion([["s"]], [7], [None])
        [long] = backing.multiPutIfVersion([["l"]], ["x" * 100], [None])
        assert short == b"=7"
        assert long[:1] == b"#" and len(long) == 41
        assert [v.version for v in backing.multiGetVersioned([["s"], ["l"]])] == [short, long]
        assert long == version_token(backend.raw(f"{backend.prefix}:l"))


@pytest.mark.parametrize("value", [7, "x" * 100], ids=["inline-version", "hashed-version"])
def test_the_script_writes_only_over_the_expected_value(backend, value):
    with backend.spec(NON_TX).open_backing_map() as backing:
        assert backing.multiPutIfVersion([["k"]], [value], [None]) != [None]
        assert backing.multiPutIfVersion([["k"]], [value], [None]) == [None]    # exists: create loses
        [read] = backing.multiGetVersioned([["k"]])
        backend.client.set(f"{backend.prefix}:k", b'"changed"')               # another writer
        assert backing.multiPutIfVersion([["k"]], ["mine"], [read.version]) == [None]
        assert backing.multiGet([["k"]]) == ["changed"]
        [current] = backing.multiGetVersioned([["k"]])
        assert backing.multiPutIfVersion([["k"]], ["mine"], [current.version]) == [b'="mine"']
        backend.client.delete(f"{backend.prefix}:k")                           # removed meanwhile
        assert backing.multiPutIfVersion([["k"]], ["again"], [b'="mine"']) == [None]


def test_keys_of_one_batch_win_or_lose_independently(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        backing.multiPut([["a"], ["b"]], [1, 2])
        read = backing.multiGetVersioned([["a"], ["b"], ["c"]])
        backend.client.set(f"{backend.prefix}:b", b"20")
        outcomes = backing.multiPutIfVersion([["a"], ["b"], ["c"]], [10, 30, 40],
                                             [read[0].version, read[1].version, None])
        assert [o is not None for o in outcomes] == [True, False, True]
        assert backing.multiGet([["a"], ["b"], ["c"]]) == [10, 20, 40]


def test_one_mget_and_one_script_call_per_batch(backend):
    counted = ("mget", "evalsha", "eval")
    state = backend.spec(OPAQUE, cache_size=0, max_multi_get_batch_size=3, max_multi_put_batch_size=4).open()
    state.multiGet([["warm-up"]])                    # connects
    state.stats.reset()
    before = command_calls(backend.client, *counted)
    state.multiUpdate(0, [[f"w{i}"] for i in range(10)], [add(1)] * 10)
    after = command_calls(backend.client, *counted)
    calls = {name: after[name] - before[name] for name in counted}
    assert calls["mget"] == 4 and calls["evalsha"] == 3
    assert calls["eval"] == 0
    assert (state.stats.store_reads, state.stats.store_writes) == (4, 3)
    assert (state.stats.keys_read, state.stats.keys_written) == (10, 10)


def test_a_flushed_script_cache_falls_back_to_eval(backend):
    state = backend.spec(OPAQUE, cache_size=0).open()
    state.multiUpdate(0, [["cat"]], [add(1)])
    backend.client.script_flush()
    before = command_calls(backend.client, "eval", "evalsha")
    state.multiUpdate(1, [["cat"]], [add(1)])
    state.multiUpdate(2, [["cat"]], [add(1)])
    after = command_calls(backend.client, "eval", "evalsha")
    assert after["eval"] - before["eval"] == 1              # NOSCRIPT once, then EVAL caches it
    assert after["evalsha"] - before["evalsha"] >= 1        # the next write uses the cached script
    assert backend.client.script_exists(CAS_SCRIPT_SHA) == [True]
    assert state.multiGet([["cat"]]) == [3]


# -- expiry -----------------------------------------------------------------------------------------

def test_expiry_sets_px_on_every_write_and_keys_disappear(backend):
    spec = backend.spec(TX, expiry_s=0.5, cache_size=0)
    state = spec.open()
    state.multiUpdate(0, [["cat"]], [add(1)])
    with spec.open_backing_map() as backing:
        assert 0 < backing.ttl_ms(["cat"]) <= 500
        time.sleep(0.3)
        state.multiUpdate(1, [["cat"]], [add(1)])       # a write renews the expiry
        assert backing.ttl_ms(["cat"]) > 300
        time.sleep(0.7)
        assert backing.ttl_ms(["cat"]) == -2
    assert state.multiGet([["cat"]]) == [None]
    assert state.multiUpdate(2, [["cat"]], [add(1)]) == [1]     # an expired key starts again


def test_without_expiry_keys_stay(backend):
    backend.spec(OPAQUE).open().multiUpdate(0, [["cat"]], [add(1)])
    with backend.spec(OPAQUE).open_backing_map() as backing:
        assert backing.ttl_ms(["cat"]) == -1


# -- failures ---------------------------------------------------------------------------------------

def test_an_unreachable_server_fails_fast_naming_the_address():
    started = time.monotonic()
    state = RedisState.opaque(url="redis://127.0.0.1:1/0", key_prefix="wc").open()   # lazy: no error yet
    with pytest.raises(StateUnavailableError) as caught:
        state.multiGet([["cat"]])
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert message.startswith("cannot use the state store at redis://127.0.0.1:1/0?prefix=wc: ")
    assert "Connection refused" in message and "check that Redis runs there" in message


def test_a_server_that_never_answers_times_out_naming_the_address():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        state = RedisState.opaque(url=f"redis://127.0.0.1:{port}/0", socket_timeout=1.0).open()
        started = time.monotonic()
        with pytest.raises(StateUnavailableError) as caught:
            state.multiGet([["cat"]])
        assert time.monotonic() - started < 10
    assert f"redis://127.0.0.1:{port}/0?prefix=trident" in str(caught.value)
    assert "Timeout" in str(caught.value)


def test_a_key_of_another_redis_type_is_explained(backend):
    backend.client.hset(f"{backend.prefix}:cat", "n", 1)
    with pytest.raises(StateError) as caught:
        backend.spec(OPAQUE).open().multiUpdate(0, [["cat"]], [add(1)])
    assert "holds another Redis type" in str(caught.value)
    assert "choose another key_prefix" in str(caught.value)


@pytest.fixture(scope="module")
def protected_redis(tmp_path_factory):
    """A redis-server of its own that requires a password."""
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis-auth")
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--requirepass", "s3cret-pw",
         "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_redis(redis_py.Redis(host="127.0.0.1", port=port, password="s3cret-pw"))
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def wait_for_redis(client, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.ping()
            return
        except redis_py.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_password_in_the_url_authenticates(protected_redis):
    url = f"redis://:s3cret-pw@127.0.0.1:{protected_redis}/0"
    spec = RedisState.opaque(url=url, key_prefix="auth")
    assert spec.open().multiUpdate(0, [["cat"]], [add(1)]) == [1]
    assert open_state(spec.url).multiGet([["cat"]]) == [1]
    assert "s3cret-pw" not in repr(spec) and "s3cret-pw" not in spec.open().address


@pytest.mark.parametrize("password", [None, "wrong-pw"])
def test_a_missing_or_wrong_password_is_named_without_showing_it(protected_redis, password):
    auth = f":{password}@" if password else ""
    state = RedisState.opaque(url=f"redis://{auth}127.0.0.1:{protected_redis}/0", key_prefix="auth").open()
    started = time.monotonic()
    with pytest.raises(StateUnavailableError) as caught:
        state.multiGet([["cat"]])
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert f"127.0.0.1:{protected_redis}/0?prefix=auth" in message
    assert "give the password (and ACL user) in the URL" in message
    assert "wrong-pw" not in message and "s3cret-pw" not in message


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory):
    """A redis-server that speaks only TLS, with a certificate of a CA made here."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    certs = tmp_path_factory.mktemp("redis-tls")
    make_certificates(certs)
    port = free_port()
    process = subprocess.Popen(
        ["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", str(certs / "server.crt"), "--tls-key-file", str(certs / "server.key"),
         "--tls-ca-cert-file", str(certs / "ca.crt"), "--tls-auth-clients", "no",
         "--save", "", "--appendonly", "no", "--dir", str(certs)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_redis(redis_py.Redis(host="127.0.0.1", port=port, ssl=True,
                                      ssl_ca_certs=str(certs / "ca.crt")), timeout=15)
    except redis_py.ConnectionError:
        process.terminate()
        pytest.skip(f"this redis-server does not speak TLS: {process.communicate()[1][-300:]!r}")
    try:
        yield port, str(certs / "ca.crt")
    finally:
        process.terminate()
        process.wait(timeout=30)


def make_certificates(directory: Path) -> None:
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
            "-keyout", "ca.key", "-out", "ca.crt")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "san.ext", "-out", "server.crt")
    os.chmod(directory / "server.key", 0o600)


def test_tls_with_the_servers_ca(tls_redis):
    port, ca = tls_redis
    spec = RedisState.opaque(url=f"rediss://127.0.0.1:{port}/0", key_prefix="tls", ca_certs=ca)
    assert spec.open().multiUpdate(0, [["cat"]], [add(1)]) == [1]
    assert spec.url.startswith(f"rediss://127.0.0.1:{port}/0?prefix=tls&ca_certs=")
    assert open_state(spec.url).multiGet([["cat"]]) == [1]
    unchecked = RedisState.opaque(url=f"rediss://127.0.0.1:{port}/0", key_prefix="tls", verify_certs=False)
    assert unchecked.open().multiGet([["cat"]]) == [1]


def test_tls_with_an_unknown_ca_fails_naming_the_address(tls_redis):
    port, _ = tls_redis
    state = RedisState.opaque(url=f"rediss://127.0.0.1:{port}/0", key_prefix="tls").open()
    with pytest.raises(StateUnavailableError) as caught:
        state.multiGet([["cat"]])
    assert f"rediss://127.0.0.1:{port}/0?prefix=tls" in str(caught.value)
    assert "certificate" in str(caught.value).lower()


def test_plain_redis_against_a_tls_port_fails_fast(tls_redis):
    port, _ = tls_redis
    state = RedisState.opaque(url=f"redis://127.0.0.1:{port}/0", socket_timeout=2.0).open()
    started = time.monotonic()
    with pytest.raises(StateUnavailableError, match=f"redis://127.0.0.1:{port}/0"):
        state.multiGet([["cat"]])
    assert time.monotonic() - started < 10


# -- open_state URLs --------------------------------------------------------------------------------

def test_open_state_urls_round_trip(backend, redis_url):
    for spec in (backend.spec(OPAQUE), backend.spec(TX, expiry_s=60, cache_size=0),
                 backend.spec(NON_TX, max_multi_get_batch_size=7, connect_timeout=1.5)):
        assert parse_state_url(spec.url) == spec
        assert pickle.loads(pickle.dumps(spec)) == spec
    backend.spec(TX).open().multiUpdate(4, [["cat"], ["dog", 2]], [add(3), add(4)])
    url = f"{redis_url}?prefix={backend.prefix}&type=transactional"
    with open_state(url) as state:
        assert state.multiGet([["cat"], ["dog", 2], ["eel"]]) == [3, 4, None]
    parsed = parse_state_url(f"{redis_url}?prefix=p&type=opaque&expiry=1.5&verify_certs=true")
    assert (parsed.redis_url, parsed.key_prefix, parsed.expiry_s) == (redis_url, "p", 1.5)
    assert parse_state_url("rediss://u:pw@h:6380/2?prefix=p").redis_url == "rediss://u:pw@h:6380/2"


@pytest.mark.parametrize(("url", "message"), [
    ("redis://h:6379/0?expiry=soon", "expiry='soon' is not a number of seconds"),
    ("redis://h:6379/0?prefix=", "RedisState needs a non-empty key_prefix"),
    ("redis://:pw@h:6379/0?prefx=p", "unknown parameter prefx; redis URLs take prefix, expiry"),
    ("redis://h:6379/0?ca_certs=/ca.pem", "ca_certs and verify_certs are TLS settings: use a rediss:// URL"),
    ("redis://h:port/0", "cannot be parsed"),
])
def test_bad_redis_urls_are_explained_without_passwords(url, message):
    with pytest.raises(StateError) as caught:
        parse_state_url(url)
    assert message in str(caught.value)
    assert ":pw@" not in str(caught.value)


def test_the_backing_map_is_lazy_and_closes(backend):
    backing = backend.spec().open_backing_map()
    assert isinstance(backing, RedisBackingMap) and backing._client is None
    backing.multiGet([["cat"]])
    assert backing._client is not None
    backing.close()
    backing.close()
    with pytest.raises(StateError, match="closed"):
        backing.multiGet([["cat"]])


def test_transactional_value_layout_for_tools(backend):
    backend.spec(TX).open().multiPut(5, [["cat"]], [{"n": 1}])
    assert backend.stored(TX, ["cat"]) == TransactionalValue(5, {"n": 1})
    assert backend.spec(TX).open().multiGet([GLOBAL_KEY]) == [None]


def test_many_threads_share_one_backing_map(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        errors = []

        def work(n):
            try:
                for i in range(20):
                    backing.multiPut([[f"k{n}-{i}"]], [i])
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert backing.multiGet([[f"k{n}-19"] for n in range(4)]) == [19] * 4


# -- listing every key: SCAN MATCH <prefix>:* and MGET (getTuples, TupleCollectionGet) -------------
# (The getTuples rules themselves run here too: test_state_scan is among the reused unit tests.)

def test_getting_tuples_lists_only_this_prefix(backend):
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(0, [["cat", 1], ["dog", 2]], [add(1), add(2)])
    state.update(0, add(9))
    neighbours = [backend.prefix + "x", backend.prefix + "-other", "x" + backend.prefix]
    for prefix in neighbours:
        backend.spec(OPAQUE, key_prefix=prefix).open().multiUpdate(0, [["cat", 1], ["eel", 3]], [add(5)] * 2)
    backend.client.set(backend.prefix, b"[0,1,null]")                 # the bare prefix: not a state key
    try:
        assert sorted(state.getTuples(), key=repr) == sorted([[9], ["cat", 1, 1], ["dog", 2, 2]], key=repr)
        for prefix in neighbours:
            listed = sorted(backend.spec(OPAQUE, key_prefix=prefix).open().getTuples())
            assert listed == [["cat", 1, 5], ["eel", 3, 5]]
    finally:
        names = [f"{prefix}:{key}" for prefix in neighbours for key in ("cat|~i1", "eel|~i3")]
        backend.client.delete(backend.prefix, *names)


def test_glob_characters_in_the_prefix_match_only_themselves(backend):
    base = backend.prefix
    globbed, lookalike = f"{base}[1]*?", f"{base}1xy"           # unescaped, the first would match the second
    try:
        backend.spec(NON_TX, key_prefix=globbed).open().multiPut(0, [["cat"]], [1])
        backend.spec(NON_TX, key_prefix=lookalike).open().multiPut(0, [["dog"]], [2])
        assert list(backend.spec(NON_TX, key_prefix=globbed).open().getTuples()) == [["cat", 1]]
        assert list(backend.spec(NON_TX, key_prefix=lookalike).open().getTuples()) == [["dog", 2]]
    finally:
        backend.client.delete(f"{globbed}:cat", f"{lookalike}:dog")


def test_thousands_of_keys_are_listed_once_each_in_pages(backend):
    state = backend.spec(NON_TX, cache_size=0).open()
    keys = [[f"w{i}", i] for i in range(2500)]
    state.multiPut(0, keys, list(range(2500)))
    before = command_calls(backend.client, "scan", "mget")
    state.stats.reset()
    listed = list(state.getTuples())
    after = command_calls(backend.client, "scan", "mget")
    assert len(listed) == 2500
    assert sorted(listed, key=lambda values: values[1]) == [[*key, i] for i, key in enumerate(keys)]
    assert after["scan"] - before["scan"] >= 3                         # SCAN COUNT 1000, the default page
    assert 3 <= after["mget"] - before["mget"] <= after["scan"] - before["scan"] + 3
    assert state.stats.keys_read == 2500 and state.stats.store_reads == 3


def test_scanned_versions_are_the_tokens_of_the_stored_bytes(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        backing.multiPut([["s"], ["l"]], [7, "x" * 100])
        versions = {key[0]: stored.version for key, stored in backing.scanVersioned()}
        assert versions == {"s": b"=7", "l": version_token(backend.raw(f"{backend.prefix}:l"))}


def test_keys_of_another_type_or_expired_meanwhile_are_left_out(backend):
    backend.spec(NON_TX).open().multiPut(0, [["cat"], ["dog"]], [1, 2])
    backend.client.hset(f"{backend.prefix}:eel", "n", 1)              # another Redis type: MGET answers nil
    backend.client.set(f"{backend.prefix}:gone", b"5", px=1)
    time.sleep(0.05)
    assert sorted(backend.spec(NON_TX).open().getTuples()) == [["cat", 1], ["dog", 2]]


def test_a_hashed_long_key_cannot_be_listed(backend):
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(0, [["x" * 600], ["cat"]], [add(1), add(2)])
    with pytest.raises(StateError, match=r"cannot list key '~h.*stored hashed.*MapGet\(\)"):
        list(state.getTuples())
    assert state.multiGet([["x" * 600]]) == [1]


def test_listing_a_closed_or_unreachable_state_fails_clearly(backend):
    backing = backend.spec(OPAQUE).open_backing_map()
    backing.close()
    with pytest.raises(StateError, match="closed"):
        list(backing.scanVersioned())
    unreachable = RedisState.opaque(url=f"redis://127.0.0.1:{free_port()}/0", connect_timeout=0.5)
    with pytest.raises(StateUnavailableError, match=r"SCAN MATCH trident:\*"):
        list(unreachable.open().getTuples())
