"""Build-time validation: a wrong topology fails with a TopologyError before anything runs."""

from __future__ import annotations

import pytest

from trident_spark import Fields, TopologyError, TridentTopology
from trident_spark.graph import EachNode, FilterNode, PeekNode, ProjectNode, chain_of, spout_of
from trident_spark.operation import BaseFilter, BaseFunction, Consumer
from trident_spark.spout import KafkaSpout


class Split(BaseFunction):
    def execute(self, tuple, collector):
        for word in tuple.getString(0).split():
            collector.emit([word])


class Short(BaseFilter):
    def isKeep(self, tuple):
        return len(tuple[0]) < 4


class CountOut(BaseFunction):
    output_types = {"n": "bigint"}

    def execute(self, tuple, collector):
        collector.emit([1])


class Log(Consumer):
    def accept(self, tuple):
        pass


def stream(name="s", **kwargs):
    topology = TridentTopology()
    # a port nothing listens on: building a topology must not connect
    return topology, topology.newStream(name, KafkaSpout("127.0.0.1:1", ["sentences"], **kwargs))


SPOUT_FIELDS = ["key", "value", "topic", "partition", "offset", "timestamp"]


def test_new_stream_has_the_spout_fields():
    _, s = stream()
    assert s.getOutputFields() == SPOUT_FIELDS
    _, s = stream(include_headers=True)
    assert s.getOutputFields() == [*SPOUT_FIELDS, "headers"]


def test_each_function_appends_its_fields():
    _, s = stream()
    words = s.each(["value"], Split(), ["word"])
    assert words.getOutputFields() == [*SPOUT_FIELDS, "word"]
    assert isinstance(words.node, EachNode)
    assert words.node.input_fields == ["value"]
    assert words.node.function_fields == ["word"]
    assert words.node.label == "each(Split)"


def test_each_unknown_input_field():
    _, s = stream()
    with pytest.raises(TopologyError) as info:
        s.each(["text"], Split(), ["word"])
    assert str(info.value) == (f"each(Split): unknown input field 'text'; the stream has {SPOUT_FIELDS}")


def test_each_several_unknown_input_fields_are_all_named():
    _, s = stream()
    with pytest.raises(TopologyError, match=r"each\(Split\): unknown input field 'a', 'b'; the stream has"):
        s.each(["a", "value", "b"], Split(), ["word"])


def test_unknown_field_after_project():
    _, s = stream()
    words = s.each(["value"], Split(), ["word"]).project(["word"])
    expected = r"each\(Split\): unknown input field 'value'; the stream has \['word'\]"
    with pytest.raises(TopologyError, match=expected):
        words.each(["value"], Split(), ["again"])


def test_each_output_field_already_in_the_stream():
    _, s = stream()
    with pytest.raises(TopologyError) as info:
        s.each(["value"], Split(), ["value"])
    assert str(info.value) == (
        f"each(Split): duplicate output field 'value'; the stream already has {SPOUT_FIELDS}; "
        "choose another name (or project() the old field away first)")


def test_each_output_field_twice():
    _, s = stream()
    with pytest.raises(TopologyError, match=r"each\(Split\): duplicate output field 'word'"):
        s.each(["value"], Split(), ["word", "word"])


def test_function_without_output_fields():
    _, s = stream()
    with pytest.raises(TopologyError) as info:
        s.each(["value"], Split(), None)
    assert str(info.value) == (
        "each(Split): a Function needs output fields, e.g. each(['value'], Split(), ['word']), or [] for a "
        "Function run for its side effects")


@pytest.mark.parametrize("outputs", [[], Fields()])
def test_function_with_no_output_fields_keeps_the_stream_fields(outputs):
    # Trident's each(inputFields, function, new Fields()): a Function for its side effects.
    _, s = stream()
    assert list(s.each(["value"], Split(), outputs).getOutputFields()) == list(s.getOutputFields())


def test_filter_given_output_fields():
    _, s = stream()
    with pytest.raises(TopologyError) as info:
        s.each(["value"], Short(), ["keep"])
    assert str(info.value) == "each(Short): a Filter emits no fields; drop ['keep']"


def test_each_with_something_that_is_not_an_operation():
    _, s = stream()
    with pytest.raises(TopologyError, match=r"each\(function\): expected a BaseFunction or BaseFilter"):
        s.each(["value"], lambda t: t, ["x"])


def test_each_filter_keeps_the_fields():
    _, s = stream()
    short = s.each(["value"], Short())
    assert isinstance(short.node, FilterNode)
    assert short.getOutputFields() == SPOUT_FIELDS


def test_filter_with_a_plain_predicate():
    _, s = stream()
    kept = s.filter(lambda t: t["value"] is not None)
    assert isinstance(kept.node, FilterNode)
    assert kept.node.input_fields == SPOUT_FIELDS
    assert kept.node.filter.isKeep(_tuple_of(SPOUT_FIELDS, value="x")) is True
    assert kept.node.filter.isKeep(_tuple_of(SPOUT_FIELDS, value=None)) is False


def _tuple_of(fields, **values):
    from trident_spark import TridentTuple
    return TridentTuple([values.get(f) for f in fields], Fields(*fields))


def test_peek_keeps_the_fields():
    _, s = stream()
    seen = s.peek(Log())
    assert isinstance(seen.node, PeekNode)
    assert seen.getOutputFields() == SPOUT_FIELDS
    calls = []
    peeked = s.peek(calls.append)
    peeked.node.consumer.accept("t")
    assert calls == ["t"]


def test_output_types_declared_inline_and_by_the_operation():
    _, s = stream()
    typed = s.each(["value"], Split(), ["word", "len:int"])
    assert typed.getOutputFields().types["len"] == "int"
    assert typed.getOutputFields().types["word"] == "object"
    counted = s.each(["value"], CountOut(), ["n"])
    assert counted.getOutputFields().types["n"] == "bigint"
    assert counted.node.function_fields.types == {"n": "bigint"}


def test_project_keeps_fields_in_the_given_order_with_types():
    _, s = stream()
    projected = s.each(["value"], Split(), ["word", "n:int"]).project(["n", "word"])
    assert isinstance(projected.node, ProjectNode)
    assert projected.getOutputFields() == ["n", "word"]
    assert projected.getOutputFields().types == {"n": "int", "word": "object"}


def test_project_unknown_field():
    _, s = stream()
    with pytest.raises(TopologyError) as info:
        s.project(["value", "word"])
    assert str(info.value) == f"project: unknown input field 'word'; the stream has {SPOUT_FIELDS}"


def test_name_renames_the_last_operation():
    _, s = stream()
    words = s.each(["value"], Split(), ["word"]).name("split")
    assert words.node.label == "split"
    assert repr(words) == f"Stream(split: {[*SPOUT_FIELDS, 'word']})"


def test_duplicate_stream_name():
    topology, _ = stream("sentences")
    with pytest.raises(TopologyError) as info:
        topology.newStream("sentences", KafkaSpout("127.0.0.1:1", ["other"]))
    assert str(info.value) == "newStream('sentences'): a stream with this name already exists"


@pytest.mark.parametrize("name", ["", "has space", "a/b", "wörds", None])
def test_bad_stream_name(name):
    with pytest.raises(TopologyError) as info:
        TridentTopology().newStream(name, KafkaSpout("127.0.0.1:1", ["t"]))
    assert str(info.value) == (
        f"newStream({name!r}): use letters, digits, '_', '-' or '.' in stream names")


@pytest.mark.parametrize("name", ["words", "Words_2", "a.b-c", "0"])
def test_good_stream_names(name):
    assert TridentTopology().newStream(name, KafkaSpout("127.0.0.1:1", ["t"])).node.stream_name == name


def test_new_stream_with_something_that_is_not_a_spout():
    with pytest.raises(TopologyError, match=r"newStream\('s'\): 42 is not a spout \(it has no fields\)"):
        TridentTopology().newStream("s", 42)


def test_run_without_streams():
    with pytest.raises(TopologyError, match=r"run\(\): the topology has no stream; start one with newStream"):
        TridentTopology().run("/tmp/unused-checkpoint")


def test_chain_and_spout_of_a_node():
    _, s = stream()
    last = s.each(["value"], Split(), ["word"]).each(["word"], Short()).project(["word"])
    chain = chain_of(last.node)
    assert [type(n).__name__ for n in chain] == ["SpoutNode", "EachNode", "FilterNode", "ProjectNode"]
    assert spout_of(last.node) is s.node


def test_leaves_become_outputs_and_collected_nodes_too():
    topology, s = stream()
    words = s.each(["value"], Split(), ["word"])
    sink = words.collect()
    short = words.each(["word"], Short())
    [query] = topology.queries()
    outputs = query.outputs
    by_node = {id(o.node): o for o in outputs}
    assert set(by_node) == {id(short.node), id(words.node)}
    assert by_node[id(words.node)].sinks == [sink]
    assert sink.fields == [*SPOUT_FIELDS, "word"]
