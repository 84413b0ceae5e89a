"""The knee of a batch-size sweep: three regimes of batch latency, found from measured points.

Pure: it takes (records per batch, latency, throughput) points and decides; nothing here
runs Spark. The tuning notes' picture, with the batch size growing geometrically:

* **flat**: latency barely moves (within ``FLAT_TOLERANCE`` of the smallest): the batch's
  fixed bookkeeping (planning, offset and commit logs, task launch) dominates, so a bigger
  batch is almost free and throughput grows about in proportion to the size;
* **growing**: latency grows about linearly with the records: each record costs a roughly
  constant time (the *marginal cost*, ms per record); throughput still improves, by less
  each step;
* **sharp rise**: the marginal cost jumps well above the growing regime's
  (``SHARP_SLOPE_FACTOR`` times), or throughput falls (bigger batches get strictly worse):
  memory pressure, spilling, a store or a limit that stops scaling.

The knee is the largest size before the sharp rise: the biggest batch, so the best
throughput, that still costs each record what the growing regime does.

Thresholds (module constants, so tests and the report name them):

``FLAT_TOLERANCE = 0.25``
    a point is flat while its latency is within 25% of the smallest latency measured.
``SHARP_SLOPE_FACTOR = 3.0``
    a step is a sharp rise when its marginal cost (ms per record between two neighbouring
    sizes) is more than 3x the growing regime's (the least-squares slope of the growing
    points so far; for the first step out of the flat band, before there is one, the most a
    record can cost within the band: 25% of the smallest latency over the band's span of
    records; a slope that is not positive -- latency noise around a flat line -- makes no
    step steep) ...
``SHARP_MIN_RISE = 0.25``
    ... and latency rose by more than 25% in that step (a steep step of a few ms is noise) ...
``SHARP_VS_AVERAGE = 0.75``
    ... and the step's marginal cost is at least 75% of the smaller batch's average cost per
    record (its latency / its records): doubling the batch then buys less than 14% more
    throughput. Below that the step is the per-record cost coming out from under a large fixed
    cost (the growing regime starting), not a rise: its slope was fitted on a flat stretch;
``THROUGHPUT_FALL = 0.05``
    or when throughput falls by more than 5% from one size to the next.

A point that jumps out of line while the next point comes back onto it is an outlier
(noise, a GC pause): it is reported and left out of the regimes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from trident_spark.errors import TridentSparkError

FLAT_TOLERANCE = 0.25
SHARP_SLOPE_FACTOR = 3.0
SHARP_MIN_RISE = 0.25
SHARP_VS_AVERAGE = 0.75
THROUGHPUT_FALL = 0.05
MIN_POINTS = 3

FLAT, GROWING, SHARP, OUTLIER = "flat", "growing", "sharp", "outlier"


class TooFewPointsError(TridentSparkError, ValueError):
    """Fewer batch sizes with measurements than knee detection needs."""


@dataclass(frozen=True)
class KneePoint:
    """One batch size of a sweep, as knee detection sees it.

    ``size`` is the per-partition read limit the size was run with (``max_fetch_bytes``),
    ``records_per_batch`` the typical batch it gave, ``latency_ms`` the median batch
    latency, ``throughput`` records per second (``None``: records / latency).
    """

    size: int
    records_per_batch: float
    latency_ms: float
    throughput: float | None = None

    @property
    def rate(self) -> float:
        if self.throughput is not None:
            return self.throughput
        return self.records_per_batch / self.latency_ms * 1000.0 if self.latency_ms > 0 else 0.0


@dataclass
class KneeAnalysis:
    """The regimes of a sweep and its knee.

    ``points`` are sorted by records per batch; ``regimes[i]`` is the regime of
    ``points[i]`` (``flat``, ``growing``, ``sharp`` or ``outlier``). ``growing_ms_per_record``
    is the growing regime's marginal cost, ``sharp_ms_per_record`` the first sharp step's.
    """

    points: list[KneePoint]
    regimes: list[str]
    knee_index: int
    growing_ms_per_record: float | None
    sharp_ms_per_record: float | None
    sharp_index: int | None
    reason: str
    notes: list[str] = field(default_factory=list)

    @property
    def knee(self) -> KneePoint:
        return self.points[self.knee_index]

    def indices(self, regime: str) -> list[int]:
        return [i for i, r in enumerate(self.regimes) if r == regime]

    def sizes(self, regime: str) -> list[int]:
        return [self.points[i].size for i in self.indices(regime)]


def find_knee(points: Sequence[KneePoint], *, label: dict[int, str] | None = None) -> KneeAnalysis:
    """Classify ``points`` into flat, growing and sharp regimes and pick the knee.

    ``label`` names sizes in the reason text (``{16384: "16k"}``); sizes print in bytes
    otherwise. Raises :class:`TooFewPointsError` with fewer than three distinct batch sizes.

    Examples
    --------
    >>> pts = [KneePoint(s, r, lat) for s, r, lat in
    ...        [(1, 10, 300), (2, 20, 310), (4, 40, 330), (8, 80, 440), (16, 160, 650), (32, 320, 3000)]]
    >>> find_knee(pts).knee.size
    16
    """
    names = label or {}
    pts = _usable(points, names)
    n = len(pts)
    lat = [p.latency_ms for p in pts]
    rec = [p.records_per_batch for p in pts]
    regimes = [GROWING] * n
    notes: list[str] = []

    flat_end = _flat_end(lat, regimes)
    for i in range(flat_end + 1):
        if regimes[i] != OUTLIER:
            regimes[i] = FLAT
    if regimes.count(OUTLIER):
        notes.extend(f"{_name(pts[i].size, names)} is out of line with its neighbours "
                     f"({lat[i]:.0f} ms): treated as noise" for i in range(n) if regimes[i] == OUTLIER)

    # Walk the steps after the flat band: the first one sets the growing regime's marginal cost,
    # later ones refine it (least squares over the growing points) until a step is sharp.
    growing = [i for i in range(flat_end, n) if regimes[i] != OUTLIER][:1]
    slope: float | None = None
    sharp_index: int | None = None
    sharp_slope: float | None = None
    prev = growing[0] if growing else flat_end
    flat_bound = _flat_slope_bound(rec, lat, regimes)
    i = prev + 1
    while i < n:
        if regimes[i] == OUTLIER:
            i += 1
            continue
        step = (lat[i] - lat[prev]) / (rec[i] - rec[prev])
        falls = pts[i].rate < (1 - THROUGHPUT_FALL) * pts[prev].rate and lat[i] > lat[prev]
        reference = slope if slope is not None else flat_bound
        # A growing regime whose fitted slope is not positive is noise around a flat line: it
        # gives no marginal cost to be steep against, and only a fall of throughput is sharp.
        steep = (reference is not None and reference > 0 and step > SHARP_SLOPE_FACTOR * reference
                 and lat[i] - lat[prev] > SHARP_MIN_RISE * lat[prev]
                 and step > SHARP_VS_AVERAGE * lat[prev] / rec[prev])
        if falls or steep:
            nxt = _next_usable(regimes, i)
            if nxt is not None and _back_in_line(prev, i, nxt, rec, lat, reference):
                regimes[i] = OUTLIER
                notes.append(f"{_name(pts[i].size, names)} is out of line with its neighbours "
                             f"({lat[i]:.0f} ms): treated as noise")
                i += 1
                continue
            sharp_index, sharp_slope = i, step
            break
        growing.append(i)
        slope = _least_squares_slope([rec[j] for j in growing], [lat[j] for j in growing]) \
            if len(growing) > 1 else step
        prev = i
        i += 1

    if sharp_index is not None:
        for j in range(sharp_index, n):
            if regimes[j] != OUTLIER:
                regimes[j] = SHARP
    knee_index = max(j for j in range(sharp_index if sharp_index is not None else n)
                     if regimes[j] != OUTLIER)
    growing_slope = slope if len(growing) > 1 else None
    reason = _reason(pts, regimes, knee_index, growing_slope, sharp_index, sharp_slope, names)
    if sharp_index is None:
        notes.append(f"no sharp rise up to the largest size, {_name(pts[-1].size, names)}: the knee may lie "
                     f"beyond it; sweep larger sizes to find it")
        gain = _last_gain(pts, regimes)
        if gain is not None and gain < 0.10:
            notes.append(f"throughput grew only {gain:.0%} over the last step: larger batches add latency "
                         f"for little throughput")
    elif knee_index == 0:
        notes.append(f"latency rises sharply right after the smallest size, {_name(pts[0].size, names)}; "
                     f"sweep smaller sizes to see the flat and growing regimes")
    return KneeAnalysis(pts, regimes, knee_index, growing_slope, sharp_slope, sharp_index, reason, notes)


def _usable(points: Sequence[KneePoint], names: dict[int, str]) -> list[KneePoint]:
    """Points sorted by batch size; sizes that gave the same batches as a smaller one are merged."""
    pts = sorted((p for p in points if p.records_per_batch > 0 and p.latency_ms > 0),
                 key=lambda p: (p.records_per_batch, p.size))
    distinct: list[KneePoint] = []
    for p in pts:
        if distinct and p.records_per_batch <= distinct[-1].records_per_batch * 1.02:
            continue  # a size past the slice's end reads the same batches as the smaller one
        distinct.append(p)
    if len(distinct) < MIN_POINTS:
        given = ", ".join(_name(p.size, names) for p in points) or "none"
        raise TooFewPointsError(
            f"knee detection needs at least {MIN_POINTS} batch sizes that gave different batch sizes, "
            f"got {len(distinct)} (sizes measured: {given}); sweep more sizes, e.g. --sweep 8k..1m:6, "
            f"or give the sweep a larger slice (--records) so large sizes still fill their batches")
    return distinct


def _flat_end(lat: list[float], regimes: list[str]) -> int:
    """Index of the last flat point: the contiguous run, from the smallest size, within
    ``FLAT_TOLERANCE`` of the smallest latency; a lone point above the band with the next back
    inside it is an outlier (marked in ``regimes``)."""
    band = (1 + FLAT_TOLERANCE) * min(lat)
    end = 0
    i = 1
    while i < len(lat):
        if lat[i] <= band:
            end = i
        elif i + 1 < len(lat) and lat[i + 1] <= band:
            regimes[i] = OUTLIER
        else:
            break
        i += 1
    if lat[0] > band and end > 0:
        regimes[0] = OUTLIER  # the smallest size slower than larger ones in the band: noise
    return end


def _flat_slope_bound(rec: list[float], lat: list[float], regimes: list[str]) -> float | None:
    """The most a record can cost in the flat regime: its latencies stay within
    ``FLAT_TOLERANCE`` of the smallest over its span of batch sizes. The first step out of the
    band is measured against it while no growing regime gives a slope."""
    flat = [i for i, r in enumerate(regimes) if r == FLAT]
    if len(flat) < 2:
        return None
    return FLAT_TOLERANCE * min(lat) / (rec[flat[-1]] - rec[flat[0]])


def _next_usable(regimes: list[str], i: int) -> int | None:
    return next((j for j in range(i + 1, len(regimes)) if regimes[j] != OUTLIER), None)


def _back_in_line(prev: int, i: int, nxt: int, rec: list[float], lat: list[float],
                  slope: float | None) -> bool:
    """Was ``i`` a lone jump: the next, larger batch is faster than it, or back on the line
    from ``prev``?"""
    if lat[nxt] <= lat[i]:
        return True
    expected = lat[prev] + max(slope or 0.0, 0.0) * (rec[nxt] - rec[prev])
    return lat[nxt] <= (1 + SHARP_MIN_RISE) * expected


def _least_squares_slope(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0


def _last_gain(pts: list[KneePoint], regimes: list[str]) -> float | None:
    usable = [p for p, r in zip(pts, regimes, strict=True) if r != OUTLIER]
    if len(usable) < 2 or usable[-2].rate <= 0:
        return None
    return usable[-1].rate / usable[-2].rate - 1


def _name(size: int, names: dict[int, str]) -> str:
    return names.get(size) or f"{size:,} B"


def _reason(pts: list[KneePoint], regimes: list[str], knee_index: int, growing_slope: float | None,
            sharp_index: int | None, sharp_slope: float | None, names: dict[int, str]) -> str:
    flat = [i for i, r in enumerate(regimes) if r == FLAT]
    parts = []
    if flat:
        last = pts[flat[-1]]
        parts.append(f"latency stays within {FLAT_TOLERANCE:.0%} of the smallest batch's up to "
                     f"{_name(last.size, names)} ({last.records_per_batch:,.0f} records per "
                     f"batch, {last.latency_ms:,.0f} ms): fixed per-batch bookkeeping dominates")
    grow = [i for i, r in enumerate(regimes) if r == GROWING]
    if grow and growing_slope is not None:
        parts.append(f"from {_name(pts[grow[0]].size, names)} latency grows about linearly, "
                     f"{growing_slope:.3g} ms per extra record")
    knee = pts[knee_index]
    if sharp_index is not None and sharp_slope is not None:
        sharp = pts[sharp_index]
        ratio = (f", {sharp_slope / growing_slope:.1f}x the growing regime's"
                 if growing_slope and growing_slope > 0 else "")
        parts.append(f"at {_name(sharp.size, names)} it rises sharply: {sharp_slope:.3g} ms per extra record"
                     f"{ratio}, batch latency {knee.latency_ms:,.0f} -> {sharp.latency_ms:,.0f} ms, "
                     f"throughput {knee.rate:,.0f} -> {sharp.rate:,.0f} records/s")
        parts.append(f"the knee is {_name(knee.size, names)}, the largest size before the sharp rise "
                     f"({knee.records_per_batch:,.0f} records per batch, {knee.latency_ms:,.0f} ms, "
                     f"{knee.rate:,.0f} records/s)")
    else:
        parts.append(f"no sharp rise was measured; the knee is the largest size swept, "
                     f"{_name(knee.size, names)} ({knee.records_per_batch:,.0f} records per batch, "
                     f"{knee.latency_ms:,.0f} ms, {knee.rate:,.0f} records/s)")
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]
