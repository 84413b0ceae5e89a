"""What one run tells the Kafka source beside the user's settings: the run-time half of its options.

:class:`~trident_spark.spout.kafka.config.KafkaSpoutConfig` holds only what a user sets on
``KafkaSpout(...)``; :class:`KafkaRun` holds what the runtime sets when a query starts
(``KafkaSpout.for_run``): the query's checkpoint directory (once: the adaptive feedback, the
outage record and the dead letters' writer are all named by it), the outage budget and whether
the read time is reported. Both travel to Spark's planner and the executors as JSON options.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from trident_spark.spout.base import SpoutRun
from trident_spark.state.redaction import redact_text


@dataclass(frozen=True)
class KafkaRun:
    """The run-time settings of one query's Kafka source, as plain JSON-able data.

    Parameters
    ----------
    checkpoint : str or None
        The query's checkpoint directory (a path or URI), where the driver leaves batch
        durations for adaptive batching, planning records a broker outage it waits through,
        and which names the stream's dead letters; ``None`` outside a run.
    outage_budget_s : float
        Seconds planning a batch keeps retrying a broker (or a schema registry) that does not
        answer; 0 fails at once.
    read_metrics : bool
        Add the column :data:`~trident_spark.spout.base.READ_MS_COLUMN`, the read time of each
        Arrow batch on its first row, which the runtime sums per batch and drops.

    Examples
    --------
    >>> run = KafkaRun.of(SpoutRun("/tmp/ckpt/words", outage_budget=180.0))
    >>> run
    KafkaRun(checkpoint='/tmp/ckpt/words', outage_budget_s=180.0, read_metrics=True)
    >>> KafkaRun.from_json(run.to_json()) == run
    True
    """

    checkpoint: str | None = None
    outage_budget_s: float = 0.0
    read_metrics: bool = False

    @classmethod
    def of(cls, run: SpoutRun) -> KafkaRun:
        """The Kafka source's share of ``run`` (its checkpoint as a string; the DRPC settings and
        token are not the Kafka source's and stay behind)."""
        checkpoint = str(run.checkpoint) if run.checkpoint is not None else None
        return cls(checkpoint=checkpoint, outage_budget_s=run.outage_budget, read_metrics=True)

    def __repr__(self) -> str:
        # A checkpoint URI may carry credentials (scheme://user:password@host/...): shown as ***.
        shown = None if self.checkpoint is None else redact_text(self.checkpoint)
        return (f"KafkaRun(checkpoint={shown!r}, outage_budget_s={self.outage_budget_s!r}, "
                f"read_metrics={self.read_metrics!r})")

    def to_json(self) -> str:
        """The settings as the source's ``run`` option."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> KafkaRun:
        """The settings from the source's ``run`` option; none given: no run (the defaults)."""
        return cls(**json.loads(text)) if text else cls()


__all__ = ["KafkaRun"]
