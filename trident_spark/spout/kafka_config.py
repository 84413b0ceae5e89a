"""The Kafka spout's settings: validated once, serialisable to the Spark source options.

The settings travel to Spark's Python planner and to executors as one JSON
option, so everything here is plain data.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from trident_spark.durations import parse_seconds
from trident_spark.state.redaction import redact_options, redact_text

ValueFormat = Literal["str", "bytes", "json"]
KeyFormat = Literal["str", "bytes"]
MalformedPolicy = Literal["fail", "skip"]

# librdkafka settings the spout relies on; a user value would break offset tracking.
RESERVED_KAFKA_OPTIONS = {
    "enable.auto.commit": "the spout tracks offsets in Spark's checkpoint, not in a consumer group",
    "auto.offset.reset": "lost offsets are handled by fail_on_data_loss=",
    "enable.partition.eof": "the spout needs end-of-partition events to find the high watermark",
    "bootstrap.servers": "pass bootstrap_servers= instead",
    "group.id": "the spout never joins a consumer group (it assigns partitions)",
}

#: Per-partition read limit of adaptive batching when max_fetch_bytes is not given: Kafka's
#: and Storm's default fetch size.
DEFAULT_ADAPTIVE_BOUND_BYTES = 1024 * 1024

# Consumer settings applied before the user's kafka_options. The fetch-queue
# backoff default (1000 ms) stalls a consumer about a second whenever more
# than ~100k messages are queued; 10 ms keeps reads flowing.
CONSUMER_DEFAULTS: dict[str, Any] = {
    "fetch.queue.backoff.ms": 10,
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "error",
    "allow.auto.create.topics": False,
    "group.id": "trident-spark",
    "socket.connection.setup.timeout.ms": 10_000,
}


#: The column of the read time of each Arrow batch (ms, on the batch's first row; null elsewhere).
READ_MS_COLUMN = "__read_ms"


@dataclass(frozen=True)
class KafkaSpoutConfig:
    """Everything the Kafka source needs, as plain JSON-able data."""

    bootstrap_servers: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    starting_offsets: str | dict[str, dict[str, int]] = "earliest"
    max_fetch_bytes: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_s: float = 900.0
    min_partitions: int | None = None
    value_format: ValueFormat = "str"
    value_schema: str | None = None
    key_format: KeyFormat = "str"
    include_headers: bool = False
    fail_on_data_loss: bool = True
    on_malformed: MalformedPolicy = "fail"
    kafka_options: dict[str, Any] = field(default_factory=dict)
    size_sample_bytes: int = 256 * 1024
    timeout_s: float = 20.0
    arrow_batch_rows: int = 50_000
    #: Set by the runtime: add the column READ_MS_COLUMN, the read time of each Arrow batch on its
    #: first row, which the runtime sums per batch (the source's stage time) and drops.
    read_metrics: bool = False
    #: Where batches stop: "latest" (the high watermarks when the query starts) or
    #: {topic: {partition: offset}} (-1 = latest); None reads on without end.
    ending_offsets: str | dict[str, dict[str, int]] | None = None
    #: Adaptive batching: the batch duration (ms) the per-partition read limit steers to.
    adaptive_target_ms: float | None = None
    #: The query's checkpoint directory, where the driver leaves each batch's measured
    #: duration for the planner (set by the runtime when adaptive batching is on).
    feedback_dir: str | None = None

    def __post_init__(self) -> None:
        self._check_subscription()
        self._check_limits()
        self._check_formats()
        for name, reason in RESERVED_KAFKA_OPTIONS.items():
            if name in self.kafka_options:
                raise ValueError(f"KafkaSpout(kafka_options={{{name!r}: ...}}) is not allowed: {reason}")

    def _check_subscription(self) -> None:
        if not self.bootstrap_servers:
            raise ValueError("KafkaSpout(bootstrap_servers=...) is required, e.g. '127.0.0.1:9092'")
        if bool(self.topics) == bool(self.pattern):
            raise ValueError("KafkaSpout: give exactly one of topics=[...] or pattern='regex'")
        if self.pattern:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"KafkaSpout(pattern={self.pattern!r}) is not a valid regex: {exc}") from exc
        offsets = self.starting_offsets
        if isinstance(offsets, str) and offsets not in ("earliest", "latest"):
            raise ValueError(
                f"KafkaSpout(starting_offsets={offsets!r}): use 'earliest', 'latest' or "
                "{topic: {partition: offset}} (offset -2 = earliest, -1 = latest)"
            )
        ending = self.ending_offsets
        if isinstance(ending, str) and ending != "latest":
            raise ValueError(
                f"KafkaSpout(ending_offsets={ending!r}): use 'latest' or {{topic: {{partition: offset}}}} "
                "(offset -1 = latest)"
            )
        if isinstance(ending, dict):
            for topic, parts in ending.items():
                for partition, offset in parts.items():
                    if isinstance(offset, bool) or not isinstance(offset, int) or offset < -1:
                        raise ValueError(
                            f"KafkaSpout(ending_offsets=...): {topic}[{partition}] ends at {offset!r}; "
                            "use an offset >= 0, or -1 for latest"
                        )

    def _check_limits(self) -> None:
        for name in ("max_fetch_bytes", "max_offsets_per_trigger", "min_offsets_per_trigger",
                     "min_partitions", "size_sample_bytes", "arrow_batch_rows"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ValueError(f"KafkaSpout({name}={value!r}) must be a positive integer")
        if (self.min_offsets_per_trigger and self.max_offsets_per_trigger
                and self.min_offsets_per_trigger > self.max_offsets_per_trigger):
            raise ValueError(
                f"KafkaSpout: min_offsets_per_trigger={self.min_offsets_per_trigger} exceeds "
                f"max_offsets_per_trigger={self.max_offsets_per_trigger}"
            )

        target = self.adaptive_target_ms
        if target is not None and (isinstance(target, bool) or not isinstance(target, int | float)
                                   or not target > 0):
            raise ValueError(
                f"KafkaSpout(adaptive_target_ms={target!r}) must be a positive number of milliseconds, "
                "e.g. 1000"
            )

    def _check_formats(self) -> None:
        if self.value_format not in ("str", "bytes", "json"):
            raise ValueError(f"KafkaSpout(value_format={self.value_format!r}): use 'str', 'bytes' or 'json'")
        if self.key_format not in ("str", "bytes"):
            raise ValueError(f"KafkaSpout(key_format={self.key_format!r}): use 'str' or 'bytes'")
        if self.value_format == "json" and not self.value_schema:
            raise ValueError(
                "KafkaSpout(value_format='json') needs value_schema=, a Spark DDL string such as "
                "'user STRING, clicks INT'"
            )
        if self.on_malformed not in ("fail", "skip"):
            raise ValueError(f"KafkaSpout(on_malformed={self.on_malformed!r}): use 'fail' or 'skip'")

    def __repr__(self) -> str:
        # kafka_options may hold sasl.password, ssl.key.password, ...: shown as ***.
        shown = {**asdict(self), "bootstrap_servers": self.address,
                 "kafka_options": redact_options(self.kafka_options)}
        return f"KafkaSpoutConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    # --- derived -----------------------------------------------------------------
    @property
    def address(self) -> str:
        """The bootstrap address as users wrote it, for error messages (without any password)."""
        return redact_text(self.bootstrap_servers)

    @property
    def adaptive(self) -> bool:
        """Whether adaptive batching is on (``adaptive_target_ms`` given)."""
        return self.adaptive_target_ms is not None

    @property
    def fetch_bytes_bound(self) -> int | None:
        """The per-partition byte limit: ``max_fetch_bytes``; with adaptive batching the
        bound of the adaptive limit (default :data:`DEFAULT_ADAPTIVE_BOUND_BYTES`)."""
        if self.max_fetch_bytes is None and self.adaptive:
            return DEFAULT_ADAPTIVE_BOUND_BYTES
        return self.max_fetch_bytes

    def schema_ddl(self) -> str:
        """The Spark schema of the spout's records, as a DDL string."""
        key = "key STRING" if self.key_format == "str" else "key BINARY"
        if self.value_format == "json":
            value = f"value STRUCT<{_struct_body(self.value_schema or '')}>"
        else:
            value = "value STRING" if self.value_format == "str" else "value BINARY"
        columns = [key, value, "topic STRING", "partition INT", "offset BIGINT", "timestamp TIMESTAMP"]
        if self.include_headers:
            columns.append("headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
        if self.on_malformed != "fail":
            columns.append("malformed STRING")
        if self.read_metrics:
            columns.append(f"{READ_MS_COLUMN} DOUBLE")
        return ", ".join(columns)

    def consumer_conf(self, **overrides: Any) -> dict[str, Any]:
        """librdkafka settings: our defaults, then the user's kafka_options, then ``overrides``."""
        conf = {"bootstrap.servers": self.bootstrap_servers, **CONSUMER_DEFAULTS}
        conf.update(self.kafka_options)
        conf.update(overrides)
        return conf

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> KafkaSpoutConfig:
        data = json.loads(text)
        data["topics"] = tuple(data.get("topics") or ())
        return cls(**data)


def _struct_body(ddl: str) -> str:
    """'a INT, b STRING' -> 'a: INT, b: STRING' (struct field syntax)."""
    parts = [p.strip() for p in _split_top_level(ddl)]
    out = []
    for part in parts:
        name, _, type_ = part.partition(" ")
        out.append(f"{name.rstrip(':')}: {type_.strip()}")
    return ", ".join(out)


def _split_top_level(ddl: str) -> list[str]:
    depth = 0
    current = ""
    parts = []
    for ch in ddl:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return parts


def parse_trigger_delay(value: float | str) -> float:
    """Seconds for ``max_trigger_delay`` (Spark's default is 15 minutes)."""
    return parse_seconds(value, what="KafkaSpout(max_trigger_delay=)")
