"""The Kafka spout's settings: validated once, serialisable to the Spark source options.

The user's settings travel to Spark's Python planner and to executors as one JSON
option (the run's own settings as another, spout/kafka/run.py), so everything here is plain data.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from trident_spark.durations import parse_seconds
from trident_spark.errors import InvalidArgumentError, check_int
from trident_spark.spout import base as spout_base
from trident_spark.state.redaction import redact_options, redact_text

ValueFormat = Literal["str", "bytes", "json", "avro", "protobuf"]
KeyFormat = Literal["str", "bytes", "avro", "protobuf"]
MalformedPolicy = Literal["fail", "skip", "dead_letter"]
VALUE_FORMATS = ("str", "bytes", "json", "avro", "protobuf")
KEY_FORMATS = ("str", "bytes", "avro", "protobuf")
MALFORMED_POLICIES = ("fail", "skip", "dead_letter")

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


#: The column of the read time of each Arrow batch (ms, on the batch's first row; null elsewhere):
#: the Spout interface's column, which the runtime sums into the batch's ``source`` stage.
READ_MS_COLUMN = spout_base.READ_MS_COLUMN


@dataclass(frozen=True)
class KafkaSpoutConfig:
    """What the user set on ``KafkaSpout(...)``, checked, as plain JSON-able data.

    The runtime's settings of a query (its checkpoint directory, outage budget, read metrics)
    are not here: they are :class:`~trident_spark.spout.kafka.run.KafkaRun`, shipped beside it.

    Examples
    --------
    >>> KafkaSpoutConfig("127.0.0.1:9092", topics=("words",)).topics
    ('words',)
    """

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
    #: key_format="avro" or "protobuf": the key's schema (as value_schema is the value's).
    key_schema: str | None = None
    include_headers: bool = False
    fail_on_data_loss: bool = True
    on_malformed: MalformedPolicy = "fail"
    #: Avro or Protobuf values in Confluent's wire format, their schemas read from this registry.
    schema_registry_url: str | None = None
    #: on_malformed="dead_letter": where records that cannot be decoded are sent.
    dead_letter_topic: str | None = None
    kafka_options: dict[str, Any] = field(default_factory=dict)
    size_sample_bytes: int = 256 * 1024
    timeout_s: float = 20.0
    arrow_batch_rows: int = 50_000
    #: Where batches stop: "latest" (the high watermarks when the query starts) or
    #: {topic: {partition: offset}} (-1 = latest); None reads on without end.
    ending_offsets: str | dict[str, dict[str, int]] | None = None
    #: Adaptive batching: the batch duration (ms) the per-partition read limit steers to.
    adaptive_target_ms: float | None = None
    #: Seconds one record may take to decode (Avro, Protobuf, JSON read record by record); a record
    #: that took longer is malformed, with the reason. Checked between records (a decoder in C
    #: cannot be interrupted): the bounds checked before decoding are what stop an endless one.
    decode_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        self._check_subscription()
        self._check_limits()
        self._check_formats()
        for name, reason in RESERVED_KAFKA_OPTIONS.items():
            if name in self.kafka_options:
                raise InvalidArgumentError(
                    f"KafkaSpout(kafka_options={{{name!r}: ...}}) is not allowed: {reason}")

    def _check_subscription(self) -> None:
        if not self.bootstrap_servers:
            raise InvalidArgumentError("KafkaSpout(bootstrap_servers=...) is required, e.g. '127.0.0.1:9092'")
        if bool(self.topics) == bool(self.pattern):
            raise InvalidArgumentError("KafkaSpout: give exactly one of topics=[...] or pattern='regex'")
        if self.pattern:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise InvalidArgumentError(
                    f"KafkaSpout(pattern={self.pattern!r}) is not a valid regex: {exc}") from exc
        for option in ("starting_offsets", "ending_offsets"):
            value = getattr(self, option)
            if value is not None:
                object.__setattr__(self, option, offsets_option(value, option))
                self._check_offset_topics(option)
        self._check_ends_after_starts()

    def _check_ends_after_starts(self) -> None:
        """A partition given both offsets must not end before it starts (it would read nothing)."""
        starts, ends = self.starting_offsets, self.ending_offsets
        if not isinstance(starts, dict) or not isinstance(ends, dict):
            return
        for topic, partitions in ends.items():
            for partition, end in partitions.items():
                start = starts.get(topic, {}).get(partition, -2)
                if 0 <= end < start:
                    raise InvalidArgumentError(
                        f"KafkaSpout: {topic}[{partition}] starts at {start} (starting_offsets) but ends at "
                        f"{end} (ending_offsets), before it starts, so nothing would be read from it; give "
                        f"an ending offset >= {start}, or -1 to end at the latest")

    def _check_offset_topics(self, option: str) -> None:
        """An offset mapping may only name topics the spout reads."""
        offsets = getattr(self, option)
        if not isinstance(offsets, dict):
            return
        if self.topics:
            stray = [t for t in offsets if t not in self.topics]
            subscribed = f"not among topics={list(self.topics)}"
        else:
            regex = re.compile(self.pattern or "")
            stray = [t for t in offsets if not regex.fullmatch(t)]
            subscribed = f"not matched by pattern={self.pattern!r}"
        if stray:
            raise InvalidArgumentError(
                f"KafkaSpout({option}=...) names topic {', '.join(map(repr, stray))}, {subscribed}: "
                f"give offsets only for the topics the spout reads"
            )

    def _check_limits(self) -> None:
        for name in ("max_fetch_bytes", "max_offsets_per_trigger", "min_offsets_per_trigger",
                     "min_partitions", "size_sample_bytes", "arrow_batch_rows"):
            value = getattr(self, name)
            if value is not None:
                check_int(value, name, message="KafkaSpout({name}={value!r}) must be a positive integer")
        if (self.min_offsets_per_trigger and self.max_offsets_per_trigger
                and self.min_offsets_per_trigger > self.max_offsets_per_trigger):
            raise InvalidArgumentError(
                f"KafkaSpout: min_offsets_per_trigger={self.min_offsets_per_trigger} exceeds "
                f"max_offsets_per_trigger={self.max_offsets_per_trigger}"
            )

        bound = self.decode_timeout_s
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not bound > 0:
            raise InvalidArgumentError(
                f"KafkaSpoutConfig(decode_timeout_s={bound!r}) must be a positive number of seconds, e.g. 10")

        target = self.adaptive_target_ms
        if target is not None and (isinstance(target, bool) or not isinstance(target, int | float)
                                   or not target > 0):
            raise InvalidArgumentError(
                f"KafkaSpout(adaptive_target_ms={target!r}) must be a positive number of milliseconds, "
                "e.g. 1000"
            )

    def _check_formats(self) -> None:
        if self.value_format not in VALUE_FORMATS:
            raise InvalidArgumentError(
                f"KafkaSpout(value_format={self.value_format!r}): use 'str', 'bytes', 'json', 'avro' or "
                "'protobuf'")
        if self.key_format not in KEY_FORMATS:
            raise InvalidArgumentError(
                f"KafkaSpout(key_format={self.key_format!r}): use 'str', 'bytes', 'avro' or 'protobuf'")
        if self.value_format == "json" and not self.value_schema:
            raise InvalidArgumentError(
                "KafkaSpout(value_format='json') needs value_schema=, a Spark DDL string such as "
                "'user STRING, clicks INT'"
            )
        for part in ("value", "key"):
            if getattr(self, f"{part}_format") == "avro":
                self._check_avro(part)
            elif getattr(self, f"{part}_format") == "protobuf":
                self._check_protobuf(part)
        if self.schema_registry_url is not None and not ({self.value_format, self.key_format}
                                                         & {"avro", "protobuf"}):
            raise InvalidArgumentError(
                f"KafkaSpout(schema_registry_url=...) is read only with value_format= or key_format= 'avro' "
                f"or 'protobuf' (values are {self.value_format!r} here): add value_format='avro', or drop "
                "schema_registry_url=")
        if self.key_schema is not None and self.key_format not in ("avro", "protobuf"):
            raise InvalidArgumentError(
                f"KafkaSpout(key_schema=...) is read only with key_format='avro' or 'protobuf' (keys are "
                f"{self.key_format!r} here): add key_format='avro', or drop key_schema=")
        if self.value_schema is not None and self.value_format in ("str", "bytes"):
            raise InvalidArgumentError(
                f"KafkaSpout(value_schema=...) is read only with value_format='json' or 'avro' (values "
                f"are {self.value_format!r} here): add value_format='json', or drop value_schema=")
        if self.value_format == "json":
            if not isinstance(self.value_schema, str):
                raise value_schema_error(self.value_schema, "it is not a string")  # type: ignore[arg-type]
            value_schema_fields(self.value_schema)
        self._check_malformed_policy()

    def _check_avro(self, part: str) -> None:
        from trident_spark.spout.formats.avro import avro_spark_type

        schema = getattr(self, f"{part}_schema")
        if schema is None and self.schema_registry_url is None:
            raise InvalidArgumentError(
                f"KafkaSpout({part}_format='avro') needs {part}_schema= (the Avro schema, a dict or JSON "
                f"text) or schema_registry_url= (records in Confluent's wire format, read as the latest "
                f"schema of the topic's subject '<topic>-{part}')")
        if schema is None and len(self.topics) != 1:
            raise InvalidArgumentError(
                f"KafkaSpout({part}_format='avro', schema_registry_url=...) without {part}_schema= reads the "
                f"latest schema of subject '<topic>-{part}', so it needs exactly one topic in topics=[...]; "
                f"give {part}_schema= (the schema records are read as) to read several")
        if schema is not None:
            avro_spark_type(schema, part)  # fails naming the schema and the reason
        if self.schema_registry_url is not None:
            from trident_spark.spout.formats.schema_registry import SchemaRegistryClient

            SchemaRegistryClient(self.schema_registry_url)  # an http(s) URL, or a clear error

    def _check_protobuf(self, part: str) -> None:
        from trident_spark.spout.formats.protobuf import protobuf_spark_type

        schema = getattr(self, f"{part}_schema")
        if schema is None:
            raise InvalidArgumentError(
                f"KafkaSpout({part}_format='protobuf') needs {part}_schema=, the generated message class "
                f"(e.g. {part}_schema=clicks_pb2.Click) or its DESCRIPTOR")
        protobuf_spark_type(schema, part)
        if self.schema_registry_url is not None:
            from trident_spark.spout.formats.schema_registry import SchemaRegistryClient

            SchemaRegistryClient(self.schema_registry_url)

    def _check_malformed_policy(self) -> None:
        if self.on_malformed not in MALFORMED_POLICIES:
            raise InvalidArgumentError(
                f"KafkaSpout(on_malformed={self.on_malformed!r}): use 'fail', 'skip' or 'dead_letter'")
        if self.on_malformed == "dead_letter":
            if not self.dead_letter_topic or not isinstance(self.dead_letter_topic, str):
                raise InvalidArgumentError(
                    "KafkaSpout(on_malformed='dead_letter') needs dead_letter_topic=, the topic malformed "
                    "records are sent to, e.g. dead_letter_topic='clicks-dead-letters'")
            reads = (self.dead_letter_topic in self.topics if self.topics
                     else re.fullmatch(self.pattern or "", self.dead_letter_topic) is not None)
            if reads:
                raise InvalidArgumentError(
                    f"KafkaSpout(dead_letter_topic={self.dead_letter_topic!r}) is a topic the spout reads: "
                    "its dead letters would be read again; give another topic")
        elif self.dead_letter_topic is not None:
            raise InvalidArgumentError(
                f"KafkaSpout(dead_letter_topic=...) is used only with on_malformed='dead_letter' (it is "
                f"{self.on_malformed!r} here): add on_malformed='dead_letter', or drop dead_letter_topic=")

    def __repr__(self) -> str:
        # kafka_options may hold sasl.password, ssl.key.password, ...: shown as ***.
        shown = {**asdict(self), "bootstrap_servers": self.address,
                 "kafka_options": redact_options(self.kafka_options)}
        if self.schema_registry_url is not None:
            shown["schema_registry_url"] = redact_text(self.schema_registry_url)
        return f"KafkaSpoutConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    # --- derived -----------------------------------------------------------------
    @property
    def address(self) -> str:
        """The bootstrap address as users wrote it, for error messages (without any password)."""
        shown: str = redact_text(self.bootstrap_servers)
        return shown

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

    def schema_ddl(self, read_metrics: bool = False) -> str:
        """The Spark schema of the spout's records, as a DDL string (with the read-time column
        when the run reports it, ``KafkaRun.read_metrics``)."""
        key = f"key {self._spark_type('key')}"
        if self.value_format == "json":
            value = f"value STRUCT<{_struct_body(self.value_schema or '')}>"
        else:
            value = f"value {self._spark_type('value')}"
        columns = [key, value, "topic STRING", "partition INT", "offset BIGINT", "timestamp TIMESTAMP"]
        if self.include_headers:
            columns.append("headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
        if self.on_malformed != "fail":
            columns.append("malformed STRING")
        if read_metrics:
            columns.append(f"{READ_MS_COLUMN} DOUBLE")
        return ", ".join(columns)

    def _spark_type(self, part: str) -> str:
        """The Spark type of the record's key or value (not JSON)."""
        kind, schema = getattr(self, f"{part}_format"), getattr(self, f"{part}_schema")
        if kind in ("str", "bytes"):
            return "STRING" if kind == "str" else "BINARY"
        if schema is None:
            raise InvalidArgumentError(
                f"KafkaSpout({part}_format={kind!r}): the {part} schema was not read from the registry yet "
                f"(the spout's DataFrame reads it); give {part}_schema=")
        if kind == "avro":
            from trident_spark.spout.formats.avro import avro_spark_type

            return avro_spark_type(schema, part)
        from trident_spark.spout.formats.protobuf import protobuf_spark_type

        return protobuf_spark_type(schema, part)

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


#: The negative offsets each offset option accepts (Kafka's JSON offset specs), and what they mean.
OFFSET_SENTINELS: dict[str, dict[int, str]] = {
    "starting_offsets": {-2: "earliest", -1: "latest"},
    "ending_offsets": {-1: "latest"},
}


def _offsets_shapes(option: str) -> str:
    """The accepted shapes of ``option``, for messages."""
    if option == "ending_offsets":
        return "'latest' or {topic: {partition: offset}} (offset -1 = latest)"
    return "'earliest', 'latest' or {topic: {partition: offset}} (offset -2 = earliest, -1 = latest)"


def _offsets_example(option: str, topic: str = "words") -> str:
    if option == "ending_offsets":
        return (f"ending_offsets={{{topic!r}: {{0: 5000, 1: -1}}}} (partition 0 up to offset 5000, "
                f"partition 1 up to the latest)")
    return (f"starting_offsets={{{topic!r}: {{0: 1200, 1: -2}}}} (partition 0 from offset 1200, "
            f"partition 1 from the earliest)")


def offsets_option(value: object, option: str = "starting_offsets") -> str | dict[str, dict[str, int]]:
    """``starting_offsets`` or ``ending_offsets`` as the settings keep them, checked.

    A word (``"earliest"``/``"latest"``) stays as it is; a mapping becomes
    ``{topic: {"partition": offset}}`` (partitions as strings: JSON keys). Anything
    else fails naming the option, the topic and partition, the accepted shapes and
    an example. Offsets are ``>= 0``, or Kafka's -2 (earliest, starting only) and
    -1 (latest); other negative numbers are refused here, before librdkafka sees them.

    Examples
    --------
    >>> offsets_option({"words": {0: 1200, "1": -1}})
    {'words': {'0': 1200, '1': -1}}
    >>> offsets_option({"words": {0: -5}})
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.InvalidArgumentError: KafkaSpout(starting_offsets=...): words[0] starts at ...
    """
    words = ("latest",) if option == "ending_offsets" else ("earliest", "latest")
    if isinstance(value, str):
        if value in words:
            return value
        is_json = value.lstrip().startswith("{")
        hint = " (a JSON string is not read: pass the mapping itself)" if is_json else ""
        raise InvalidArgumentError(f"KafkaSpout({option}={value!r}): use {_offsets_shapes(option)}{hint}, "
                                   f"e.g. {_offsets_example(option)}")
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"KafkaSpout({option}={value!r}) is not an offset specification: use "
                                   f"{_offsets_shapes(option)}, e.g. {_offsets_example(option)}")
    parsed: dict[str, dict[str, int]] = {}
    for topic, partitions in value.items():
        if not isinstance(topic, str) or not topic:
            raise InvalidArgumentError(f"KafkaSpout({option}=...): {topic!r} is not a topic name; use "
                                       f"{_offsets_shapes(option)}, e.g. {_offsets_example(option)}")
        if not isinstance(partitions, Mapping):
            raise InvalidArgumentError(
                f"KafkaSpout({option}=...): topic {topic!r} maps to {partitions!r} "
                f"({type(partitions).__name__}), not to {{partition: offset}}; use "
                f"{_offsets_shapes(option)}, e.g. {_offsets_example(option, topic)}")
        parsed[topic] = {}
        for partition, offset in partitions.items():
            number = _partition_number(partition)
            if number is None:
                raise InvalidArgumentError(
                    f"KafkaSpout({option}=...): {topic}[{partition!r}]: {partition!r} is not a partition "
                    f"number (0, 1, ...); write e.g. {_offsets_example(option, topic)}")
            checked = _offset_number(offset)
            if checked is None:
                raise InvalidArgumentError(
                    f"KafkaSpout({option}=...): {topic}[{partition}] -> {offset!r} is not a partition number "
                    f"and an offset; write e.g. {_offsets_example(option, topic)}")
            sentinels = OFFSET_SENTINELS[option]
            if checked < 0 and checked not in sentinels:
                allowed = ", ".join(f"{n} for {word}" for n, word in sorted(sentinels.items()))
                verb = "ends" if option == "ending_offsets" else "starts"
                raise InvalidArgumentError(
                    f"KafkaSpout({option}=...): {topic}[{partition}] {verb} at {checked}; use an offset "
                    f">= 0, or {allowed} (no other negative value is an offset), e.g. "
                    f"{_offsets_example(option, topic)}")
            parsed[topic][str(number)] = checked
    return parsed


def _partition_number(partition: object) -> int | None:
    """A partition given as an int or its digits; None when it is neither."""
    if isinstance(partition, str):
        return int(partition) if partition.strip().isdigit() else None
    if isinstance(partition, bool) or not hasattr(partition, "__index__"):
        return None
    number = operator.index(partition)
    return number if number >= 0 else None


def _offset_number(offset: object) -> int | None:
    """An offset given as an int or its digits (``"-1"`` too); None for anything else (floats included)."""
    if isinstance(offset, str):
        try:
            return int(offset)
        except ValueError:
            return None
    if isinstance(offset, bool) or not hasattr(offset, "__index__"):
        return None
    return operator.index(offset)


#: A valid value_schema, shown in messages about a bad one.
VALUE_SCHEMA_EXAMPLE = "value_schema='user STRING, clicks INT, tags ARRAY<STRING>'"
_CLOSING = {"<": ">", "(": ")"}


def value_schema_error(ddl: str, reason: str) -> InvalidArgumentError:
    """The error for a ``value_schema`` that is not a Spark schema: the user's text, why, an example.

    Examples
    --------
    >>> str(value_schema_error("n INT, word", "field 'word' has no type"))
    "KafkaSpout(value_schema='n INT, word') is not a valid Spark schema: field 'word' has no type. Write ..."
    """
    return InvalidArgumentError(
        f"KafkaSpout(value_schema={ddl!r}) is not a valid Spark schema: {reason}. "
        f"Write the fields as 'name TYPE, ...' (Spark DDL), e.g. {VALUE_SCHEMA_EXAMPLE}")


def value_schema_fields(ddl: str) -> list[tuple[str, str]]:
    """The top-level fields of a ``value_schema``: ``(name as written, type text)`` each.

    Checks the shape only (every field has a name and a type, brackets and quotes
    close); Spark checks the types when the stream's DataFrame is built
    (:func:`check_value_schema`).

    Examples
    --------
    >>> value_schema_fields("id BIGINT, `user name`: STRING, m MAP<STRING, INT>")
    [('id', 'BIGINT'), ('`user name`', 'STRING'), ('m', 'MAP<STRING, INT>')]
    >>> value_schema_fields("n INT,, word STRING")
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.InvalidArgumentError: KafkaSpout(value_schema='n INT,, word STRING') is ...
    """
    if not ddl.strip():
        raise value_schema_error(ddl, "it is empty")
    parts = _split_top_level(ddl)
    fields = []
    for number, part in enumerate(parts, start=1):
        text = part.strip()
        if not text:
            last = number == len(parts)
            raise value_schema_error(ddl, "it ends with a comma" if last else f"field {number} is empty "
                                                                              f"(two commas?)")
        name, type_ = _split_field(ddl, text)
        if not type_:
            raise value_schema_error(ddl, f"field {name!r} has no type")
        fields.append((name, type_))
    return fields


def _split_field(ddl: str, text: str) -> tuple[str, str]:
    """``'a: INT'``, ``'a INT'`` or ``'`a b` INT'`` -> name as written and the type text."""
    if text.startswith("`"):
        end = 1
        while True:
            end = text.find("`", end)
            if end < 0:
                raise value_schema_error(ddl, f"the quoted name in {text!r} has no closing `")
            if text[end + 1:end + 2] != "`":
                break
            end += 2  # `` is a quoted backquote
        name, rest = text[:end + 1], text[end + 1:]
    else:
        cut = next((i for i, ch in enumerate(text) if ch.isspace() or ch == ":"), len(text))
        name, rest = text[:cut], text[cut:]
    rest = rest.strip()
    return name, rest[1:].strip() if rest.startswith(":") else rest


def _struct_body(ddl: str) -> str:
    """'a INT, b STRING' -> 'a: INT, b: STRING' (struct field syntax)."""
    return ", ".join(f"{name}: {type_}" for name, type_ in value_schema_fields(ddl))


def _split_top_level(ddl: str) -> list[str]:
    """``ddl`` cut at the commas outside brackets and quotes (empty parts kept: they are errors)."""
    stack: list[str] = []
    quote = ""
    current = ""
    parts = []
    for ch in ddl:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "`'\"":
            quote = ch
        elif ch in _CLOSING:
            stack.append(_CLOSING[ch])
        elif ch in ">)" and (not stack or stack.pop() != ch):
            raise value_schema_error(ddl, f"{ch!r} closes nothing (or the wrong bracket)")
        if ch == "," and not stack and not quote:
            parts.append(current)
            current = ""
        else:
            current += ch
    if quote:
        raise value_schema_error(ddl, f"a {quote} quote is not closed")
    if stack:
        raise value_schema_error(ddl, f"a bracket is not closed (expected {stack[-1]!r})")
    parts.append(current)
    return parts


def check_value_schema(ddl: str) -> None:
    """Let Spark parse ``value_schema`` on its own; a ValueError with Spark's reason if it cannot.

    Needs an active SparkSession (called when the spout's DataFrame is built, before
    the query starts). Spark's message quotes only the user's text this way, not the
    spout's whole record schema.
    """
    from pyspark.errors import PySparkException
    from pyspark.sql.types import DataType

    try:
        DataType.fromDDL(ddl)
    except PySparkException as exc:
        raise value_schema_error(ddl, _spark_reason(ddl, exc)) from None


def _spark_reason(ddl: str, exc: Exception) -> str:
    """Spark's parse error, one line: its message and where in ``ddl``, without the SQL dump.

    Examples
    --------
    >>> print(_spark_reason("n INTEGR", Exception('[UNSUPPORTED_DATATYPE] Unsupported data type "INTEGR". '
    ...                                           'SQLSTATE: 0A000 (line 1, pos 2)')))
    Unsupported data type "INTEGR" at character 3 ('INTEGR') [Spark: UNSUPPORTED_DATATYPE]
    """
    text = str(exc).strip().split("\n")[0]
    found = re.match(r"(?:\[(?P<cls>[A-Z_.]+)\]\s*)?(?P<msg>.*?)\.?\s*(?:SQLSTATE: \w+\s*)?"
                     r"(?:\(line \d+, pos (?P<pos>\d+)\))?$", text)
    if found is None:
        return text
    reason = found.group("msg")
    if found.group("pos") is not None:
        pos = int(found.group("pos"))
        reason += (" at the end" if pos >= len(ddl.rstrip())
                   else f" at character {pos + 1} ({ddl[pos:pos + 30]!r})")
    if found.group("cls"):
        reason += f" [Spark: {found.group('cls')}]"
    return reason


def parse_trigger_delay(value: float | str) -> float:
    """Seconds for ``max_trigger_delay`` (Spark's default is 15 minutes)."""
    return parse_seconds(value, what="KafkaSpout(max_trigger_delay=)")
