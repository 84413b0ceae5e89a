"""The session Elasticsearch (a real OpenSearch node locally) indexes and returns documents.

It is reached with the low-level ``elastic_transport`` client, the one the
state layer uses (it sends plain JSON, which OpenSearch, Elasticsearch and osmem accept).
"""

from __future__ import annotations

import uuid

import pytest

elastic_transport = pytest.importorskip(
    "elastic_transport", reason="elastic-transport is in the [elasticsearch] extra"
)

pytestmark = pytest.mark.integration

_JSON = {"content-type": "application/json", "accept": "application/json"}


def test_index_then_get(elasticsearch_url: str) -> None:
    from elastic_transport.client_utils import url_to_node_config

    transport = elastic_transport.Transport([url_to_node_config(elasticsearch_url)])
    index = f"local-{uuid.uuid4().hex[:8]}"
    try:
        created = transport.perform_request(
            "PUT", f"/{index}/_doc/1?refresh=true", body={"word": "cat", "count": 3}, headers=_JSON
        )
        assert created.meta.status == 201
        assert created.body["result"] == "created"

        fetched = transport.perform_request("GET", f"/{index}/_doc/1", headers=_JSON)
        assert fetched.body["found"] is True
        assert fetched.body["_source"] == {"word": "cat", "count": 3}
        assert fetched.body["_seq_no"] == 0

        # The transport returns error statuses instead of raising.
        missing = transport.perform_request("GET", f"/{index}/_doc/2", headers=_JSON)
        assert (missing.meta.status, missing.body["found"]) == (404, False)
    finally:
        transport.perform_request("DELETE", f"/{index}", headers=_JSON)
        transport.close()
