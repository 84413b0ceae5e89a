"""Before a run starts, a user's own StateFactory is asked ``check_available()`` (once per
factory), and nothing is opened: its states are made on the executors."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark.planner.state_plan import check_reachable
from trident_spark.state import StateFactory, StateUnavailableError


class Probed(StateFactory):
    def __init__(self, answers: bool) -> None:
        self.answers, self.checks, self.made = answers, 0, 0

    def check_available(self) -> None:
        self.checks += 1
        if not self.answers:
            raise StateUnavailableError("mystore://10.0.0.1", "no answer within 2 s")

    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> Any:
        self.made += 1


class Plain(StateFactory):
    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> Any:
        raise AssertionError("not made on the driver")


def test_a_user_factory_is_checked_once_and_not_opened():
    factory = Probed(answers=True)
    check_reachable([factory, factory, Plain()])
    assert (factory.checks, factory.made) == (1, 0)


def test_a_user_factory_that_does_not_answer_fails_the_start_naming_its_address():
    with pytest.raises(StateUnavailableError, match=r"mystore://10\.0\.0\.1"):
        check_reachable([Probed(answers=False)])
