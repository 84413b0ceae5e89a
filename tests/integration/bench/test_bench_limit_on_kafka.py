"""bench/limit.py on the real Kafka broker: the limit reads every record of every partition, counts
exactly what Python's Counter counts, and stops on counts that differ."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from limit import run_limit

from trident_spark.local.kafka import create_topic, produce

pytestmark = pytest.mark.integration

SENTENCES = ["the cat sat", "on the mat", " the  dog\tbarked ", "", "cat and dog"] * 40


@pytest.fixture(scope="module")
def topic(kafka_bootstrap: str) -> str:
    """Three partitions of SENTENCES (round-robin) and one record without a value."""
    name = f"bench-limit-{uuid.uuid4().hex[:6]}"
    create_topic(kafka_bootstrap, name, 3)
    tombstone: Any = (None, None, 0)  # a record without a value (Record's type has none)
    produce(kafka_bootstrap, name, [*((None, s.encode(), i % 3) for i, s in enumerate(SENTENCES)), tombstone])
    return name


def test_the_limit_counts_every_record_as_counter_does(kafka_bootstrap: str, topic: str) -> None:
    expected = Counter(w for s in SENTENCES for w in s.split())

    got = run_limit(kafka_bootstrap, topic, 3, len(SENTENCES) + 1, expected)

    assert got["records"] == len(SENTENCES) + 1
    assert got["records_per_s"] == got["records"] / got["seconds"]


def test_counts_that_differ_stop_the_bench_naming_the_words(kafka_bootstrap: str, topic: str) -> None:
    expected = Counter(w for s in SENTENCES for w in s.split())
    expected["cat"] += 1
    del expected["barked"]

    with pytest.raises(SystemExit) as stopped:
        run_limit(kafka_bootstrap, topic, 3, len(SENTENCES) + 1, expected)

    assert str(stopped.value) == ("limit: counted 2 words differently from Python's Counter, e.g. "
                                  "'barked': 40 != None, 'cat': 80 != 81")
