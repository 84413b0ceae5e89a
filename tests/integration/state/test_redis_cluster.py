"""RedisState(cluster=True) against a real 3-primary Redis Cluster (Debian's redis-server, local):
keys spread over every primary, the rules and races of the single-server tests, a reshard mid-write."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

import pytest
import redis as redis_py
from state_backends import add, reused_rule_tests, unique_name
from state_races import (  # noqa: F401  (collected here, run on this backend)
    test_a_non_transactional_writer_that_loses_applies_on_the_newer_value,
    test_a_stale_cache_entry_loses_and_the_key_is_recomputed,
    test_a_writer_that_loses_rereads_and_recomputes,
    test_another_process_opens_the_pickled_factory_and_writes,
    test_duplicate_tasks_of_the_same_batches_racing_end_exact,
    test_two_states_incrementing_one_key_count_exactly,
)

from trident_spark.local import RedisClusterHandle, start_redis_cluster
from trident_spark.state import (
    RedisState,
    StateConfigError,
    StateError,
    StateType,
    StateUnavailableError,
    open_state,
    parse_state_url,
)
from trident_spark.state.redis_cluster import RedirectCounts
from trident_spark.state.redis_slots import key_slot

pytestmark = pytest.mark.integration

TX, OPAQUE, NON_TX = StateType.TRANSACTIONAL, StateType.OPAQUE, StateType.NON_TRANSACTIONAL


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisClusterHandle]:
    with start_redis_cluster(primaries=3) as started:
        yield started


def node_client(url: str) -> redis_py.Redis:
    return redis_py.Redis.from_url(url)


def prefix_keys_per_primary(cluster: RedisClusterHandle, prefix: str) -> dict[str, int]:
    """How many keys of ``prefix`` each primary holds (SCAN on each node)."""
    counts = {}
    for url in cluster.primaries:
        with node_client(url) as client:
            counts[url] = sum(1 for _ in client.scan_iter(match=f"{prefix}:*", count=1000))
    return counts


class ClusterBackend:
    """Factories with cluster=True over one key prefix of the module's cluster."""

    def __init__(self, cluster: RedisClusterHandle) -> None:
        self.url = cluster.url
        self.prefix = unique_name("c")

    def spec(self, state_type=OPAQUE, **settings) -> RedisState:
        settings.setdefault("key_prefix", self.prefix)
        return RedisState(url=self.url, state_type=StateType(state_type), cluster=True, **settings)

    def raw_put(self, key, data: bytes) -> None:
        with self.spec().open_backing_map() as backing:
            backing.raw_put(key, data)

    def stored(self, state_type, key):
        with self.spec(state_type).open_backing_map() as backing:
            return backing.multiGet([key])[0]


@pytest.fixture
def backend(cluster):
    return ClusterBackend(cluster)


# Every rule, API and batching test of tests/unit/state, on the cluster.
globals().update(reused_rule_tests())


def test_a_batch_spreads_over_every_primary_one_mget_and_one_script_per_slot(cluster):
    prefix = unique_name("spread")
    spec = RedisState.opaque(url=cluster.url, key_prefix=prefix, cluster=True)
    words = [[f"w{i}"] for i in range(300)]
    with spec.open() as state:
        state.multiUpdate(1, words, [add(i) for i in range(300)])
        assert state.multiGet(words) == list(range(300))
    per_node = prefix_keys_per_primary(cluster, prefix)
    assert sorted(per_node) == sorted(cluster.primaries)
    assert all(count > 0 for count in per_node.values()), per_node
    assert sum(per_node.values()) == 300
    with spec.open_backing_map() as backing:
        names = [backing.redis_key(word) for word in words]
        calls_before = _calls(cluster, "mget", "evalsha")
        backing.multiGetVersioned(words)
        calls_after = _calls(cluster, "mget", "evalsha")
        scanned = sorted(tuple(key) for key, _ in backing.scanVersioned())
    slots = {key_slot(name) for name in names}
    assert calls_after["mget"] - calls_before["mget"] == len(slots)
    assert scanned == sorted(tuple(word) for word in words)


def _calls(cluster: RedisClusterHandle, *names: str) -> dict[str, int]:
    total = dict.fromkeys(names, 0)
    for url in cluster.primaries:
        with node_client(url) as client:
            stats = client.info("commandstats")
        for name in names:
            total[name] += int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))
    return total


def test_open_state_url_with_cluster_true_round_trips(cluster):
    prefix = unique_name("url")
    url = f"{cluster.url}?prefix={prefix}&cluster=true&type=transactional"
    spec = parse_state_url(url)
    assert isinstance(spec, RedisState) and spec.cluster and spec.state_type is TX
    assert spec.url == url
    spec.open().multiUpdate(4, [["a"], ["b"]], [add(1), add(2)])
    assert open_state(url).multiGet([["a"], ["b"], ["c"]]) == [1, 2, None]


def test_cluster_settings_are_checked():
    with pytest.raises(StateConfigError) as info:
        RedisState.opaque(url="redis://127.0.0.1:7000/2", cluster=True)
    assert str(info.value) == ("Redis Cluster has only database 0: use redis://HOST:PORT/0, not "
                               "redis://127.0.0.1:7000/2")
    with pytest.raises(StateConfigError) as info:
        parse_state_url("redis://127.0.0.1:7000/0?cluster=maybe")
    assert str(info.value) == ("state URL redis://127.0.0.1:7000/0?cluster=maybe: cluster='maybe' is not "
                               "true or false")


def test_without_cluster_true_a_cluster_says_how_to_use_it(cluster):
    spec = RedisState.opaque(url=cluster.url, key_prefix=unique_name("plain"))
    with pytest.raises(StateError) as info, spec.open() as state:
        state.multiUpdate(1, [[f"w{i}"] for i in range(50)], [add(1)] * 50)
    assert "open the state with cluster=True (or ?cluster=true in its URL)" in str(info.value)


def _redis_backing(backing):
    """The RedisBackingMap under the cache and batching wrappers of an opened state."""
    while not hasattr(backing, "redirects"):
        backing = backing.delegate
    return backing


def _owners(cluster: RedisClusterHandle) -> dict[str, int]:
    """How many slots each primary serves, by node id."""
    with node_client(cluster.url) as client:
        ranges = client.execute_command("CLUSTER SLOTS")
    counts: dict[str, int] = {}
    for start, end, primary, *_ in ranges:
        node_id = primary[2].decode()
        counts[node_id] = counts.get(node_id, 0) + end - start + 1
    return counts


def _reshard(cluster: RedisClusterHandle, slots: int) -> subprocess.CompletedProcess:
    """``redis-cli --cluster reshard``: ``slots`` slots from the primary with most to the one with fewest."""
    owners = _owners(cluster)
    source, target = max(owners, key=owners.__getitem__), min(owners, key=owners.__getitem__)
    host_port = cluster.url.split("//")[1].split("/")[0]
    return subprocess.run(
        ["redis-cli", "--cluster", "reshard", host_port, "--cluster-from", source, "--cluster-to", target,
         "--cluster-slots", str(slots), "--cluster-yes", "--cluster-pipeline", "10"],
        capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("kind", [OPAQUE, TX, NON_TX])
def test_a_reshard_while_a_writer_increments_ends_exact(cluster, kind):
    """A writer adds 1 to 400 keys in each of 40 batches (txids 0..39) while redis-cli moves 1500
    slots from the fullest primary to the emptiest: MOVED, ASK and TRYAGAIN are followed and every count
    is exact."""
    prefix = unique_name("reshard")
    words = [[f"k{i}"] for i in range(400)]
    batches = 40
    started = threading.Event()
    failures: list[BaseException] = []
    redirects: list[RedirectCounts] = []

    def writer() -> None:
        spec = RedisState(url=cluster.url, key_prefix=prefix, cluster=True, state_type=kind)
        try:
            with spec.open() as state:
                for batch in range(batches):
                    state.multiUpdate(batch, words, [add(1)] * len(words))
                    if batch == 1:
                        started.set()
                redirects.append(_redis_backing(state.backing).redirects)
        except BaseException as exc:
            failures.append(exc)
            started.set()

    before = _owners(cluster)
    thread = threading.Thread(target=writer)
    thread.start()
    assert started.wait(120)
    moved = _reshard(cluster, slots=1500)
    thread.join(300)
    assert moved.returncode == 0, moved.stdout[-2000:] + moved.stderr[-2000:]
    assert not failures, failures
    after = _owners(cluster)
    assert after != before and sum(after.values()) == 16384 and len(after) == 3
    with RedisState(url=cluster.url, key_prefix=prefix, cluster=True, state_type=kind).open() as state:
        assert state.multiGet(words) == [batches] * len(words)
    [seen] = redirects
    assert seen.moved > 0, seen


def test_a_primary_down_without_a_replica_fails_clearly_naming_the_node():
    with start_redis_cluster(primaries=3) as own:
        prefix = unique_name("down")
        spec = RedisState.opaque(url=own.url, key_prefix=prefix, cluster=True, connect_timeout=1.0)
        words = [[f"w{i}"] for i in range(100)]
        spec.open().multiUpdate(0, words, [add(1)] * len(words))
        dead = own.primaries[2]
        own.kill_node(dead)
        with pytest.raises(StateUnavailableError) as info, spec.open() as state:
            state.multiGet(words)
        port = dead.split(":")[2].split("/")[0]
        message = str(info.value)
        assert f"127.0.0.1:{port}" in message
        assert message.startswith(f"cannot use the state store at {own.url}?prefix={prefix}&cluster=true: "
                                  f"ConnectionError: ")
        assert message.endswith("check that every node of the Redis Cluster runs and is reachable from "
                                "this machine (the node named above); with TLS use rediss:// and ca_certs=")
