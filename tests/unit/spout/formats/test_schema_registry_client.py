"""The Schema Registry client against an in-process registry (a real HTTP server), and the wire format."""

from __future__ import annotations

import json

import pytest

from tests.schema_registry_server import schema_registry
from trident_spark.errors import SchemaRegistryError
from trident_spark.spout.formats.schema_registry import (
    NotWireFormatError,
    SchemaRegistryClient,
    UnknownSchemaError,
    clear_cache,
    forget_misses,
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


# --- a registry that fails, redirects, trickles or floods: each attack ends in a clear refusal ---


def test_a_registry_answering_500_then_200_is_tried_again_within_the_outage_budget():
    clear_cache()
    with schema_registry() as registry:
        schema_id = registry.register("s", '"int"')
        registry.fail_next = [500, 503]
        client = SchemaRegistryClient(registry.url, timeout_s=5, outage_budget_s=60)
        assert client.schema(schema_id).schema == '"int"'
        assert registry.requests[f"/schemas/ids/{schema_id}"] == 3
        clear_cache()
        registry.fail_next = [500]
        no_budget = SchemaRegistryClient(registry.url, timeout_s=5)  # outage_budget_s=0: fails at once
        with pytest.raises(SchemaRegistryError) as info:
            no_budget.schema(schema_id)
        assert str(info.value) == (
            f"Schema Registry at {registry.url} did not answer GET /schemas/ids/{schema_id} within 5 s "
            f"(schema id {schema_id}: HTTP 500 (HTTP 500 as asked)). Check that it is running and that "
            "schema_registry_url= is its address.")
        assert registry.requests[f"/schemas/ids/{schema_id}"] == 4


def test_a_redirect_to_another_host_is_refused_and_the_credentials_never_go_there():
    clear_cache()
    with schema_registry() as other, schema_registry(user="app", password="s3cret") as registry:
        other.register("s", '"int"')
        registry.redirect_to = other.url
        host = registry.url.removeprefix("http://")
        client = SchemaRegistryClient(f"http://app:s3cret@{host}", timeout_s=5, outage_budget_s=60)
        with pytest.raises(SchemaRegistryError) as info:
            client.schema(1)
        assert str(info.value) == (
            f"Schema Registry at http://app:***@{host} answered GET /schemas/ids/1 (schema id 1) with a "
            f"redirect (HTTP 302) to {other.url}/schemas/ids/1, another host: not followed, so the "
            "registry's credentials are never sent there. Set schema_registry_url= to the address that "
            "serves the registry.")
        assert registry.requests["/schemas/ids/1"] == 1  # refused, not retried
        assert other.requests == {} and other.authorizations == []


def test_a_trickled_answer_fails_by_the_deadline():
    clear_cache()
    with schema_registry() as registry:
        schema_id = registry.register("s", json.dumps({"type": "record", "name": "R", "fields": []}))
        registry.trickle_s = 0.2  # ~60 bytes: 12 s, one byte at a time
        client = SchemaRegistryClient(registry.url, timeout_s=1)
        with pytest.raises(SchemaRegistryError) as info:
            client.schema(schema_id)
        assert str(info.value) == (
            f"Schema Registry at {registry.url} did not answer GET /schemas/ids/{schema_id} within 1 s "
            f"(schema id {schema_id}: no whole answer within timeout=1 s). Check that it is running and "
            "that schema_registry_url= is its address.")


@pytest.mark.parametrize("says_length", [True, False])
def test_a_huge_answer_is_refused_by_the_cap(says_length):
    clear_cache()
    with schema_registry() as registry:
        registry.huge_bytes, registry.huge_length = 300 * 1024 * 1024, says_length
        client = SchemaRegistryClient(registry.url, timeout_s=30, outage_budget_s=60)
        with pytest.raises(SchemaRegistryError) as info:
            client.schema(7)
        seen = "Content-Length: 314572800" if says_length else "more than that"
        assert str(info.value) == (
            f"Schema Registry at {registry.url} answered GET /schemas/ids/7 (schema id 7) with more than "
            f"8388608 bytes ({seen}): refused unread. A schema is far smaller; check that "
            "schema_registry_url= is the registry's address.")
        assert registry.requests["/schemas/ids/7"] == 1  # refused, not retried
    # the client read at most the cap and a byte: what the server got out is the cap plus the
    # sockets' buffers, far from the 300 MiB it offered
    assert registry.sent_bytes < 64 * 1024 * 1024


def test_unknown_ids_cost_one_request_each_until_the_next_range():
    clear_cache()
    with schema_registry() as registry:
        client = SchemaRegistryClient(registry.url, timeout_s=5)
        for _ in range(3):
            for schema_id in range(1000, 1100):
                with pytest.raises(UnknownSchemaError, match=f"has no schema id {schema_id} "):
                    client.schema(schema_id)
        assert sum(registry.requests.values()) == 100
        assert set(registry.requests.values()) == {1}
        forget_misses()  # a task's next range: an id registered since would be found
        with pytest.raises(UnknownSchemaError):
            client.schema(1000)
        assert registry.requests["/schemas/ids/1000"] == 2


def test_answers_that_are_not_schemas_are_schema_registry_errors():
    clear_cache()
    with schema_registry() as registry:
        registry.fail_next = [200]  # 200 with an error body: no "schema" in it
        client = SchemaRegistryClient(registry.url, timeout_s=5)
        with pytest.raises(SchemaRegistryError, match=(
                r"answered for schema id 3 without a 'schema' text \(keys: \['error_code', 'message'\]\)")):
            client.schema(3)
        registry.fail_next = [200]
        with pytest.raises(SchemaRegistryError, match="answered for subject 's' without an integer 'id'"):
            client.latest("s")


def test_redirects_within_the_registry_are_followed_at_most_three_times():
    clear_cache()
    with schema_registry() as registry:
        registry.redirect_to = registry.url  # the same origin: followed, and here without end
        client = SchemaRegistryClient(registry.url, timeout_s=5)
        expected = r"redirected GET /schemas/ids/1 \(schema id 1\) more than 3 times; set schema_registry"
        with pytest.raises(SchemaRegistryError, match=expected):
            client.schema(1)
        assert registry.requests["/schemas/ids/1"] == 4
