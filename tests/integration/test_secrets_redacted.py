"""Planted secrets appear nowhere: one real run (Kafka -> Redis with a password and Elasticsearch with
an API key) and everything people see of it: the command's output, logs at DEBUG, reprs, errors,
progress lines, ``status``, ``query`` and every file the run leaves.

Services: the Kafka broker and Elasticsearch (an OpenSearch node without its security plugin, which
takes any credentials) of the
session, and a local redis-server started here with ``requirepass``. librdkafka ignores the
planted SASL/SSL settings on a PLAINTEXT connection, so the run reads the topic as usual.
"""

from __future__ import annotations

import base64
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from trident_spark import TopologyError, TridentTopology
from trident_spark.builtin import Count, MapGet
from trident_spark.cli.main import main as cli_main
from trident_spark.local.kafka import produce
from trident_spark.local.launchers import start_local_redis
from trident_spark.spout import FeederBatchSpout, KafkaSpout
from trident_spark.state import (
    ElasticsearchState,
    RedisState,
    StateConfigError,
    StateUnavailableError,
    open_state,
    parse_state_url,
)

pytestmark = pytest.mark.integration

REDIS_PASSWORD = "PLANTED-redis-pw-Zq81"
ES_API_KEY = "PLANTED-es-apikey-Xk27"
ES_PASSWORD = "PLANTED-es-pw-Lm55"
SASL_PASSWORD = "PLANTED-sasl-pw-Wv33"
SSL_KEY_PASSWORD = "PLANTED-sslkey-pw-Pt90"
WRONG_PASSWORD = "PLANTED-wrong-pw-Hy12"
SECRETS = [REDIS_PASSWORD, ES_API_KEY, ES_PASSWORD, SASL_PASSWORD, SSL_KEY_PASSWORD, WRONG_PASSWORD]
# What an HTTP client would send for the basic-auth user: never shown either.
SECRETS.append(base64.b64encode(f"elastic:{ES_PASSWORD}".encode()).decode())
KAFKA_OPTIONS = {"security.protocol": "PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "app",
                 "sasl.password": SASL_PASSWORD, "ssl.key.password": SSL_KEY_PASSWORD}


@pytest.fixture
def redis_with_password() -> Iterator[str]:
    with start_local_redis(password=REDIS_PASSWORD) as redis:
        assert REDIS_PASSWORD in redis.address
        yield redis.address


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


APP = """
    import logging, os, sys

    from trident_spark import TridentTopology
    from trident_spark.builtin import Count, Split
    from trident_spark.spout import KafkaSpout
    from trident_spark.state import ElasticsearchState, RedisState

    # Every record of trident_spark at DEBUG, to stderr, as a user might configure it.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger("trident_spark").addHandler(handler)
    logging.getLogger("trident_spark").setLevel(logging.DEBUG)

    redis = RedisState.opaque(url=os.environ["APP_REDIS_URL"], key_prefix="sec")
    es = ElasticsearchState.opaque(hosts=[os.environ["APP_ES_URL"]], index="secrets-wc",
                                   api_key=os.environ["APP_ES_KEY"])
    spout = KafkaSpout(os.environ["APP_KAFKA"], [os.environ["APP_TOPIC"]],
                       kafka_options=KAFKA_OPTIONS)
    print("spout:", spout, spout.config, "states:", redis, es, redis.redacted_url, es.redacted_url)
    logging.getLogger("trident_spark.app").info("states %s and %s, spout options %s",
                                                 redis.url, es.url, spout.config.kafka_options)

    topology = TridentTopology()
    words = topology.newStream("secrets", spout).each(["value"], Split(), ["word"])
    counts = words.groupBy(["word"]).persistentAggregate(redis, Count(), ["count"])
    words.groupBy(["word"]).persistentAggregate(es, Count(), ["count"])
    print("state:", counts)
"""


def test_planted_secrets_appear_in_no_output_log_error_or_file(
        redis_with_password, elasticsearch_url, kafka_bootstrap, new_topic, spark, tmp_path, capfd, caplog):
    caplog.set_level(logging.DEBUG, logger="trident_spark")
    topic = new_topic()
    produce(kafka_bootstrap, topic, [(None, b"the cat and the dog", 0), (None, b"the end", 0)])
    es_url = elasticsearch_url  # http://127.0.0.1:PORT: no security plugin, any credentials pass
    app = tmp_path / "app.py"
    app.write_text(f"KAFKA_OPTIONS = {KAFKA_OPTIONS!r}\n" + textwrap.dedent(APP))
    checkpoint = tmp_path / "ck"
    env = {"APP_REDIS_URL": redis_with_password, "APP_ES_URL": es_url, "APP_ES_KEY": ES_API_KEY,
           "APP_KAFKA": kafka_bootstrap, "APP_TOPIC": topic}
    cli = Path(sys.executable).with_name("trident-spark")
    # 1. The run itself, as a user starts it: everything it prints, Spark's output included.
    done = subprocess.run([str(cli), "run", str(app), "--available-now", "--checkpoint", str(checkpoint),
                           "--master", "local[2]"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    # It really ran with the secrets: the counts are in both password-protected stores.
    redis_state = RedisState.opaque(url=redis_with_password, key_prefix="sec")
    es_state = ElasticsearchState.opaque(hosts=[es_url], index="secrets-wc", api_key=ES_API_KEY)
    assert open_state(redis_state).multiGet([["the"], ["cat"], ["end"]]) == [3, 1, 1]
    assert open_state(es_state).multiGet([["the"], ["dog"]]) == [3, 1]
    assert "[secrets] batch 0: 2 rows" in done.stderr
    assert "DEBUG trident_spark" in done.stderr or "INFO trident_spark" in done.stderr
    assert "states redis://:***@127.0.0.1:" in done.stderr          # the app's own log line, redacted
    assert "'sasl.password': '***'" in done.stderr
    assert "state: TridentState(redis://:***@127.0.0.1:" in done.stdout
    outputs = {"run stdout": done.stdout, "run stderr": done.stderr}

    # 2. Reprs of every object that holds a secret.
    spout = KafkaSpout(kafka_bootstrap, [topic], kafka_options=KAFKA_OPTIONS)
    topology = TridentTopology()
    state = topology.newStaticState(redis_state)
    outputs["reprs"] = "\n".join(repr(x) for x in (
        redis_state, es_state, spout, spout.config, state, redis_state.redacted_url, es_state.redacted_url,
        redis_state.open_backing_map().address, es_state.open_backing_map().address,
        ElasticsearchState.opaque(hosts=[es_url.replace("://", f"://elastic:{ES_PASSWORD}@")], index="x")))
    assert "api_key=***" in outputs["reprs"] and "redis://:***@" in outputs["reprs"]

    # 3. Errors: the topology's, a state URL's, a store's, and the explain of a plan with the options.
    errors = []
    with pytest.raises(TopologyError) as caught:
        TridentTopology().newStream("q", FeederBatchSpout(["word"])).stateQuery(state, ["word"], MapGet(),
                                                                                 ["count"])
    assert "belongs to another TridentTopology" in str(caught.value)
    errors.append(caught.value)
    twice = TridentTopology()
    for name in ("a", "b"):
        stream = twice.newStream(name, FeederBatchSpout(["word"]))
        try:
            stream.groupBy(["word"]).persistentAggregate(redis_state, Count(), ["count"])
        except TopologyError as exc:
            errors.append(exc)
    assert any("is already persisted by" in str(e) for e in errors)
    for url in (f"{redis_with_password}?prefix=sec&colour=red",
                f"es://{es_url.split('://')[1]}/secrets-wc?api_key={ES_API_KEY}&colour=red",
                f"es://elastic:{ES_PASSWORD}@{es_url.split('://')[1]}/secrets-wc?type=sideways"):
        with pytest.raises(StateConfigError) as bad:
            parse_state_url(url)
        errors.append(bad.value)
    wrong = RedisState.opaque(url=redis_with_password.replace(REDIS_PASSWORD, WRONG_PASSWORD), key_prefix="s")
    with pytest.raises(StateUnavailableError) as refused:
        open_state(wrong).multiGet([["the"]])
    assert "redis://:***@127.0.0.1:" in str(refused.value)
    errors.append(refused.value)
    outputs["errors"] = "\n".join(f"{type(e).__name__}: {e} {vars(e)}" for e in errors)
    explained = TridentTopology()
    explained.newStream("explained", spout).groupBy(["value"]).persistentAggregate(es_state, Count(), ["n"])
    outputs["explain"] = explained.explain(spark)
    assert "MapInArrow" in outputs["explain"] or "== query" in outputs["explain"]

    # 4. What the handle showed, and the commands people run against the checkpoint and the states.
    for argv in (["status", str(checkpoint)], ["status", str(checkpoint), "--format", "json"],
                 ["query", f"{redis_with_password}?prefix=sec", "the"],
                 ["query", f"es://elastic:{ES_PASSWORD}@{es_url.split('://')[1]}/secrets-wc", "the"],
                 ["query", f"es://{es_url.split('://')[1]}/secrets-wc?api_key={ES_API_KEY}", "the"],
                 ["query", wrong.url, "the"]):
        code = cli_main(argv)
        assert code in (0, 1), argv
    shown = capfd.readouterr()
    outputs["commands"] = shown.out + shown.err
    assert "[secrets]" in outputs["commands"] or "secrets" in outputs["commands"]
    assert "redis://:***@127.0.0.1:" in outputs["commands"]     # query names the state, redacted
    outputs["logs"] = caplog.text + "\n".join(r.getMessage() for r in caplog.records)

    for what, text in outputs.items():
        assert leaks(text) == [], f"{what} shows a secret: {text[:2000]}"

    # 5. Every file the run and the commands left: the checkpoint (Spark's and ours) and the temp dir.
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p != app]
    assert any(p.name == "trident-run.json" for p in files)
    assert any(p.name == "trident-progress.jsonl" for p in files)
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        assert leaks(text) == [], f"{path} holds a secret"
