"""Driver program of the instance-host hijack test: a word count whose cached state runs in instance hosts.

Usage: private_hosts_driver.py CONFIG_JSON

Runs in a process of its own because its Spark workers must see the TMPDIR (and XDG_RUNTIME_DIR)
the test gives it, which the shared test session's workers were started without. CONFIG_JSON
holds ``out`` (where ``result.json`` goes), ``batches`` (lists of sentences, one list a batch).
The result: ``{"error": the run's error or null, "counts": {word: count}}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import BaseFunction
from trident_spark.runtime.session import local_session
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState, open_state


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.getString(0).split():
            collector.emit([word])


def main(config: dict[str, Any]) -> None:
    out = Path(config["out"])
    db = out / "counts.db"
    spark = local_session("private-hosts", master="local[2]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    topology = TridentTopology()
    sentences = FeederBatchSpout(["sentence"], num_partitions=2)
    (topology.newStream("sentences", sentences)
     .each(["sentence"], Split(), ["word"])
     .groupBy(["word"])
     .persistentAggregate(SqliteState.opaque(path=str(db), table="counts"), Count(), ["count"]))
    for batch in config["batches"]:
        sentences.feed([[sentence] for sentence in batch])
    handle = topology.run(checkpoint_location=str(out / "ckpt"), trigger="available_now", spark=spark)
    try:
        handle.awaitTermination(300)
        failure = handle.exception()
    except Exception as raised:  # the query's error, as the driver raises it
        failure = raised
    handle.stop()
    spark.stop()
    words = sorted({w for batch in config["batches"] for s in batch for w in s.split()})
    counts: dict[str, Any] = {}
    if failure is None:
        state = open_state(f"sqlite:///{db}?table=counts&type=opaque")
        counts = dict(zip(words, state.multiGet([[w] for w in words]), strict=True))
    error = None if failure is None else f"{type(failure).__name__}: {failure}"
    (out / "result.json").write_text(json.dumps({"error": error,
                                                 "counts": counts}))


if __name__ == "__main__":
    main(json.loads(Path(sys.argv[1]).read_text()))
