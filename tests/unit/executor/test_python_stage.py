"""The executor side of each/filter/peek: run_stage over Arrow batches, without Spark."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from trident_spark import FailedException, Fields
from trident_spark.errors import OperatorError
from trident_spark.executor.python_stage import MAX_TUPLE_CHARS, PythonStep, run_stage
from trident_spark.operation import BaseFilter, BaseFunction, Consumer

T0 = datetime(2024, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)

SOURCE_SCHEMA = pa.schema([
    ("key", pa.binary()),
    ("value", pa.string()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
])


def source(values, offsets=None):
    n = len(values)
    offsets = offsets if offsets is not None else list(range(n))
    return pa.RecordBatch.from_pydict({
        "key": [bytes([i, 255]) for i in range(n)],
        "value": values,
        "offset": offsets,
        "timestamp": [T0] * n,
    }, schema=SOURCE_SCHEMA)


class Split(BaseFunction):
    def execute(self, tuple, collector):
        for word in tuple.getString(0).split():
            collector.emit([word])


class WordAndLength(BaseFunction):
    def execute(self, tuple, collector):
        for word in tuple.getStringByField("value").split():
            collector.emit([word, len(word)])


class Short(BaseFilter):
    def isKeep(self, tuple):
        return len(tuple["word"]) < 4


class Recorder(Consumer):
    def __init__(self):
        self.seen = []

    def accept(self, tuple):
        self.seen.append(tuple.asDict())


class Lifecycle(BaseFunction):
    def __init__(self):
        self.events = []

    def prepare(self, conf, context):
        self.events.append(("prepare", context.partition_index, context.txid, context.operation_name))

    def execute(self, tuple, collector):
        self.events.append(("execute", tuple[0]))
        collector.emit([tuple[0].upper()])

    def cleanup(self):
        self.events.append(("cleanup",))


def step(label, operation, inputs, outputs=()):
    return PythonStep(label, operation, Fields(*inputs), Fields(*outputs))


def run(steps, output_fields, batches, new_types=None, txid=7):
    return list(run_stage(steps, output_fields, new_types or {}, txid, iter(batches)))


def rows(batches):
    return [row for b in batches for row in b.to_pylist()]


ALL = ["key", "value", "offset", "timestamp"]


def test_function_appends_fields_and_keeps_the_inputs():
    out = run([step("each(Split)", Split(), ["value"], ["word"])], [*ALL, "word"],
              [source(["the cat", "a", "big dog"])], {"word": pa.string()})
    assert len(out) == 1
    assert out[0].schema.names == [*ALL, "word"]
    assert [(r["value"], r["offset"], r["word"]) for r in rows(out)] == [
        ("the cat", 0, "the"), ("the cat", 0, "cat"), ("a", 1, "a"),
        ("big dog", 2, "big"), ("big dog", 2, "dog"),
    ]


def test_zero_emits_drop_the_tuple():
    out = run([step("each(Split)", Split(), ["value"], ["word"])], ["offset", "word"],
              [source(["", "one", "   "])], {"word": pa.string()})
    assert rows(out) == [{"offset": 1, "word": "one"}]


def test_no_emits_at_all_yields_no_batch():
    out = run([step("each(Split)", Split(), ["value"], ["word"])], ["word"],
              [source(["", " "])], {"word": pa.string()})
    assert out == []


def test_one_emit_per_tuple_keeps_order():
    out = run([step("each(Split)", Split(), ["value"], ["word"])], ["value", "word"],
              [source(["c", "b", "a"])], {"word": pa.string()})
    assert rows(out) == [{"value": v, "word": v} for v in ("c", "b", "a")]


def test_passthrough_columns_are_preserved_exactly():
    batch = source(["a b", "", "c"], offsets=[10, 20, 30])
    out = run([step("each(Split)", Split(), ["value"], ["word"])], [*ALL, "word"], [batch],
              {"word": pa.string()})
    result = out[0]
    assert result.schema.field("key").type == pa.binary()
    assert result.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert result.column("key").to_pylist() == [b"\x00\xff", b"\x00\xff", b"\x02\xff"]
    assert result.column("timestamp").to_pylist() == [T0, T0, T0]
    assert result.column("offset").to_pylist() == [10, 10, 30]


def test_identity_batch_passes_columns_through_untouched():
    batch = source(["a", "b"])
    out = run([step("peek", Recorder(), ALL)], ALL, [batch])
    assert out[0].equals(batch)


def test_several_output_fields_with_declared_types():
    out = run([step("each(WordAndLength)", WordAndLength(), ["value"], ["word", "n"])],
              ["word", "n"], [source(["hello big world"])], {"word": pa.string(), "n": pa.int64()})
    assert out[0].schema == pa.schema([("word", pa.string()), ("n", pa.int64())])
    assert rows(out) == [{"word": "hello", "n": 5}, {"word": "big", "n": 3}, {"word": "world", "n": 5}]


def test_emitted_value_that_does_not_fit_its_type():
    class Bad(BaseFunction):
        def execute(self, tuple, collector):
            collector.emit(["not a number"])

    with pytest.raises(OperatorError) as info:
        run([step("each(Bad)", Bad(), ["value"], ["n"])], ["n"], [source(["x"])], {"n": pa.int64()})
    message = str(info.value)
    assert message.startswith(
        "each(Bad): field 'n': emitted 'not a number' (str), which does not fit its declared type int64 (")
    # the suggestion follows what was emitted: a str needs a string field, or no declared type
    assert message.endswith("Emit values of the declared type, declare another (e.g. ['n:string']), or "
                            "declare none (['n']): an undeclared field carries any Python value.")


def test_emitted_int_overflowing_its_type():
    class Huge(BaseFunction):
        def execute(self, tuple, collector):
            collector.emit([2**40])

    with pytest.raises(OperatorError,
                       match=r"each\(Huge\): field 'n': emitted 1099511627776 \(int\), "
                             "which does not fit its declared type int32"):
        run([step("each(Huge)", Huge(), ["value"], ["n"])], ["n"], [source(["x"])], {"n": pa.int32()})


def test_emit_of_the_wrong_width():
    with pytest.raises(OperatorError) as info:
        run([step("split", Split(), ["value"], ["word", "n"])], ["word", "n"], [source(["a"])],
            {"word": pa.string(), "n": pa.int64()})
    assert str(info.value) == "split: emitted 1 values ['a'] but declared 2 fields ['word', 'n']"


def test_filter():
    class ShortValue(BaseFilter):
        def isKeep(self, tuple):
            return len(tuple.getString(0)) < 4

    out = run([step("each(ShortValue)", ShortValue(), ["value"])], ALL, [source(["cat", "horse", "ox"])])
    assert [r["value"] for r in rows(out)] == ["cat", "ox"]
    assert out[0].column("key").to_pylist() == [b"\x00\xff", b"\x02\xff"]


def test_filter_dropping_everything_yields_no_batch():
    class Never(BaseFilter):
        def isKeep(self, tuple):
            return False

    assert run([step("never", Never(), ["value"])], ALL, [source(["a", "b"])]) == []


def test_filter_after_a_function_sees_the_new_field():
    steps = [step("each(Split)", Split(), ["value"], ["word"]), step("each(Short)", Short(), ["word"])]
    out = run(steps, ["offset", "word"], [source(["the horse ate", "an apple"])], {"word": pa.string()})
    assert rows(out) == [{"offset": 0, "word": "the"}, {"offset": 0, "word": "ate"},
                         {"offset": 1, "word": "an"}]


def test_function_after_a_filter_sees_only_kept_tuples():
    class NotEmpty(BaseFilter):
        def isKeep(self, tuple):
            return bool(tuple[0])

    class Upper(BaseFunction):
        def execute(self, tuple, collector):
            collector.emit([tuple[0].upper()])

    steps = [step("nonempty", NotEmpty(), ["value"]), step("upper", Upper(), ["value"], ["up"])]
    out = run(steps, ["key", "value", "up"], [source(["a", "", "b"])], {"up": pa.string()})
    assert rows(out) == [{"key": b"\x00\xff", "value": "a", "up": "A"},
                         {"key": b"\x02\xff", "value": "b", "up": "B"}]


def test_peek_is_called_once_per_tuple_and_changes_nothing():
    recorder = Recorder()
    steps = [step("each(Split)", Split(), ["value"], ["word"]), step("peek", recorder, ["offset", "word"])]
    out = run(steps, ["offset", "word"], [source(["a b", "c"])], {"word": pa.string()})
    assert recorder.seen == [{"offset": 0, "word": "a"}, {"offset": 0, "word": "b"},
                             {"offset": 1, "word": "c"}]
    assert rows(out) == recorder.seen


def test_project_like_output_keeps_only_listed_fields():
    out = run([step("each(Split)", Split(), ["value"], ["word"])], ["word", "offset"],
              [source(["x"])], {"word": pa.string()})
    assert out[0].schema.names == ["word", "offset"]


def test_many_batches_and_empty_batches():
    batches = [source(["a"]), source([]), source(["b c"], offsets=[9])]
    out = run([step("each(Split)", Split(), ["value"], ["word"])], ["offset", "word"], batches,
              {"word": pa.string()})
    assert len(out) == 2
    assert rows(out) == [{"offset": 0, "word": "a"}, {"offset": 9, "word": "b"}, {"offset": 9, "word": "c"}]


def test_user_exception_names_the_operator_and_the_tuple():
    class Boom(BaseFunction):
        def execute(self, tuple, collector):
            raise ValueError("no good")

    with pytest.raises(OperatorError) as info:
        run([step("split-words", Boom(), ["value", "offset"], ["x"])], ["x"], [source(["the cat"])],
            {"x": pa.string()})
    assert str(info.value) == (
        "split-words failed on tuple {'value': 'the cat', 'offset': 0}: ValueError: no good")
    assert isinstance(info.value.__cause__, ValueError)


def test_long_tuples_are_truncated_in_the_error():
    class Boom(BaseFilter):
        def isKeep(self, tuple):
            raise KeyError("k")

    with pytest.raises(OperatorError) as info:
        run([step("each(Boom)", Boom(), ["value"])], ALL, [source(["x" * 5000])])
    message = str(info.value)
    assert message.startswith("each(Boom) failed on tuple {'value': 'xxx")
    assert "...(truncated): KeyError: 'k'" in message
    assert len(message) < MAX_TUPLE_CHARS + 100


def test_peek_exception_is_an_operator_error():
    def explode(t):
        raise RuntimeError("disk full")

    from trident_spark.operation import CallableConsumer

    with pytest.raises(OperatorError, match=r"^peek\(explode\) failed on tuple .*RuntimeError: disk full"):
        run([step("peek(explode)", CallableConsumer(explode), ["value"])], ALL, [source(["a"])])


def test_failed_exception_propagates_unchanged():
    error = FailedException("store briefly unavailable")

    class Fails(BaseFunction):
        def execute(self, tuple, collector):
            raise error

    with pytest.raises(FailedException) as info:
        run([step("fails", Fails(), ["value"], ["x"])], ["x"], [source(["a"])], {"x": pa.string()})
    assert info.value is error


def test_prepare_and_cleanup_once_per_partition():
    op = Lifecycle()
    out = run([step("upper", op, ["value"], ["up"])], ["up"], [source(["a", "b"]), source(["c"])],
              {"up": pa.string()}, txid=42)
    assert rows(out) == [{"up": "A"}, {"up": "B"}, {"up": "C"}]
    # outside Spark there is no TaskContext: partition 0
    assert op.events == [("prepare", 0, 42, "upper"), ("execute", "a"), ("execute", "b"),
                         ("execute", "c"), ("cleanup",)]


def test_every_step_is_prepared_before_any_tuple_and_cleaned_up():
    first, second = Lifecycle(), Lifecycle()
    run([step("one", first, ["value"], ["u1"]), step("two", second, ["u1"], ["u2"])], ["u2"],
        [source(["a"])], {"u1": pa.string(), "u2": pa.string()})
    assert first.events[0] == ("prepare", 0, 7, "one") and first.events[-1] == ("cleanup",)
    assert second.events[0] == ("prepare", 0, 7, "two") and second.events[-1] == ("cleanup",)


def test_cleanup_runs_when_an_operator_fails():
    class BoomAfterPrepare(Lifecycle):
        def execute(self, tuple, collector):
            raise ValueError("x")

    op = BoomAfterPrepare()
    with pytest.raises(OperatorError):
        run([step("boom", op, ["value"], ["x"])], ["x"], [source(["a"])], {"x": pa.string()})
    assert op.events == [("prepare", 0, 7, "boom"), ("cleanup",)]


def test_no_batches_still_prepares_and_cleans_up():
    op = Lifecycle()
    assert run([step("upper", op, ["value"], ["up"])], ["up"], []) == []
    assert op.events == [("prepare", 0, 7, "upper"), ("cleanup",)]


def test_unsupported_operation():
    from trident_spark import TopologyError
    from trident_spark.operation import Operation

    with pytest.raises(TopologyError, match=r"^odd: unsupported operation "):
        run([step("odd", Operation(), ["value"])], ALL, [source(["a"])])
