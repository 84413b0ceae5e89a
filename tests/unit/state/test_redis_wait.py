"""RedisState's replica acknowledgements as settings (no server): wait_replicas / wait_timeout, their
URL parameters, the checks of bad values, the WAIT command and the error text of a short answer."""

from __future__ import annotations

import pickle

import pytest

from trident_spark.state import RedisState, StateConfigError, StateUnavailableError, parse_state_url
from trident_spark.state.redis_wait import ReplicasNotAcknowledgedError, ReplicaWait
from trident_spark.task_errors import mark, rebuild

ADDRESS = "redis://127.0.0.1:7000/0?prefix=wc&cluster=true"


def test_off_by_default_and_nothing_in_the_url():
    spec = RedisState.opaque(url="redis://127.0.0.1:6379/0", key_prefix="wc")
    assert (spec.wait_replicas, spec.wait_timeout) == (0, 1.0)
    assert spec.url == "redis://127.0.0.1:6379/0?prefix=wc&type=opaque"
    assert spec.open_backing_map()._wait is None


def test_settings_round_trip_through_the_state_url():
    spec = RedisState.opaque(url="redis://127.0.0.1:7000/0", key_prefix="wc", cluster=True, wait_replicas=2,
                             wait_timeout=0.25)
    assert spec.url == "redis://127.0.0.1:7000/0?prefix=wc&cluster=true&wait_replicas=2&wait_timeout=0.25&type=opaque"
    parsed = parse_state_url(spec.url)
    assert (parsed.wait_replicas, parsed.wait_timeout, parsed.cluster) == (2, 0.25, True)
    assert parsed == spec
    assert "wait_replicas=2" in repr(spec) and "wait_timeout=0.25" in repr(spec)


def test_a_backing_map_waits_with_the_state_address_and_names_the_node_without_credentials():
    spec = RedisState.transactional(url="redis://app:s3cret@cache.internal:6380/0", key_prefix="wc",
                                    wait_replicas=1)
    backing = spec.open_backing_map()
    assert backing._wait == ReplicaWait("redis://app:***@cache.internal:6380/0?prefix=wc", 1, 1.0)
    assert backing.node == "cache.internal:6380"


WANT_REPLICAS = ("wait_replicas must be a whole number >= 0 (replicas that must acknowledge each write; "
                 "0: do not wait)")


@pytest.mark.parametrize(("settings", "message"), [
    ({"wait_replicas": -1}, f"{WANT_REPLICAS}, got -1"),
    ({"wait_replicas": 1.5}, f"{WANT_REPLICAS}, got 1.5"),
    ({"wait_replicas": True}, f"{WANT_REPLICAS}, got True"),
    ({"wait_replicas": "1"}, f"{WANT_REPLICAS}, got '1'"),
    ({"wait_timeout": 0}, "wait_timeout must be a number of seconds > 0 (how long WAIT waits for the "
                          "replicas), got 0"),
    ({"wait_timeout": -2.0}, "wait_timeout must be a number of seconds > 0 (how long WAIT waits for the "
                             "replicas), got -2.0"),
    ({"wait_timeout": "1s"}, "wait_timeout must be a number of seconds > 0 (how long WAIT waits for the "
                             "replicas), got '1s'"),
    ({"wait_replicas": 1, "wait_timeout": 10.0}, "wait_timeout (10 s) must be less than socket_timeout "
                                                 "(10 s): the connection would time out before WAIT answers"),
    ({"wait_replicas": 1, "wait_timeout": 3, "socket_timeout": 2.5},
     "wait_timeout (3 s) must be less than socket_timeout (2.5 s): the connection would time out before WAIT "
     "answers"),
])
def test_bad_values_are_refused_saying_what_to_give(settings, message):
    with pytest.raises(StateConfigError) as info:
        RedisState.opaque(url="redis://127.0.0.1:6379/0", key_prefix="wc", **settings)
    assert str(info.value) == message


def test_a_long_wait_is_allowed_without_a_socket_timeout_or_when_not_waiting():
    assert RedisState.opaque(url="redis://127.0.0.1:6379/0", wait_replicas=1, wait_timeout=30.0,
                             socket_timeout=None).wait_timeout == 30.0
    assert RedisState.opaque(url="redis://127.0.0.1:6379/0", wait_timeout=30.0).wait_replicas == 0


@pytest.mark.parametrize(("query", "message"), [
    ("wait_replicas=one",
     "state URL redis://127.0.0.1:7000/0?wait_replicas=one: wait_replicas='one' is not a whole number"),
    ("wait_replicas=1.5",
     "state URL redis://127.0.0.1:7000/0?wait_replicas=1.5: wait_replicas='1.5' is not a whole number"),
    ("wait_replicas=-1", f"{WANT_REPLICAS}, got -1"),
    ("wait_replicas=1&wait_timeout=soon",
     "state URL redis://127.0.0.1:7000/0?wait_replicas=1&wait_timeout=soon: wait_timeout='soon' is not a "
     "number of seconds"),
])
def test_bad_url_parameters_are_refused(query, message):
    with pytest.raises(StateConfigError) as info:
        parse_state_url(f"redis://127.0.0.1:7000/0?{query}")
    assert str(info.value) == message


def test_the_wait_command_takes_whole_milliseconds_never_zero():
    assert ReplicaWait(ADDRESS, 1, 1.0).command() == ("WAIT", 1, 1000)
    assert ReplicaWait(ADDRESS, 2, 0.0004).command() == ("WAIT", 2, 1)   # WAIT n 0 would block forever
    assert ReplicaWait(ADDRESS, 1, 0.2504).timeout_ms == 250


def test_a_short_answer_raises_a_retryable_error_naming_the_node_and_the_numbers():
    wait = ReplicaWait(ADDRESS, 2, 0.5)
    wait.check("127.0.0.1:7001", 2)
    wait.check("127.0.0.1:7001", 3)
    with pytest.raises(ReplicasNotAcknowledgedError) as info:
        wait.check("127.0.0.1:7001", 1)
    error = info.value
    assert isinstance(error, StateUnavailableError)
    assert (error.node, error.asked, error.acknowledged, error.timeout_ms) == ("127.0.0.1:7001", 2, 1, 500)
    assert str(error) == (
        "cannot use the state store at redis://127.0.0.1:7000/0?prefix=wc&cluster=true: WAIT 2 500 on node "
        "127.0.0.1:7001: 1 of 2 replicas acknowledged the writes within 500 ms, so they are not safe from a "
        "failover (wait_replicas=2); the batch is retried within the outage budget. Check that the node's "
        "replicas run and are connected (INFO replication on 127.0.0.1:7001 lists them), or lower "
        "wait_replicas or raise wait_timeout")
    copy = pickle.loads(pickle.dumps(error))    # it crosses processes
    assert type(copy) is ReplicasNotAcknowledgedError and str(copy) == str(error)
    assert (copy.node, copy.acknowledged) == ("127.0.0.1:7001", 1)
    # from a Spark task to the driver: as the note on the task's traceback
    [note] = mark(ReplicasNotAcknowledgedError(ADDRESS, node="127.0.0.1:7001", asked=2, acknowledged=1,
                                               timeout_ms=500)).__notes__
    rebuilt = rebuild(f"Traceback ...\n{note}")
    assert type(rebuilt) is ReplicasNotAcknowledgedError and str(rebuilt) == str(error)
    assert (rebuilt.node, rebuilt.asked, rebuilt.acknowledged, rebuilt.timeout_ms) == \
        ("127.0.0.1:7001", 2, 1, 500)
