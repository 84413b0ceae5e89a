"""bench/scale.py's one run, in a process of its own: the word count on a Spark standalone cluster
with a given number of 1-core executors, into Redis (one node or a cluster), with the store's
CPU measured from the nodes' own counters.

A fresh process per run: a SparkSession's executors are fixed when it starts, so each cluster
shape needs its own application. Called as ``python bench/scale_run.py SPEC_JSON OUT_JSON``.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any


def redis_cpu_seconds(urls: list[str]) -> float:
    """CPU seconds (user + system) the Redis servers at ``urls`` have spent, from ``INFO cpu``."""
    import redis

    total = 0.0
    for url in urls:
        client = redis.Redis.from_url(url)
        try:
            info = client.info("cpu")
        finally:
            client.close()
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """One run of ``spec``: ``master``, ``executors``, ``bootstrap``, ``topic``, ``batch``,
    ``store_url``, ``store_nodes`` (URLs), ``cluster`` (bool), ``sentences``/``vocabulary``/
    ``zipf`` (to check the counts: the topic holds the first ``take`` of those sentences)."""
    from dsl import spout_for
    from state_runs import check_store, run_backend
    from state_workload import make_sentences, make_vocabulary

    from trident_spark.runtime.session import local_session
    from trident_spark.state import RedisState

    executors = int(spec["executors"])
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver listens on loopback only, as the cluster
    conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.cores.max": str(executors), "spark.executor.cores": "1",
            "spark.executor.memory": "1g", "spark.sql.shuffle.partitions": str(spec["shuffle_partitions"]),
            "spark.ui.enabled": "true"}
    spark = local_session(f"bench-scale-{executors}x1", master=spec["master"], conf=conf)
    try:
        # Wait until every executor has registered: a run that starts on one of two would measure one.
        jvm_status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
        import time

        deadline = time.monotonic() + 120
        while jvm_status.size() - 1 < executors:  # the driver is one of the entries
            if time.monotonic() > deadline:
                raise SystemExit(f"only {jvm_status.size() - 1} of {executors} executors registered")
            time.sleep(0.5)
            jvm_status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus()
        spout = spout_for(spec["bootstrap"], spec["topic"], int(spec["batch"]))
        prefix = f"wc-{uuid.uuid4().hex[:10]}"
        factory = RedisState.opaque(url=spec["store_url"], key_prefix=prefix, cluster=bool(spec["cluster"]))
        cpu_before = redis_cpu_seconds(spec["store_nodes"])
        result = run_backend(spark, spout, factory)
        result["store_cpu_s"] = redis_cpu_seconds(spec["store_nodes"]) - cpu_before
        vocabulary = make_vocabulary(int(spec["vocabulary"]))
        sentences = make_sentences(int(spec["sentences"]), vocabulary, float(spec["zipf"]))
        sentences = sentences[:int(spec.get("take", len(sentences)))]
        check_store(factory, vocabulary, Counter(w for s in sentences for w in s.split()))
        result["checked"] = True
        result["executors_registered"] = executors
        return result
    finally:
        spark.stop()


def main() -> int:
    spec = json.loads(sys.argv[1])
    out = Path(sys.argv[2])
    out.write_text(json.dumps(run(spec)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
