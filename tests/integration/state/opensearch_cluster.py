"""Helpers of the OpenSearch cluster tests: raw REST calls, where an index's shard copies live, a word
count topology over an ElasticsearchState.

Service: a 3-node OpenSearch 2.19 cluster of the test module's own
(:func:`trident_spark.local.opensearch.start_opensearch` with ``nodes=3``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import ElasticsearchState


def call(host: str, method: str, target: str, body: Any = None, timeout: float = 60.0) -> tuple[int, Any]:
    """One REST call to ``host``: ``(status, parsed answer)``."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(f"{host}{target}", data=data, method=method,
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return int(answer.status), json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read() or b"null")


def shard_copies(host: str, index: str) -> list[dict[str, Any]]:
    """Every copy of the index's shards: ``{"shard": n, "prirep": "p"|"r", "state", "docs", "node"}``
    (documents counted after a refresh)."""
    assert call(host, "POST", f"/{index}/_refresh")[0] == 200
    status, rows = call(host, "GET", f"/_cat/shards/{index}?format=json&h=shard,prirep,state,docs,node")
    assert status == 200, rows
    return [{**row, "shard": int(row["shard"]), "docs": int(row["docs"] or 0)} for row in rows]


def primary_node_of(host: str, index: str, doc_id: str) -> str:
    """The name of the node holding the primary of the shard that ``doc_id`` routes to."""
    routing = urllib.parse.quote(doc_id, safe="")
    status, answer = call(host, "GET", f"/{index}/_search_shards?routing={routing}")
    assert status == 200, answer
    nodes = {node_id: node["name"] for node_id, node in answer["nodes"].items()}
    [group] = answer["shards"]
    [primary] = [copy for copy in group if copy["primary"]]
    return str(nodes[primary["node"]])


def index_settings(host: str, index: str) -> tuple[int, int]:
    """The index's ``(number_of_shards, number_of_replicas)``."""
    status, answer = call(host, "GET", f"/{index}/_settings?flat_settings=true")
    assert status == 200, answer
    settings = answer[index]["settings"]
    return int(settings["index.number_of_shards"]), int(settings["index.number_of_replicas"])


def word_count(factory: ElasticsearchState, partitions: int = 2) -> tuple[TridentTopology, FeederBatchSpout]:
    """Words fed by a FeederBatchSpout, counted into ``factory`` (persistentAggregate with Count)."""
    feeder = FeederBatchSpout(["word"], num_partitions=partitions)
    topology = TridentTopology()
    (topology.newStream("words", feeder).groupBy(["word"])
     .persistentAggregate(factory, Count(), ["count"]))
    return topology, feeder


def counted(batches: list[list[list[str]]]) -> dict[str, int]:
    """Each word's count over ``batches``."""
    counts: dict[str, int] = {}
    for batch in batches:
        for (word,) in batch:
            counts[word] = counts.get(word, 0) + 1
    return counts
