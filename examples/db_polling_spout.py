"""A transactional spout of your own: poll SQLite tables by an increasing id, count the words.

The source is a SQLite database with one table per shard (``sentences_0``, ``sentences_1``,
...), each ``(id INTEGER PRIMARY KEY, sentence TEXT)``, rows only ever appended. Each table
is one partition of :class:`DbPollingSpout`, an ``IPartitionedTridentSpout``:

* a new batch of a table is the next ``max_rows`` rows after the previous batch, and its
  metadata is the id range it covers, ``{"from_id": 11, "to_id": 20}``;
* a batch emitted again (after a driver restart, from the metadata Spark logged with it)
  selects that exact range again: the same rows, so the batch is the same batch.

The words are counted into a transactional SQLite state (``--state-type opaque`` for an
opaque one): each batch's counts are applied once, whatever restarts happen.

Run it:

* ``trident-spark run examples/db_polling_spout.py --available-now`` (calls
  ``build_topology()``: the database ``DB_POLLING_DB``, by default
  ``checkpoints/db_polling_spout/source.db``, filled with sample sentences when it does not
  exist; the counts in ``counts.db`` beside it);
* ``python examples/db_polling_spout.py --db source.db --checkpoint /tmp/dbp --load-sample 200``
  (reads what the tables hold now, prints the top words);
* from Python: ``build_topology(db_path, state)``.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import BaseFunction
from trident_spark.spout import IPartitionedTridentSpout, ISpoutPartition
from trident_spark.state import SqliteState, StateFactory, open_state

WORD = re.compile(r"[a-z]+(?:['-][a-z]+)*")
TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Shard(ISpoutPartition):
    """One table of the source: a partition of the spout."""

    def __init__(self, table: str) -> None:
        self.table = table

    def getId(self) -> str:
        return self.table

    def __repr__(self) -> str:
        return f"Shard({self.table!r})"


class ShardLister(IPartitionedTridentSpout.Coordinator):
    """Lists the source's tables whose names start with the prefix (driver, once per new batch)."""

    def __init__(self, db_path: str, prefix: str) -> None:
        self.db_path = db_path
        self.prefix = prefix

    def getPartitionsForBatch(self) -> list[str]:
        with sqlite3.connect(self.db_path) as db:
            names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return sorted(n for n in names if n.startswith(self.prefix) and TABLE.fullmatch(n))


class RangeEmitter(IPartitionedTridentSpout.Emitter):
    """Emits a table's rows by id range: the next ``max_rows`` rows, or a logged range again."""

    def __init__(self, db_path: str, max_rows: int) -> None:
        self.db_path = db_path
        self.max_rows = max_rows
        self.db: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self.db is None:
            self.db = sqlite3.connect(self.db_path)
        return self.db

    def getOrderedPartitions(self, all_partition_info: list[str]) -> list[Shard]:
        return [Shard(table) for table in all_partition_info]

    def emitPartitionBatchNew(self, tx: Any, collector: Any, partition: Shard,
                              last_partition_meta: dict[str, int] | None) -> dict[str, int]:
        """The next rows after the last batch's range; returns the range they cover."""
        from_id = last_partition_meta["to_id"] + 1 if last_partition_meta else 1
        (to_id,) = self._db().execute(
            f"SELECT max(id) FROM (SELECT id FROM {partition.table} WHERE id >= ? ORDER BY id LIMIT ?)",
            (from_id, self.max_rows)).fetchone()
        meta = {"from_id": from_id, "to_id": from_id - 1 if to_id is None else to_id}
        self.emitPartitionBatch(tx, collector, partition, meta)
        return meta

    def emitPartitionBatch(self, tx: Any, collector: Any, partition: Shard,
                           partition_meta: dict[str, int]) -> None:
        """Exactly the rows of the range ``partition_meta`` (rows are only appended: the same rows)."""
        rows = self._db().execute(
            f"SELECT sentence FROM {partition.table} WHERE id BETWEEN ? AND ? ORDER BY id",
            (partition_meta["from_id"], partition_meta["to_id"]))
        for (sentence,) in rows:
            collector.emit([sentence])

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


class DbPollingSpout(IPartitionedTridentSpout):
    """Polls the tables ``<prefix>*`` of the SQLite file ``db_path``, ``max_rows`` rows per table and batch.

    Examples
    --------
    >>> spout = DbPollingSpout("/tmp/source.db", max_rows=50)
    >>> spout.getOutputFields()
    ['sentence']
    """

    def __init__(self, db_path: str, prefix: str = "sentences_", max_rows: int = 100) -> None:
        self.db_path = str(db_path)
        self.prefix = prefix
        self.max_rows = max_rows

    def getCoordinator(self, conf: dict[str, Any], context: Any) -> ShardLister:
        return ShardLister(self.db_path, self.prefix)

    def getEmitter(self, conf: dict[str, Any], context: Any) -> RangeEmitter:
        return RangeEmitter(self.db_path, self.max_rows)

    def getOutputFields(self) -> list[str]:
        return ["sentence"]


class Split(BaseFunction):
    """Emit each lower-cased word of the sentence."""

    def execute(self, tuple: Any, collector: Any) -> None:
        for word in WORD.findall(tuple.getString(0).lower()):
            collector.emit([word])


def load_sentences(db_path: str | os.PathLike[str], sentences: list[str], shards: int = 2,
                   prefix: str = "sentences_") -> None:
    """Append ``sentences`` to the tables ``<prefix>0`` .. ``<prefix><shards - 1>``, round robin."""
    with sqlite3.connect(db_path) as db:
        for shard in range(shards):
            db.execute(f"CREATE TABLE IF NOT EXISTS {prefix}{shard} (id INTEGER PRIMARY KEY, sentence TEXT)")
        for i, sentence in enumerate(sentences):
            db.execute(f"INSERT INTO {prefix}{i % shards} (sentence) VALUES (?)", (sentence,))


def word_state(path: str | os.PathLike[str], state_type: str = "transactional") -> StateFactory:
    """The word counts: a SQLite state of ``state_type`` (transactional or opaque), table ``counts``."""
    make = SqliteState.opaque if state_type == "opaque" else SqliteState.transactional
    return make(path=str(Path(path).resolve()), table="counts")


def build_topology(db_path: str | os.PathLike[str] | None = None, state: StateFactory | None = None,
                   max_rows: int = 100) -> TridentTopology:
    """The word count of the sentences polled from ``db_path``'s tables, into ``state``.

    Without ``db_path`` (as ``trident-spark run`` calls it): the database ``DB_POLLING_DB``, by
    default ``checkpoints/db_polling_spout/source.db``, filled with 500 sample sentences when it
    does not exist. Without ``state``: a transactional SQLite state ``counts.db`` beside it.
    """
    if db_path is None:
        default = Path("checkpoints") / "db_polling_spout" / "source.db"
        db_path = Path(os.environ.get("DB_POLLING_DB", default))
        if not db_path.exists():
            from trident_spark.cli.demo import corpus

            db_path.parent.mkdir(parents=True, exist_ok=True)
            load_sentences(db_path, corpus(500))
    if state is None:
        state = word_state(Path(db_path).parent / "counts.db")
    topology = TridentTopology()
    (topology.newStream("db_polling", DbPollingSpout(str(db_path), max_rows=max_rows))
     .each(["sentence"], Split(), ["word"]).name("split")
     .groupBy(["word"])
     .persistentAggregate(state, Count(), ["count"]))
    return topology


def word_counts(state: StateFactory) -> Counter[str]:
    """Every word's count, read from ``state`` outside Spark."""
    with open_state(state) as store:
        return Counter({word: count for word, count in store.getTuples()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="the SQLite source (tables sentences_0, ...)")
    parser.add_argument("--checkpoint", default="/tmp/trident-db-polling-checkpoint")
    parser.add_argument("--state-type", choices=["transactional", "opaque"], default="transactional")
    parser.add_argument("--max-rows", type=int, default=100, help="rows per table and batch")
    parser.add_argument("--load-sample", type=int, metavar="N", default=0,
                        help="first append N sample sentences to two tables")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    if args.load_sample:
        from trident_spark.cli.demo import corpus

        load_sentences(args.db, corpus(args.load_sample))
    from trident_spark.runtime.session import local_session

    spark = local_session("trident-db-polling")
    state = word_state(Path(args.checkpoint) / "counts.db", args.state_type)
    handle = build_topology(args.db, state, args.max_rows).run(
        checkpoint_location=args.checkpoint, trigger="available_now", spark=spark)
    handle.awaitTermination()
    failure = handle.exception()
    handle.stop()
    if failure is not None:
        raise SystemExit(f"db_polling_spout: {failure}")
    counts = word_counts(state)
    print(f"{counts.total()} words counted; top words:")
    for word, count in counts.most_common(args.top):
        print(f"  {word:<12} {count}")
    spark.stop()


if __name__ == "__main__":
    main()
