"""The worker process's decoders of Avro and Protobuf values: one per schema and registry, kept
between tasks, so writer schemas are fetched and parsed, and message classes built, once per
process."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trident_spark.spout.formats.avro import AvroDecoder
    from trident_spark.spout.formats.protobuf import ProtobufDecoder

# Decoders by (schema, registry URL, part, registry timeout, outage budget, decode timeout).
_avro_decoders: dict[tuple[str, str | None, str, float, float, float], AvroDecoder] = {}
_protobuf_decoders: dict[tuple[str, str | None, str, float, float, float], ProtobufDecoder] = {}
_lock = threading.Lock()


def avro_decoder(reader_schema: str, registry_url: str | None, timeout_s: float,
                 part: str = "value", outage_budget_s: float = 0.0,
                 decode_timeout_s: float = 10.0) -> AvroDecoder:
    """The worker process's decoder of Avro values read as ``reader_schema`` (one per schema
    and registry, so writer schemas are fetched and parsed once per process); its registry
    client waits through an outage within ``outage_budget_s``."""
    from trident_spark.spout.formats.avro import AvroDecoder

    key = (reader_schema, registry_url, part, timeout_s, outage_budget_s, decode_timeout_s)
    with _lock:
        decoder = _avro_decoders.get(key)
        if decoder is None:
            decoder = _avro_decoders[key] = AvroDecoder(reader_schema, registry_url, timeout_s, part,
                                                        outage_budget_s, decode_timeout_s)
    return decoder


def protobuf_decoder(schema: str, registry_url: str | None, timeout_s: float,
                     part: str = "value", outage_budget_s: float = 0.0,
                     decode_timeout_s: float = 10.0) -> ProtobufDecoder:
    """The worker process's decoder of Protobuf values of the message type ``schema`` describes."""
    from trident_spark.spout.formats.protobuf import ProtobufDecoder

    key = (schema, registry_url, part, timeout_s, outage_budget_s, decode_timeout_s)
    with _lock:
        decoder = _protobuf_decoders.get(key)
        if decoder is None:
            decoder = _protobuf_decoders[key] = ProtobufDecoder(schema, registry_url, timeout_s, part,
                                                                outage_budget_s, decode_timeout_s)
    return decoder


__all__ = ["avro_decoder", "protobuf_decoder"]
