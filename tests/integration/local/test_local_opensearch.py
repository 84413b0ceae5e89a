"""A real OpenSearch node and a three-node cluster, started here: restarted with their data,
restarted empty, one node killed and brought back.

Service: OpenSearch 2.19 from the cached jars (:func:`trident_spark.local.opensearch.start_opensearch`),
started by each test (the session's node is shared and must not be restarted under other tests).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from trident_spark.local.opensearch import start_opensearch
from trident_spark.local.process import pid_alive

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _call(address: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(address + path, data=data, method=method,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def test_a_node_restarted_comes_back_on_its_address_with_its_documents(tmp_path: Path) -> None:
    with start_opensearch(log_dir=tmp_path) as es:
        assert es.address.startswith("http://127.0.0.1:") and es.hosts == [es.address]
        assert _call(es.address, "PUT", "/wc/_doc/cat", {"count": 3})[0] == 201
        first_pid = es.pid
        es.restart()
        assert es.pid != first_pid and first_pid is not None and not pid_alive(first_pid)
        status, doc = _call(es.address, "GET", "/wc/_doc/cat")
        assert (status, doc["_source"], doc["_seq_no"]) == (200, {"count": 3}, 0)
        # Every primary active; the replica a single node cannot hold stays unassigned.
        assert _call(es.address, "GET", "/_cluster/health")[1]["status"] == "yellow"

        es.restart_empty()
        assert _call(es.address, "GET", "/wc/_doc/cat")[1]["error"]["type"] == "index_not_found_exception"
        # The earlier runs' logs are kept beside the current one.
        assert "stopped" in (tmp_path / "opensearch.log.previous").read_text()
        last_pid = es.pid
    assert es.stopped and not es.nodes[0].alive()
    assert last_pid is not None and not pid_alive(last_pid)


def test_a_node_on_a_kept_data_dir_starts_again_with_its_data(tmp_path: Path) -> None:
    with start_opensearch(data_dir=tmp_path / "os") as es:
        address = es.address
        assert _call(address, "PUT", "/wc/_doc/dog", {"count": 5})[0] == 201
    with start_opensearch(data_dir=tmp_path / "os") as again:
        assert again.address == address
        assert _call(address, "GET", "/wc/_doc/dog")[1]["_source"] == {"count": 5}


@pytest.mark.faults
def test_three_nodes_one_killed_and_started_again_then_all_restarted(tmp_path: Path) -> None:
    with start_opensearch(nodes=3, log_dir=tmp_path) as es:
        assert len(set(es.hosts)) == 3 and es.address == es.hosts[0]
        health = _call(es.address, "GET", "/_cluster/health")[1]
        assert health["number_of_nodes"] == 3
        assert _call(es.address, "PUT", "/wc", {"settings": {"number_of_shards": 3,
                                                              "number_of_replicas": 1}})[0] == 200
        for word in ("cat", "dog", "eel"):
            assert _call(es.address, "PUT", f"/wc/_doc/{word}?refresh=true", {"word": word})[0] == 201
        assert _call(es.address, "GET", "/_cluster/health/wc?wait_for_status=green&timeout=60s")[0] == 200

        es.nodes[2].kill()
        assert not es.nodes[2].alive()
        # Every document is still there: a replica of each shard lives on another node.
        for word in ("cat", "dog", "eel"):
            assert _call(es.hosts[0], "GET", f"/wc/_doc/{word}")[1]["_source"] == {"word": word}

        es.nodes[2].start()
        assert _call(es.hosts[2], "GET", "/_cluster/health")[1]["number_of_nodes"] == 3

        es.restart()
        for host in es.hosts:
            assert _call(host, "GET", "/wc/_count")[1]["count"] == 3
