"""bench/state_contenders.py: ``split=arrow`` parsed, issue 31's targets per contender, A B B A rounds."""

from __future__ import annotations

import pytest
from state_contenders import Contender, parse_contenders, round_order


def test_split_arrow_is_parsed_as_a_topology_setting_not_a_state_one() -> None:
    contenders = parse_contenders("native,sqlite[split=arrow],redis[split=python],es")

    assert [c.name for c in contenders] == ["native", "sqlite[split=arrow]", "redis[split=python]", "es"]
    assert [c.split for c in contenders] == ["builtin", "arrow", "python", "builtin"]
    assert contenders[1].state_settings == {}


def test_an_unknown_split_names_the_choices() -> None:
    with pytest.raises(SystemExit, match=r"^split=numpy: one of python, arrow, builtin$"):
        parse_contenders("native,sqlite[split=numpy]")


def test_issue_31_targets_follow_the_split_and_the_backend() -> None:
    contenders = parse_contenders("native,sqlite[split=python],redis[split=arrow],sqlite,es,es[split=python],"
                                  "postgres,redis[cache_size=10000]")

    assert {c.name: c.target for c in contenders} == {
        "native": None, "sqlite[split=python]": 1.5, "redis[split=arrow]": 2.5, "sqlite": 2.5, "es": 1.2,
        "es[split=python]": None, "postgres": None, "redis[cache_size=10000]": None}


def test_a_contender_with_state_settings_and_a_split_has_no_target() -> None:
    assert Contender("redis", (("split", "arrow"), ("cache_size", 10))).target is None


def test_two_rounds_run_a_b_b_a() -> None:
    names = ["limit", "native", "sqlite[split=arrow]"]

    assert [round_order(names, n) for n in (1, 2, 3, 4)] == [
        ["limit", "native", "sqlite[split=arrow]"], ["sqlite[split=arrow]", "native", "limit"],
        ["limit", "native", "sqlite[split=arrow]"], ["sqlite[split=arrow]", "native", "limit"]]
    assert round_order(names, 1) + round_order(names, 2) == [*names, *reversed(names)]
    assert names == ["limit", "native", "sqlite[split=arrow]"]  # not reordered in place
