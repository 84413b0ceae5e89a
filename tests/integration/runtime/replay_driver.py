"""Driver program for the replay test: SIGKILLs itself inside batch KILL_AT, once.

Usage: replay_driver.py BOOTSTRAP TOPIC CHECKPOINT OUT_DIR KILL_AT

Inside ``foreachBatch`` the batch's offsets are already in the checkpoint's
offset log and not yet in its commit log: dying there is the moment Trident's
transactional spout guarantee is about.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from trident_spark import TridentTopology
from trident_spark.runtime.session import local_session
from trident_spark.spout import KafkaSpout


def main() -> None:
    bootstrap, topic, checkpoint, out, kill_at = sys.argv[1:6]
    out_dir = Path(out)
    spark = local_session("replay-driver", master="local[2]", conf={"spark.sql.shuffle.partitions": "2"})
    jvm_pid = spark.sparkContext._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
    (out_dir / f"jvm-{os.getpid()}").write_text(str(jvm_pid))

    topology = TridentTopology()
    sink = topology.newStream("replay", KafkaSpout(bootstrap, [topic], max_offsets_per_trigger=300)).collect()
    record = sink.record

    def record_then_maybe_die(txid: int, tuples: list[dict]) -> None:
        record(txid, tuples)
        rows = [[t["partition"], t["offset"], t["value"]] for t in tuples]
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
