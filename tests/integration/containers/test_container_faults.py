"""Faults across containers during the word count on a cluster of containers, each ending in exact
counts: a worker container SIGKILLed mid-run, the Redis container restarted (its append-only file on a
volume), the broker container paused for 20 s, the driver container killed and the job submitted
again from the same checkpoint on the shared volume."""

from __future__ import annotations

import time

import pytest

from tests.integration.containers.conftest import ComposeCluster, explain
from tests.integration.containers.test_compose_cluster import load_corpus, redis_counts

pytestmark = [pytest.mark.integration, pytest.mark.containers]

SENTENCES = 12_000
# Small batches (about 20 of them), so that each fault lands in the middle of the run.
APP_ENV = {"WORDCOUNT_MAX_FETCH_BYTES": "20000"}


def run_with_fault(cluster: ComposeCluster, fault, after_batches: int = 2) -> str:  # type: ignore[no-untyped-def]
    """Start the app, inject ``fault(cluster)`` once ``after_batches`` batches have committed, wait for
    the app to end; return its output. Fails when the app ended before the fault could be injected."""
    app = cluster.start_app("app1", APP_ENV)
    deadline = time.monotonic() + 300
    while cluster.committed_batches() < after_batches:
        running = cluster.docker("inspect", "-f", "{{.State.Running}}", app).stdout.strip()
        assert running == "true", f"the app ended before the fault:\n{cluster.wait_app(app)[1]}"
        assert time.monotonic() < deadline, "no batch committed in 300 s"
        time.sleep(0.2)
    fault(cluster, app)
    status, output = cluster.wait_app(app)
    assert status == 0, output
    return output


def assert_exact(cluster: ComposeCluster, expected: dict[str, int]) -> None:
    import json

    assert redis_counts(cluster) == expected
    result = json.loads((cluster.shared / "counts.json").read_text())
    assert result["counts"] == expected


def test_a_worker_container_sigkilled_mid_run(compose_cluster: ComposeCluster) -> None:
    cluster = compose_cluster
    expected = dict(load_corpus(cluster, "sentences", SENTENCES))

    worker = cluster.container("spark-worker-1")

    def kill_worker(cluster: ComposeCluster, app: str) -> None:
        done = cluster.docker("kill", "-s", "KILL", worker)
        assert done.returncode == 0, done.stderr

    run_with_fault(cluster, kill_worker)
    assert_exact(cluster, expected)
    # The batches after the kill ran on the other worker alone.
    assert cluster.docker("inspect", "-f", "{{.State.Running}}", worker).stdout.strip() == "false"


@pytest.mark.parametrize("compose_cluster", [{"REDIS_APPENDONLY": "yes"}], indirect=True)
def test_the_redis_container_restarted_mid_run(compose_cluster: ComposeCluster) -> None:
    cluster = compose_cluster
    expected = dict(load_corpus(cluster, "sentences", SENTENCES))

    def restart_redis(cluster: ComposeCluster, app: str) -> None:
        # -t 0: killed, not shut down cleanly; the append-only file (fsync always) is all it keeps.
        done = cluster.docker("restart", "-t", "0", cluster.container("redis"))
        assert done.returncode == 0, done.stderr

    run_with_fault(cluster, restart_redis)
    assert_exact(cluster, expected)


def test_the_broker_container_paused_for_20_s(compose_cluster: ComposeCluster) -> None:
    cluster = compose_cluster
    expected = dict(load_corpus(cluster, "sentences", SENTENCES))

    def pause_broker(cluster: ComposeCluster, app: str) -> None:
        kafka = cluster.container("kafka")
        assert cluster.docker("pause", kafka).returncode == 0
        time.sleep(20)
        assert cluster.docker("unpause", kafka).returncode == 0

    run_with_fault(cluster, pause_broker)
    assert_exact(cluster, expected)


def test_the_driver_container_killed_and_resubmitted_from_its_checkpoint(
    compose_cluster: ComposeCluster,
) -> None:
    cluster = compose_cluster
    expected = dict(load_corpus(cluster, "sentences", SENTENCES))

    app = cluster.start_app("driver1", APP_ENV)
    deadline = time.monotonic() + 300
    while cluster.committed_batches() < 3:
        assert time.monotonic() < deadline, "no batch committed in 300 s"
        time.sleep(0.2)
    assert cluster.docker("kill", "-s", "KILL", app).returncode == 0
    status, _ = cluster.wait_app(app)
    assert status != 0
    killed_at = cluster.committed_batches()
    assert not (cluster.shared / "counts.json").exists()

    # The same job again, from the checkpoint the first driver left on the shared volume.
    done = cluster.compose("run", "--rm", "--no-deps", "app", timeout=480, check=False, extra_env=APP_ENV)
    assert done.returncode == 0, explain(f"{done.stdout}\n{done.stderr}")
    assert_exact(cluster, expected)
    assert cluster.committed_batches() > killed_at
