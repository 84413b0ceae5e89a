"""The Schema Registry client against an in-process registry (a real HTTP server), and the wire format."""

from __future__ import annotations

import pytest

from tests.schema_registry_server import schema_registry
from trident_spark.errors import SchemaRegistryError
from trident_spark.spout.schema_registry import (
    NotWireFormatError,
    SchemaRegistryClient,
    UnknownSchemaError,
    clear_cache,
    split_wire_format,
    wire_format,
)


def test_wire_format_round_trip_and_refusals():
    framed = wire_format(70_000, b"body")
    assert framed[:5] == b"\x00\x00\x01\x11\x70"
    assert split_wire_format(framed) == (70_000, 5)
    with pytest.raises(NotWireFormatError, match="starts with byte 0x7b, not the magic byte 0"):
        split_wire_format(b'{"a": 1}')
    with pytest.raises(NotWireFormatError, match=r"\(3 bytes in all\)"):
        split_wire_format(b"\x00\x00\x01")


def test_register_fetch_latest_and_cache():
    clear_cache()
    with schema_registry() as registry:
        client = SchemaRegistryClient(registry.url)
        client.check()
        first = client.register("clicks-value", '"string"')
        assert client.register("clicks-value", '"string"') == first  # the same schema, the same id
        second = client.register("clicks-value", '"long"')
        assert client.schema(first).schema == '"string"'
        assert client.schema(first).schema == '"string"'
        assert registry.requests[f"/schemas/ids/{first}"] == 1
        latest = client.latest("clicks-value")
        assert (latest.id, latest.schema, latest.schema_type) == (second, '"long"', "AVRO")
        with pytest.raises(UnknownSchemaError, match=r"has no schema id 42 \(Schema not found\)"):
            client.schema(42)
        with pytest.raises(UnknownSchemaError, match="has no subject 'views-value'"):
            client.latest("views-value")


def test_basic_auth_from_the_url_and_no_password_in_messages():
    clear_cache()
    with schema_registry(user="app", password="s3cret") as registry:
        host = registry.url.removeprefix("http://")
        client = SchemaRegistryClient(f"http://app:s3cret@{host}")
        assert client.schema(client.register("s", '"int"')).schema == '"int"'
        assert "s3cret" not in repr(client)
        wrong = SchemaRegistryClient(f"http://app:wrong@{host}")
        with pytest.raises(SchemaRegistryError) as info:
            wrong.latest("s")
        assert str(info.value) == (f"Schema Registry at http://app:***@{host} refused GET "
                                   "/subjects/s/versions/latest: HTTP 401 (Unauthorized)")


def test_not_a_url():
    with pytest.raises(SchemaRegistryError, match="schema_registry_url='registry:8081' is not an http"):
        SchemaRegistryClient("registry:8081")


def test_check_fails_fast_naming_the_url():
    with schema_registry() as registry:
        url = registry.url
    expected = f"Schema Registry at {url} did not answer GET /config within 1 s"
    with pytest.raises(SchemaRegistryError, match=expected):
        SchemaRegistryClient(url, timeout_s=1).check()
