"""KafkaSpout: the public face of the Kafka source.

A spout knows its output fields and how to become a streaming DataFrame in a
SparkSession; the runner does the rest.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from trident_spark.errors import InvalidArgumentError
from trident_spark.spout.base import BatchFeedback, PythonSource, Spout, SpoutRun
from trident_spark.spout.kafka.config import (
    KafkaSpoutConfig,
    KeyFormat,
    MalformedPolicy,
    ValueFormat,
    check_value_schema,
    offsets_option,
    parse_trigger_delay,
)
from trident_spark.spout.kafka.run import KafkaRun

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Engine = Literal["python", "jvm"]
KAFKA_FIELDS = ("key", "value", "topic", "partition", "offset", "timestamp")


class KafkaSpout(Spout):
    """Read Kafka topics as Trident batches: one Spark micro-batch per txid.

    Parameters
    ----------
    bootstrap_servers : str
        Broker addresses, ``"host:port[,host:port]"``.
    topics, pattern : list of str, or a regex
        What to read: exactly one of them. Partitions added while the stream runs
        are picked up between batches, from their earliest offset.
    starting_offsets : "earliest", "latest" or {topic: {partition: offset}}
        Where a new query starts (a restarted one resumes from its checkpoint).
        In the mapping, -2 means earliest and -1 latest (no other negative number);
        partitions left out start at earliest. An offset past the end of its
        partition fails the query's start (``OffsetOutOfRangeError``, naming the
        partition's range); one before its first stored offset is data loss
        (see ``fail_on_data_loss``).
    ending_offsets : "latest" or {topic: {partition: offset}}, optional
        Where the stream ends: batches never read past these offsets, and once every
        partition has reached its end no more batches run (with
        ``trigger="available_now"`` the run then finishes). ``"latest"`` means the high
        watermarks when the query starts; in the mapping -1 means latest and partitions
        left out end at latest. The resolved ends are kept in the checkpoint, so a
        restarted query stops at the same place. Partitions created after the query
        started are not read. Use it to process a fixed, replayable slice of a topic,
        e.g. to compare batch sizes on the same records (``trident-spark tune``)
        or to backfill a known range.
    max_fetch_bytes : int, optional
        Trident's per-partition fetch size: each batch takes at most about this many
        bytes (key + value) from each partition, counted on records sampled from the
        head of each partition's backlog. With ``adaptive_target_ms`` it is the upper
        bound of the adaptive limit.
    adaptive_target_ms : float, optional
        Adaptive batching (off by default): between batches the per-partition byte
        limit is raised or lowered so that a batch takes about this long (wall time of
        the batch on the driver, in ms), within ``max_fetch_bytes`` (default 1 MiB per
        partition, Kafka's and Storm's fetch size). It starts at 64 KiB per partition
        (or the bound, if lower), grows by a step sized from the measured cost per byte
        (half the gap to the target per batch, at most x4) and shrinks
        multiplicatively (by target/duration, at most by half); within 10% of the target
        it holds. A batch that took everything there was says nothing about a larger
        one and never raises the limit. Every batch's limit is logged with its offsets
        (``read_limit_bytes`` in the batch's progress), so a replayed batch is the same
        and a restarted query resumes from the last limit. Use it when the per-record
        cost varies (load, record mix, a slower store) and you want steady batch
        latency without hand-tuning ``max_fetch_bytes``; the rules are in
        :mod:`trident_spark.spout.kafka.adaptive`. Python engine only.
    max_offsets_per_trigger : int, optional
        At most this many records per batch, split across partitions in proportion
        to their backlog (Spark's Kafka source rule).
    min_offsets_per_trigger, max_trigger_delay : int, duration
        Wait for at least this many records before running a batch, but never
        longer than ``max_trigger_delay`` (default ``"15m"``).
    min_partitions : int, optional
        Split large offset ranges so a batch has at least this many Spark tasks.
    value_format : "str", "bytes", "json", "avro" or "protobuf"
        ``str`` decodes UTF-8 (the default); ``json`` parses objects into a struct
        described by ``value_schema`` (a Spark DDL string, ``"user STRING, clicks INT"``;
        checked when the spout is built and parsed by Spark when the stream starts);
        ``avro`` reads Avro binary into the struct of the Avro schema ``value_schema`` (a
        dict or JSON text), or, with ``schema_registry_url``, Confluent's wire format
        (needs ``pip install 'trident-spark[avro]'``); ``protobuf`` reads messages of the
        type ``value_schema`` (a generated message class or its ``Descriptor``) into a
        struct of its fields (needs ``pip install 'trident-spark[protobuf]'``).
    schema_registry_url : str, optional
        ``value_format="avro"``: records are in Confluent's wire format (magic byte 0,
        4-byte schema id, Avro body); each is read with the schema its id names, fetched
        from this registry once per id, and resolved to ``value_schema`` (by default the
        latest version of subject ``"<topic>-value"``, read when the stream starts).
        ``value_format="protobuf"``: the same framing with message indexes after the id;
        each id must be a Protobuf schema of the registry, and messages are read as
        ``value_schema``.
        ``http://user:password@host:8081`` sends basic auth; the password is never shown.
    key_format : "str", "bytes", "avro" or "protobuf"
        As ``value_format`` for keys; ``avro`` and ``protobuf`` read them with ``key_schema``
        (an Avro schema, e.g. ``"string"``, or a message type), or from the registry
        (``schema_registry_url``; Avro keys default to the latest of subject ``"<topic>-key"``).
    key_schema : dict, str or message type, optional
        The keys' schema for ``key_format="avro"`` or ``"protobuf"``.
    include_headers : bool
        Add a ``headers`` field: a list of ``{key, value}``.
    fail_on_data_loss : bool
        When offsets the stream needs are gone (retention), fail naming topic,
        partition and offsets (default); ``False`` skips ahead and counts them.
    on_malformed : "fail", "skip" or "dead_letter"
        A record that cannot be decoded fails the batch naming it (default), or is
        dropped and counted in the batch metrics (``skip``), or is dropped, counted and
        sent to ``dead_letter_topic``, once per batch even when the batch is replayed
        (``dead_letter``, see :mod:`trident_spark.spout.kafka.dead_letters`).
    dead_letter_topic : str, optional
        With ``on_malformed="dead_letter"``: the topic (which must exist) malformed
        records go to, key and value unchanged, with headers naming their source
        (``trident.source.topic``, ``trident.source.partition``, ``trident.source.offset``),
        the reason (``trident.error``) and the stream (``trident.checkpoint``).
    kafka_options : dict
        Passed to librdkafka as is (``security.protocol``, ``sasl.*``, ``ssl.*`` ...).
    engine : "python" or "jvm"
        ``python`` (default) is the bundled Python data source; ``jvm`` maps the same
        options onto Spark's own ``kafka`` source (the ``spark-sql-kafka-0-10`` connector:
        ``run()`` without a session puts it on the classpath; your own session needs it on
        ``spark.jars.packages``, see docs/kafka-spout.md). There ``max_fetch_bytes`` becomes a
        record count estimated once when the query starts (Spark's source bounds records, not bytes).
    timeout : duration
        How long to wait for the broker before failing with its address.

    Examples
    --------
    >>> spout = KafkaSpout(bootstrap_servers="127.0.0.1:9092", topics=["sentences"],
    ...                    max_fetch_bytes=100_000)
    >>> spout.fields
    ['key', 'value', 'topic', 'partition', 'offset', 'timestamp']
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topics: Sequence[str] | None = None,
        *,
        pattern: str | None = None,
        starting_offsets: str | Mapping[str, Mapping[int | str, int]] = "earliest",
        ending_offsets: str | Mapping[str, Mapping[int | str, int]] | None = None,
        max_fetch_bytes: int | None = None,
        adaptive_target_ms: float | None = None,
        max_offsets_per_trigger: int | None = None,
        min_offsets_per_trigger: int | None = None,
        max_trigger_delay: float | str = "15m",
        min_partitions: int | None = None,
        value_format: ValueFormat = "str",
        value_schema: Any = None,
        key_format: KeyFormat = "str",
        key_schema: Any = None,
        include_headers: bool = False,
        fail_on_data_loss: bool = True,
        on_malformed: MalformedPolicy = "fail",
        schema_registry_url: str | None = None,
        dead_letter_topic: str | None = None,
        kafka_options: Mapping[str, Any] | None = None,
        engine: Engine = "python",
        timeout: float | str = 20.0,
        size_sample_bytes: int = 256 * 1024,
    ) -> None:
        if isinstance(topics, str):
            topics = [topics]
        from trident_spark.durations import parse_seconds

        if engine == "jvm" and (ending_offsets is not None or adaptive_target_ms is not None):
            raise InvalidArgumentError(
                "KafkaSpout(engine='jvm') supports neither ending_offsets= nor "
                "adaptive_target_ms= (Spark's kafka stream source has no such options); "
                "use engine='python'")
        python_only = [f"{name}={value!r}" for name, value, of_python in (
            ("value_format", value_format, value_format in ("avro", "protobuf")),
            ("key_format", key_format, key_format in ("avro", "protobuf")),
            ("on_malformed", on_malformed, on_malformed == "dead_letter")) if of_python]
        if engine == "jvm" and python_only:
            raise InvalidArgumentError(
                f"KafkaSpout(engine='jvm') does not read {' and '.join(python_only)} (only the Python "
                "source does); use engine='python'")
        value_schema = _schema_text(value_format, value_schema, "value")
        key_schema = _schema_text(key_format, key_schema, "key")

        self.config = KafkaSpoutConfig(
            bootstrap_servers=bootstrap_servers,
            topics=tuple(topics or ()),
            pattern=pattern,
            starting_offsets=offsets_option(starting_offsets, "starting_offsets"),
            ending_offsets=(None if ending_offsets is None
                            else offsets_option(ending_offsets, "ending_offsets")),
            max_fetch_bytes=max_fetch_bytes,
            adaptive_target_ms=adaptive_target_ms,
            max_offsets_per_trigger=max_offsets_per_trigger,
            min_offsets_per_trigger=min_offsets_per_trigger,
            max_trigger_delay_s=parse_trigger_delay(max_trigger_delay),
            min_partitions=min_partitions,
            value_format=value_format,
            value_schema=value_schema,
            key_format=key_format,
            key_schema=key_schema,
            include_headers=include_headers,
            fail_on_data_loss=fail_on_data_loss,
            on_malformed=on_malformed,
            schema_registry_url=schema_registry_url,
            dead_letter_topic=dead_letter_topic,
            kafka_options=dict(kafka_options or {}),
            size_sample_bytes=size_sample_bytes,
            timeout_s=parse_seconds(timeout, what="KafkaSpout(timeout=)"),
        )
        if engine not in ("python", "jvm"):
            raise InvalidArgumentError(f"KafkaSpout(engine={engine!r}): use 'python' or 'jvm'")
        self.engine: Engine = engine
        #: The run-time settings (set by :meth:`for_run`; the defaults outside a run).
        self.run = KafkaRun()

    def __repr__(self) -> str:
        config = self.config
        what = f"topics={list(config.topics)}" if config.topics else f"pattern={config.pattern!r}"
        return f"KafkaSpout({self.config.address!r}, {what})"  # kafka_options (secrets) left out

    @property
    def needs_kafka_connector(self) -> bool:
        """Whether the spout reads through Spark's own Kafka source (``engine="jvm"``), whose jars a
        session built by ``run()`` then puts on its classpath."""
        return self.engine == "jvm"

    @property
    def fields(self) -> list[str]:
        """The fields of the spout's tuples, in order."""
        extra = ["headers"] if self.config.include_headers else []
        return [*KAFKA_FIELDS, *extra]

    def check(self) -> None:
        """Fail fast, on the driver, if the broker is unreachable or a topic is missing."""
        from trident_spark.spout.kafka.client import KafkaBrokerClient

        client = KafkaBrokerClient(self.config)
        try:
            client.topic_partitions()
            if self.config.dead_letter_topic is not None:
                client.check_topic(self.config.dead_letter_topic, "dead_letter_topic")
        finally:
            client.close()
        if self.config.schema_registry_url is not None:
            from trident_spark.spout.formats.schema_registry import SchemaRegistryClient

            SchemaRegistryClient(self.config.schema_registry_url, self.config.timeout_s).check()
        for part in self._parts_from_registry():
            self._registry_schema(part)  # the registry holds the subject

    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        """The spout as a streaming DataFrame in ``spark`` (its fields plus internal columns).

        A ``value_schema`` Spark cannot parse fails here, before the query starts, with
        Spark's reason and the schema as given.
        """
        if self.config.value_schema is not None and self.config.value_format == "json":
            check_value_schema(self.config.value_schema)
        parts = self._parts_from_registry()
        if "value" in parts:
            self.config = dataclasses.replace(self.config, value_schema=self._registry_schema("value"))
        if "key" in parts:
            self.config = dataclasses.replace(self.config, key_schema=self._registry_schema("key"))
        if self.engine == "jvm":
            from trident_spark.spout.kafka.jvm import jvm_dataframe

            return jvm_dataframe(spark, self.config)
        source = self.python_source()
        assert source is not None
        return source.load(spark)

    def python_source(self) -> PythonSource | None:
        """The Spark data source ``trident_kafka`` (None with ``engine="jvm"``: Spark's own
        Kafka source reads in the JVM)."""
        if self.engine == "jvm":
            return None
        from trident_spark.spout.kafka.source import KafkaDataSource

        return PythonSource(KafkaDataSource, {"config": self.config.to_json(), "run": self.run.to_json()})

    def for_run(self, run: SpoutRun) -> KafkaSpout:
        """The spout as a run reads it: read by our Python source, it also reports its read time
        per batch (the ``source`` stage of the batch's metrics), an adaptive one learns where the
        driver leaves batch durations (``run.checkpoint``, see :mod:`trident_spark.spout.kafka.adaptive`),
        and planning waits through a broker outage within ``run.outage_budget`` seconds,
        recording the wait in the query's checkpoint directory, which also names the stream's
        dead letters. These go to the copy's :attr:`run` (a :class:`KafkaRun`); its
        :attr:`config` stays what the user set. Spark's own source (``engine="jvm"``) runs as
        it is."""
        if self.engine != "python":
            return self
        spout = copy.copy(self)
        spout.run = KafkaRun.of(run)
        return spout

    def _parts_from_registry(self) -> list[str]:
        """``"value"`` and/or ``"key"``: the Avro parts whose schema the registry gives."""
        config = self.config
        return [part for part, kind, schema in (("value", config.value_format, config.value_schema),
                                                ("key", config.key_format, config.key_schema))
                if kind == "avro" and schema is None]

    def _registry_schema(self, part: str) -> str:
        """The Avro schema the registry holds for the topic's values or keys (``value_schema`` or
        ``key_schema`` not given): the latest version of subject ``"<topic>-value"`` (or ``-key``)."""
        from trident_spark.spout.formats.schema_registry import SchemaRegistryClient

        config = self.config
        assert config.schema_registry_url is not None
        client = SchemaRegistryClient(config.schema_registry_url, config.timeout_s)
        subject = f"{config.topics[0]}-{part}"
        registered = client.latest(subject)
        if registered.schema_type != "AVRO":
            raise InvalidArgumentError(
                f"KafkaSpout({part}_format='avro'): subject {subject!r} in the Schema Registry at "
                f"{client.address} holds a {registered.schema_type} schema, not an Avro one")
        return registered.schema

    def after_batch(self, feedback: BatchFeedback) -> None:
        """With ``adaptive_target_ms``: the batch's duration, left in the query's checkpoint for
        the planner of the next batches (:func:`~trident_spark.spout.kafka.adaptive.record_feedback`)."""
        from trident_spark.spout.kafka.adaptive import record_feedback

        record_feedback(self.config.adaptive, feedback)

    @property
    def address(self) -> str:
        """The bootstrap address as given (no password), named when the broker does not answer."""
        return str(self.config.address)


def _schema_text(kind: str, schema: Any, part: str) -> Any:
    """``value_schema`` or ``key_schema`` as the settings keep it: Avro schemas and Protobuf
    message types as JSON text; other values as given (the settings check them)."""
    if schema is None:
        return None
    if kind == "avro":
        from trident_spark.spout.formats.avro import avro_schema_text

        return avro_schema_text(schema, part)
    if kind == "protobuf":
        from trident_spark.spout.formats.protobuf import protobuf_schema_text

        return protobuf_schema_text(schema, part)
    return schema
