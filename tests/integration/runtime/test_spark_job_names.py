"""Spark's UI names a batch's jobs after the stream, the batch and the operator."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark import TridentTopology
from trident_spark.builtin import Count, FilterNull
from trident_spark.spout import FeederBatchSpout

pytestmark = pytest.mark.integration


def job_names(spark: Any, stream: str) -> set[str]:
    """The names and descriptions of the jobs Spark's status store holds for ``stream``."""
    store = spark.sparkContext._jsc.sc().statusStore()
    jobs = store.jobsList(None)
    found = set()
    for i in range(jobs.size()):
        job = jobs.apply(i)
        found.add(str(job.name()))
        if job.description().isDefined():
            found.add(str(job.description().get()))
    return {name for name in found if name.startswith(stream)}


def test_jobs_and_stages_say_the_stream_the_batch_and_the_operator(spark: Any, tmp_path) -> None:
    spout = FeederBatchSpout(["word"])
    spout.feed([["a"], ["b"], ["a"]])
    topology = TridentTopology()
    words = topology.newStream("jobnames", spout)
    words.groupBy(["word"]).aggregate(Count(), ["n"]).collect()
    words.each(["word"], FilterNull()).collect()
    handle = topology.run(tmp_path / "checkpoint", trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(120)
    finally:
        handle.stop()
    jobs = job_names(spark, "jobnames")
    assert {"jobnames: batch 0: aggregate(Count)", "jobnames: batch 0: each(FilterNull)"} <= jobs, jobs


def test_each_outputs_job_is_named_after_it_not_after_py4j(spark: Any, tmp_path) -> None:
    # The UI's job name is the call site: PySpark took py4j's frame of the foreachBatch callback
    # ("call at .../py4j/clientserver.py:644") for every job of every batch.
    spout = FeederBatchSpout(["word"])
    spout.feed([["a"], ["b"], ["a"]])
    topology = TridentTopology()
    words = topology.newStream("callsites", spout)
    words.groupBy(["word"]).aggregate(Count(), ["n"]).collect()
    words.each(["word"], FilterNull()).collect()
    handle = topology.run(tmp_path / "checkpoint", trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(120)
    finally:
        handle.stop()
    store = spark.sparkContext._jsc.sc().statusStore()
    jobs = store.jobsList(None)
    named: dict[str, str] = {}
    for i in range(jobs.size()):
        job = jobs.apply(i)
        if job.description().isDefined() and str(job.description().get()).startswith("callsites: batch 0: "):
            named[str(job.description().get())] = str(job.name())
    expected = {"callsites: batch 0: aggregate(Count)", "callsites: batch 0: each(FilterNull)"}
    assert set(named) == expected, named
    assert all(name == description for description, name in named.items()), named
