"""Each batch's metrics out of the driver, for Prometheus: an HTTP endpoint serving them.

:class:`PrometheusExporter` is an ``on_progress`` callback: it adds up every finished batch
(:class:`~trident_spark.runtime.progress.BatchProgress`) per stream, and the tuning method's
diagnosis of the recent batches (the principal bottleneck, the First Rule's verdict), and
serves them in Prometheus' text format on ``http://HOST:PORT/metrics`` (``prometheus-client``,
the ``metrics`` extra). Off by default: start it with :func:`serve_metrics` (or
``trident-spark run --metrics-port``). docs/metrics.md describes each metric.

Nothing secret is exported: labels are stream names, operator labels and stage kinds; the
messages of reported errors are not.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from collections.abc import Iterator
from typing import Any

from trident_spark.runtime.progress import BatchProgress
from trident_spark.state.extras import require_extra
from trident_spark.tuning.diagnosis import DEFAULT_WINDOW, diagnose

#: Buckets of ``trident_batch_duration_seconds``: from a tiny batch to a batch falling far behind.
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
#: The verdicts ``trident_verdict`` takes (the First Rule's; diagnosis.Verdict.kind).
VERDICTS = ("falling behind", "keeping up", "starved", "unknown")


def _client() -> Any:
    return require_extra("prometheus_client", "the Prometheus endpoint")


class _Stream:
    """What one stream's batches added up to."""

    def __init__(self) -> None:
        self.batches = 0
        self.attempts = 0
        self.rows = 0
        self.bytes = 0
        self.malformed = 0
        self.lost = 0
        self.buckets = [0] * len(DURATION_BUCKETS)
        self.duration_sum = 0.0
        self.stage_seconds: dict[tuple[str, str], float] = defaultdict(float)
        self.stage_rows: dict[tuple[str, str], int] = defaultdict(int)
        self.state: dict[str, float] = defaultdict(float)
        self.errors: dict[str, int] = defaultdict(int)
        self.recent: deque[BatchProgress] = deque(maxlen=DEFAULT_WINDOW)
        self.last: BatchProgress | None = None

    def add(self, batch: BatchProgress) -> None:
        self.batches += 1
        self.attempts += max(1, batch.attempts)
        self.rows += batch.rows
        self.bytes += batch.bytes or 0
        self.malformed += batch.malformed_records
        self.lost += batch.lost_records
        seconds = batch.duration_ms / 1000
        self.duration_sum += seconds
        for i, bound in enumerate(DURATION_BUCKETS):
            if seconds <= bound:
                self.buckets[i] += 1
        for stage in batch.stages:
            self.stage_seconds[(stage.name, stage.kind)] += stage.ms / 1000
            self.stage_rows[(stage.name, stage.kind)] += stage.rows_out or 0
        for name, value in batch.state.items():
            self.state[name] += value
        for operator, count in batch.errors_reported.items():
            self.errors[operator] += count
        self.recent.append(batch)
        self.last = batch


class PrometheusExporter:
    """Batch metrics of a running topology, served for Prometheus to scrape.

    Parameters
    ----------
    port : int, default 9108
        The endpoint's port (0: a free one; :attr:`url` says which).
    host : str, default "127.0.0.1"
        The address it listens on (``0.0.0.0`` for a scraper on another machine).
    trigger_ms : float, optional
        The trigger interval, for the First Rule's verdict (without it the verdict says unknown
        where it needs the interval).

    Examples
    --------
    >>> exporter = PrometheusExporter(port=0)
    >>> exporter.record(BatchProgress("words", txid=0, rows=1200, duration_ms=850,
    ...                               stages=[{"name": "each(Split)", "kind": "python", "ms": 410.0}]))
    >>> text = exporter.render()
    >>> 'trident_rows_total{stream="words"} 1200.0' in text
    True
    >>> 'trident_stage_seconds_total{kind="python",stage="each(Split)",stream="words"} 0.41' in text
    True
    """

    def __init__(self, port: int = 9108, host: str = "127.0.0.1", trigger_ms: float | None = None) -> None:
        self.port = port
        self.host = host
        self.trigger_ms = trigger_ms
        self._streams: dict[str, _Stream] = {}
        self._lock = threading.Lock()
        self._server: Any = None
        client = _client()
        self._registry = client.CollectorRegistry(auto_describe=False)
        self._registry.register(self)

    # --- in: every finished batch ------------------------------------------------------------
    def record(self, batch: BatchProgress) -> None:
        """Add one finished batch (the ``on_progress`` callback)."""
        with self._lock:
            self._streams.setdefault(batch.stream, _Stream()).add(batch)

    __call__ = record

    # --- out: the endpoint -------------------------------------------------------------------
    def start(self) -> PrometheusExporter:
        """Serve ``/metrics`` on ``host:port`` (a daemon thread); returns the exporter."""
        if self._server is None:
            server, _ = _client().start_http_server(self.port, addr=self.host, registry=self._registry)
            self._server = server
            self.port = int(server.server_address[1])
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        """Where Prometheus scrapes: ``http://host:port/metrics``."""
        return f"http://{self.host}:{self.port}/metrics"

    def render(self) -> str:
        """The metrics as Prometheus' text format (what a scrape gets)."""
        return str(_client().generate_latest(self._registry).decode())

    def collect(self) -> Iterator[Any]:
        """The metric families, built at each scrape from what :meth:`record` added up."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        families: dict[str, Any] = {}
        for name, (kind, labels, doc) in METRICS.items():
            if kind == "histogram":
                families[name] = HistogramMetricFamily(name, doc, labels=["stream", *labels])
            else:
                family = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
                families[name] = family(name, doc, labels=["stream", *labels])

        def add(metric: str, labels: list[str], value: Any) -> None:
            families[metric].add_metric(labels, value)

        with self._lock:
            for stream, s in sorted(self._streams.items()):
                for metric, value in (("trident_batches", s.batches), ("trident_batch_attempts", s.attempts),
                                      ("trident_rows", s.rows), ("trident_bytes", s.bytes),
                                      ("trident_malformed_records", s.malformed),
                                      ("trident_lost_records", s.lost)):
                    add(metric, [stream], value)
                buckets = [(str(bound), n) for bound, n in zip(DURATION_BUCKETS, s.buckets, strict=True)]
                families["trident_batch_duration_seconds"].add_metric(
                    [stream], [*buckets, ("+Inf", s.batches)], s.duration_sum)
                for (stage, kind), seconds in sorted(s.stage_seconds.items()):
                    add("trident_stage_seconds", [stream, stage, kind], round(seconds, 6))
                    add("trident_stage_rows_out", [stream, stage, kind], s.stage_rows[(stage, kind)])
                for key, total in sorted(s.state.items()):
                    if key.endswith("_ms"):
                        add("trident_state_seconds", [stream, key[:-3]], total / 1000)
                    else:
                        add("trident_state_events", [stream, key], total)
                for operator, count in sorted(s.errors.items()):
                    add("trident_errors_reported", [stream, operator], count)
                last = s.last
                assert last is not None
                for metric, maybe in (("trident_last_txid", last.txid),
                                      ("trident_last_batch_rows", last.rows),
                                      ("trident_last_batch_duration_seconds", last.duration_ms / 1000),
                                      ("trident_backlog_records", last.backlog),
                                      ("trident_input_rows_per_second", last.input_rows_per_second),
                                      ("trident_processed_rows_per_second", last.processed_rows_per_second)):
                    if maybe is not None:
                        add(metric, [stream], maybe)
                found = diagnose(list(s.recent), trigger_ms=self.trigger_ms)
                for verdict in VERDICTS:
                    add("trident_verdict", [stream, verdict], 1.0 if found.verdict.kind == verdict else 0.0)
                add("trident_bottleneck", [stream, found.bottleneck.kind], 1.0)
        yield from families.values()


#: Every metric: name -> (type, labels besides ``stream``, help). docs/metrics.md describes each.
METRICS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "trident_batches": ("counter", (), "Batches finished (a replayed batch once)."),
    "trident_batch_attempts": ("counter", (), "Runs of finished batches: more than batches when some were "
                               "replayed."),
    "trident_rows": ("counter", (), "Tuples the spout emitted into finished batches."),
    "trident_bytes": ("counter", (), "Bytes the Kafka spout read (its sizing)."),
    "trident_malformed_records": ("counter", (), "Records the spout could not decode."),
    "trident_lost_records": ("counter", (), "Records gone from Kafka before they were read (retention)."),
    "trident_batch_duration_seconds": ("histogram", (), "Wall time of each finished batch."),
    "trident_stage_seconds": ("counter", ("stage", "kind"), "Task time of each stage, summed over its "
                              "tasks."),
    "trident_stage_rows_out": ("counter", ("stage", "kind"), "Rows each stage wrote."),
    "trident_state_events": ("counter", ("counter",), "State counters: cache hits and misses, keys read and "
                             "written, store calls, lost races."),
    "trident_state_seconds": ("counter", ("counter",), "Time state tasks spent in the store."),
    "trident_errors_reported": ("counter", ("operator",), "Errors operations reported (the batch went on)."),
    "trident_last_txid": ("gauge", (), "The txid of the last finished batch."),
    "trident_last_batch_rows": ("gauge", (), "Tuples of the last finished batch."),
    "trident_last_batch_duration_seconds": ("gauge", (), "Wall time of the last finished batch."),
    "trident_backlog_records": ("gauge", (), "Records waiting in Kafka after the last batch."),
    "trident_input_rows_per_second": ("gauge", (), "Spark's input rate of the last batch."),
    "trident_processed_rows_per_second": ("gauge", (), "Spark's processing rate of the last batch."),
    "trident_verdict": ("gauge", ("verdict",), "The First Rule's verdict on the recent batches: 1 for the "
                        "current one."),
    "trident_bottleneck": ("gauge", ("kind",), "The principal bottleneck of the recent batches: 1 for its "
                           "kind."),
}


def serve_metrics(handle: Any, port: int = 9108, host: str = "127.0.0.1",
                  trigger_ms: float | None = None) -> PrometheusExporter:
    """Serve a running topology's batch metrics for Prometheus: ``/metrics`` on ``host:port``.

    Parameters
    ----------
    handle : RunHandle
        What ``topology.run(...)`` returned: the exporter is added as an ``on_progress`` callback.
    port, host, trigger_ms
        See :class:`PrometheusExporter`.

    Examples
    --------
    >>> import urllib.request
    >>> class Handle:                      # a stand-in for topology.run(...)'s handle
    ...     def on_progress(self, callback): self.callback = callback
    >>> handle = Handle()
    >>> exporter = serve_metrics(handle, port=0)
    >>> handle.callback(BatchProgress("words", txid=7, rows=10, duration_ms=120))
    >>> with urllib.request.urlopen(exporter.url) as response:
    ...     scraped = response.read().decode()
    >>> 'trident_last_txid{stream="words"} 7.0' in scraped
    True
    >>> exporter.stop()
    """
    exporter = PrometheusExporter(port=port, host=host, trigger_ms=trigger_ms).start()
    handle.on_progress(exporter.record)
    return exporter


__all__ = ["DURATION_BUCKETS", "METRICS", "PrometheusExporter", "serve_metrics"]
