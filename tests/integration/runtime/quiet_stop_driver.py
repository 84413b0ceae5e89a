"""Driver program of the quiet-stop test: ``run()`` then ``handle.stop()`` as a notebook or script does.

Usage: quiet_stop_driver.py OUT_DIR own|library

``own``: the program builds its SparkSession itself (``SparkSession.builder...getOrCreate()``, as a
notebook does), so Spark logs with its own log4j2 configuration; ``library``: ``run()`` builds it.
Two runs are started, each waits for its batches and is stopped. Then a warning of Spark's
DAGScheduler logger that is not the job group's is logged, to show the logger still speaks.
Lines ``stopped N`` and ``done`` on stderr mark the steps; whether IPython was imported is printed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trident_spark import TridentTopology
from trident_spark.spout import FixedBatchSpout


def main(out: Path, session: str) -> None:
    spark = None
    if session == "own":
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    for run in range(2):
        topology = TridentTopology()
        topology.newStream("words", FixedBatchSpout(["word"], 2, ["a"], ["b"], ["c"])).collect()
        handle = topology.run(out / f"ck{run}", spark=spark)
        handle.processAllAvailable()
        handle.stop()
        print(f"stopped {run} after {sum(batch.rows for batch in handle.progress)} rows", file=sys.stderr,
              flush=True)
        spark = handle.spark
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.LogManager.getLogger("org.apache.spark.scheduler.DAGScheduler").warn(
        "a warning of the DAGScheduler that is no job group's")
    print(f"IPython imported: {'IPython' in sys.modules}", file=sys.stderr, flush=True)
    spark.stop()
    print("done", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
