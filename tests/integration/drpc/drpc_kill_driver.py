"""A driver serving DRPC function ``slow`` of a separate DRPC server (argv: host:port, marker
directory): the operation writes ``<marker>/taken`` and sleeps, so the test can SIGKILL the driver
while a caller waits for an answer."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from trident_spark import TridentTopology
from trident_spark.operation import BaseFunction
from trident_spark.runtime.session import local_session


class Slow(BaseFunction):
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def execute(self, tuple: Any, collector: Any) -> None:
        Path(self.marker, "taken").write_text(tuple.getString(0))
        time.sleep(600)
        collector.emit(["never"])


def main() -> None:
    address, marker = sys.argv[1], sys.argv[2]
    spark = local_session(
        "drpc-kill-driver",
        master="local[1]",
        conf={"spark.sql.shuffle.partitions": "1", "spark.ui.enabled": "false"},
    )
    topology = TridentTopology()
    topology.newDRPCStream("slow", address).each(["args"], Slow(marker), ["out"])
    handle = topology.run(Path(marker) / "ckpt", spark=spark)
    Path(marker, "running").write_text("")
    handle.awaitTermination()


if __name__ == "__main__":
    main()
