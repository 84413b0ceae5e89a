"""Adaptive batching: steer the Kafka spout's per-partition read limit to a target batch duration.

``KafkaSpout(adaptive_target_ms=T)`` turns it on. Between batches the spout's
planner takes the limit the last batch was planned with (from the batch's offset
document, so it survives restarts and replays), the bytes that batch read and
how long the driver took to run it (from a feedback file the driver writes after
each batch), and asks :meth:`AdaptiveController.next` for the next limit.

The rules (``d`` = the last batch's duration, ``b`` = the bytes its fullest
partition gave, ``L`` = its per-partition limit):

* **Dead band**: within ``dead_band`` (10%) of the target, hold.
* **Additive increase** when ``d`` is below the band *and the limit cut the
  batch*: ``L + gain * (T - d) / c``, ``c`` the cost per byte: the step closes
  ``gain`` (half) of the gap to the target. ``c`` is the marginal cost measured
  between the last two batches when their sizes differ by 10% or more (the
  slope ``(d - d0) / (b - b0)``), kept between a quarter of the average cost and
  the average cost ``d / b`` (noise makes slopes unreliable); otherwise the
  average. The average includes the
  batch's fixed cost, so it is at least the marginal cost and never overshoots
  on a linear cost model; the slope makes a batch dominated by fixed cost grow
  fast. One step grows the limit at most ``max_growth`` (x4) times.
* **No increase without information**: a batch that took everything there was
  (cut by the end of the data, not by the limit) says nothing about a larger
  batch; hold.
* **Multiplicative decrease** when ``d`` is above the band:
  ``min(L, b) * max(max_shrink, T / d)`` -- at most halved per batch; from what
  the batch actually read, so a limit far above the data shrinks at once.
* **Fixed-cost guard**: when the last decrease shrank the batch (by 20% or
  more) but its duration fell by less than a quarter of the proportional
  amount, the batch's time is fixed cost that a smaller batch cannot remove;
  shrinking further would only lose throughput (fall behind). Hold, until the
  duration rises by a quarter (a new, higher per-record cost) or falls under the
  band.
* **Warm-up**: the first batch a driver runs (after a start or a restart) pays
  for starting Python workers and loading code, often many times a normal
  batch; its duration is not used (hold), and the last run's measurements are
  not compared with this run's.
* **Bounds**: never above ``max_bytes`` (``max_fetch_bytes``, default 1 MiB per
  partition) and never below one record (the average record size; the spout
  always takes at least one record per partition anyway).

The feedback file (:func:`write_feedback`, :func:`read_feedback`) crosses a
process boundary: Spark plans batches in a Python process of its own, while
``foreachBatch`` runs in the driver's. Pure Python, no Spark import.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from trident_spark import checkpoint_files as files
from trident_spark.errors import InvalidArgumentError
from trident_spark.spout.base import BatchFeedback

#: Per-partition limit of the first batch (or the bound, if lower): small, so that the
#: first batch never takes long, and the limit grows to the target from there.
INITIAL_LIMIT_BYTES = 64 * 1024

#: In a query's checkpoint directory: the last finished batch's id and duration.
FEEDBACK_FILE = "trident-adaptive-feedback.json"

#: Reasons a decision gives, as written to the offset document.
INITIAL, INCREASE, DECREASE = "initial", "increase", "decrease"
ON_TARGET, NOT_CUT, AT_BOUND = "hold: on target", "hold: took all data", "hold: at bound"
FIXED_COST, NO_FEEDBACK, NO_DATA = "hold: fixed cost", "hold: no new feedback", "hold: no data"
AT_FLOOR, WARM_UP = "hold: at one record", "hold: warm-up batch"


@dataclass(frozen=True)
class Observation:
    """What one finished batch tells the controller.

    ``partition_bytes`` is what the fullest partition gave the batch; ``cut_by_limit``
    says the byte limit (not the end of the data) ended the batch.
    """

    duration_ms: float
    partition_bytes: int
    cut_by_limit: bool
    record_bytes: float | None = None


@dataclass(frozen=True)
class Decision:
    """The next per-partition limit, why, and the points the next decision compares to.

    ``reference`` is ``(bytes, ms)`` of the batch before the last decrease (the
    fixed-cost guard's), ``previous`` that of the batch just seen (for the slope).
    """

    limit: int
    reason: str
    reference: tuple[int, float] | None = None
    previous: tuple[int, float] | None = None


@dataclass(frozen=True)
class AdaptiveController:
    """The rules of the module docstring; plain arithmetic, no state of its own.

    Examples
    --------
    >>> c = AdaptiveController(target_ms=1000, max_bytes=1 << 20)
    >>> c.initial()
    65536
    >>> # 65536 bytes took 250 ms: 4 ms per KiB; half the 750 ms gap buys 96 KiB more
    >>> c.next(65536, Observation(250, 65536, cut_by_limit=True))
    Decision(limit=163840, reason='increase', reference=None, previous=(65536, 250))
    >>> c.next(163840, Observation(2000, 163840, cut_by_limit=True)).limit  # twice too slow
    81920
    """

    target_ms: float
    max_bytes: int = 1024 * 1024
    initial_bytes: int = INITIAL_LIMIT_BYTES
    dead_band: float = 0.10
    gain: float = 0.5
    max_growth: float = 4.0
    max_shrink: float = 0.5

    def __post_init__(self) -> None:
        if not self.target_ms > 0:
            raise InvalidArgumentError(f"adaptive batching: target_ms={self.target_ms!r} must be positive")
        if self.max_bytes < 1:
            raise InvalidArgumentError(f"adaptive batching: max_bytes={self.max_bytes!r} must be positive")

    def initial(self) -> int:
        """The first batch's limit."""
        return max(1, min(self.max_bytes, self.initial_bytes))

    def next(self, limit: int, seen: Observation, reference: tuple[int, float] | None = None,
             previous: tuple[int, float] | None = None) -> Decision:
        """The limit after a batch planned with ``limit`` ran as ``seen`` describes.

        ``reference`` and ``previous`` are the last decision's, carried from batch to batch.
        """
        decision = self._next(limit, seen, reference, previous)
        point = (seen.partition_bytes, seen.duration_ms) if seen.partition_bytes > 0 else previous
        return Decision(decision.limit, decision.reason, decision.reference, point)

    def _next(self, limit: int, seen: Observation, reference: tuple[int, float] | None,
              previous: tuple[int, float] | None) -> Decision:
        floor = max(1, math.ceil(seen.record_bytes or 1))
        limit = min(self.max_bytes, max(floor, limit))
        d, b, target = seen.duration_ms, seen.partition_bytes, self.target_ms
        if b <= 0 or d <= 0:
            return Decision(limit, NO_DATA, reference)
        if d < target * (1 - self.dead_band):
            if not seen.cut_by_limit:
                return Decision(limit, NOT_CUT)
            cost_per_byte = _marginal_cost(b, d, previous)
            step = self.gain * (target - d) / cost_per_byte
            grown = min(self.max_bytes, round(min(limit + step, limit * self.max_growth)))
            return Decision(grown, INCREASE) if grown > limit else Decision(limit, AT_BOUND)
        if d <= target * (1 + self.dead_band):
            return Decision(limit, ON_TARGET)
        if reference is not None and _decrease_did_not_help(reference, b, d):
            return Decision(limit, FIXED_COST, reference)
        base = min(limit, b)
        shrunk = max(floor, math.floor(base * max(self.max_shrink, target / d)))
        if shrunk >= limit:
            return Decision(limit, AT_FLOOR, reference)
        return Decision(shrunk, DECREASE, (b, d))


def _marginal_cost(b: int, d: float, previous: tuple[int, float] | None) -> float:
    """Milliseconds per byte: the slope from ``previous`` if it is far enough, within bounds."""
    average = d / b  # >= the marginal cost: includes the batch's fixed cost
    if previous is None:
        return average
    b0, d0 = previous
    if b0 <= 0 or 0.9 * b < b0 < 1.1 * b:
        return average  # too close to tell a slope from noise
    slope = (d - d0) / (b - b0)
    return min(average, max(average / 4, slope))


def _decrease_did_not_help(reference: tuple[int, float], b: int, d: float) -> bool:
    """After shrinking from ``reference`` to ``b`` bytes, did the duration barely move?"""
    b0, d0 = reference
    if b0 <= 0 or b > 0.8 * b0:
        return False  # not shrunk enough to tell
    if d > 1.25 * d0:
        return False  # slower at a smaller size: the cost per record went up
    expected_drop = d0 * (1 - b / b0)
    return d0 - d < 0.25 * expected_drop


# --- feedback: the driver's measured durations, for the planner's process -------------------
@dataclass(frozen=True)
class Feedback:
    """The last finished batch of a query: its id and its duration on the driver."""

    batch_id: int
    duration_ms: float
    warmup: bool = False


def feedback_path(directory: str | os.PathLike[str]) -> Path | str:
    """Where a query's feedback lives: ``<checkpoint>/<stream>/trident-adaptive-feedback.json``
    (a local path, or a URI: :mod:`trident_spark.checkpoint_files`)."""
    return files.join(directory, FEEDBACK_FILE)


def write_feedback(directory: str | os.PathLike[str], batch_id: int, duration_ms: float,
                   warmup: bool = False) -> None:
    """Record a finished batch's duration, atomically (the planner may read at any time).

    ``warmup`` marks the first batch of a run, whose duration the controller ignores.
    """
    files.write_text(feedback_path(directory), json.dumps({  # atomic
        "batch_id": int(batch_id), "duration_ms": round(float(duration_ms), 1), "warmup": bool(warmup)}))


def read_feedback(directory: str | os.PathLike[str]) -> Feedback | None:
    """The last recorded batch, or None when there is none (or it cannot be read).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_feedback(d, 7, 812.25)
    ...     read_feedback(d)
    Feedback(batch_id=7, duration_ms=812.2, warmup=False)
    """
    try:
        data = json.loads(files.read_text(feedback_path(directory)))
        return Feedback(int(data["batch_id"]), float(data["duration_ms"]), bool(data.get("warmup", False)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def record_feedback(adaptive: bool, feedback: BatchFeedback) -> None:
    """What an adaptive Kafka spout does after a batch (its ``Spout.after_batch``): leave the
    batch's duration in the query's checkpoint for the planner of the next batches.

    Nothing without adaptive batching or without a checkpoint.

    Examples
    --------
    >>> import tempfile
    >>> from trident_spark.spout.base import BatchFeedback
    >>> with tempfile.TemporaryDirectory() as d:
    ...     record_feedback(True, BatchFeedback(7, 812.25, d, warmup=True))
    ...     read_feedback(d)
    Feedback(batch_id=7, duration_ms=812.2, warmup=True)
    """
    if not adaptive or feedback.checkpoint is None:
        return
    write_feedback(feedback.checkpoint, feedback.batch_id, feedback.duration_ms, warmup=feedback.warmup)
