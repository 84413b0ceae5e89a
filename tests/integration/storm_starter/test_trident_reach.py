"""storm-starter's TridentReach on Spark: the answers of Java main's three DRPC requests.

``reach("foo.com/blog/1")``: the followers of sally, bob, tim, george and nathan, 16 distinct;
``reach("engineering.twitter.com/blog/5")``: of adam, david, sally and nathan, 14 distinct;
``reach("aaa")``: no tweeters, Sum over no tuples is 0.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from examples.storm_starter.trident_reach import FOLLOWERS_DB, TWEETERS_DB, buildTopology
from trident_spark.drpc import LocalDRPC

pytestmark = pytest.mark.integration


def reach(url: str) -> int:
    return len({f for t in TWEETERS_DB.get(url, []) for f in FOLLOWERS_DB.get(t, [])})


def test_main_s_three_reach_requests(spark: Any, tmp_path: Any) -> None:
    asked = ["aaa", "foo.com/blog/1", "engineering.twitter.com/blog/5"]
    with LocalDRPC() as drpc:
        handle = buildTopology(drpc).run(tmp_path / "ckpt", spark=spark)
        try:
            with ThreadPoolExecutor(len(asked)) as pool:
                answers = [json.loads(a) for a in pool.map(lambda url: drpc.execute("reach", url), asked)]
        finally:
            handle.stop()
    assert answers == [[[0]], [[16]], [[14]]]
    assert [a[0][0] for a in answers] == [reach(url) for url in asked]
