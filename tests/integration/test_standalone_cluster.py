"""The word-count example with spark-submit on a standalone master + worker equals local mode:
the counts its state holds afterwards are exact in both."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from trident_spark.local.cluster import StandaloneCluster
from trident_spark.local.kafka import produce

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

ROOT = Path(__file__).parents[2]


def test_spark_submit_on_a_standalone_cluster_equals_local_mode(spark, kafka_bootstrap, new_topic, tmp_path):
    from examples.wordcount import WORD, build_topology, word_counts, word_state
    from trident_spark.cli.demo import corpus

    topic = new_topic(partitions=4)
    sentences = corpus(2000)
    produce(kafka_bootstrap, topic, [(None, s.encode(), i % 4) for i, s in enumerate(sentences)])

    # Local mode, in this process, into the example's default state: an opaque SQLite file.
    state = word_state(None, tmp_path / "local")
    topology = build_topology(kafka_bootstrap, topic, state, max_fetch_bytes=30_000)
    handle = topology.run(checkpoint_location=tmp_path / "local", trigger="available_now", spark=spark)
    handle.awaitTermination(180)
    handle.stop()
    local_counts = dict(word_counts(state))
    local_batches = [p.txid for p in handle.progress if p.stream == "wordcount"]

    # The same example, submitted to a master with one worker (separate executor JVM and Python workers).
    output = tmp_path / "cluster.json"
    with StandaloneCluster(cores=2, memory="1g") as cluster:
        done = cluster.submit(ROOT / "examples" / "wordcount.py", [
            "--bootstrap", kafka_bootstrap, "--topic", topic, "--checkpoint", str(tmp_path / "cluster"),
            "--output", str(output), "--max-fetch-bytes", "30000",
        ], timeout=300)
        assert done.returncode == 0, done.stderr[-4000:]
        master = cluster.master_url
    result = json.loads(output.read_text())

    expected = Counter(w for s in sentences for w in WORD.findall(s.lower()))
    assert local_counts == expected
    assert result["master"] == master
    # The executors wrote the counts into the SQLite file in the cluster's checkpoint directory.
    assert result["state"] == f"sqlite://{tmp_path / 'cluster' / 'wordcount.db'}?table=counts&type=opaque"
    assert result["counts"] == local_counts
    assert result["batches"] == len(local_batches) > 1
