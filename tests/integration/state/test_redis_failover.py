"""RedisState with replicas against real redis-server processes (Debian's, on 127.0.0.1): WAIT after each
node's writes (wait_replicas), a WAIT that cannot be met failing clearly, what a failover loses without it,
and a writer that goes on exactly through a primary SIGKILLed and its replica promoted."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_py
from state_backends import add, unique_name

from trident_spark.local import RedisClusterHandle, start_redis_cluster
from trident_spark.local.launchers import redis_server_binary
from trident_spark.local.probes import redis_answers
from trident_spark.local.process import LocalProcess, free_port, wait_until
from trident_spark.state import RedisState, StateType, StateUnavailableError
from trident_spark.state.redis import redis_key
from trident_spark.state.redis_slots import key_slot
from trident_spark.state.redis_wait import ReplicasNotAcknowledgedError

pytestmark = pytest.mark.integration

TX, OPAQUE = StateType.TRANSACTIONAL, StateType.OPAQUE
#: cluster-node-timeout of the clusters here: a primary is failed over about 2-3 s after it dies.
NODE_TIMEOUT_MS = 2000
WORDS = [[f"w{i}"] for i in range(300)]


def hostport(url: str) -> str:
    return url.split("//")[1].split("/")[0]


def replica_of(cluster: RedisClusterHandle, primary: str) -> str:
    [replica] = [node for node, of in cluster.roles().items() if of == primary]
    return replica


def slots_of(primary: str) -> set[int]:
    with redis_py.Redis.from_url(primary) as client:
        ranges = client.execute_command("CLUSTER SLOTS")
    port = int(hostport(primary).split(":")[1])
    return {slot for start, end, owner, *_ in ranges if int(owner[1]) == port
            for slot in range(start, end + 1)}


def wait_for_failover(cluster: RedisClusterHandle, replica: str, timeout: float = 60.0) -> None:
    """Until ``replica`` serves slots as a primary and the cluster is ok again."""
    def promoted() -> bool:
        try:
            roles = cluster.roles()
            with redis_py.Redis.from_url(replica) as client:
                ok = client.execute_command("CLUSTER INFO").get("cluster_state") == "ok"
        except (OSError, redis_py.RedisError):
            return False
        return roles.get(replica, "") is None and ok
    wait_until(promoted, timeout=timeout, what=f"{replica} promoted to primary", interval=0.2)


def wait_for_replica(cluster: RedisClusterHandle, node: str, primary: str, timeout: float = 60.0) -> None:
    """Until ``node`` replicates ``primary`` and is in sync (a WAIT there can be met)."""
    def in_sync() -> bool:
        try:
            with redis_py.Redis.from_url(node) as client:
                info = client.info("replication")
        except (OSError, redis_py.RedisError):
            return False
        return info.get("role") == "slave" and info.get("master_link_status") == "up" and \
            info.get("master_port") == int(hostport(primary).split(":")[1])
    wait_until(in_sync, timeout=timeout, what=f"{node} in sync with {primary}", interval=0.2)


@pytest.fixture
def cluster() -> Iterator[RedisClusterHandle]:
    """Its own 3 primaries with one replica each (the tests here kill and pause nodes)."""
    with start_redis_cluster(primaries=3, replicas=1, node_timeout=NODE_TIMEOUT_MS) as started:
        yield started


@pytest.mark.parametrize("kind", [OPAQUE, TX])
def test_a_wait_no_replica_can_meet_fails_clearly_and_the_retry_is_exact(cluster, kind):
    """The replica of one primary is stopped (SIGSTOP): that node's WAIT answers 0 of 1 and the batch
    fails naming it; with the replica back the batch runs again and every count is exact."""
    prefix = unique_name("wait")
    spec = RedisState(url=cluster.url, key_prefix=prefix, cluster=True, state_type=kind, wait_replicas=1,
                      wait_timeout=2.0)
    primary = cluster.primaries[1]
    replica = replica_of(cluster, primary)
    with spec.open() as state:
        state.multiUpdate(0, WORDS, [add(1)] * len(WORDS))
    cluster.pause_node(replica)
    try:
        with dataclasses.replace(spec, wait_timeout=0.2).open() as state, \
                pytest.raises(ReplicasNotAcknowledgedError) as info:
            state.multiUpdate(1, WORDS, [add(1)] * len(WORDS))
    finally:
        cluster.resume_node(replica)
    with spec.open() as state:
        assert str(info.value) == (
            f"cannot use the state store at {cluster.url}?prefix={prefix}&cluster=true: WAIT 1 200 on node "
            f"{hostport(primary)}: 0 of 1 replica acknowledged the writes within 200 ms, so they are not "
            f"safe from a failover (wait_replicas=1); the batch is retried within the outage budget. Check "
            f"that the node's replicas run and are connected (INFO replication on {hostport(primary)} lists "
            f"them), or lower wait_replicas or raise wait_timeout")
        assert isinstance(info.value, StateUnavailableError)   # retried by the runtime as an outage
        wait_for_replica(cluster, replica, primary)
        state.multiUpdate(1, WORDS, [add(1)] * len(WORDS))     # the batch again, as the runtime would
    with spec.open() as state:
        assert state.multiGet(WORDS) == [2] * len(WORDS)


def _calls(url: str, command: str) -> int:
    with redis_py.Redis.from_url(url) as client:
        return int(client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def _wait_calls(url: str) -> int:
    return _calls(url, "wait")


def test_wait_is_sent_once_per_node_write_and_never_without_wait_replicas(cluster):
    prefix = unique_name("count")
    before = {url: _wait_calls(url) for url in cluster.primaries}
    with RedisState.opaque(url=cluster.url, key_prefix=prefix, cluster=True).open() as state:
        state.multiUpdate(0, WORDS, [add(1)] * len(WORDS))
    assert {url: _wait_calls(url) for url in cluster.primaries} == before
    spec = RedisState.opaque(url=cluster.url, key_prefix=prefix, cluster=True, wait_replicas=1)
    with spec.open() as state:
        state.multiUpdate(1, WORDS, [add(1)] * len(WORDS))     # one MGET and one script round per node
        assert state.multiGet(WORDS) == [2] * len(WORDS)      # reads send no WAIT
    waits = {url: _wait_calls(url) - before[url] for url in cluster.primaries}
    assert waits == dict.fromkeys(cluster.primaries, 1)


@pytest.mark.faults
def test_a_failover_loses_acknowledged_writes_without_wait_and_none_with_it(cluster):
    """The replica of one primary is stopped while batch 1 writes, the primary is SIGKILLed and the replica,
    resumed, takes over. Without WAIT batch 1 succeeded and its keys on that primary are gone (back to
    batch 0's counts). With wait_replicas=1 batch 1 failed clearly instead (never acknowledged); after
    the failover it fails again while the new primary has no replica, and goes through once the old
    primary is back as its replica: every count exact."""
    plain = RedisState.opaque(url=cluster.url, key_prefix=unique_name("plain"), cluster=True)
    waiting = RedisState.opaque(url=cluster.url, key_prefix=unique_name("waiting"), cluster=True,
                                wait_replicas=1, wait_timeout=1.0)
    primary = cluster.primaries[2]
    replica = replica_of(cluster, primary)
    owned = slots_of(primary)
    on_primary = [word for word in WORDS if key_slot(redis_key(plain.key_prefix, word)) in owned]
    assert 0 < len(on_primary) < len(WORDS)
    for spec in (plain, waiting):
        with spec.open() as state:
            state.multiUpdate(0, WORDS, [add(1)] * len(WORDS))
    # The replica stops, and the primary drops its link: what the primary acknowledges from now on
    # reaches no replica (a replica only paused would still find it in its socket when resumed).
    cluster.pause_node(replica)
    try:
        with redis_py.Redis.from_url(primary) as client:
            assert client.client_kill_filter(_type="replica") == 1
        with plain.open() as state:
            state.multiUpdate(1, WORDS, [add(1)] * len(WORDS))    # acknowledged by the primary alone
        with waiting.open() as state, pytest.raises(ReplicasNotAcknowledgedError) as info:
            state.multiUpdate(1, WORDS, [add(1)] * len(WORDS))
        assert info.value.node == hostport(primary) and info.value.acknowledged == 0
        cluster.kill_node(primary)
    finally:
        cluster.resume_node(replica)
    wait_for_failover(cluster, replica)

    with plain.open() as state:
        counts = dict(zip((w[0] for w in WORDS), state.multiGet(WORDS), strict=True))
    lost = sorted(word for word, count in counts.items() if count == 1)
    assert lost == sorted(word[0] for word in on_primary)               # exactly the failed primary's keys
    assert all(count == 2 for word, count in counts.items() if word not in lost)

    with waiting.open() as state, pytest.raises(ReplicasNotAcknowledgedError) as info:
        state.multiUpdate(1, WORDS, [add(1)] * len(WORDS))             # the new primary has no replica
    assert info.value.node == hostport(replica)
    cluster.restart_node(primary)                                      # back, as the new primary's replica
    wait_for_replica(cluster, primary, replica)
    with waiting.open() as state:
        state.multiUpdate(1, WORDS, [add(1)] * len(WORDS))
        assert state.multiGet(WORDS) == [2] * len(WORDS)


@pytest.mark.faults
@pytest.mark.parametrize("kind", [OPAQUE, TX])
def test_a_primary_killed_while_a_writer_waits_for_replicas_ends_exact(cluster, kind):
    """A writer adds 1 to 300 keys in each of 30 batches with wait_replicas=1, running a failed batch
    again (as the runtime does within its outage budget). After batch 2 a primary is SIGKILLed; its
    replica takes over (MOVED / connection errors / CLUSTERDOWN followed, WAITs that cannot be met while
    it has no replica); the killed node is started again and rejoins as its replica. Every count exact."""
    prefix = unique_name("failover")
    batches = 30
    paused, killed = threading.Event(), threading.Event()
    failures: list[BaseException] = []
    outages: list[str] = []

    def writer() -> None:
        spec = RedisState(url=cluster.url, key_prefix=prefix, cluster=True, state_type=kind, wait_replicas=1,
                          wait_timeout=0.5, connect_timeout=0.5, socket_timeout=2.0)
        deadline = time.monotonic() + 180      # the runtime's default outage budget
        try:
            with spec.open() as state:
                for batch in range(batches):
                    if batch == 3:
                        paused.set()
                        killed.wait(60)
                    while True:
                        try:
                            state.multiUpdate(batch, WORDS, [add(1)] * len(WORDS))
                            break
                        except StateUnavailableError as exc:
                            outages.append(type(exc).__name__)
                            if time.monotonic() > deadline:
                                raise
                            time.sleep(0.2)
        except BaseException as exc:
            failures.append(exc)
            paused.set()

    thread = threading.Thread(target=writer)
    thread.start()
    assert paused.wait(60)
    primary = cluster.primaries[0]
    replica = replica_of(cluster, primary)
    cluster.kill_node(primary)
    killed.set()
    wait_for_failover(cluster, replica)
    cluster.restart_node(primary)      # from this (the main) thread: a node dies with the thread that made it
    wait_for_replica(cluster, primary, replica)
    thread.join(240)
    assert not thread.is_alive()
    assert not failures, failures
    assert outages, "the writer never saw the primary go"
    with RedisState(url=cluster.url, key_prefix=prefix, cluster=True, state_type=kind).open() as state:
        assert state.multiGet(WORDS) == [batches] * len(WORDS)
    assert cluster.roles()[replica] is None and cluster.roles()[primary] == replica


# -- one server with a replica (no cluster) ---------------------------------------------------------


@pytest.fixture
def primary_and_replica(tmp_path: Path) -> Iterator[tuple[str, LocalProcess, LocalProcess]]:
    """Two plain redis-server processes, the second ``REPLICAOF`` the first, in sync."""
    ports = [free_port(), free_port()]
    processes = []
    for port in ports:
        argv = [str(redis_server_binary()), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--repl-diskless-sync-delay", "0", "--dir", str(tmp_path)]
        if processes:
            argv += ["--replicaof", "127.0.0.1", str(ports[0])]
        processes.append(LocalProcess(f"redis-{port}", argv, log_path=tmp_path / f"redis-{port}.log"))
    try:
        urls = [f"redis://127.0.0.1:{port}/0" for port in ports]
        for url, process in zip(urls, processes, strict=True):
            wait_until(lambda url=url: redis_answers(url), timeout=30, process=process, what=url)

        def synced() -> bool:
            with redis_py.Redis.from_url(urls[1]) as client:
                return client.info("replication").get("master_link_status") == "up"
        wait_until(synced, timeout=30, what=f"{urls[1]} in sync")
        yield urls[0], processes[0], processes[1]
    finally:
        for process in processes:
            process.stop(grace=2.0)


def test_one_server_waits_for_its_replica_and_fails_clearly_asking_for_more(primary_and_replica):
    url, _, replica = primary_and_replica
    prefix = unique_name("single")
    with RedisState.transactional(url=url, key_prefix=prefix, wait_replicas=1).open() as state:
        state.multiUpdate(0, WORDS, [add(1)] * len(WORDS))
        state.multiUpdate(1, WORDS, [add(1)] * len(WORDS))
        assert state.multiGet(WORDS) == [2] * len(WORDS)
    # one WAIT after each script call, in its pipeline (the first EVALSHA answers NOSCRIPT: EVAL then)
    assert _wait_calls(url) == _calls(url, "evalsha") + _calls(url, "eval") == 3
    spec = RedisState.opaque(url=url, key_prefix=prefix + "-2", wait_replicas=2, wait_timeout=0.5)
    with spec.open() as state, pytest.raises(ReplicasNotAcknowledgedError) as info:
        state.multiUpdate(0, WORDS, [add(1)] * len(WORDS))
    assert str(info.value) == (
        f"cannot use the state store at {url}?prefix={prefix}-2: WAIT 2 500 on node {hostport(url)}: 1 of 2 "
        f"replicas acknowledged the writes within 500 ms, so they are not safe from a failover "
        f"(wait_replicas=2); the batch is retried within the outage budget. Check that the node's replicas "
        f"run and are connected (INFO replication on {hostport(url)} lists them), or lower wait_replicas or "
        f"raise wait_timeout")
    replica.stop(grace=0.0)
    lonely = RedisState.opaque(url=url, key_prefix=prefix + "-3", wait_replicas=1, wait_timeout=0.1)
    with lonely.open() as state, pytest.raises(ReplicasNotAcknowledgedError) as info:
        state.multiUpdate(0, WORDS, [add(1)] * len(WORDS))
    assert (info.value.asked, info.value.acknowledged) == (1, 0)
