"""The word-count example on a Spark cluster of containers: a master and two workers, each in its own
container, the driver in an app container (``spark-submit examples/wordcount.py``), the broker and
Redis in theirs (docker/docker-compose.host.yml, host network). The counts in Redis are exact."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.integration.containers.conftest import ComposeCluster, explain
from trident_spark.local.kafka import create_topic, produce
from trident_spark.state import parse_state_url

pytestmark = [pytest.mark.integration, pytest.mark.containers]

SENTENCES = 3000


def load_corpus(cluster: ComposeCluster, topic: str, count: int = SENTENCES) -> Counter[str]:
    """Put ``count`` sample sentences in ``topic`` (4 partitions); return the words they hold."""
    from examples.wordcount import WORD
    from trident_spark.cli.demo import corpus

    sentences = corpus(count)
    create_topic(cluster.kafka, topic, partitions=4, exist_ok=True)
    produce(cluster.kafka, topic, [(None, s.encode(), i % 4) for i, s in enumerate(sentences)])
    return Counter(w for s in sentences for w in WORD.findall(s.lower()))


def redis_counts(cluster: ComposeCluster) -> dict[str, int]:
    from examples.wordcount import word_counts

    return dict(word_counts(parse_state_url(f"{cluster.redis}?prefix=wc&type=opaque")))


def test_wordcount_on_a_cluster_of_containers_counts_exactly(compose_cluster: ComposeCluster) -> None:
    cluster = compose_cluster
    expected = load_corpus(cluster, "sentences")

    done = cluster.compose("run", "--rm", "--no-deps", "app", timeout=480, check=False,
                           extra_env={"WORDCOUNT_MAX_FETCH_BYTES": "30000"})
    assert done.returncode == 0, explain(f"{done.stdout}\n{done.stderr}")

    result = json.loads((cluster.shared / "counts.json").read_text())
    assert result["master"] == cluster.master
    assert result["batches"] > 1
    assert result["counts"] == dict(expected)
    # Read again from the host: the executors in the worker containers wrote them to Redis.
    assert redis_counts(cluster) == dict(expected)
    # The checkpoint is on the shared volume, not in the driver container's /tmp.
    assert (cluster.shared / "checkpoint" / "wordcount" / "offsets").is_dir()
    # Both worker containers ran an executor of the app.
    for port in ("SPARK_WORKER_1_WEBUI_PORT", "SPARK_WORKER_2_WEBUI_PORT"):
        worker = cluster.json(port)
        assert worker["finishedexecutors"] or worker["executors"], worker
