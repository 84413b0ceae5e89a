"""The Prometheus exporter: what it adds up from batches, and the text a scrape gets."""

from __future__ import annotations

import re
import sys
import urllib.request

import pytest

from trident_spark.errors import MissingExtraError
from trident_spark.runtime.progress import BatchProgress
from trident_spark.tuning.prometheus import METRICS, PrometheusExporter, serve_metrics


def samples(text: str) -> dict[str, float]:
    found = {}
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if match:
            found[match.group(1)] = float(match.group(2))
    return found


def batch(txid: int, **fields: object) -> BatchProgress:
    return BatchProgress("words", txid=txid, rows=fields.pop("rows", 100), duration_ms=fields.pop("ms", 400),
                         **fields)  # type: ignore[arg-type]


def test_counters_add_up_the_batches_and_gauges_keep_the_last() -> None:
    exporter = PrometheusExporter(port=0)
    exporter.record(batch(0, rows=100, ms=300, bytes=5000, backlog=40, attempts=1,
                          state={"keys_written": 10, "store_write_ms": 250},
                          errors_reported={"each(Parse)": 2},
                          stages=[{"name": "each(Split)", "kind": "python", "ms": 120.0, "rows_out": 400}]))
    exporter.record(batch(1, rows=50, ms=3000, bytes=2000, backlog=0, attempts=3,
                          state={"keys_written": 5, "store_write_ms": 750},
                          stages=[{"name": "each(Split)", "kind": "python", "ms": 80.0, "rows_out": 200}]))
    exporter.record(BatchProgress("other", txid=9, rows=1, duration_ms=10))
    found = samples(exporter.render())
    assert found['trident_batches_total{stream="words"}'] == 2
    assert found['trident_batch_attempts_total{stream="words"}'] == 4          # the second batch ran 3 times
    assert found['trident_rows_total{stream="words"}'] == 150
    assert found['trident_bytes_total{stream="words"}'] == 7000
    assert found['trident_last_txid{stream="words"}'] == 1
    assert found['trident_last_batch_rows{stream="words"}'] == 50
    assert found['trident_backlog_records{stream="words"}'] == 0
    assert found['trident_batch_duration_seconds_bucket{le="0.5",stream="words"}'] == 1
    assert found['trident_batch_duration_seconds_bucket{le="5.0",stream="words"}'] == 2
    assert found['trident_batch_duration_seconds_sum{stream="words"}'] == pytest.approx(3.3)
    assert found['trident_stage_seconds_total{kind="python",stage="each(Split)",stream="words"}'] == 0.2
    assert found['trident_stage_rows_out_total{kind="python",stage="each(Split)",stream="words"}'] == 600
    assert found['trident_state_events_total{counter="keys_written",stream="words"}'] == 15
    assert found['trident_state_seconds_total{counter="store_write",stream="words"}'] == 1.0
    assert found['trident_errors_reported_total{operator="each(Parse)",stream="words"}'] == 2
    assert found['trident_last_txid{stream="other"}'] == 9
    assert sum(v for k, v in found.items() if k.startswith('trident_verdict{') and 'stream="words"' in k) == 1


def test_every_metric_has_help_and_a_type_and_is_described_in_the_docs() -> None:
    exporter = PrometheusExporter(port=0)
    exporter.record(batch(0))
    text = exporter.render()
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "metrics.md").read_text()
    for name, (kind, _, _) in METRICS.items():
        exported = f"{name}_total" if kind == "counter" else name   # prometheus-client adds _total
        assert f"# TYPE {exported} {kind}" in text
        assert f"# HELP {exported} " in text
        assert f"`{exported}`" in page, f"docs/metrics.md does not describe {exported}"


def test_the_endpoint_serves_the_text_format_and_stops() -> None:
    class Handle:
        def on_progress(self, callback: object) -> None:
            self.callback = callback

    handle = Handle()
    exporter = serve_metrics(handle, port=0)
    try:
        handle.callback(batch(4))  # type: ignore[operator]
        with urllib.request.urlopen(exporter.url, timeout=10) as response:
            assert samples(response.read().decode())['trident_last_txid{stream="words"}'] == 4
    finally:
        exporter.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(exporter.url, timeout=2)


def test_without_prometheus_client_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'trident-spark\[metrics\]'"):
        PrometheusExporter(port=0)
