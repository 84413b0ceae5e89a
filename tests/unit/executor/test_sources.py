"""executor.sources: how ``run(conf={"trident.fusion": ...})`` is read."""

from __future__ import annotations

import pytest

from trident_spark.errors import TopologyError
from trident_spark.executor.sources import FUSION_CONF, fusion_enabled


@pytest.mark.parametrize("value", [True, "true", "True", " on ", "yes", "1", 1])
def test_fusion_on(value: object) -> None:
    assert fusion_enabled({FUSION_CONF: value}) is True


@pytest.mark.parametrize("value", [False, "false", "FALSE", "off", "no", "0", 0])
def test_fusion_off(value: object) -> None:
    assert fusion_enabled({FUSION_CONF: value}) is False


def test_fusion_on_by_default() -> None:
    assert fusion_enabled(None) is True
    assert fusion_enabled({"topology.workers": 2}) is True


@pytest.mark.parametrize("value", ["flase", "", "disabled", 2, None])
def test_a_value_that_is_not_a_boolean_fails_naming_it(value: object) -> None:
    with pytest.raises(TopologyError) as info:
        fusion_enabled({FUSION_CONF: value})
    assert str(info.value) == (
        f"run(conf={{'trident.fusion': {value!r}}}): give True or False (whether a spout is read in one "
        "task with the stream's first Python operations; on by default, docs/reference/configuration.md)")
