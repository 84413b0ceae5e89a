"""The exactly-once Kafka output: records sent into the open transaction vs held until the commit.

Not a test: it prints times and a ratio. One partition's state (``TridentKafkaState`` with
``exactly_once=True``) writes ``--batches`` batches of ``--records`` records each (a word and
a count, as the word count's ``newValuesStream``), Trident's calls in order (``beginCommit``,
``updateState`` in ``--chunks`` calls, ``commit``), against a local Apache Kafka started here:

* ``held``: this package's output: ``updateState`` only makes the records and ``commit``
  sends them all in one transaction with the txid marker;
* ``streamed``: the alternative: ``beginCommit`` begins the Kafka transaction and
  ``updateState`` sends each record into it as it is made (exact on Apache Kafka, which hides
  aborted records from read_committed readers; not on Tansu).

Rounds alternate (this VM's speed drifts) and the medians are compared.

Run: ``.venv/bin/python bench/kafka_output.py`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

from trident_spark.fields import Fields, TridentTuple
from trident_spark.kafka import (
    DefaultTopicSelector,
    FieldNameBasedTupleToKafkaMapper,
    TridentKafkaState,
    TridentKafkaStateFactory,
)
from trident_spark.local import create_topic, start_kafka


class StreamedState(TridentKafkaState):
    """The other design: the transaction begins in ``beginCommit`` and records go into it as made."""

    def beginCommit(self, txid: int) -> None:
        super().beginCommit(txid)
        if not self._skip:
            self._ensure_producer().begin_transaction()
            self._in_transaction = True

    def updateState(self, tuples: Sequence[TridentTuple], collector: Any = None) -> None:
        if not self._skip:
            records = [r for r in map(self.record, tuples) if r is not None]
            self._check_topics({r.topic for r in records})
            for record in records:
                self._send(record)

    def _commit_transaction(self, txid: int) -> None:
        from confluent_kafka import TopicPartition

        factory, producer = self.factory, self._producer
        marker = [TopicPartition(factory.marker_topic, 0, txid + factory.txid_offset + 1)]
        producer.send_offsets_to_transaction(marker, self._marker_consumer().consumer_group_metadata(),
                                             factory.timeout)
        producer.commit_transaction(factory.timeout)
        self._in_transaction = False


def one_run(state: TridentKafkaState, batches: int, tuples: list[TridentTuple], chunks: int,
            first_txid: int) -> float:
    size = max(1, len(tuples) // chunks)
    started = time.perf_counter()
    for txid in range(first_txid, first_txid + batches):
        state.beginCommit(txid)
        for i in range(0, len(tuples), size):
            state.updateState(tuples[i:i + size])
        state.commit(txid)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000, help="records per batch")
    parser.add_argument("--batches", type=int, default=10, help="batches per run")
    parser.add_argument("--chunks", type=int, default=4, help="updateState calls per batch")
    parser.add_argument("--rounds", type=int, default=5, help="runs of each kind, alternating")
    args = parser.parse_args()
    fields = Fields(["word", "count"])
    tuples = [TridentTuple([f"word{i % 5000}", i], fields) for i in range(args.records)]
    with start_kafka(kind="apache") as kafka:
        topic = f"out-{uuid.uuid4().hex[:8]}"
        create_topic(kafka.address, topic, 2)
        times: dict[str, list[float]] = {"streamed": [], "held": []}
        states: dict[str, TridentKafkaState] = {}
        for kind, cls in (("streamed", StreamedState), ("held", TridentKafkaState)):
            factory = (TridentKafkaStateFactory(kafka.address, exactly_once=True,
                                                transactional_id=f"bench-{kind}-{topic}")
                       .withKafkaTopicSelector(DefaultTopicSelector(topic))
                       .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))
            states[kind] = cls(factory, 0, 1)
            one_run(states[kind], 1, tuples[:100], 1, 0)       # connect, init_transactions, warm up
        txid = 1
        for _ in range(args.rounds):
            for kind in ("streamed", "held"):
                times[kind].append(one_run(states[kind], args.batches, tuples, args.chunks, txid))
            txid += args.batches
        for state in states.values():
            state.close()
    total = args.records * args.batches
    for kind, runs in times.items():
        median = statistics.median(runs)
        print(f"{kind:9s} median {median:6.3f} s for {total} records: {total / median:10,.0f} records/s "
              f"(runs: {', '.join(f'{t:.3f}' for t in runs)})")
    ratio = statistics.median(times["held"]) / statistics.median(times["streamed"])
    print(f"held / streamed time: {ratio:.2f} (above 1: sending records as they are made is faster)")


if __name__ == "__main__":
    main()
