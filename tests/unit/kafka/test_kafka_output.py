"""The Kafka output's pure logic: mappers, selectors, bytes, the factory's settings and records.

No broker: what a tuple becomes, which errors name what, and that secrets stay out of reprs
and messages. The broker side is in tests/integration/exactly_once/test_kafka_output_exact.py.
"""

from __future__ import annotations

import doctest
import importlib
import logging
import pickle

import pytest

from trident_spark.errors import StateConfigError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.kafka import (
    DefaultTopicSelector,
    FieldIndexTopicSelector,
    FieldNameBasedTupleToKafkaMapper,
    FieldNameTopicSelector,
    KafkaRecord,
    KafkaRecordError,
    KafkaTopicSelector,
    TridentKafkaStateFactory,
    TridentKafkaStateUpdater,
    TridentTupleToKafkaMapper,
    to_bytes,
)
from trident_spark.kafka.broker import consumer_config, producer_config

WC = Fields(["word", "count"])


def tup(*values: object, fields: Fields = WC) -> TridentTuple:
    return TridentTuple(list(values), fields)


def factory(**kwargs: object) -> TridentKafkaStateFactory:
    return (TridentKafkaStateFactory("127.0.0.1:9092", **kwargs)  # type: ignore[arg-type]
            .withKafkaTopicSelector(DefaultTopicSelector("counts"))
            .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))


# -- bytes -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    ("cat", b"cat"), ("é", "é".encode()), (3, b"3"), (2.5, b"2.5"), (True, b"True"),
    (b"\x00\xff", b"\x00\xff"), (bytearray(b"ab"), b"ab"), (memoryview(b"cd"), b"cd"),
    (None, None), ([1, "a"], b"[1, 'a']"),
])
def test_bytes_as_they_are_none_as_none_anything_else_str_in_utf8(value, expected):
    assert to_bytes(value) == expected


# -- mappers -----------------------------------------------------------------------------------

def test_field_name_mapper_takes_key_value_and_headers_from_named_fields():
    mapper = FieldNameBasedTupleToKafkaMapper("word", "count", header_fields=["src"])
    t = tup("cat", 3, "web", fields=Fields(["word", "count", "src"]))
    assert (mapper.getKeyFromTuple(t), mapper.getMessageFromTuple(t)) == ("cat", 3)
    assert mapper.getHeadersFromTuple(t) == [("src", "web")]
    assert [mapper.fieldFor(p) for p in ("key", "value", "src", "other")] == ["word", "count", "src", None]
    assert mapper.keyFieldName == "word" and mapper.msgFieldName == "count"   # Storm's public fields


def test_field_name_mapper_without_a_key_field_makes_records_without_key():
    mapper = FieldNameBasedTupleToKafkaMapper(None, "count")
    assert mapper.getKeyFromTuple(tup("cat", 3)) is None
    assert mapper.getHeadersFromTuple(tup("cat", 3)) is None


@pytest.mark.parametrize("bad", [
    lambda: FieldNameBasedTupleToKafkaMapper("word", None),  # type: ignore[arg-type]
    lambda: FieldNameBasedTupleToKafkaMapper(3, "count"),  # type: ignore[arg-type]
    lambda: FieldNameBasedTupleToKafkaMapper("word", "count", header_fields="src"),
])
def test_mapper_settings_are_checked_when_made(bad):
    with pytest.raises(StateConfigError, match="FieldNameBasedTupleToKafkaMapper"):
        bad()


# -- selectors ---------------------------------------------------------------------------------

def test_default_selector_names_one_topic_and_checks_it():
    assert DefaultTopicSelector("counts").getTopic(tup("cat", 1)) == "counts"
    with pytest.raises(StateConfigError, match="non-empty str"):
        DefaultTopicSelector("")


def test_field_index_selector_reads_the_field_or_falls_back_with_a_warning(caplog):
    selector = FieldIndexTopicSelector(2, "fallback")
    assert selector.getTopic(tup("cat", 1, "animals", fields=Fields(["word", "count", "t"]))) == "animals"
    with caplog.at_level(logging.WARNING, logger="trident_spark.kafka.selector"):
        assert selector.getTopic(tup("cat", 1)) == "fallback"
    assert "Field index 2 is out of bounds" in caplog.text
    with pytest.raises(StateConfigError, match="cannot be negative"):
        FieldIndexTopicSelector(-1, "x")


def test_field_name_selector_reads_the_field_or_falls_back():
    selector = FieldNameTopicSelector("t", "fallback")
    assert selector.getTopic(tup("cat", "animals", fields=Fields(["word", "t"]))) == "animals"
    assert selector.getTopic(tup("cat", 1)) == "fallback"


# -- the factory -------------------------------------------------------------------------------

def test_the_factory_is_built_with_storms_calls_and_pickles():
    made = factory(exactly_once=True).withProducerProperties({"acks": "all"})
    again = pickle.loads(pickle.dumps(made))
    assert again.transactionalId() == "trident-spark-counts"
    assert again.producerProperties == {"acks": "all"}
    assert again.bootstrap() == "127.0.0.1:9092"


def test_bootstrap_servers_may_come_from_the_producer_properties_as_in_storm():
    made = (TridentKafkaStateFactory().withKafkaTopicSelector(DefaultTopicSelector("t"))
            .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count"))
            .withProducerProperties({"bootstrap.servers": "k1:9092,k2:9092"}))
    assert made.bootstrap() == "k1:9092,k2:9092"
    with pytest.raises(StateConfigError, match="no brokers"):
        TridentKafkaStateFactory().bootstrap()


def test_make_state_without_mapper_or_selector_says_which_call_is_missing():
    with pytest.raises(StateConfigError, match="withTridentTupleToKafkaMapper"):
        TridentKafkaStateFactory("k:9092").withKafkaTopicSelector(DefaultTopicSelector("t")).makeState(
            {}, 0, 1)
    with pytest.raises(StateConfigError, match="withKafkaTopicSelector"):
        (TridentKafkaStateFactory("k:9092").withTridentTupleToKafkaMapper(
            FieldNameBasedTupleToKafkaMapper("w", "c")).makeState({}, 0, 1))


def test_exactly_once_with_a_per_tuple_selector_needs_a_transactional_id():
    made = factory(exactly_once=True).withKafkaTopicSelector(FieldNameTopicSelector("t", "x"))
    with pytest.raises(StateConfigError, match="needs transactional_id=NAME"):
        made.makeState({}, 0, 2)
    made = factory(exactly_once=True, transactional_id="wc-out").withKafkaTopicSelector(
        FieldNameTopicSelector("t", "x"))
    assert made.makeState({}, 1, 2).transactional_id == "wc-out-1"
    assert factory().makeState({}, 1, 2).transactional_id is None     # at least once: no transactions


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"exactly_once": "yes"}, "exactly_once must be True or False"),
    ({"transactional_id": "has space"}, "transactional_id must be"),
    ({"marker_topic": ""}, "marker_topic must be"),
    ({"txid_offset": -1}, "txid_offset must be"),
    ({"timeout": 0}, "timeout must be"),
])
def test_factory_settings_are_checked(kwargs, match):
    with pytest.raises(StateConfigError, match=match):
        TridentKafkaStateFactory("k:9092", **kwargs)  # type: ignore[arg-type]


def test_transactional_id_is_not_a_producer_property():
    with pytest.raises(StateConfigError, match="transactional_id=PREFIX"):
        factory().withProducerProperties({"transactional.id": "x"})


def test_with_calls_check_what_they_are_given():
    with pytest.raises(StateConfigError, match="expected a TridentTupleToKafkaMapper"):
        factory().withTridentTupleToKafkaMapper(object())  # type: ignore[arg-type]
    with pytest.raises(StateConfigError, match="expected a KafkaTopicSelector"):
        factory().withKafkaTopicSelector("counts")  # type: ignore[arg-type]


def test_secrets_in_producer_properties_never_show():
    made = factory().withProducerProperties({"sasl.username": "me", "sasl.password": "hunter2",
                                             "ssl.key.password": "k3y"})
    shown = repr(made) + repr(made.makeState({}, 0, 1))
    assert "hunter2" not in shown and "k3y" not in shown
    assert "'sasl.password': '***'" in shown


# -- records -----------------------------------------------------------------------------------

def test_a_tuple_becomes_a_record_of_bytes():
    state = factory().makeState({}, 0, 1)
    assert state.record(tup("cat", 3)) == KafkaRecord("counts", b"cat", b"3", None)
    assert state.record(tup(b"\x01", None)) == KafkaRecord("counts", b"\x01", None, None)
    headers = factory().withTridentTupleToKafkaMapper(
        FieldNameBasedTupleToKafkaMapper("word", "count", header_fields=["count"])).makeState({}, 0, 1)
    assert headers.record(tup("cat", 3)) == KafkaRecord("counts", b"cat", b"3", [("count", b"3")])


def test_a_missing_field_names_the_tuple_and_the_field():
    state = factory().makeState({}, 0, 1)
    with pytest.raises(KafkaRecordError) as caught:
        state.record(tup("cat", fields=Fields(["word"])))
    message = str(caught.value)
    assert "the value of tuple {'word': 'cat'} (field 'count')" in message
    assert "tuple has no field 'count'" in message


class Unprintable:
    def __str__(self) -> str:
        raise ValueError("no text for this one")

    def __repr__(self) -> str:
        return "Unprintable()"


def test_a_value_without_bytes_names_the_tuple_field_and_type():
    state = factory().makeState({}, 0, 1)
    with pytest.raises(KafkaRecordError) as caught:
        state.record(tup("cat", Unprintable()))
    assert "cannot serialize the value of tuple {'word': 'cat', 'count': Unprintable()} (field 'count'): " \
           "Unprintable value: ValueError: no text for this one" in str(caught.value)
    with pytest.raises(KafkaRecordError, match=r"the key of tuple .* \(field 'word'\).*UnicodeEncodeError"):
        state.record(tup("\udcff", 1))


class NoneForOdd(KafkaTopicSelector):
    def getTopic(self, tuple):
        return None if tuple["count"] % 2 else "even"


def test_a_tuple_whose_selector_gives_none_is_skipped_with_a_warning(caplog):
    state = factory(exactly_once=True, transactional_id="t").withKafkaTopicSelector(NoneForOdd()).makeState(
        {}, 0, 1)
    with caplog.at_level(logging.WARNING, logger="trident_spark.kafka.state"):
        assert state.record(tup("cat", 3)) is None
    assert state.record(tup("dog", 2)) == KafkaRecord("even", b"dog", b"2", None)
    assert "topic selector returned None" in caplog.text


class Boom(TridentTupleToKafkaMapper):
    def getKeyFromTuple(self, tuple):
        raise RuntimeError("mapper broke")

    def getMessageFromTuple(self, tuple):
        return 1


def test_a_failing_user_mapper_is_named_with_the_tuple():
    state = factory().withTridentTupleToKafkaMapper(Boom()).makeState({}, 0, 1)
    with pytest.raises(KafkaRecordError, match=r"cannot make the key of tuple \{'word': 'cat', 'count': 3\}: "
                                               r"RuntimeError: mapper broke"):
        state.record(tup("cat", 3))


def test_update_state_outside_a_batch_says_how_it_is_called():
    state = factory().makeState({}, 0, 1)
    with pytest.raises(StateConfigError, match="beginCommit"):
        TridentKafkaStateUpdater().updateState(state, [tup("cat", 1)], None)  # type: ignore[arg-type]


# -- client settings ---------------------------------------------------------------------------

def test_producer_settings_defaults_then_the_users_then_the_partitions_transactional_id():
    config = producer_config("k:9092", {"partitioner": "consistent_random", "acks": "1"}, "wc-3", 10.0)
    assert config["partitioner"] == "consistent_random" and config["acks"] == "1"
    assert config["transactional.id"] == "wc-3" and config["enable.idempotence"] is True
    assert "transactional.id" not in producer_config("k:9092", {}, None, 10.0)
    assert producer_config("k:9092", {}, None, 10.0)["partitioner"] == "murmur2_random"   # Java's


def test_the_marker_consumer_shares_only_connection_and_security_settings():
    config = consumer_config("k:9092", {"security.protocol": "SASL_SSL", "sasl.password": "p", "acks": "all",
                                        "linger.ms": 5}, "wc-0")
    assert config["security.protocol"] == "SASL_SSL" and config["sasl.password"] == "p"
    assert "acks" not in config and "linger.ms" not in config
    assert config["isolation.level"] == "read_committed" and config["allow.auto.create.topics"] is False


@pytest.mark.parametrize("name", ["trident_spark.kafka", "trident_spark.kafka.mapper",
                                  "trident_spark.kafka.selector", "trident_spark.kafka.state",
                                  "trident_spark.kafka.factory", "trident_spark.kafka.broker"])
def test_docstring_examples(name):
    failures, attempted = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0 and attempted > 0


# -- the state's order of calls, against a stand-in client (the real broker: the integration tests) --

class FakeProducer:
    """Records what the state asks of a producer; ``fail`` names a call that raises."""

    def __init__(self, fail: str = "", undelivered: int = 0) -> None:
        self.calls: list[str] = []
        self.sent: list[tuple[str, bytes | None, bytes | None]] = []
        self.fail, self.undelivered = fail, undelivered

    def _call(self, name: str) -> None:
        from confluent_kafka import KafkaError, KafkaException

        self.calls.append(name)
        if name == self.fail:
            raise KafkaException(KafkaError(KafkaError._FENCED, "fenced (sasl.password=hunter2)"))

    def begin_transaction(self) -> None:
        self._call("begin")

    def produce(self, topic, value=None, key=None, headers=None, on_delivery=None):
        self.sent.append((topic, key, value))

    def send_offsets_to_transaction(self, offsets, metadata, timeout):
        self.calls.append(f"marker {offsets[0].topic}:{offsets[0].offset}")

    def commit_transaction(self, timeout: float) -> None:
        self._call("commit")

    def abort_transaction(self, timeout: float) -> None:
        self._call("abort")

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        return self.undelivered

    def poll(self, timeout: float) -> int:
        return 0


class FakeConsumer:
    """Answers the marker (``committed``) and topic checks (``list_topics``)."""

    def __init__(self, committed: int | None, topics: tuple[str, ...] = ("counts",)) -> None:
        self.committed_txid, self.topics = committed, topics

    def committed(self, partitions, timeout):
        from confluent_kafka import TopicPartition

        offset = -1001 if self.committed_txid is None else self.committed_txid + 1
        return [TopicPartition(partitions[0].topic, 0, offset)]

    def list_topics(self, topic=None, timeout=None):
        class Topic:
            error = None

        class Metadata:
            topics = {name: Topic() for name in self.topics}

        return Metadata()

    def consumer_group_metadata(self) -> str:
        return "group"

    def close(self) -> None:
        pass


def wired(producer: FakeProducer, consumer: FakeConsumer, **settings: object):
    state = factory(**settings).makeState({}, 0, 1)
    state._producer, state._consumer, state._marker_ready = producer, consumer, True
    return state


def test_exactly_once_sends_a_batch_in_one_transaction_with_its_marker():
    producer = FakeProducer()
    state = wired(producer, FakeConsumer(committed=6), exactly_once=True)
    state.beginCommit(7)
    state.updateState([tup("cat", 3), tup("dog", 1)])
    assert producer.sent == []                        # records wait for the transaction
    state.commit(7)
    assert producer.calls == ["begin", "marker trident-spark-txids:8", "commit"]
    assert producer.sent == [("counts", b"cat", b"3"), ("counts", b"dog", b"1")]


def test_exactly_once_skips_a_batch_its_partition_already_committed():
    producer = FakeProducer()
    state = wired(producer, FakeConsumer(committed=7), exactly_once=True)
    state.beginCommit(7)
    state.updateState([tup("cat", 3)])
    state.commit(7)
    assert producer.calls == [] and producer.sent == [] and state.batches_skipped == 1


def test_a_marker_ahead_of_the_batch_is_refused():
    from trident_spark.errors import StateAheadError

    state = wired(FakeProducer(), FakeConsumer(committed=9), exactly_once=True)
    with pytest.raises(StateAheadError, match=r"partition 0.*stored txid 9 > batch txid 7"):
        state.beginCommit(7)
    state = wired(FakeProducer(), FakeConsumer(committed=9), exactly_once=True, txid_offset=10)
    state.beginCommit(7)                              # batch 7 + offset 10 = txid 17: after the marker


def test_a_failed_commit_aborts_drops_the_producer_and_replays_the_batch_without_secrets():
    from trident_spark.errors import FailedException

    producer = FakeProducer(fail="commit")
    state = wired(producer, FakeConsumer(committed=None), exactly_once=True)
    state.beginCommit(0)
    state.updateState([tup("cat", 3)])
    with pytest.raises(FailedException) as caught:
        state.commit(0)
    assert producer.calls[-1] == "abort" and state._producer is None   # the replay starts afresh
    message = str(caught.value)
    assert "txid 0 failed in commit_transaction" in message and "the batch is replayed" in message
    assert "hunter2" not in message


def test_at_least_once_sends_as_it_goes_and_replays_a_batch_not_all_delivered():
    from trident_spark.errors import FailedException

    producer = FakeProducer()
    state = wired(producer, FakeConsumer(committed=None))
    state.beginCommit(3)
    state.updateState([tup("cat", 3)])
    assert producer.sent == [("counts", b"cat", b"3")]                # sent before commit
    state.commit(3)
    assert producer.calls == ["flush"]
    producer = FakeProducer(undelivered=2)
    state = wired(producer, FakeConsumer(committed=None))
    state.beginCommit(4)
    state.updateState([tup("cat", 3)])
    with pytest.raises(FailedException, match=r"partition 0, txid 4: records were not delivered "
                                              r"\(2 not delivered within 30 s\)"):
        state.commit(4)


def test_a_missing_output_topic_names_topic_and_broker():
    state = wired(FakeProducer(), FakeConsumer(committed=None, topics=()))
    state.beginCommit(0)
    with pytest.raises(StateConfigError,
                       match=r"topic 'counts' does not exist on 127\.0\.0\.1:9092; create it"):
        state.updateState([tup("cat", 3)])


def test_a_broker_that_does_not_answer_fails_the_check_before_the_run_naming_it():
    from trident_spark.state import StateUnavailableError

    factory = (TridentKafkaStateFactory(bootstrap_servers="127.0.0.1:1", exactly_once=True, timeout=2)
               .withKafkaTopicSelector(DefaultTopicSelector("counts"))
               .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))
    with pytest.raises(StateUnavailableError, match=r"127\.0\.0\.1:1.*did not answer within 2 s"):
        factory.check_available()
