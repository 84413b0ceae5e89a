"""Driver program for the engine="jvm" driver-kill test: a word count over Spark's own Kafka source
into an opaque SQLite state, SIGKILLed inside batch KILL_AT, once.

Usage: jvm_kill_driver.py BOOTSTRAP TOPIC CHECKPOINT OUT_DIR KILL_AT

Inside ``foreachBatch``, after the batch's state writes, its offsets are in the checkpoint's offset
log and not yet in its commit log: the restarted driver replays it with the same offsets, and the
opaque state's txids make the replay change nothing.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from trident_spark import TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.runtime.session import local_session
from trident_spark.spout import KafkaSpout
from trident_spark.state import SqliteState


def main() -> None:
    bootstrap, topic, checkpoint, out, kill_at = sys.argv[1:6]
    out_dir = Path(out)
    spark = local_session("jvm-kill-driver", master="local[2]", conf={"spark.sql.shuffle.partitions": "2"},
                          kafka_connector=True)
    jvm_pid = spark.sparkContext._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
    (out_dir / f"jvm-{os.getpid()}").write_text(str(jvm_pid))

    topology = TridentTopology()
    spout = KafkaSpout(bootstrap, [topic], max_offsets_per_trigger=300, engine="jvm")
    stream = topology.newStream("wc", spout)
    state = SqliteState.opaque(path=str(out_dir / "counts.db"), table="wc")
    stream.each(["value"], Split(), ["word"]).groupBy(["word"]).persistentAggregate(state, Count(), ["count"])
    sink = stream.project(["partition", "offset"]).collect()
    record = sink.record

    def record_then_maybe_die(txid: int, tuples: list[dict[str, Any]]) -> None:
        record(txid, tuples)
        rows = sorted([t["partition"], t["offset"]] for t in tuples)
        (out_dir / f"batch-{txid}-{os.getpid()}.json").write_text(json.dumps(rows))
        marker = out_dir / "killed"
        if txid == int(kill_at) and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)

    sink.record = record_then_maybe_die  # type: ignore[method-assign]
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    handle.awaitTermination()
    handle.stop()
    spark.stop()


if __name__ == "__main__":
    main()
