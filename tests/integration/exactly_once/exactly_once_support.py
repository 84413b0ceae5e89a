"""Helpers of the exactly-once tests: the data, the states (one per backend and kind), and what a
clean run must leave.

The truth the tests compare against is computed from outside the product:
the records as a plain Kafka consumer reads them back, and Spark's own
offsets log (``<checkpoint>/<query>/offsets/<batch id>``), which says which
offsets each batch id covered. From those: the exact count of every word, the
last batch id that touched it, and (for opaque state) its count before that
batch.
"""

from __future__ import annotations

import json
import random
import sqlite3
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import redis as redis_py

from trident_spark.local.kafka import consume, create_topic, produce
from trident_spark.state import (
    ElasticsearchState,
    OpaqueValue,
    PostgresState,
    RedisState,
    SqliteState,
    StateType,
    TransactionalValue,
    open_state,
)
from trident_spark.state.keys import COMMIT_RECORD_KEY, encode_key

BACKENDS = ("elasticsearch", "redis", "sqlite", "postgres")
KINDS = ("transactional", "opaque")
#: The states of one run (each backend, transactional and opaque), named "<backend>-<kind>".
STATE_NAMES = tuple(f"{backend}-{kind}" for backend in BACKENDS for kind in KINDS)

#: Words made of lowercase letters only: a key's encoding is the word itself.
VOCABULARY = (
    "apple", "river", "stone", "cloud", "tiger", "maple", "ocean", "piano", "lemon", "spark",
    "storm", "amber", "delta", "frost", "grape", "honey", "ivory", "jelly", "koala", "lunar",
    "mango", "noble", "olive", "pearl", "quill", "raven", "solar", "tulip", "umber", "vivid",
    "waltz", "xenon", "yodel", "zebra", "bison", "cedar",
)


def unique_tag() -> str:
    """A name part no other run uses (lowercase hex: fits an Elasticsearch index)."""
    return uuid.uuid4().hex[:12]


def make_sentences(n: int, seed: int, *, vocabulary: tuple[str, ...] = VOCABULARY,
                   every_word_each: int = 0) -> list[str]:
    """``n`` sentences of 2-7 words with a Zipf-like word distribution.

    ``every_word_each``: if > 0, every run of that many consecutive sentences
    contains every word at least once (so every batch of at least that many
    records touches every key).
    """
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    sentences = [" ".join(rng.choices(vocabulary, weights=weights, k=rng.randint(2, 7))) for _ in range(n)]
    if every_word_each:
        for start in range(0, n, every_word_each):
            for j, word in enumerate(vocabulary):
                i = start + j % every_word_each
                if i < n:
                    sentences[i] += f" {word}"
    return sentences


def load_topic(bootstrap: str, topic: str, sentences: list[str], partitions: int, *,
               already: list[tuple[int, int, str]] | None = None) -> list[tuple[int, int, str]]:
    """Create ``topic`` (unless ``already`` holds its records), produce ``sentences`` round-robin over
    its partitions and read the whole topic back.

    Returns every record as ``(partition, offset, sentence)``, as a consumer sees
    them: the truth the offsets log is resolved against.
    """
    before = list(already or [])
    if already is None:
        create_topic(bootstrap, topic, partitions=partitions)
    produce(bootstrap, topic, [(None, s.encode(), i % partitions) for i, s in enumerate(sentences)])
    records = consume(bootstrap, topic, count=len(before) + len(sentences), timeout=60)
    found = sorted((r.partition, r.offset, r.value.decode()) for r in records)
    assert len({(p, o) for p, o, _ in found}) == len(found), "a record was read twice"
    assert sorted(s for _, _, s in found) == sorted([s for _, _, s in before] + sentences), \
        "the topic holds other records"
    return found


# -- Spark's checkpoint ---------------------------------------------------------------------------

def offsets_log(query_dir: Path) -> dict[int, dict[int, int]]:
    """``{batch id: {partition: end offset}}`` from a query's offsets log (one topic)."""
    logged: dict[int, dict[int, int]] = {}
    directory = query_dir / "offsets"
    if not directory.is_dir():
        return logged
    for path in directory.iterdir():
        if not path.name.isdigit():
            continue
        lines = path.read_text().splitlines()
        source = json.loads(lines[2])            # "v1", batch metadata, then the source's offsets
        (ends,) = source["offsets"].values()
        logged[int(path.name)] = {int(p): int(o) for p, o in ends.items()}
    return dict(sorted(logged.items()))


def offsets_entry(query_dir: Path, batch_id: int) -> str:
    """The source offsets line of one offsets-log entry (what a replay must read again)."""
    return (query_dir / "offsets" / str(batch_id)).read_text().splitlines()[2]


def committed(query_dir: Path) -> list[int]:
    """Batch ids in a query's commit log."""
    directory = query_dir / "commits"
    if not directory.is_dir():
        return []
    return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())


def batch_sentences(query_dir: Path, records: list[tuple[int, int, str]],
                    start: Mapping[int, int] | None = None) -> dict[int, list[str]]:
    """The sentences each logged batch read: records between the previous batch's end offsets and its own.

    ``start``: the offsets batch 0 started from (default: each partition's beginning).
    """
    logged = offsets_log(query_dir)
    by_partition: dict[int, dict[int, str]] = {}
    for partition, offset, sentence in records:
        by_partition.setdefault(partition, {})[offset] = sentence
    batches: dict[int, list[str]] = {}
    previous: dict[int, int] = dict(start or {})
    for batch_id, ends in logged.items():
        assert batch_id == len(batches), f"offsets log has a gap before batch {batch_id}: {sorted(logged)}"
        batch = []
        for partition, end in sorted(ends.items()):
            start = previous.get(partition, 0)
            assert end >= start, f"batch {batch_id} partition {partition}: end {end} before start {start}"
            batch += [by_partition[partition][o] for o in range(start, end)]
        batches[batch_id] = batch
        previous = ends
    return batches


@dataclass
class Expected:
    """What one clean run leaves for every word: its count, last txid and count before that batch."""

    counts: dict[str, int]
    last_txid: dict[str, int]
    before_last: dict[str, int | None]
    per_batch: dict[int, Counter[str]]

    @classmethod
    def from_batches(cls, batches: Mapping[int, list[str]], *, txid_offset: int = 0,
                     start: Mapping[str, int] | None = None) -> Expected:
        """From each batch's sentences (batch id -> sentences), on top of ``start`` counts."""
        counts: dict[str, int] = dict(start or {})
        last: dict[str, int] = {}
        before: dict[str, int | None] = {}
        per_batch: dict[int, Counter[str]] = {}
        for batch_id in sorted(batches):
            words = Counter(w for s in batches[batch_id] for w in s.split())
            per_batch[batch_id] = words
            for word, n in words.items():
                before[word] = counts.get(word)
                counts[word] = counts.get(word, 0) + n
                last[word] = batch_id + txid_offset
        return cls(counts, last, before, per_batch)

    def values_after(self, batch_id: int) -> dict[str, int]:
        """Each word's count after batch ``batch_id``, for the words it touched (newValuesStream)."""
        totals: Counter[str] = Counter()
        for b in sorted(self.per_batch):
            totals.update(self.per_batch[b])
            if b == batch_id:
                return {w: totals[w] for w in self.per_batch[b]}
        raise KeyError(batch_id)


# -- the states of a run ---------------------------------------------------------------------------

def six_states(tag: str, workdir: Path, redis_url: str, elasticsearch_url: str, postgres_dsn: str,
               **settings: Any) -> dict[str, Any]:
    """One factory per backend and kind, all new (``tag`` names their prefix, index and tables).

    (Named when there were three backends: it makes ``len(STATE_NAMES)`` states.)
    """
    factories: dict[str, Any] = {}
    for kind in KINDS:
        factories[f"elasticsearch-{kind}"] = getattr(ElasticsearchState, kind)(
            hosts=[elasticsearch_url], index=f"eo-{tag}-{kind}", **settings)
        factories[f"redis-{kind}"] = getattr(RedisState, kind)(
            url=redis_url, key_prefix=f"eo-{tag}-{kind}", **settings)
        factories[f"sqlite-{kind}"] = getattr(SqliteState, kind)(
            path=str(workdir / f"state-{tag}.db"), table=f"wc_{kind}", **settings)
        factories[f"postgres-{kind}"] = getattr(PostgresState, kind)(
            dsn=postgres_dsn, table=f"eo_{tag}_{kind}", **settings)
    return {name: factories[name] for name in STATE_NAMES}


#: The encoded key of a state's commit record (``state/commit_record.py``).
COMMIT_RECORD_ENCODED = encode_key(COMMIT_RECORD_KEY)


def stored_values(factory: Any, words: Iterable[str]) -> dict[str, Any]:
    """The raw stored values (TransactionalValue / OpaqueValue) of ``words``, as the store holds them."""
    words = list(words)
    with factory.open_backing_map() as backing:
        return dict(zip(words, backing.multiGet([[w] for w in words]), strict=True))


def stored_keys(factory: Any) -> set[str]:
    """Every key the store holds for this state (each a one-word key: its encoding is the word)."""
    if isinstance(factory, SqliteState):
        with sqlite3.connect(factory.path) as db:
            return {k for (k,) in db.execute(f'SELECT k FROM "{factory.table}"')}
    if isinstance(factory, PostgresState):
        with psycopg.connect(factory.dsn) as db:
            return {k for (k,) in db.execute(f'SELECT k FROM "{factory.table}"')}
    if isinstance(factory, RedisState):
        client = redis_py.Redis.from_url(factory.redis_url)
        try:
            prefix = f"{factory.key_prefix}:"
            return {name.decode()[len(prefix):] for name in client.scan_iter(match=f"{prefix}*", count=1000)}
        finally:
            client.close()
    with factory.open_backing_map() as backing:
        status, _ = backing.request("POST", f"/{factory.index}/_refresh")
        assert status < 300
        status, answer = backing.request("POST", f"/{factory.index}/_search",
                                         {"query": {"match_all": {}}, "size": 10_000})
        assert status < 300, answer
        return {hit["_id"] for hit in answer["hits"]["hits"]}


def assert_exact(name: str, factory: Any, expected: Expected) -> None:
    """The state holds exactly the expected words, counts, txids (and opaque prev values)."""
    words = sorted(expected.counts)
    with open_state(factory.url) as state:
        got = dict(zip(words, state.multiGet([[w] for w in words]), strict=True))
    wrong = {w: (got[w], expected.counts[w]) for w in words if got[w] != expected.counts[w]}
    assert not wrong, f"{name}: (read, expected) counts differ for {wrong}"
    # The words and the state's commit record (its reserved key), nothing else.
    assert stored_keys(factory) == {*words, COMMIT_RECORD_ENCODED}, f"{name}: the store holds other keys"
    raw = stored_values(factory, words)
    if factory.state_type is StateType.TRANSACTIONAL:
        want = {w: TransactionalValue(expected.last_txid[w], expected.counts[w]) for w in words}
    else:
        want = {w: OpaqueValue(expected.last_txid[w], expected.counts[w], expected.before_last[w])
                for w in words}
    bad = {w: (raw[w], want[w]) for w in words if raw[w] != want[w]}
    assert not bad, f"{name}: (stored, expected) values differ for {bad}"


def drop_state(factory: Any) -> None:
    """Best-effort removal of a state's keys (Redis), index (Elasticsearch) or table (PostgreSQL);
    SQLite lives in tmp."""
    try:
        if isinstance(factory, RedisState):
            client = redis_py.Redis.from_url(factory.redis_url)
            names = list(client.scan_iter(match=f"{factory.key_prefix}:*", count=1000))
            if names:
                client.delete(*names)
            client.close()
        elif isinstance(factory, PostgresState):
            with psycopg.connect(factory.dsn, autocommit=True) as db:
                db.execute(f'DROP TABLE IF EXISTS "{factory.table}"')
        elif isinstance(factory, ElasticsearchState):
            with factory.open_backing_map() as backing:
                backing.request("DELETE", f"/{factory.index}")
    except Exception:
        pass
