"""The collectors a Function's values go to in a stage (ColumnCollector, OneColumnCollector): the
values by field, emit's copy, Trident's width rule, and what TridentCollector also offers."""

from __future__ import annotations

import doctest

import pytest

import trident_spark.operation
from trident_spark.operation import ColumnCollector, OneColumnCollector, ReportedErrors, TridentCollector


def test_values_are_kept_by_field_and_emitted_shows_them_as_tuples() -> None:
    c = ColumnCollector(2)
    c.emit(["cat", 1])
    c.emit(("dog", 2, "extra"))
    c.emit(iter(["eel", 3]))
    assert c.kept == ["cat", 1, "dog", 2, "eel", 3]
    assert c.emitted == [["cat", 1], ["dog", 2], ["eel", 3]]
    assert c.short is None
    assert c.reset() == [["cat", 1], ["dog", 2], ["eel", 3]] and c.kept == [] and c.emitted == []


def test_too_few_values_keep_nothing_and_the_first_such_values_are_noted() -> None:
    c = ColumnCollector(2)
    c.emit(["cat"])
    c.emit(["dog", 2])
    c.emit([])
    assert c.kept == ["dog", 2] and c.short == ["cat"]


def test_emit_copies_and_a_failed_emit_leaves_nothing() -> None:
    c = OneColumnCollector()
    buffer = ["cat"]
    c.emit(buffer)
    buffer[0] = "dog"
    c.emit(buffer)

    def broken():  # type: ignore[no-untyped-def]
        yield "half"
        raise RuntimeError("gone")

    with pytest.raises(RuntimeError, match=r"^gone$"):
        c.emit(broken())
    with pytest.raises(TypeError, match=r"^'NoneType' object is not iterable$"):
        c.emit(None)  # type: ignore[arg-type]
    c.emit("eel")  # a string is its characters, as list("eel")
    c.emit(["fox", "extra"])
    assert c.kept == ["cat", "dog", "e", "fox"]


def test_a_column_collector_is_a_trident_collector_that_reports_errors() -> None:
    errors = ReportedErrors("each(Parse)")
    c = OneColumnCollector(errors)
    assert isinstance(c, TridentCollector)
    c.reportError(ValueError("bad line"))
    assert (errors.count, errors.last) == (1, "ValueError: bad line")


def test_a_function_without_output_fields_takes_a_trident_collector() -> None:
    with pytest.raises(ValueError) as info:
        ColumnCollector(0)
    assert str(info.value) == ("ColumnCollector: width 0; a Function without output fields takes a "
                               "TridentCollector")


def test_the_collectors_examples_run() -> None:
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for obj in (ColumnCollector, OneColumnCollector):
        for test in finder.find(obj, globs=vars(trident_spark.operation)):
            runner.run(test)
    summary = runner.summarize(verbose=False)
    assert (summary.failed, summary.attempted) == (0, 6)
