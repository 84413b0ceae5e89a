"""What a batch-size sweep found: results.json, report.md and two PNG plots.

:func:`summarize` turns a :class:`~trident_spark.tuning.sweep.Sweep` into one plain dict
(the statistics per size, the regimes and knee of :mod:`.knee`, the principal bottleneck at
the knee from :mod:`.diagnosis`, the recommended settings with their formulas, and every
batch measured); :func:`write_report` writes that dict as ``results.json``, renders
``report.md`` from it and draws (matplotlib, Agg backend, no display needed):

* ``throughput_latency.png``: throughput and batch latency (median, p95 whiskers) against
  the batch size, the regimes shaded and the knee marked;
* ``stage_breakdown.png``: per size, where a batch's time goes, stacked by stage.

The report reads only the dict, so a results.json from another machine renders the same.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trident_spark.state.extras import require_extra
from trident_spark.tuning import knee as knee_rules
from trident_spark.tuning.knee import KneeAnalysis, KneePoint, TooFewPointsError, find_knee
from trident_spark.tuning.sweep import size_label

if TYPE_CHECKING:
    from trident_spark.tuning.sweep import RunResult, Sweep

REPORT_FILES = ("report.md", "results.json", "throughput_latency.png", "stage_breakdown.png")
REGIME_COLOURS = {"flat": "#d9f0d3", "growing": "#fff2cc", "sharp": "#f8d0d0"}


#: A run's last batch is partial (the slice ran out) below this share of the run's largest batch;
#: it is left out of the latency statistics like the warm-up.
PARTIAL_BATCH = 0.8


# --- statistics per size ------------------------------------------------------------------------
@dataclass
class SizeStats:
    """One size's numbers over its runs' measured batches (warm-up and partial last batches out).

    ``throughput`` is records / the sum of the measured batches' durations (records/s);
    ``wall_throughput`` all records of the runs / their wall time (start-up included).
    ``stage_ms`` is the mean task time per batch of each stage (``stage_kind`` its kind);
    without stage timings, Spark's phases of a batch (``durationMs``, wall time) stand in,
    and ``stage_source`` says which.
    """

    size: int
    label: str
    runs: int
    records: int
    batches: int
    measured_batches: int
    records_per_batch: float
    latency_p50_ms: float
    latency_p95_ms: float
    latency_mean_ms: float
    throughput: float
    wall_throughput: float
    stage_ms: dict[str, float]
    stage_kind: dict[str, str]
    stage_source: str
    limited_by: dict[str, int]

    def stage_shares(self) -> dict[str, float]:
        total = sum(self.stage_ms.values())
        return {k: v / total for k, v in self.stage_ms.items()} if total else {}


#: Spark's phases of a trigger (``durationMs``) shown when batches carry no stage timings.
PHASES = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")


def measured_batches(run: RunResult) -> list[dict[str, Any]]:
    """The batches of a run that count: not the warm-up (the first), not a partial last batch."""
    batches = sorted(run.batches, key=lambda b: b["txid"])
    counted = batches[1:] if len(batches) > 1 else batches
    if len(counted) > 1:
        largest = max(b["rows"] for b in counted)
        if counted[-1]["rows"] < PARTIAL_BATCH * largest:
            counted = counted[:-1]
    return [b for b in counted if b["rows"] > 0]


def size_stats(size: int, runs: Sequence[RunResult]) -> SizeStats:
    """Pool the measured batches of every run at ``size``."""
    counted = [b for run in runs for b in measured_batches(run)]
    durations = sorted(float(b["duration_ms"]) for b in counted)
    rows = [int(b["rows"]) for b in counted]
    total_ms = sum(durations)
    stage_ms, kinds, source = _stage_means(counted)
    limited: dict[str, int] = {}
    for b in counted:
        key = str(b.get("limited_by") or "?")
        limited[key] = limited.get(key, 0) + 1
    all_records = sum(int(b["rows"]) for run in runs for b in run.batches)
    wall = sum(run.wall_s for run in runs)
    return SizeStats(
        size=size, label=size_label(size), runs=len(runs), records=sum(rows),
        batches=sum(len(run.batches) for run in runs), measured_batches=len(counted),
        records_per_batch=statistics.median(rows) if rows else 0.0,
        latency_p50_ms=_percentile(durations, 0.5), latency_p95_ms=_percentile(durations, 0.95),
        latency_mean_ms=total_ms / len(durations) if durations else 0.0,
        throughput=sum(rows) / total_ms * 1000 if total_ms else 0.0,
        wall_throughput=all_records / wall if wall else 0.0,
        stage_ms=stage_ms, stage_kind=kinds, stage_source=source, limited_by=limited)


def sweep_stats(sweep: Sweep) -> list[SizeStats]:
    """Statistics of every size, smallest first."""
    return [size_stats(size, [r for r in sweep.runs if r.size == size]) for size in sweep.sizes]


def _percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of sorted values (a value that was measured)."""
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _stage_means(batches: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, str], str]:
    timed = [b.get("stages") or [] for b in batches]
    if batches and all(timed):
        sums: dict[str, float] = {}
        kinds: dict[str, str] = {}
        for stages in timed:
            for stage in stages:
                name = str(stage.get("name", "?"))
                sums[name] = sums.get(name, 0.0) + float(stage.get("ms") or 0.0)
                kinds.setdefault(name, str(stage.get("kind", "?")))
        return {k: v / len(batches) for k, v in sums.items()}, kinds, "stages"
    phases: dict[str, float] = dict.fromkeys(PHASES, 0.0)
    phases["other"] = 0.0
    for b in batches:
        durations = b.get("durations_ms") or {}
        known = sum(float(durations.get(p, 0)) for p in PHASES)
        for p in PHASES:
            phases[p] += float(durations.get(p, 0))
        phases["other"] += max(0.0, float(b.get("duration_ms", 0)) - known)
    n = max(1, len(batches))
    return ({k: v / n for k, v in phases.items() if v > 0}, {k: "phase" for k in phases}, "phases")


# --- the results document -----------------------------------------------------------------------
def summarize(sweep: Sweep, *, target: str = "", settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the sweep measured and concluded, as JSON-ready data."""
    stats = sweep_stats(sweep)
    labels = {s.size: s.label for s in stats}
    analysis: KneeAnalysis | None = None
    knee_doc: dict[str, Any]
    try:
        analysis = find_knee([KneePoint(s.size, s.records_per_batch, s.latency_p50_ms, s.throughput)
                              for s in stats], label=labels)
        knee_doc = _knee_doc(analysis, labels)
    except TooFewPointsError as exc:
        knee_doc = {"error": str(exc)}
    regimes = dict(zip((labels[p.size] for p in analysis.points), analysis.regimes, strict=True)) \
        if analysis else {}
    sizes = [{**_stats_doc(s), "regime": regimes.get(s.label, "")} for s in stats]
    at_knee = [b for run in sweep.runs if analysis and run.size == analysis.knee.size
               for b in measured_batches(run)]
    knee_stats = next((s for s in stats if analysis and s.size == analysis.knee.size), None)
    return {
        "target": target,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "stream": sweep.stream,
        "partitions": sweep.partitions,
        "cores": sweep.cores,
        "settings": settings or {},
        "slices": [s.to_dict() for s in sweep.slices],
        "sizes": sizes,
        "knee": knee_doc,
        "bottleneck": _bottleneck(at_knee, sweep.cores),
        "recommendation": _recommendation(knee_stats, sweep.partitions) if knee_stats else None,
        "plan": _plan(at_knee, knee_stats, sweep, _fixed_cost_ms(analysis)) if knee_stats else None,
        "scratch_states": sweep.scratch_states,
        "runs": [asdict(r) for r in sweep.runs],
    }


def _stats_doc(s: SizeStats) -> dict[str, Any]:
    doc = asdict(s)
    doc["stage_shares"] = s.stage_shares()
    return doc


def _knee_doc(analysis: KneeAnalysis, labels: dict[int, str]) -> dict[str, Any]:
    knee = analysis.knee
    return {
        "size": knee.size, "label": labels.get(knee.size, str(knee.size)),
        "records_per_batch": knee.records_per_batch, "latency_p50_ms": knee.latency_ms,
        "throughput": knee.rate, "reason": analysis.reason, "notes": analysis.notes,
        "regimes": {regime: [labels.get(s, str(s)) for s in analysis.sizes(regime)]
                    for regime in (knee_rules.FLAT, knee_rules.GROWING, knee_rules.SHARP,
                                   knee_rules.OUTLIER)},
        "growing_ms_per_record": analysis.growing_ms_per_record,
        "sharp_ms_per_record": analysis.sharp_ms_per_record,
        "thresholds": {"flat_tolerance": knee_rules.FLAT_TOLERANCE,
                       "sharp_slope_factor": knee_rules.SHARP_SLOPE_FACTOR,
                       "sharp_min_rise": knee_rules.SHARP_MIN_RISE,
                       "throughput_fall": knee_rules.THROUGHPUT_FALL},
    }


def _bottleneck(batches: list[dict[str, Any]], cores: int | None) -> dict[str, Any] | None:
    """The principal bottleneck at the knee, by :func:`diagnosis.diagnose` (None without batches)."""
    if not batches:
        return None
    from trident_spark.tuning.diagnosis import diagnose

    finding = diagnose(batches, cores=cores, window=len(batches)).bottleneck
    return {"kind": finding.kind, "title": finding.title, "explanation": finding.explanation}


def _recommendation(knee: SizeStats, partitions: int) -> dict[str, Any]:
    """The knee's settings: its read limit, its batch in records, a trigger about its latency."""
    trigger_ms = max(100, math.ceil(knee.latency_p50_ms / 100) * 100)
    records = max(1, round(knee.records_per_batch))
    rate = records / trigger_ms * 1000
    return {
        "kafka_spout": {"max_fetch_bytes": knee.size, "max_offsets_per_trigger": records},
        "trigger": f"{trigger_ms} milliseconds",
        "formulas": {
            "max_fetch_bytes": f"max_fetch_bytes = the knee's size = {knee.size:,} ({knee.label})",
            "max_offsets_per_trigger": (
                f"max_offsets_per_trigger = records per batch at the knee = {records:,} "
                f"(~ {partitions} partitions x max_fetch_bytes / record_bytes)"),
            "trigger": (f"trigger = the knee's median batch latency rounded up to 100 ms = "
                        f"ceil({knee.latency_p50_ms:,.0f} / 100) x 100 = {trigger_ms} ms"),
            "throughput": (f"throughput = records per batch / trigger (Little's Law, one batch in flight) "
                           f"= {records:,} / {trigger_ms / 1000:g} s = {rate:,.0f} records/s "
                           f"(measured at the knee: {knee.throughput:,.0f} records/s busy)"),
        },
        "reason": (f"{knee.label} is the largest size before latency rises sharply: each batch of "
                   f"~{records:,} records takes {knee.latency_p50_ms:,.0f} ms (p95 "
                   f"{knee.latency_p95_ms:,.0f} ms); a trigger of {trigger_ms} ms lets the next batch "
                   f"gather while one runs, so the stream keeps up with up to ~{rate:,.0f} records/s"),
    }


def _fixed_cost_ms(analysis: KneeAnalysis | None) -> float | None:
    """The batch's fixed cost as the sweep measured it: the flat regime's median latency.

    One size's batches only show the driver's share of it (trigger time outside ``addBatch``);
    the flat regime also holds Spark's per-batch job overhead, which the variable sheet must
    subtract from the target before it sizes the per-record part."""
    if analysis is None:
        return None
    flat = [analysis.points[i].latency_ms for i in analysis.indices("flat")]
    return sorted(flat)[len(flat) // 2] if flat else None


def _plan(batches: list[dict[str, Any]], knee: SizeStats, sweep: Sweep,
          fixed_cost_ms: float | None = None) -> dict[str, Any]:
    """:func:`plan.plan_from_progress` on the knee's batches, aiming at the knee's latency (the
    fixed cost per batch from the flat regime, when the sweep found one)."""
    from trident_spark.tuning.measured import measured_inputs, plan_from_progress

    fallback: dict[str, Any] = {"kafka_partitions": sweep.partitions, "cores": sweep.cores}
    if fixed_cost_ms is not None and fixed_cost_ms < knee.latency_p50_ms:
        fallback["batch_overhead_ms"] = round(fixed_cost_ms, 1)
    try:
        measured = measured_inputs(batches)
        extra = {k: v for k, v in fallback.items() if v and (k not in measured or k == "batch_overhead_ms")}
        tuning = plan_from_progress(batches, target_batch_ms=max(1.0, knee.latency_p50_ms), **extra)
    except ValueError as exc:
        return {"error": str(exc)}
    return {"settings": tuning.settings(), "formulas": dict(tuning.formulas),
            "markdown": tuning.to_markdown(), "warnings": list(tuning.warnings)}


# --- writing ------------------------------------------------------------------------------------
def write_report(results: dict[str, Any], out_dir: Path) -> Path:
    """Write results.json, the two plots and report.md into ``out_dir``; returns report.md's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1, default=str))
    plot_throughput_latency(results, out_dir / "throughput_latency.png")
    plot_stage_breakdown(results, out_dir / "stage_breakdown.png")
    path = out_dir / "report.md"
    path.write_text(render_markdown(results))
    return path


def render_markdown(results: dict[str, Any]) -> str:
    """report.md: the table of sizes, the regimes, the knee, the bottleneck and the settings."""
    knee = results.get("knee") or {}
    lines = [f"# Batch-size sweep: {results.get('target') or results.get('stream')}", ""]
    lines += _slice_lines(results)
    lines += ["## Measurements", "",
              "Per batch size (`max_fetch_bytes` per partition): the first batch of every run is the "
              "warm-up and is not counted; throughput is records / the counted batches' summed "
              "durations (wall: all records / the runs' wall time, start-up included).", "",
              "| size | regime | batches | records/batch | p50 ms | p95 ms | records/s | wall records/s "
              "| stage shares |",
              "|---|---|---|---|---|---|---|---|---|"]
    for s in results["sizes"]:
        mark = " **(knee)**" if knee.get("label") == s["label"] else ""
        lines.append(
            f"| {s['label']}{mark} | {s.get('regime', '')} | {s['measured_batches']} of {s['batches']} "
            f"| {s['records_per_batch']:,.0f} | {s['latency_p50_ms']:,.0f} | {s['latency_p95_ms']:,.0f} "
            f"| {s['throughput']:,.0f} | {s['wall_throughput']:,.0f} | {_shares(s)} |")
    sources = {s.get("stage_source") for s in results["sizes"]}
    if "phases" in sources:
        lines += ["", "Stage shares are Spark's phases of a batch (wall time): the batches carried no "
                      "per-stage task times."]
    lines += ["", "![throughput and latency](throughput_latency.png)", "",
              "![time per stage](stage_breakdown.png)", ""]
    lines += _knee_lines(knee)
    lines += _bottleneck_lines(results.get("bottleneck"))
    lines += _recommendation_lines(results.get("recommendation"), results.get("plan"))
    if results.get("scratch_states"):
        lines += ["## Scratch states", "", "Each run wrote its state here, not into the topology's own:", ""]
        lines += [f"* `{name}`" for name in results["scratch_states"]]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _slice_lines(results: dict[str, Any]) -> list[str]:
    settings = results.get("settings") or {}
    lines = [f"Stream `{results['stream']}`: {results['partitions']} Kafka partitions, "
             f"{results.get('cores') or '?'} cores; {settings.get('repeat', 1)} run(s) per size, "
             f"at most {settings.get('max_batches', '?')} batches per run.", ""]
    for s in results.get("slices", []):
        ranges = ", ".join(f"{t}[{p}] {s['start'][t][p]}..{s['end'][t][p]}"
                           for t in sorted(s["end"]) for p in sorted(s["end"][t], key=int))
        lines.append(f"* slice of `{s['stream']}`: {s['records']:,} records ({ranges})")
    return [*lines, ""]


def _shares(size: dict[str, Any]) -> str:
    shares = size.get("stage_shares") or {}
    top = sorted(shares.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{name} {share:.0%}" for name, share in top)


def _knee_lines(knee: dict[str, Any]) -> list[str]:
    lines = ["## Regimes and knee", ""]
    if "error" in knee:
        return [*lines, knee["error"], ""]
    regimes = knee["regimes"]
    names = {"flat": "flat (bookkeeping-dominated)", "growing": "slowly growing (constant cost per record)",
             "sharp": "sharp rise", "outlier": "outliers (left out)"}
    for key, title in names.items():
        if regimes.get(key):
            lines.append(f"* {title}: {', '.join(regimes[key])}")
    slope = knee.get("growing_ms_per_record")
    sharp = knee.get("sharp_ms_per_record")
    if slope is not None:
        lines.append(f"* marginal cost in the growing regime: {slope:.3g} ms per record")
    if sharp is not None:
        lines.append(f"* marginal cost at the sharp rise: {sharp:.3g} ms per record")
    lines += ["", f"**Knee: {knee['label']}** ({knee['records_per_batch']:,.0f} records per batch, "
                  f"{knee['latency_p50_ms']:,.0f} ms, {knee['throughput']:,.0f} records/s). "
                  f"{knee['reason']}", ""]
    lines += [f"* note: {note}" for note in knee.get("notes", [])]
    t = knee["thresholds"]
    lines += ["", f"Thresholds: flat while latency is within {t['flat_tolerance']:.0%} of the smallest; "
                  f"a sharp rise is a step whose ms per record exceeds {t['sharp_slope_factor']:g}x the "
                  f"growing regime's with latency up more than {t['sharp_min_rise']:.0%}, or throughput "
                  f"falling by more than {t['throughput_fall']:.0%}.", ""]
    return lines


def _bottleneck_lines(bottleneck: dict[str, Any] | None) -> list[str]:
    if not bottleneck:
        return []
    return ["## Principal bottleneck at the knee", "", f"**{bottleneck['title'] or bottleneck['kind']}**: "
            f"{bottleneck['explanation']}", ""]


def _recommendation_lines(rec: dict[str, Any] | None, plan: dict[str, Any] | None) -> list[str]:
    if not rec:
        return []
    spout = rec["kafka_spout"]
    lines = ["## Recommended settings", "", rec["reason"] + ".", "", "```python",
             f"KafkaSpout(..., max_fetch_bytes={spout['max_fetch_bytes']}, "
             f"max_offsets_per_trigger={spout['max_offsets_per_trigger']})",
             f"topology.run(..., trigger={rec['trigger']!r})", "```", ""]
    lines += [f"* `{formula}`" for formula in rec["formulas"].values()]
    lines.append("")
    if plan and "markdown" in plan:
        lines += ["### The variable sheet at the knee (Little's Law)", "",
                  "`plan_from_progress` on the knee's batches, aiming at its median latency. The sheet "
                  "extrapolates the knee's costs linearly and knows nothing of the sharp rise: where it "
                  "asks for larger batches than the knee, the knee wins.", "",
                  plan["markdown"], ""]
    elif plan and "error" in plan:
        lines += [f"The variable sheet could not be filled from the knee's batches: {plan['error']}", ""]
    return lines


# --- plots --------------------------------------------------------------------------------------
def _pyplot() -> Any:
    matplotlib = require_extra("matplotlib", "the tune report's plots")
    matplotlib.use("Agg")
    return require_extra("matplotlib.pyplot", "the tune report's plots")


def plot_throughput_latency(results: dict[str, Any], path: Path) -> None:
    """Throughput (top) and batch latency (bottom) against the batch size; regimes and knee marked."""
    plt = _pyplot()
    sizes = results["sizes"]
    x = [s["size"] for s in sizes]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 7))
    try:
        top.plot(x, [s["throughput"] for s in sizes], "o-", label="busy (sum of batch durations)")
        top.plot(x, [s["wall_throughput"] for s in sizes], "s--", alpha=0.6, label="wall (with start-up)")
        top.set_ylabel("throughput (records/s)")
        top.legend(loc="best", fontsize="small")
        p50 = [s["latency_p50_ms"] for s in sizes]
        p95 = [s["latency_p95_ms"] for s in sizes]
        above = [max(0.0, b - a) for a, b in zip(p50, p95, strict=True)]
        bottom.errorbar(x, p50, yerr=[[0.0] * len(p50), above], fmt="o-", capsize=3,
                        label="median batch latency (whisker: p95)")
        bottom.set_ylabel("batch latency (ms)")
        bottom.set_xlabel("max_fetch_bytes per partition (records per batch below)")
        bottom.legend(loc="upper left", fontsize="small")
        outliers = [s for s in sizes if s.get("regime") == "outlier"]
        if outliers:
            bottom.plot([s["size"] for s in outliers], [s["latency_p50_ms"] for s in outliers], "x",
                        color="grey", markersize=12, label="outlier (left out)")
        for ax in (top, bottom):
            ax.set_xscale("log", base=2)
            ax.grid(True, alpha=0.3)
            _shade_regimes(ax, sizes)
        _regime_legend(fig, sizes)
        bottom.set_xticks(x)
        bottom.set_xticklabels([f"{s['label']}\n{s['records_per_batch']:,.0f}" for s in sizes], fontsize=8)
        knee = results.get("knee") or {}
        if "size" in knee:
            for ax in (top, bottom):
                ax.axvline(knee["size"], color="red", linestyle="--", linewidth=1.2)
            bottom.annotate(f"knee {knee['label']}", (knee["size"], knee["latency_p50_ms"]),
                            textcoords="offset points", xytext=(-10, 25), ha="right", color="red",
                            arrowprops={"arrowstyle": "->", "color": "red"})
        fig.suptitle(f"Batch-size sweep of {results['stream']}")
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def _regime_legend(fig: Any, sizes: list[dict[str, Any]]) -> None:
    Patch = require_extra("matplotlib.patches", "the tune report's plots").Patch  # noqa: N806

    titles = {"flat": "flat", "growing": "slowly growing", "sharp": "sharp rise"}
    present = [r for r in titles if any(s.get("regime") == r for s in sizes)]
    if present:
        fig.legend(handles=[Patch(color=REGIME_COLOURS[r], label=titles[r]) for r in present],
                   loc="lower center", ncol=len(present), fontsize="small", frameon=False)


def _shade_regimes(ax: Any, sizes: list[dict[str, Any]]) -> None:
    """Colour the x range of each regime (boundaries half way between sizes, on the log scale)."""
    xs = [s["size"] for s in sizes]
    for i, s in enumerate(sizes):
        colour = REGIME_COLOURS.get(s.get("regime", ""))
        if not colour:
            continue
        left = math.sqrt(xs[i - 1] * xs[i]) if i > 0 else xs[i] / 1.4
        right = math.sqrt(xs[i] * xs[i + 1]) if i + 1 < len(xs) else xs[i] * 1.4
        ax.axvspan(left, right, color=colour, zorder=0, linewidth=0)


def plot_stage_breakdown(results: dict[str, Any], path: Path) -> None:
    """Per size, the mean time per batch of each stage, stacked; the knee's bar outlined."""
    plt = _pyplot()
    sizes = results["sizes"]
    stages: list[str] = []
    for s in sizes:
        stages += [name for name in s["stage_ms"] if name not in stages]
    fig, ax = plt.subplots(figsize=(8, 5))
    try:
        positions = list(range(len(sizes)))
        bottoms = [0.0] * len(sizes)
        colours = plt.get_cmap("tab20").colors
        for k, name in enumerate(stages):
            heights = [float(s["stage_ms"].get(name, 0.0)) for s in sizes]
            ax.bar(positions, heights, bottom=bottoms, label=name, color=colours[k % len(colours)])
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        knee = (results.get("knee") or {}).get("label")
        for i, s in enumerate(sizes):
            if s["label"] == knee:
                ax.bar([i], [bottoms[i]], fill=False, edgecolor="red", linewidth=2, label="knee")
        ax.plot(positions, [s["latency_p50_ms"] for s in sizes], "kD", markersize=5,
                label="median batch latency (wall)")
        ax.set_xticks(positions)
        ax.set_xticklabels([f"{s['label']}\n{s['records_per_batch']:,.0f}" for s in sizes], fontsize=8)
        source = {s.get("stage_source") for s in sizes}
        ax.set_ylabel("task ms per batch (summed over tasks)" if source == {"stages"}
                      else "ms per batch (Spark phases, wall time)")
        ax.set_xlabel("max_fetch_bytes per partition (records per batch below)")
        ax.set_title(f"Where a batch's time goes, per batch size ({results['stream']})")
        ax.legend(loc="upper left", fontsize="small")
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
