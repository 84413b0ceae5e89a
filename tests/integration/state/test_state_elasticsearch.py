"""ElasticsearchState against a real Elasticsearch-compatible server (an OpenSearch 2.19 node locally).

The rules, the document layout (group fields searchable), _mget/_bulk with
if_seq_no/if_primary_term, races, failures, auth headers and URLs.
"""

from __future__ import annotations

import base64
import http.server
import json
import math
import pickle
import socket
import threading
import time
import types

import pytest
from state_backends import (
    add,
    race_in_updater,
    reused_rule_tests,
    unique_name,
)
from state_races import (  # noqa: F401  (collected here, run on this backend)
    test_a_non_transactional_writer_that_loses_applies_on_the_newer_value,
    test_a_stale_cache_entry_loses_and_the_key_is_recomputed,
    test_a_writer_that_loses_rereads_and_recomputes,
    test_another_process_opens_the_pickled_factory_and_writes,
    test_duplicate_tasks_of_the_same_batches_racing_end_exact,
    test_two_states_incrementing_one_key_count_exactly,
)

from trident_spark.state import (
    ElasticsearchState,
    OpaqueValue,
    StateConfigError,
    StateError,
    StateType,
    StateUnavailableError,
    UnreadableValueError,
    open_state,
    parse_state_url,
)
from trident_spark.state.elasticsearch import ElasticsearchBackingMap, index_mapping
from trident_spark.state.keys import encode_key

pytestmark = pytest.mark.integration

TX, OPAQUE, NON_TX = StateType.TRANSACTIONAL, StateType.OPAQUE, StateType.NON_TRANSACTIONAL


class ElasticsearchBackend:
    """Factories over one index of the session's server, and raw access to its documents."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.index = unique_name("t")
        self.admin = ElasticsearchState.nonTransactional(hosts=[url], index=self.index).open_backing_map()

    def spec(self, state_type=OPAQUE, **settings) -> ElasticsearchState:
        settings.setdefault("index", self.index)
        return ElasticsearchState(hosts=[self.url], state_type=StateType(state_type), **settings)

    def raw_put(self, key, data: bytes) -> None:
        """Index a document whose stored bytes are ``data`` (bypassing serializers)."""
        with self.spec().open_backing_map() as backing:
            backing.multiGet([key])                 # creates the index with the state mapping
        try:
            doc = {"key": list(key), "state": data.decode("utf-8")}
        except UnicodeDecodeError:
            doc = {"key": list(key), "state_base64": base64.b64encode(data).decode()}
        self.put_document(encode_key(key), doc)

    def put_document(self, doc_id: str, doc) -> None:
        self.request("PUT", f"/{self.index}/_doc/{doc_id}", doc)

    def stored(self, state_type, key):
        with self.spec(state_type).open_backing_map() as backing:
            return backing.multiGet([key])[0]

    def request(self, method, target, body=None):
        status, answer = self.admin.request(method, target, body)
        assert status < 300, (status, answer)
        return answer

    def document(self, key):
        return self.request("GET", f"/{self.index}/_doc/{encode_key(key)}")

    def search(self, query):
        self.request("POST", f"/{self.index}/_refresh")
        answer = self.request("POST", f"/{self.index}/_search", {"query": query, "size": 100})
        return sorted((hit["_source"] for hit in answer["hits"]["hits"]), key=lambda s: json.dumps(s))

    def drop(self) -> None:
        self.admin.request("DELETE", f"/{self.index}")
        self.admin.close()


@pytest.fixture
def backend(elasticsearch_url):
    made = ElasticsearchBackend(elasticsearch_url)
    yield made
    made.drop()


# Every rule, API and batching test of tests/unit/state, on Elasticsearch.
globals().update(reused_rule_tests())


# -- the document layout ----------------------------------------------------------------------------

def test_one_document_per_key_with_searchable_group_fields(backend):
    spec = backend.spec(OPAQUE, fields=["word", "year"])
    state = spec.open()
    state.multiUpdate(3, [["cat", 2024], ["dog", 2024], ["cat", 2023]], [add(2), add(5), add(1)])
    state.multiUpdate(4, [["cat", 2024]], [add(1)])
    assert backend.document(["cat", 2024])["_source"] == {
        "key": ["cat", 2024], "word": "cat", "year": 2024, "txid": 4, "value": 3, "state": "[4,3,2]"}
    assert backend.document(["cat", 2024])["_id"] == "cat|~i2024"
    # Users find the state's keys by their group fields (as in Kibana), and by txid.
    assert [s["key"] for s in backend.search({"term": {"word": "cat"}})] == [["cat", 2023], ["cat", 2024]]
    assert [s["key"] for s in backend.search({"term": {"year": 2024}})] == [["cat", 2024], ["dog", 2024]]
    assert [s["key"] for s in backend.search({"term": {"key": "dog"}})] == [["dog", 2024]]
    assert [s["key"] for s in backend.search({"range": {"txid": {"gte": 4}}})] == [["cat", 2024]]


def test_the_index_is_created_with_the_state_mapping(backend):
    backend.spec(TX, fields=["word"]).open().multiUpdate(0, [["cat"]], [add(1)])
    mapping = backend.request("GET", f"/{backend.index}/_mapping")[backend.index]["mappings"]
    expected = index_mapping(["word"])["mappings"]["properties"]
    for name in ("key", "txid", "word", "value", "state"):
        assert mapping["properties"][name] == expected[name], name
    assert mapping["properties"]["state"]["index"] is False
    assert mapping["properties"]["value"]["enabled"] is False


def test_a_refresh_interval_is_set_on_the_index_and_reads_stay_real_time(backend):
    # "-1": the node never refreshes by itself; the state's reads by id still see every write
    spec = backend.spec(OPAQUE, fields=["word"], refresh_interval="-1")
    state = spec.open()
    state.multiUpdate(1, [["cat"], ["dog"]], [add(2), add(3)])
    state.multiUpdate(2, [["cat"]], [add(1)])
    settings = backend.request("GET", f"/{backend.index}/_settings")[backend.index]["settings"]
    assert settings["index"]["refresh_interval"] == "-1"
    assert spec.open().multiGet([["cat"], ["dog"]]) == [3, 3]
    assert sorted(spec.open().getTuples()) == [["cat", 3], ["dog", 3]]


def test_an_existing_index_is_used_as_it_is(backend):
    backend.request("PUT", f"/{backend.index}", {"mappings": {"properties": {"other": {"type": "long"}}}})
    backend.spec(TX).open().multiUpdate(0, [["cat"]], [add(1)])
    assert backend.spec(TX).open().multiGet([["cat"]]) == [1]
    mapping = backend.request("GET", f"/{backend.index}/_mapping")[backend.index]["mappings"]
    assert mapping["properties"]["other"] == {"type": "long"}


@pytest.mark.parametrize(("kind", "source"), [
    (TX, {"key": ["cat"], "txid": 2, "value": {"n": [1, 2]}, "state": '[2,{"n":[1,2]}]'}),
    (NON_TX, {"key": ["cat"], "value": {"n": [1, 2]}, "state": '{"n":[1,2]}'}),
])
def test_values_of_any_shape_are_readable_in_the_document(backend, kind, source):
    backend.spec(kind).open().multiPut(2, [["cat"]], [{"n": [1, 2]}])
    assert backend.document(["cat"])["_source"] == source


def test_the_global_key_is_one_document(backend):
    state = backend.spec(TX, fields=["word"]).open()
    assert state.update(0, add(5)) == 5
    assert backend.document(())["_id"] == "~global"
    assert backend.document(())["_source"] == {"key": [], "txid": 0, "value": 5, "state": "[0,5]"}


def test_long_keys_get_a_hashed_id_and_keep_their_values_searchable(backend):
    word = "w" * 700
    state = backend.spec(OPAQUE, fields=["word"]).open()
    state.multiUpdate(0, [[word], [word + "x"]], [add(1), add(2)])
    assert state.multiGet([[word], [word + "x"]]) == [1, 2]
    assert len(encode_key([word]).encode()) <= 512
    assert [s["value"] for s in backend.search({"term": {"word": word + "x"}})] == [2]


def test_a_fields_list_that_does_not_match_the_key_is_explained(backend):
    with pytest.raises(StateError, match=r"key \['cat', 1\] has 2 group values but the state was given 1 "
                                         r"field names \['word'\]"):
        backend.spec(OPAQUE, fields=["word"]).open().multiUpdate(0, [["cat", 1]], [add(1)])


@pytest.mark.parametrize(("fields", "message"), [
    (["txid"], "'txid' cannot be a document field name"),
    (["_id"], "'_id' cannot be a document field name"),
    ("word", "fields must be a non-empty list"),
    (["a", "a"], "names a field twice"),
])
def test_bad_field_names_are_refused(fields, message):
    with pytest.raises(StateConfigError, match=message):
        ElasticsearchState.opaque(fields=fields)


# -- versions: _seq_no / _primary_term ---------------------------------------------------------------

def test_versions_are_seq_no_and_primary_term(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        [created] = backing.multiPutIfVersion([["cat"]], [1], [None])
        document = backend.document(["cat"])
        assert created == (document["_seq_no"], document["_primary_term"])
        assert backing.multiPutIfVersion([["cat"]], [2], [None]) == [None]       # create: 409, lost
        [updated] = backing.multiPutIfVersion([["cat"]], [2], [created])
        assert updated is not None and updated != created
        assert backing.multiPutIfVersion([["cat"]], [3], [created]) == [None]    # stale: 409, lost
        assert backing.multiGetVersioned([["cat"]])[0].version == updated
        backing.multiRemove([["cat"]])
        assert backing.multiPutIfVersion([["cat"]], [4], [updated]) == [None]    # removed meanwhile
        [recreated] = backing.multiPutIfVersion([["cat"]], [4], [None])
        assert recreated not in (created, updated)                               # no ABA


def test_reads_are_real_time_without_a_refresh(backend):
    backend.request("PUT", f"/{backend.index}", {"settings": {"refresh_interval": "-1"}})
    state = backend.spec(OPAQUE, cache_size=0).open()
    state.multiUpdate(0, [["cat"]], [add(1)])
    assert backend.spec(OPAQUE, cache_size=0).open().multiGet([["cat"]]) == [1]


def test_keys_of_one_bulk_win_or_lose_independently(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        backing.multiPut([["a"], ["b"]], [1, 2])
        read = backing.multiGetVersioned([["a"], ["b"], ["c"]])
        backing.multiPut([["b"]], [20])                                          # another writer
        outcomes = backing.multiPutIfVersion([["a"], ["b"], ["c"]], [10, 30, 40],
                                             [read[0].version, read[1].version, None])
        assert [o is not None for o in outcomes] == [True, False, True]
        assert backing.multiGet([["a"], ["b"], ["c"]]) == [10, 20, 40]


def test_an_item_error_other_than_a_conflict_raises_naming_the_key(backend):
    backend.request("PUT", f"/{backend.index}", {"mappings": {"properties": {"word": {"type": "long"}}}})
    with pytest.raises(StateError) as caught:
        backend.spec(OPAQUE, fields=["word"]).open().multiUpdate(0, [["cat"]], [add(1)])
    message = str(caught.value)
    assert "writing key ['cat'] failed with HTTP 400" in message
    assert "a group value's type may not fit the index mapping" in message


def test_a_document_without_state_is_unreadable_naming_the_key(backend):
    backend.put_document("cat", {"key": ["cat"], "note": "written by hand"})
    with pytest.raises(UnreadableValueError, match=r"key \['cat'\] .*has no 'state' field"):
        backend.spec(OPAQUE).open().multiGet([["cat"]])


def test_an_index_deleted_meanwhile_is_created_again(backend):
    state = backend.spec(OPAQUE, cache_size=0).open()
    state.multiUpdate(0, [["cat"]], [add(1)])
    backend.request("DELETE", f"/{backend.index}")
    assert state.multiGet([["cat"]]) == [None]
    assert state.multiUpdate(1, [["cat"]], [add(1)]) == [1]


# -- round trips: one _mget and one _bulk per batch ------------------------------------------------

def test_one_mget_and_one_bulk_per_batch(backend, monkeypatch):
    requests = []
    original = ElasticsearchBackingMap._request

    def counting(self, method, target, body=None, **options):
        requests.append((method, target.split("?")[0]))
        return original(self, method, target, body, **options)

    monkeypatch.setattr(ElasticsearchBackingMap, "_request", counting)
    state = backend.spec(OPAQUE, cache_size=0, max_multi_get_batch_size=3, max_multi_put_batch_size=4).open()
    state.multiGet([["warm-up"]])               # connects and creates the index
    state.stats.reset()
    requests.clear()
    state.multiUpdate(0, [[f"w{i}"] for i in range(10)], [add(1)] * 10)
    assert requests.count(("POST", f"/{backend.index}/_mget")) == 4
    assert requests.count(("POST", f"/{backend.index}/_bulk")) == 3
    assert len(requests) == 7
    assert (state.stats.store_reads, state.stats.store_writes) == (4, 3)
    assert (state.stats.keys_read, state.stats.keys_written) == (10, 10)


# -- races: conditional writes end exact -----------------------------------------------------------

def test_a_new_key_created_by_another_writer_meanwhile(backend):
    mine, other = backend.spec(OPAQUE, cache_size=0).open(), backend.spec(OPAQUE, cache_size=0).open()
    update, calls = race_in_updater(add(1), lambda: other.multiUpdate(0, [["cat"]], [add(1)]))
    assert mine.multiUpdate(0, [["cat"]], [update]) == [1]     # create lost (409): same batch, from prev
    assert calls["n"] == 2 and mine.stats.write_conflicts == 1
    assert backend.stored(OPAQUE, ["cat"]) == OpaqueValue(0, 1, None)


# -- failures ---------------------------------------------------------------------------------------

def test_an_unreachable_host_fails_fast_naming_it():
    state = ElasticsearchState.opaque(hosts=["http://127.0.0.1:1"], index="wc").open()   # lazy
    started = time.monotonic()
    with pytest.raises(StateUnavailableError) as caught:
        state.multiGet([["cat"]])
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert message.startswith("cannot use the state store at http://127.0.0.1:1/wc: ")
    assert "Connection refused" in message
    assert "check that Elasticsearch/OpenSearch runs there" in message


def test_a_host_that_never_answers_fails_within_the_connect_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        state = ElasticsearchState.opaque(hosts=[f"http://127.0.0.1:{port}"], connect_timeout=1.0).open()
        started = time.monotonic()
        with pytest.raises(StateUnavailableError, match=f"http://127.0.0.1:{port}/trident_state"):
            state.multiGet([["cat"]])
        assert time.monotonic() - started < 10


def test_https_to_a_plain_http_server_is_a_tls_error_with_a_hint(elasticsearch_url):
    host = elasticsearch_url.split("://", 1)[1]
    state = ElasticsearchState.opaque(hosts=[f"https://{host}"], index="wc").open()
    with pytest.raises(StateUnavailableError) as caught:
        state.multiGet([["cat"]])
    assert f"https://{host}/wc" in str(caught.value)
    assert "TLS failed" in str(caught.value) and "ca_certs=" in str(caught.value)


class Recorder(http.server.BaseHTTPRequestHandler):
    """A fake cluster that refuses every request with 401 and records the headers it got."""

    seen: list[dict[str, str]] = []

    def _refuse(self) -> None:
        Recorder.seen.append({name.lower(): value for name, value in self.headers.items()})
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        body = json.dumps({"error": {"type": "security_exception", "reason": "unable to authenticate"},
                           "status": 401}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_PUT = do_POST = _refuse

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def refusing_cluster():
    Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("settings", "header"), [
    ({"username": "elastic", "password": "pw-123"}, "Basic " + base64.b64encode(b"elastic:pw-123").decode()),
    ({"api_key": "id-1:key-2"}, "ApiKey " + base64.b64encode(b"id-1:key-2").decode()),
    ({"api_key": "ZW5jb2RlZA=="}, "ApiKey ZW5jb2RlZA=="),
])
def test_credentials_are_sent_and_a_refusal_is_explained(refusing_cluster, settings, header):
    state = ElasticsearchState.opaque(hosts=[refusing_cluster], index="wc", **settings).open()
    with pytest.raises(StateUnavailableError) as caught:
        state.multiGet([["cat"]])
    assert Recorder.seen and Recorder.seen[0].get("authorization") == header
    assert "application/json" in Recorder.seen[0].get("accept", "")
    assert "compatible-with" not in json.dumps(Recorder.seen)
    message = str(caught.value)
    assert f"{refusing_cluster}/wc" in message and "HTTP 401" in message
    assert "give username= and password= (or https://user:pass@host:9200) or api_key=" in message
    assert "pw-123" not in message and "key-2" not in message


def test_credentials_in_the_host_url_are_basic_auth(refusing_cluster):
    host = refusing_cluster.replace("http://", "http://elastic:pw%40x@")
    spec = ElasticsearchState.opaque(hosts=[host], index="wc")
    with pytest.raises(StateUnavailableError) as caught:
        spec.open().multiGet([["cat"]])
    assert Recorder.seen[0]["authorization"] == "Basic " + base64.b64encode(b"elastic:pw@x").decode()
    assert "pw%40x" not in str(caught.value) and "pw@x" not in repr(spec)


# -- open_state URLs --------------------------------------------------------------------------------

def test_open_state_urls_round_trip(backend, elasticsearch_url):
    for spec in (backend.spec(OPAQUE), backend.spec(TX, fields=["word"], cache_size=0),
                 backend.spec(NON_TX, max_multi_put_batch_size=7, connect_timeout=2.5)):
        assert parse_state_url(spec.url) == spec
        assert pickle.loads(pickle.dumps(spec)) == spec
    backend.spec(TX).open().multiUpdate(4, [["cat"], ["dog", 2]], [add(3), add(4)])
    host = elasticsearch_url.split("://", 1)[1]
    for url in (f"es://{host}/{backend.index}?type=transactional",
                f"{elasticsearch_url}/{backend.index}?type=transactional"):
        with open_state(url) as state:
            assert state.multiGet([["cat"], ["dog", 2], ["eel"]]) == [3, 4, None]


def test_url_forms_with_auth_tls_and_several_hosts():
    spec = parse_state_url("https://elastic:pw%2F1@es1:9200,es2:9201/wc?type=transactional&fields=word,lang"
                           "&ca_certs=/etc/ca.crt&verify_certs=false")
    assert spec.hosts == ("https://es1:9200", "https://es2:9201")
    assert (spec.username, spec.password, spec.index) == ("elastic", "pw/1", "wc")
    assert (spec.fields, spec.ca_certs, spec.verify_certs) == (("word", "lang"), "/etc/ca.crt", False)
    assert spec.state_type is TX
    assert parse_state_url(spec.url) == spec
    assert "pw/1" not in repr(spec) and "pw" not in spec.open_backing_map().address
    keyed = parse_state_url("es://es1:9200/wc?api_key=abc%3D%3D")
    assert (keyed.hosts, keyed.api_key) == (("http://es1:9200",), "abc==")
    assert parse_state_url("es://es1/").index == "trident_state"
    assert parse_state_url("es://es1").hosts == ("http://es1",)


@pytest.mark.parametrize(("url", "message"), [
    ("es://es1:9200/Bad_Index", "Elasticsearch index name 'Bad_Index' is not allowed"),
    ("es://es1:9200/wc?fields=txid", "'txid' cannot be a document field name"),
    ("es://es1:9200/wc?verify_certs=maybe", "verify_certs='maybe' is not true or false"),
    ("https://u:pw@es1:9200/wc?refresh=true", "unknown parameter refresh; https URLs take fields"),
    ("es://es1:9200/wc?api_key=k&type=opaque&request_timeout=soon", "request_timeout='soon' is not a number"),
])
def test_bad_elasticsearch_urls_are_explained(url, message):
    with pytest.raises(StateConfigError) as caught:
        parse_state_url(url)
    assert message in str(caught.value)
    assert ":pw@" not in str(caught.value)


def test_the_backing_map_is_lazy_and_closes(backend):
    backing = backend.spec().open_backing_map()
    assert backing._transport is None
    backing.multiGet([["cat"]])
    assert backing._transport is not None
    backing.close()
    backing.close()
    with pytest.raises(StateError, match="closed"):
        backing.multiGet([["cat"]])


class PickleSerializer:
    """A serializer whose bytes are not UTF-8 text."""

    def serialize(self, value):
        return pickle.dumps(value)

    def deserialize(self, data):
        return pickle.loads(data)


def test_bytes_that_are_not_text_are_stored_as_base64(backend):
    state = backend.spec(OPAQUE, serializer=PickleSerializer()).open()
    state.multiUpdate(0, [["cat"]], [add(2)])
    state.multiUpdate(1, [["cat"]], [add(3)])
    source = backend.document(["cat"])["_source"]
    assert set(source) == {"key", "txid", "state_base64"} and source["txid"] == 1
    assert pickle.loads(base64.b64decode(source["state_base64"])) == OpaqueValue(1, 5, 2)
    assert backend.spec(OPAQUE, serializer=PickleSerializer()).open().multiGet([["cat"]]) == [5]


def test_a_value_json_cannot_hold_is_tagged_in_state_and_value(backend):
    state = backend.spec(NON_TX).open()
    state.multiPut(0, [["cat"]], [float("nan")])
    source = backend.document(["cat"])["_source"]
    assert source == {"key": ["cat"], "value": {"~float": "nan"}, "state": '{"~float":"nan"}'}
    assert math.isnan(state.multiGet([["cat"]])[0])


# -- listing every key: _refresh, then a scroll (getTuples, TupleCollectionGet) ---------------------
# (The getTuples rules themselves run here too: test_state_scan is among the reused unit tests.)

def scan_requests(monkeypatch):
    """Record every request the backing maps send, as (method, path without query)."""
    requests = []
    original = ElasticsearchBackingMap._request

    def recording(self, method, target, body=None, **options):
        requests.append((method, target.split("?")[0]))
        return original(self, method, target, body, **options)

    monkeypatch.setattr(ElasticsearchBackingMap, "_request", recording)
    return requests


def test_getting_tuples_lists_only_this_index(backend):
    state = backend.spec(OPAQUE, fields=["word", "n"]).open()
    state.multiUpdate(0, [["cat", 1], ["dog", 2]], [add(1), add(2)])
    other = ElasticsearchState.opaque(hosts=[backend.url], index=backend.index + "-2")
    try:
        other.open().multiUpdate(0, [["cat", 1], ["eel", 3]], [add(5)] * 2)
        assert sorted(state.getTuples()) == [["cat", 1, 1], ["dog", 2, 2]]
        assert sorted(other.open().getTuples()) == [["cat", 1, 5], ["eel", 3, 5]]
    finally:
        backend.admin.request("DELETE", f"/{backend.index}-2")


def test_thousands_of_keys_are_listed_once_each_in_scroll_pages(backend, monkeypatch):
    state = backend.spec(NON_TX, cache_size=0).open()
    keys = [[f"w{i}", i] for i in range(2500)]
    state.multiPut(0, keys, list(range(2500)))
    state.update(0, add(7))
    requests = scan_requests(monkeypatch)
    state.stats.reset()
    listed = list(state.getTuples())
    assert len(listed) == 2501 and [7] in listed
    assert sorted((v for v in listed if len(v) == 3), key=lambda v: v[1]) == \
        [[*key, i] for i, key in enumerate(keys)]
    index = backend.index
    assert requests == [("POST", f"/{index}/_refresh"), ("POST", f"/{index}/_search"),
                        *[("POST", "/_search/scroll")] * 3, ("DELETE", "/_search/scroll")]
    assert state.stats.keys_read == 2501 and state.stats.store_reads == 3


def test_the_scroll_is_cleared_when_listing_stops_early(backend, monkeypatch):
    with backend.spec(NON_TX).open_backing_map() as backing:
        backing.multiPut([[f"w{i}"] for i in range(5)], list(range(5)))
        requests = scan_requests(monkeypatch)
        entries = backing.scanVersioned(batch_size=2)
        next(entries)
        entries.close()
        assert requests[-1] == ("DELETE", "/_search/scroll")
        assert requests.count(("POST", "/_search/scroll")) == 0


def test_a_scan_sees_writes_not_yet_refreshed(backend):
    backend.request("PUT", f"/{backend.index}", {"settings": {"refresh_interval": "-1"}})
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(0, [["cat"]], [add(1)])
    assert list(backend.spec(OPAQUE).open().getTuples()) == [["cat", 1]]


def test_scanned_versions_are_seq_no_and_primary_term(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        backing.multiPut([["cat"]], [1])
        [(key, stored)] = list(backing.scanVersioned())
        document = backend.document(["cat"])
        assert key == ["cat"] and stored.version == (document["_seq_no"], document["_primary_term"])


def test_a_hashed_long_key_is_read_back_from_the_document(backend):
    word = "w" * 700
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(0, [[word, 3], ["cat", 1]], [add(1), add(2)])
    assert sorted(state.getTuples(), key=repr) == [["cat", 1, 2], [word, 3, 1]]


def test_a_hashed_document_without_its_key_field_is_explained(backend):
    backend.spec(OPAQUE).open().multiGet([["warm-up"]])
    backend.put_document(encode_key(["x" * 600]), {"state": "[0,1,null]"})
    with pytest.raises(StateError, match=r"has a hashed _id and no 'key' field"):
        list(backend.spec(OPAQUE).open().getTuples())


def test_a_document_without_state_is_named_while_listing(backend):
    backend.put_document("cat", {"key": ["cat"], "note": "written by hand"})
    with pytest.raises(UnreadableValueError, match=r"key \['cat'\] .*has no 'state' field"):
        list(backend.spec(OPAQUE).open().getTuples())


def test_listing_an_index_deleted_meanwhile_finds_nothing(backend):
    state = backend.spec(OPAQUE, cache_size=0).open()
    state.multiUpdate(0, [["cat"]], [add(1)])
    backend.request("DELETE", f"/{backend.index}")
    assert list(state.getTuples()) == []


def test_a_page_larger_than_the_result_window_is_capped(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        backing.multiPut([["cat"]], [1])
        assert [key for key, _ in backing.scanVersioned(batch_size=50_000)] == [["cat"]]


def test_credentials_that_may_not_refresh_still_list(backend, monkeypatch):
    from elastic_transport import Transport

    original = Transport.perform_request
    denied = []

    def refresh_denied(self, method, target, **options):
        if target.endswith("/_refresh"):        # the server answers 403: no maintenance privilege
            denied.append(target)
            body = {"error": {"type": "security_exception", "reason": "action [indices:admin/refresh] "
                                                                        "is unauthorized"}, "status": 403}
            return types.SimpleNamespace(meta=types.SimpleNamespace(status=403), body=body)
        return original(self, method, target, **options)

    backend.spec(OPAQUE).open().multiUpdate(0, [["cat"]], [add(1)])
    monkeypatch.setattr(Transport, "perform_request", refresh_denied)
    assert list(backend.spec(OPAQUE).open().getTuples()) == [["cat", 1]]
    assert denied == [f"/{backend.index}/_refresh"]
