"""bench/limit.py: a contender's fraction of the limit (one process counting in a dict)."""

from __future__ import annotations

import pytest
from limit import limit_fractions


def test_fraction_of_one_process_and_of_one_per_core() -> None:
    assert limit_fractions(70_000, 280_000, 2) == {"of_one": 0.25, "of_cores": 0.125}
    assert limit_fractions(280_000, 280_000, 1) == {"of_one": 1.0, "of_cores": 1.0}


@pytest.mark.parametrize(("limit_rate", "cores"), [(0.0, 2), (-1.0, 2), (100.0, 0)])
def test_a_limit_without_a_rate_or_cores_is_an_error(limit_rate: float, cores: int) -> None:
    with pytest.raises(ValueError, match=r"^limit_fractions: the limit's rate \(.+\) must be positive and "
                                         r"cores \(.+\) at least 1$"):
        limit_fractions(1.0, limit_rate, cores)
