"""Record formats a spout decodes: bytes, UTF-8 text and JSON, Avro (with its bounds checks),
Protobuf, and Confluent's wire format with its Schema Registry client."""
