"""ElasticsearchState's cluster settings (shards, replicas, wait_for_active_shards) as keywords and
URL parameters, the index they create and the message for an existing index that differs.

Pure logic: nothing connects (the real cluster: tests/integration/state/test_opensearch_cluster.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark.state import ElasticsearchState, StateConfigError, open_state, parse_state_url
from trident_spark.state.es_index import bulk_parameters, creation_body, found_settings, settings_mismatch
from trident_spark.windowing import ElasticsearchWindowsStoreFactory


def test_the_settings_round_trip_through_the_url() -> None:
    spec = ElasticsearchState.opaque(hosts=["http://es1:9200", "http://es2:9200"], index="wc", shards=3,
                                     replicas=1, wait_for_active_shards=2)
    assert spec.url == "es://es1:9200,es2:9200/wc?shards=3&replicas=1&wait_for_active_shards=2&type=opaque"
    again = parse_state_url(spec.url)
    assert again == spec
    assert (again.shards, again.replicas, again.wait_for_active_shards) == (3, 1, 2)


def test_url_parameters_are_parsed() -> None:
    spec = parse_state_url("es://es1:9200/wc?shards=6&replicas=2&wait_for_active_shards=ALL&type=transactional")
    assert isinstance(spec, ElasticsearchState)
    assert (spec.shards, spec.replicas, spec.wait_for_active_shards) == (6, 2, "all")
    assert spec.url == "es://es1:9200/wc?shards=6&replicas=2&wait_for_active_shards=all&type=transactional"


def test_unset_settings_leave_the_url_and_the_index_as_before() -> None:
    spec = ElasticsearchState.opaque(hosts=["http://es1:9200"], index="wc")
    assert spec.url == "es://es1:9200/wc?type=opaque"
    assert (spec.shards, spec.replicas, spec.wait_for_active_shards) == (None, None, None)
    assert "settings" not in creation_body(None, shards=None, replicas=None)
    assert bulk_parameters(None, request_timeout=30.0) == ""


def test_the_index_is_created_with_the_settings_given() -> None:
    body = creation_body(["word"], shards=3, replicas=1)
    assert body["settings"] == {"index": {"number_of_shards": 3, "number_of_replicas": 1}}
    assert body["mappings"]["properties"]["word"] == {"type": "keyword"}
    assert creation_body(None, shards=None, replicas=0)["settings"] == {"index": {"number_of_replicas": 0}}


def test_writes_wait_for_the_copies_asked_and_the_server_gives_up_before_the_client() -> None:
    assert bulk_parameters("all", request_timeout=30.0) == "?wait_for_active_shards=all&timeout=22500ms"
    assert bulk_parameters(1, request_timeout=2.0) == "?wait_for_active_shards=1&timeout=1500ms"


@pytest.mark.parametrize(("settings", "message"), [
    ({"shards": 0}, "shards must be a number of primary shards from 1 to 1024, got 0"),
    ({"shards": 2000}, "shards must be a number of primary shards from 1 to 1024, got 2000"),
    ({"shards": True}, "shards must be a number of primary shards from 1 to 1024, got True"),
    ({"replicas": -1}, "replicas must be a number of replicas per shard >= 0, got -1"),
    ({"replicas": "1"}, "replicas must be a number of replicas per shard >= 0, got '1'"),
    ({"wait_for_active_shards": 0},
     'wait_for_active_shards must be "all" or a number of shard copies >= 1, got 0'),
    ({"wait_for_active_shards": "most"},
     "wait_for_active_shards must be \"all\" or a number of shard copies >= 1, got 'most'"),
    ({"replicas": 1, "wait_for_active_shards": 3},
     "wait_for_active_shards=3 is more than the 2 copies of each shard (replicas=1 + the primary): no "
     'write could start; give at most 2, or "all"'),
])
def test_bad_settings_are_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(StateConfigError) as caught:
        ElasticsearchState.opaque(hosts=["http://es1:9200"], index="wc", **settings)
    assert str(caught.value) == message


@pytest.mark.parametrize(("query", "message"), [
    ("shards=three", "state URL es://es1:9200/wc?shards=three: shards='three' is not a whole number"),
    ("replicas=-1", "state URL es://es1:9200/wc?replicas=-1: replicas='-1' is not a whole number"),
    ("wait_for_active_shards=most",
     "state URL es://es1:9200/wc?wait_for_active_shards=most: wait_for_active_shards='most' is not "
     '"all" or a number of shard copies'),
])
def test_bad_url_parameters_are_explained(query: str, message: str) -> None:
    with pytest.raises(StateConfigError) as caught:
        open_state(f"es://es1:9200/wc?{query}")
    assert str(caught.value) == message


def test_an_existing_index_with_other_shards_says_what_to_do() -> None:
    found = found_settings({"wc-real": {"settings": {"index.number_of_shards": "1",
                                                     "index.number_of_replicas": "0"}}})
    assert found == {"shards": 1, "replicas": 0}
    assert settings_mismatch("wc", "http://es1:9200/wc", {"shards": 3, "replicas": 1}, found) == (
        "http://es1:9200/wc: index 'wc' exists with 1 shard(s) and 0 replica(s), but the state asks for "
        "shards=3, replicas=1: the shard count is fixed when an index is created, so write to a new index "
        "(index=...), or reindex into one made with 3 shards (POST _reindex); or change the replicas in "
        'place: PUT /wc/_settings {"index": {"number_of_replicas": 1}}, or leave shards= and replicas= out '
        "to use 'wc' as it is")


def test_settings_not_named_or_equal_fit() -> None:
    found = {"shards": 3, "replicas": 1}
    assert settings_mismatch("wc", "a", {"shards": None, "replicas": None}, found) is None
    assert settings_mismatch("wc", "a", {"shards": 3, "replicas": None}, found) is None
    assert settings_mismatch("wc", "a", {"shards": 3, "replicas": 1}, found) is None
    assert settings_mismatch("wc", "a", {"shards": None, "replicas": 2}, found) == (
        "a: index 'wc' exists with 3 shard(s) and 1 replica(s), but the state asks for replicas=2: change "
        'the replicas in place: PUT /wc/_settings {"index": {"number_of_replicas": 2}}, or leave replicas= '
        "out to use 'wc' as it is")


def test_the_windows_store_takes_the_settings() -> None:
    factory = ElasticsearchWindowsStoreFactory(hosts=["http://es1:9200"], index="w", shards=3, replicas=1,
                                               wait_for_active_shards="all")
    assert factory.state.url == ("es://es1:9200/w?shards=3&replicas=1&wait_for_active_shards=all"
                                 "&type=non_transactional&cache_size=0")
