"""The scale model's constants, measured, and its predictions checked against runs (issue 32, item 4).

Not a test: it prints measured rates beside the model's predictions. On real parts started here
(Apache Kafka, one redis-server, a 3-primary Redis Cluster, a Spark standalone master with two
workers of 1 core each), the word count (built-in ``Split``, ``Count`` into
``RedisState.opaque``) reads a topic of ``--sentences`` sentences over ``--partitions``
partitions, each run a Spark application of its own (bench/scale_run.py):

* **the constants** come from the runs on 1 executor core into 1 Redis node (the calibration
  shape): the per-partition read rate (records over the spout's read task time, the ``source``
  stage of the run's own metrics: the spout reading alone), the per-core operation rate
  (records over all task time per core: read, operations, state client, Spark's share), the
  per-node write rate (keys written over the Redis server's own CPU seconds, ``INFO cpu``: a
  node is one thread, so one CPU second is what a node has per second), keys written per
  record, and the per-batch fixed cost (the median of a batch's wall time less its task time);
  a run with tiny batches (``--tiny-batch`` records, where the records cost next to nothing)
  checks the fixed cost;
* **the check**: every shape (1 and 2 executor cores, 1 Redis node and a 3-primary cluster),
  ``--rounds`` runs each, interleaved (odd rounds in order, even rounds reversed), the steady
  rate (median over a run's batches after the first ``--warm-batches``) against the model's
  prediction from the constants (trident_spark.tuning.scale_model), with each shape's spread.

The machine has 2 cores: the driver, the broker, the store's nodes and the executors share
them, so 2 executor cores are not 2 free cores, and 3 Redis nodes share the same CPU as 1.
Results: ``bench/results/scale-<timestamp>.json``; the model's inputs as
``trident-spark tune --size-for`` reads them: ``bench/results/scale-constants-<timestamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import uuid
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench_results import RESULTS_DIR
from dsl import fill_topic, wait_readable
from rich.console import Console
from scale_cluster import add_worker
from scale_report import constants_from, report
from state_workload import make_sentences, make_vocabulary

console = Console()
HERE = Path(__file__).resolve().parent
SHAPES = (("1 core, 1 node", 1, "single"), ("2 cores, 1 node", 2, "single"),
          ("1 core, 3 nodes", 1, "cluster"), ("2 cores, 3 nodes", 2, "cluster"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=25_000, help="max_offsets_per_trigger (default 25,000)")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--vocabulary", type=int, default=10_000)
    parser.add_argument("--zipf", type=float, default=1.1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warm-batches", type=int, default=2)
    parser.add_argument("--tiny-batch", type=int, default=200, help="records per batch of the fixed-cost run")
    parser.add_argument("--tiny-sentences", type=int, default=4_000)
    parser.add_argument("--run-timeout", type=float, default=600.0)
    parser.add_argument("--report", metavar="RESULTS_JSON",
                        help="run nothing: recompute the constants and the table of a saved results file")
    return parser.parse_args(argv)


def run_one(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One run in a process of its own (bench/scale_run.py); its result."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = Path(out.name)
    try:
        done = subprocess.run([sys.executable, str(HERE / "scale_run.py"), json.dumps(spec), str(path)],
                              cwd=HERE, timeout=timeout, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"run {spec['label']} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(path.read_text())
        return result
    finally:
        path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    from trident_spark.local.cluster import StandaloneCluster
    from trident_spark.local.redis_cluster import start_redis_cluster
    from trident_spark.local.services import start_kafka, start_redis

    args = parse_args(argv)
    if args.report:
        saved = json.loads(Path(args.report).read_text())
        saved["constants"] = constants_from(saved)
        saved["report"] = report(saved, console)
        Path(args.report).write_text(json.dumps(saved, indent=2))
        saved_path = Path(args.report)
        constants_out = saved_path.with_name(saved_path.name.replace("scale-", "scale-constants-"))
        constants_out.write_text(json.dumps(saved["constants"], indent=2))
        console.print(f"results: {args.report}, constants: {constants_out}")
        return 0
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    setup = {"sentences": args.sentences, "batch": args.batch, "partitions": args.partitions,
             "vocabulary": args.vocabulary, "zipf": args.zipf, "rounds": args.rounds,
             "warm_batches": args.warm_batches, "tiny_batch": args.tiny_batch,
             "tiny_sentences": args.tiny_sentences, "cpu_count": os.cpu_count(),
             "machine": platform.platform(), "load_average_at_start": os.getloadavg(), "started": stamp}
    console.print(f"[bold]Scale benchmark[/] - {os.cpu_count()} cores, load average "
                  f"{os.getloadavg()[0]:.1f}")
    with ExitStack() as stack:
        kafka = stack.enter_context(start_kafka())
        single = stack.enter_context(start_redis())
        cluster = stack.enter_context(start_redis_cluster(primaries=3))
        spark = stack.enter_context(StandaloneCluster(cores=1, memory="2g"))
        stack.enter_context(add_worker(spark, cores=1, memory="2g"))
        console.print(f"services: kafka {kafka.address}, redis {single.address}, redis cluster "
                      f"{', '.join(cluster.primaries)}, spark {spark.master_url} (2 workers x 1 core)")
        vocabulary = make_vocabulary(args.vocabulary)
        sentences = make_sentences(args.sentences, vocabulary, args.zipf)
        topic, tiny_topic = f"bench-scale-{uuid.uuid4().hex[:6]}", f"bench-scale-tiny-{uuid.uuid4().hex[:6]}"
        fill_topic(kafka.address, topic, sentences, args.partitions)
        wait_readable(kafka.address, topic, args.partitions, len(sentences))
        tiny = sentences[:args.tiny_sentences]
        fill_topic(kafka.address, tiny_topic, tiny, args.partitions)
        wait_readable(kafka.address, tiny_topic, args.partitions, len(tiny))

        def spec(label: str, executors: int, store: str, *, small: bool = False) -> dict[str, Any]:
            return {"label": label, "master": spark.master_url, "executors": executors,
                    "bootstrap": kafka.address, "topic": tiny_topic if small else topic,
                    "batch": args.tiny_batch if small else args.batch,
                    "shuffle_partitions": args.partitions,
                    "store_url": single.address if store == "single" else cluster.url,
                    "store_nodes": [single.address] if store == "single" else list(cluster.primaries),
                    "cluster": store == "cluster", "sentences": len(sentences),
                    "take": len(tiny) if small else len(sentences),
                    "vocabulary": args.vocabulary, "zipf": args.zipf}

        runs: list[dict[str, Any]] = []
        console.print("warm-up run (not counted) ...")
        run_one(spec("warm-up", 1, "single", small=True), args.run_timeout)
        console.print(f"fixed-cost run: batches of {args.tiny_batch} records ...")
        fixed = run_one(spec("tiny batches", 1, "single", small=True), args.run_timeout)
        fixed["label"] = "tiny batches"
        runs.append(fixed)
        for round_no in range(args.rounds):
            order = SHAPES if round_no % 2 == 0 else tuple(reversed(SHAPES))
            for label, executors, store in order:
                result = run_one(spec(label, executors, store), args.run_timeout)
                result |= {"label": label, "executors": executors, "store": store, "round": round_no + 1}
                runs.append(result)
                steady = [b for b in result["batches"][args.warm_batches:]]
                rate = sum(b["rows"] for b in steady) * 1000 / max(1.0, sum(b["ms"] for b in steady))
                console.print(f"round {round_no + 1}: {label}: {result['records']:,} records in "
                              f"{result['seconds']:.1f} s, steady {rate:,.0f} records/s, store CPU "
                              f"{result['store_cpu_s']:.2f} s, load {os.getloadavg()[0]:.1f}")
    result = {"setup": setup, "runs": runs}
    constants = constants_from(result)
    result["constants"] = constants
    result["report"] = report(result, console)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"scale-{stamp}.json"
    out.write_text(json.dumps(result, indent=2))
    (RESULTS_DIR / f"scale-constants-{stamp}.json").write_text(json.dumps(constants, indent=2))
    console.print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
