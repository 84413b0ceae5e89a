"""bench/scale.py's second Spark worker: one more ``Worker`` process joining a running
StandaloneCluster's master, so the cluster offers two 1-core workers (two "machines")."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from trident_spark.local.process import LocalProcess, free_port, wait_until


def _alive(web_ui: str) -> int:
    try:
        with urllib.request.urlopen(f"{web_ui}/json/", timeout=2.0) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except OSError:
        return 0


@contextmanager
def add_worker(cluster: Any, *, cores: int = 1, memory: str = "2g") -> Iterator[LocalProcess]:
    """Start one more worker for ``cluster`` (a started StandaloneCluster); stop it on exit."""
    before = _alive(cluster.web_ui_url)
    work = cluster.log_dir / "work-2"
    worker = LocalProcess(
        "spark-worker-2",
        [str(cluster.spark_home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker",
         cluster.master_url, "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
         "--webui-port", str(free_port()), "--work-dir", str(work)],
        log_path=cluster.log_dir / "worker-2.log", env=cluster._env(), cwd=cluster.log_dir)
    try:
        wait_until(lambda: _alive(cluster.web_ui_url) > before, timeout=120, process=worker,
                   what=f"a second spark worker registering with {cluster.master_url}", interval=0.5)
        yield worker
    finally:
        worker.stop(grace=15.0)
