"""Driver program of the dead-letter kill test: Avro records in wire format with a Schema Registry,
malformed ones to a dead-letter topic; the driver SIGKILLs itself once, after batch 0's read
tasks sent their dead letters and before the batch is committed.

Run as ``python dead_letter_driver.py CONFIG.json``; the config holds ``bootstrap``, ``topic``,
``dead_letter_topic``, ``registry``, ``checkpoint``, ``out`` (a directory) and ``run`` (this
start's number). The users read are written to ``out/users-<run>.json`` when the run ends.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from tests.driver_processes import run_to_the_end
from trident_spark import TridentTopology
from trident_spark.operation import BaseFunction
from trident_spark.runtime.session import local_session
from trident_spark.spout import KafkaSpout


class KillOnce(BaseFunction):
    """The user of a click; the first call of all starts SIGKILLs the driver (a marker file,
    created exclusively, says it was done)."""

    def __init__(self, out: str) -> None:
        self.out = out

    def execute(self, tuple, collector):
        try:
            with open(Path(self.out) / "killed", "x") as marker:
                marker.write(str(os.getpid()))
        except FileExistsError:
            collector.emit([tuple.getValue(0)["user"]])
            return
        os.kill(int(os.environ["DL_DRIVER_PID"]), signal.SIGKILL)


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    os.environ["DL_DRIVER_PID"] = str(os.getpid())  # before the JVM and its workers start
    spark = local_session("dead-letter-driver", master="local[2]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    spout = KafkaSpout(config["bootstrap"], [config["topic"]], value_format="avro",
                       schema_registry_url=config["registry"], on_malformed="dead_letter",
                       dead_letter_topic=config["dead_letter_topic"])
    topology = TridentTopology()
    sink = (topology.newStream("clicks", spout).shuffle()
            .each(["value"], KillOnce(config["out"]), ["user"]).collect())
    run_to_the_end(topology, config["checkpoint"], spark, f"dead-letter driver run {config['run']}")
    users = sorted(t["user"] for t in sink.tuples)
    (Path(config["out"]) / f"users-{config['run']}.json").write_text(json.dumps(users))


if __name__ == "__main__":
    main()
