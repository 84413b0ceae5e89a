"""The one redaction: URLs, settings, free text and log records show no password, key or token."""

from __future__ import annotations

import logging

import pytest

from trident_spark import TopologyError, TridentTopology
from trident_spark.spout import KafkaSpout
from trident_spark.state import (
    ElasticsearchState,
    MemoryState,
    RedisState,
    StateAheadError,
    StateConfigError,
    StateUnavailableError,
    parse_state_url,
)
from trident_spark.state.redaction import (
    REDACTED,
    RedactingFilter,
    is_secret_name,
    redact_options,
    redact_text,
    redact_url,
)


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:pw@h:1/0", "redis://:***@h:1/0"),
    ("redis://user:pw@h", "redis://user:***@h"),
    ("rediss://default:pw@cache:6380/2?prefix=wc&type=opaque", "rediss://default:***@cache:6380/2?prefix=wc&type=opaque"),
    ("https://u:pw@es:9200", "https://u:***@es:9200"),
    ("https://u:p%40ss@es1:9200,es2:9200/wc", "https://u:***@es1:9200,es2:9200/wc"),
    ("es://h/i?api_key=K&type=opaque", "es://h/i?api_key=***&type=opaque"),
    ("es://h/i?type=opaque&API-KEY=K#top", "es://h/i?type=opaque&API-KEY=***#top"),
    ("postgresql://u:pw@h/db", "postgresql://u:***@h/db"),
    ("unix:///run/redis.sock?db=0&password=pw", "unix:///run/redis.sock?db=0&password=***"),
    ("http://h?access_token=t&client_secret=s&q=1", "http://h?access_token=***&client_secret=***&q=1"),
    ("redis://:p@ss@h:6379/0", "redis://:***@h:6379/0"),        # an unescaped "@" in the password
    ("redis://:pa/ss@h:6379/0", "redis://:***@h:6379/0"),       # an unescaped "/" in the password
])
def test_urls_show_no_password_and_no_secret_parameter(url, shown):
    assert redact_url(url) == shown
    assert redact_url(shown) == shown   # redacting twice changes nothing more


@pytest.mark.parametrize("url", [
    "redis://127.0.0.1:6379/0?prefix=wc&type=opaque",
    "redis://user@cache:6379/0",
    "es://es1:9200,es2:9200/wc?fields=word,lang&type=transactional",
    "sqlite:///tmp/wc.db?table=counts&busy_timeout=2.5",
    "https://[::1]:9200/idx?x=%20a&&b",
    "memory://wc",
    "not a url at all",
    "https://USER:PASSWORD@HOST:9200",     # a hint's placeholder, not a secret
])
def test_a_url_without_secrets_stays_byte_identical(url):
    assert redact_url(url) == url
    assert redact_text(url) == url


@pytest.mark.parametrize("name", [
    "password", "PASSWORD", "passwd", "sasl.password", "ssl.key.password", "ssl.keystore.password",
    "ssl.truststore.password", "sasl.oauthbearer.client.secret", "sasl.jaas.config", "ssl.key.pem",
    "api_key", "apikey", "apiKey", "API-KEY", "token", "access_token", "refresh_token", "client_secret",
    "clientSecret", "secret", "aws_secret_access_key", "http_auth", "authorization", "pass",
])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "key", "key_prefix", "prefix", "username", "sasl.username", "sasl.mechanism", "security.protocol",
    "ssl.ca.location", "ssl.certificate.pem", "max_tokens", "type", "index", "bypass", "",
])
def test_names_that_are_not_secret(name):
    assert not is_secret_name(name)


def test_kafka_options_show_their_sasl_and_ssl_secrets_as_stars():
    options = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "app",
               "sasl.password": "kafka-pw", "ssl.key.password": "key-pw",
               "sasl.oauthbearer.client.secret": "oauth-secret", "fetch.max.bytes": 1024,
               "schema.registry.url": "https://reg:reg-pw@registry:8081", "extra": None}
    assert redact_options(options) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "app",
        "sasl.password": REDACTED, "ssl.key.password": REDACTED, "sasl.oauthbearer.client.secret": REDACTED,
        "fetch.max.bytes": 1024, "schema.registry.url": "https://reg:***@registry:8081", "extra": None}
    assert options["sasl.password"] == "kafka-pw"   # a copy: the settings still connect


@pytest.mark.parametrize(("text", "shown"), [
    ("state redis://:pw1@h:6379/0?prefix=wc&type=opaque is already persisted by stream 'a'",
     "state redis://:***@h:6379/0?prefix=wc&type=opaque is already persisted by stream 'a'"),
    ("state URL es://h:9200/i?api_key=K1&x=1: unknown parameter x; es URLs take fields, api_key",
     "state URL es://h:9200/i?api_key=***&x=1: unknown parameter x; es URLs take fields, api_key"),
    ("KafkaSpout(kafka_options={'sasl.password': 'k-pw', 'sasl.username': 'app'})",
     "KafkaSpout(kafka_options={'sasl.password': '***', 'sasl.username': 'app'})"),
    ('{"ssl.key.password": "k-pw", "n": 1}', '{"ssl.key.password": "***", "n": 1}'),
    ('{"config": "{\\"sasl.password\\": \\"k-pw\\"}"}', '{"config": "{\\"sasl.password\\": \\"***\\"}"}'),
    ("connect(password=pw2, user=app)", "connect(password=***, user=app)"),
    ("headers: Authorization: Basic ZWxhc3RpYzpwdw==", "headers: Authorization: Basic ***"),
    ("{'authorization': 'ApiKey QUJDOmRlZg=='}", "{'authorization': 'ApiKey ***'}"),
    ("sent Bearer eyJhbGciOiJIUzI1NiJ9.e30.x", "sent Bearer ***"),
    ("sasl.jaas.config=org.x.PlainLoginModule required username=\"app\" password=\"pw4\";",
     "sasl.jaas.config=*** required username=\"app\" password=\"***\";"),
])
def test_free_text_shows_no_secret(text, shown):
    assert redact_text(text) == shown
    assert redact_text(shown) == shown


@pytest.mark.parametrize("text", [
    "give username= and password= (or https://user:pass@host:9200) or api_key=, or check the user",
    "each(Split): unknown input field 'text'; the stream has ['value']",
    "[words] batch 3: 1,200 rows, 4,096 B, 850 ms; slowest stage: each(Split) (48% of task time)",
    "Basic authentication failed; the key 'cat' holds [1, 2]",
    "HTTP 401; the server refused username/password: give username= and password= (or api_key=)",
    "password: see the docs; token: none given",
    "the server refused api_key: give username= and password= (or https://user:pass@host:9200) or api_key=",
])
def test_text_without_secrets_is_left_as_it_is(text):
    assert redact_text(text) == text


def test_state_factory_reprs_and_urls_shown_to_people_hide_secrets():
    redis = RedisState.opaque(url="redis://:redis-pw@cache:6379/0", key_prefix="wc")
    es = ElasticsearchState.opaque(hosts=["https://elastic:es-pw@es1:9200"], index="wc")
    keyed = ElasticsearchState.opaque(hosts=["https://es1:9200"], index="wc", api_key="es-key")
    assert redis.redacted_url == "redis://:***@cache:6379/0?prefix=wc&type=opaque"
    assert es.redacted_url == "https://elastic:***@es1:9200/wc?type=opaque"
    assert keyed.redacted_url == "https://es1:9200/wc?api_key=***&type=opaque"
    assert "es-key" in keyed.url and "redis-pw" in redis.url     # .url still opens the state
    for secret, factory in (("redis-pw", redis), ("es-pw", es), ("es-key", keyed)):
        assert secret not in repr(factory)
        assert secret not in factory.open_backing_map().address


def test_state_url_errors_name_the_url_without_its_secrets():
    with pytest.raises(StateConfigError) as caught:
        parse_state_url("es://es1:9200/wc?api_key=es-key&colour=red")
    assert str(caught.value) == (
        "state URL es://es1:9200/wc?api_key=***&colour=***: unknown parameter colour; es URLs take fields, "
        "api_key, ca_certs, verify_certs, request_timeout, connect_timeout, shards, replicas, "
        "wait_for_active_shards, refresh_interval, type, cache_size, txid_offset, max_conflict_retries, "
        "max_multi_get_batch_size, max_multi_put_batch_size")
    with pytest.raises(StateConfigError, match=r"redis://:\*\*\*@cache:6379/0\?expiry=soon: expiry='soon'"):
        parse_state_url("redis://:redis-pw@cache:6379/0?expiry=soon")


def test_state_errors_redact_their_message_and_address():
    ahead = StateAheadError("redis://:redis-pw@cache:6379/0?prefix=wc", ["cat"], stored_txid=7, batch_txid=2)
    assert ahead.address == "redis://:***@cache:6379/0?prefix=wc"
    assert str(ahead).startswith(
        "state is ahead of the stream: redis://:***@cache:6379/0?prefix=wc key ['cat']")
    gone = StateUnavailableError("es://es1:9200/wc?api_key=es-key", "HTTP 401")
    assert str(gone) == "cannot use the state store at es://es1:9200/wc?api_key=***: HTTP 401"


def test_topology_errors_and_trident_state_reprs_hide_the_state_password():
    topology = TridentTopology()
    factory = RedisState.opaque(url="redis://:redis-pw@cache:6379/0", key_prefix="wc")
    state = topology.newStaticState(factory)
    assert repr(state) == "TridentState(redis://:***@cache:6379/0?prefix=wc&type=opaque)"
    with pytest.raises(TopologyError) as caught:
        state.newValuesStream()
    assert str(caught.value).startswith(
        "newValuesStream: redis://:***@cache:6379/0?prefix=wc&type=opaque is a static state")
    other = TridentTopology()
    with pytest.raises(TopologyError) as caught:
        other.newStream("q", _spout()).stateQuery(state, ["value"], _map_get(), ["count"])
    assert "belongs to another TridentTopology" in str(caught.value)
    assert "redis-pw" not in str(caught.value)
    assert "redis://:***@cache:6379/0" in str(caught.value)


def test_kafka_spout_reprs_hide_kafka_options_secrets():
    spout = KafkaSpout(bootstrap_servers="127.0.0.1:9092", topics=["t"],
                       kafka_options={"sasl.password": "kafka-pw", "ssl.key.password": "key-pw"})
    assert repr(spout) == "KafkaSpout('127.0.0.1:9092', topics=['t'])"
    shown = repr(spout.config)
    assert "kafka_options={'sasl.password': '***', 'ssl.key.password': '***'}" in shown
    assert "kafka-pw" not in shown and "key-pw" not in shown


def test_log_records_of_trident_spark_are_redacted_whatever_the_handler(caplog):
    caplog.set_level(logging.DEBUG, logger="trident_spark")
    log = logging.getLogger("trident_spark.some.module")
    log.warning("retrying %s with %r", "redis://:redis-pw@cache:6379/0", {"sasl.password": "kafka-pw"})
    try:
        raise RuntimeError("Authorization: Bearer tok-abcdefgh1234 rejected")
    except RuntimeError:
        log.exception("request failed")
    text = caplog.text
    assert "retrying redis://:***@cache:6379/0 with {'sasl.password': '***'}" in text
    assert "Authorization: Bearer ***" in text
    for secret in ("redis-pw", "kafka-pw", "tok-abcdefgh1234"):
        assert secret not in text
    assert caplog.records[0].getMessage() == (
        "retrying redis://:***@cache:6379/0 with {'sasl.password': '***'}")


def test_the_filter_redacts_other_libraries_records_on_a_handler():
    record = logging.LogRecord("redis.client", logging.INFO, __file__, 1, "AUTH %s", ("password=pw5",), None)
    assert RedactingFilter().filter(record) is True
    assert record.getMessage() == "AUTH password=***"
    plain = logging.LogRecord("x", logging.INFO, __file__, 1, "%d keys", (3,), None)
    RedactingFilter().filter(plain)
    assert (plain.msg, plain.args) == ("%d keys", (3,))   # nothing secret: left as logged


def test_memory_state_is_unchanged():
    assert repr(MemoryState.opaque(name="wc")).startswith("MemoryState(")
    assert MemoryState.opaque(name="wc").redacted_url == "memory://wc?type=opaque"


def _spout():
    from trident_spark.spout import FeederBatchSpout

    return FeederBatchSpout(["value"])


def _map_get():
    from trident_spark.builtin import MapGet

    return MapGet()


# -- the attack: a secret under a misspelled name is still a secret --------------------------------

@pytest.mark.parametrize(("url", "name"), [
    ("sqlite:///x.db?table=t&passwrd=hunter2", "passwrd"),
    ("redis://127.0.0.1:6379/0?prefix=wc&passwrd=hunter2", "passwrd"),
    ("rediss://:pw@127.0.0.1:6380/0?prefix=wc&pasword=hunter2", "pasword"),
    ("es://127.0.0.1:9200/wc?apikye=hunter2", "apikye"),
    ("https://127.0.0.1:9200/wc?api-kee=hunter2&type=opaque", "api-kee"),
    ("postgresql://app@127.0.0.1:5432/db?table=t&passwrd=hunter2", "passwrd"),
    ("postgres://app:pw@127.0.0.1:5432/db?table=t&secert=hunter2", "secert"),
    ("memory://wc?passwrd=hunter2", "passwrd"),
])
def test_an_unknown_parameter_is_named_and_its_value_never_shown(url, name):
    with pytest.raises(StateConfigError) as refused:
        parse_state_url(url)
    message = str(refused.value)
    assert "hunter2" not in message
    assert f"unknown parameter {name};" in message
    assert f"{name}=***" in message


@pytest.mark.parametrize(("url", "shown"), [
    # given twice: the name is said, neither value
    ("redis://127.0.0.1:6379/0?passwrd=hunter2&passwrd=hunter3",
     "state URL redis://127.0.0.1:6379/0?passwrd=***&passwrd=***: parameter 'passwrd' given twice"),
    # a field without "=" may be the secret itself: parse_qsl would quote it
    ("sqlite:///x.db?table=t&hunter2",
     "state URL sqlite:///x.db?table=t&*** cannot be parsed: a query field has no '=' "
     "(each parameter is NAME=VALUE, joined by '&')"),
    # a scheme nobody knows: none of its values is shown
    ("mongodb://127.0.0.1/db?passwrd=hunter2",
     "unknown state URL scheme 'mongodb' in mongodb://127.0.0.1/db?passwrd=***; supported: "),
])
def test_other_url_errors_show_no_unknown_value(url, shown):
    with pytest.raises(StateConfigError) as refused:
        parse_state_url(url)
    assert str(refused.value).startswith(shown)
    assert "hunter" not in str(refused.value)


def test_a_known_parameter_and_known_secrets_keep_their_rules():
    # a known, non-secret parameter's bad value is quoted (it is what the user must fix) ...
    with pytest.raises(StateConfigError, match=r"cache_size='lots' is not an integer"):
        parse_state_url("sqlite:///x.db?table=t&cache_size=lots")
    # ... a known secret one never is
    assert str(parse_state_url("es://127.0.0.1:9200/wc?api_key=hunter2").redacted_url) == (
        "es://127.0.0.1:9200/wc?api_key=***&type=opaque")


def test_factories_built_directly_hide_unknown_values_in_reprs_and_errors():
    from trident_spark.state import PostgresState

    redis = RedisState.opaque(url="redis://127.0.0.1:6379/0?passwrd=hunter2", key_prefix="wc")
    assert "hunter2" not in repr(redis) and "hunter2" not in redis.redacted_url
    assert "passwrd=***" in repr(redis)
    for dsn in ("postgresql://app@127.0.0.1/db?passwrd=hunter2", "postgresql://app@127.0.0.1/db?hunter2"):
        with pytest.raises(StateConfigError) as refused:
            PostgresState.opaque(dsn=dsn, table="t")
        assert "hunter2" not in str(refused.value)
    with pytest.raises(StateConfigError, match="unknown connection parameter passwrd;"):
        PostgresState.opaque(dsn="postgresql://h/db?passwrd=x", table="t")
