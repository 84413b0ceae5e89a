"""PostgresState's settings and URLs, without a server: parsing, refusals, redaction, a missing psycopg."""

from __future__ import annotations

import pickle
import sys

import pytest

from trident_spark.errors import MissingExtraError
from trident_spark.state import (
    PostgresState,
    StateConfigError,
    StateType,
    open_state,
    parse_state_url,
)


def test_the_design_forms():
    spec = PostgresState.opaque(dsn="postgresql://user@127.0.0.1:5432/db", table="counts")
    assert spec.url == "postgresql://user@127.0.0.1:5432/db?table=counts&type=opaque"
    parsed = parse_state_url("postgresql://user@127.0.0.1:5432/db?table=counts&type=opaque")
    assert parsed == spec
    assert parse_state_url("postgres://user@127.0.0.1:5432/db?table=counts").dsn == \
        "postgres://user@127.0.0.1:5432/db"
    assert PostgresState.nonTransactional(dsn="postgresql://h/db").state_type is StateType.NON_TRANSACTIONAL
    assert PostgresState.transactional(dsn="postgresql://h/db").table == "trident_state"


def test_settings_and_libpq_parameters_round_trip():
    spec = PostgresState.transactional(dsn="postgresql://app:pw@db:6543/wc?sslmode=require", table="wc_tx",
                                       connect_timeout=2, statement_timeout=None, cache_size=0)
    assert spec.url == ("postgresql://app:pw@db:6543/wc?sslmode=require&table=wc_tx&connect_timeout=2"
                        "&statement_timeout=none&type=transactional&cache_size=0")
    assert parse_state_url(spec.url) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_secrets_are_never_shown():
    spec = PostgresState.opaque(dsn="postgresql://app:s3cret@db/wc?password=k3y", table="counts")
    shown = [repr(spec), spec.redacted_url, spec.open_backing_map().address]
    assert all("s3cret" not in text and "k3y" not in text for text in shown), shown
    assert shown[0] == ("PostgresState(state_type='opaque', dsn='postgresql://app:***@db/wc?password=***', "
                        "table='counts', ...)")
    with pytest.raises(StateConfigError) as caught:
        parse_state_url("postgresql://app:s3cret@db/wc?table=bad-name")
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(("settings", "message"), [
    ({"dsn": "db:5432/wc"}, "needs a PostgreSQL URL such as postgresql://"),
    ({"dsn": "mysql://db/wc"}, "must start with postgresql:// or postgres://"),
    ({"dsn": "postgresql://db:99999/wc"}, "cannot be parsed"),
    ({"dsn": "postgresql://db/wc?nonsense=1"}, "unknown connection parameter nonsense"),
    ({"dsn": "postgresql://db/wc", "table": "1st"}, "table name '1st' is not allowed"),
    ({"dsn": "postgresql://db/wc", "table": 'a"; DROP TABLE x; --'}, "is not allowed"),
    ({"dsn": "postgresql://db/wc", "table": "x" * 64}, "at most 63 characters"),
    ({"dsn": "postgresql://db/wc", "connect_timeout": 0}, "connect_timeout must be a number of seconds > 0"),
    ({"dsn": "postgresql://db/wc", "statement_timeout": "1"}, "statement_timeout must be a number"),
])
def test_bad_settings_are_refused_before_connecting(settings, message):
    with pytest.raises(StateConfigError, match=message):
        PostgresState.opaque(**settings)


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql://db/wc?table=t&prefix=x", "unknown parameter prefix"),
    ("postgresql:///wc?table=t", "needs a host"),
    ("postgresql://db/wc?connect_timeout=soon", "connect_timeout='soon' is not a number of seconds"),
])
def test_bad_urls_are_explained(url, message):
    with pytest.raises(StateConfigError, match=message):
        parse_state_url(url)


def test_a_missing_psycopg_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)         # import psycopg raises ImportError
    state = PostgresState.opaque(dsn="postgresql://app:pw@db/wc", table="counts").open()
    with pytest.raises(MissingExtraError) as caught:  # not StateUnavailableError: no outage wait
        state.multiGet([["cat"]])
    assert str(caught.value) == (
        "the PostgreSQL state at postgresql://app:***@db/wc?table=counts needs the psycopg package, "
        "which is not installed: pip install 'trident-spark[postgres]'")
    with pytest.raises(MissingExtraError, match=r"trident-spark\[postgres\]"):
        open_state("postgresql://app:pw@db/wc?table=counts")


def test_the_ssl_key_password_is_accepted_and_never_shown():
    factory = PostgresState.opaque(dsn="postgresql://app:s3cret@db/wc?sslpassword=k3y&sslmode=require")
    shown = f"{factory!r} {factory.redacted_url}"
    assert "k3y" not in shown and "s3cret" not in shown and "sslpassword=***" in shown
