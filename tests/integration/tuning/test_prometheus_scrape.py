"""A running topology's batch metrics, scraped over HTTP as Prometheus does."""

from __future__ import annotations

import re
import sys
import urllib.request
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology, TridentTuple
from trident_spark.builtin import Count
from trident_spark.operation import BaseFunction, TridentCollector
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import MemoryState
from trident_spark.tuning.prometheus import PrometheusExporter

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Split(BaseFunction):
    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        for word in tuple[0].split():
            collector.emit([word])


def scraped(url: str) -> dict[str, float]:
    """``metric{labels}`` -> value, from Prometheus' text format."""
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples = {}
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if match:
            samples[match.group(1)] = float(match.group(2))
    return samples


def test_a_scrape_of_a_running_word_count_shows_its_batches_stages_and_state(spark: Any, tmp_path):
    spout = FeederBatchSpout(["sentence"])
    spout.feed([["the cow jumped"], ["the moon"]])
    spout.feed([["the man"]])
    MemoryState.drop("prometheus-scrape")
    topology = TridentTopology()
    (topology.newStream("words", spout).each(["sentence"], Split(), ["word"])
     .groupBy(["word"]).persistentAggregate(MemoryState.opaque(name="prometheus-scrape"), Count(), ["count"]))
    exporter = PrometheusExporter(port=0, trigger_ms=1000).start()
    try:
        handle = topology.run(tmp_path / "checkpoint", trigger="available_now", spark=spark,
                              on_progress=exporter)
        try:
            assert handle.awaitTermination(120), "the available_now run did not end in 120 s"
        finally:
            handle.stop()
        samples = scraped(exporter.url)
    finally:
        exporter.stop()

    assert samples['trident_batches_total{stream="words"}'] == 2
    assert samples['trident_batch_attempts_total{stream="words"}'] == 2
    assert samples['trident_rows_total{stream="words"}'] == 3
    assert samples['trident_last_txid{stream="words"}'] == 1
    assert samples['trident_batch_duration_seconds_count{stream="words"}'] == 2
    assert samples['trident_batch_duration_seconds_bucket{le="+Inf",stream="words"}'] == 2
    def of(metric: str, *parts: str) -> list[float]:
        return [v for k, v in samples.items() if k.startswith(metric + "{") and all(p in k for p in parts)]

    split = of("trident_stage_seconds_total", "each(Split)")
    assert len(split) == 1 and split[0] > 0
    rows_out = of("trident_stage_rows_out_total", "each(Split)")
    assert rows_out == [7.0]                                     # the words of the three sentences
    written = of("trident_state_events_total", 'counter="keys_written"')
    assert written == [6.0]                                      # cow jumped moon man the x2 batches: 4 + 2
    verdicts = of("trident_verdict")
    assert len(verdicts) == 4 and sum(verdicts) == 1
