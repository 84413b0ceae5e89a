"""bench/state.py's contenders: ``native`` (Spark's own state, the baseline) or a backend with
optional state settings, parsed from ``--backends`` (``native,sqlite,redis[cache_size=10000],es``),
with their labels and target ratios, and the order the rounds run them in (A B B A)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

BACKENDS = ("sqlite", "redis", "es", "postgres")
LABELS = {"native": "Spark native (RocksDB)", "sqlite": "SqliteState", "redis": "RedisState",
          "es": "ElasticsearchState (OpenSearch)", "postgres": "PostgresState"}
#: Issue 31's targets (ratio to native in the same run, end to end), by how the words are split:
#: the per-tuple Python Split, the Arrow-batch Split, the built-in Split (SQLite and Redis).
SPLIT_TARGETS = {"python": 1.5, "arrow": 2.5, "builtin": 2.5}
#: Issue 31's target for Elasticsearch (the real OpenSearch node, built-in Split).
ES_TARGET = 1.2
#: State settings a contender may carry (``redis[cache_size=10000]``), with their parsers.
SETTINGS: dict[str, Callable[[str], Any]] = {
    "cache_size": int,
    "max_multi_get_batch_size": lambda v: None if v.lower() == "none" else int(v),
    "max_multi_put_batch_size": lambda v: None if v.lower() == "none" else int(v),
    "synchronous": str.upper,  # SQLite only
    "refresh_interval": str,  # Elasticsearch only: the index's, when the state creates it
}
#: Settings only one backend has.
ONLY = {"synchronous": "sqlite", "refresh_interval": "es"}
#: How the words are split: ``python``, a per-tuple BaseFunction (bench/dsl.py's ``Split``);
#: ``arrow``, an ArrowFunction over the partition's batch (bench/arrow_split.py); ``builtin``,
#: the built-in Split (Spark SQL).
SPLITS = ("python", "arrow", "builtin")
#: Settings of the topology, not the state: ``split=python`` / ``split=arrow`` instead of the
#: built-in Split.
TOPOLOGY_SETTINGS: dict[str, Callable[[str], Any]] = {
    "split": lambda v: v if v in SPLITS else _bad_split(v),
}


def _bad_split(value: str) -> str:
    raise SystemExit(f"split={value}: one of {', '.join(SPLITS)}")


@dataclass(frozen=True)
class Contender:
    """``native``, or a backend with optional state settings: ``redis[cache_size=10000]``."""

    kind: str
    settings: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        if not self.settings:
            return self.kind
        return f"{self.kind}[" + ",".join(f"{k}={'none' if v is None else v}" for k, v in self.settings) + "]"

    @property
    def label(self) -> str:
        base = LABELS[self.kind]
        if not self.settings:
            return base
        return f"{base} " + ", ".join(f"{k}={'none' if v is None else v}" for k, v in self.settings)

    @property
    def state_settings(self) -> dict[str, Any]:
        """The settings that go to the state factory."""
        return {k: v for k, v in self.settings if k in SETTINGS}

    @property
    def split(self) -> str:
        """``python`` (a BaseFunction), ``arrow`` (an ArrowFunction) or ``builtin`` (Split(), Spark SQL)."""
        return str(dict(self.settings).get("split", "builtin"))

    @property
    def target(self) -> float | None:
        """Issue 31's target ratio to native, or None: a contender with state settings is a
        comparison of settings; PostgreSQL and Elasticsearch with a Python split have none."""
        if self.state_settings:
            return None
        if self.kind == "es":
            return ES_TARGET if self.split == "builtin" else None
        return SPLIT_TARGETS[self.split] if self.kind in ("sqlite", "redis") else None


def parse_contenders(text: str) -> list[Contender]:
    """``native,sqlite,redis[cache_size=10000,max_multi_get_batch_size=none],es,postgres[split=python]``."""
    found = []
    for spec in re.findall(r"[a-z]+(?:\[[^\]]*\])?", text):
        match = re.fullmatch(r"([a-z]+)(?:\[([^\]]*)\])?", spec)
        assert match is not None
        kind, body = match.group(1), match.group(2)
        if kind not in ("native", *BACKENDS):
            raise SystemExit(f"unknown contender {kind!r}: one of native, {', '.join(BACKENDS)}")
        settings = []
        for item in filter(None, (body or "").split(",")):
            key, _, value = item.partition("=")
            known = {**SETTINGS, **TOPOLOGY_SETTINGS}
            if key not in known or ONLY.get(key, kind) != kind or kind == "native":
                raise SystemExit(f"{spec}: unknown setting {key!r}; one of {', '.join(known)}")
            settings.append((key, known[key](value)))
        found.append(Contender(kind, tuple(settings)))
    if not found or found[0].kind != "native" or sum(c.kind == "native" for c in found) != 1:
        raise SystemExit("--backends: list native first, then backends, e.g. native,sqlite,redis,es")
    if len({c.name for c in found}) != len(found):
        raise SystemExit("--backends: a contender is listed twice")
    return found


def round_order(items: list[str], round_number: int) -> list[str]:
    """The order of round ``round_number`` (from 1): odd rounds as listed, even rounds reversed,
    so two rounds run A B B A and every run's neighbours change; ``items`` are names.

    Examples
    --------
    >>> round_order(["limit", "native", "sqlite"], 1), round_order(["limit", "native", "sqlite"], 2)
    (['limit', 'native', 'sqlite'], ['sqlite', 'native', 'limit'])
    """
    return list(items) if round_number % 2 else list(reversed(items))
