"""bench/state.py's report: medians over the rounds, ratios to native, state counters per warm
batch; printed as tables and plotted."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from bench_results import pyplot, save_figure
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from state_contenders import Contender
from state_runs import CPU_PARTS
from tree_cpu import cpu_bars

#: With a warm cache, keys read from the store per batch at most this share of keys touched.
READ_SHARE_TARGET = 0.05


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def state_profile(runs: list[dict[str, Any]], keys: list[int], warm: int) -> dict[str, Any]:
    """State counters per batch: means over the warm batches of every run (the first ``warm`` of
    each run left out), and the first batch apart. Means, not medians: when a shuffle partition's
    task lands on another Python worker than last batch, that batch reads (and rewrites) every
    key, so the counters are bimodal."""
    sums: Counter[str] = Counter()
    batches = lost = 0
    for run in runs:
        for i, b in enumerate(run["batches"]):
            s = b.get("state") or {}
            if i < warm or not s:
                continue
            batches += 1
            sums.update({k: v for k, v in s.items() if isinstance(v, int)})
            sums["keys_touched"] += keys[i] if i < len(keys) else 0
            lost += s.get("write_conflicts", 0) > 0
    looked = sums["cache_hits"] + sums["cache_misses"]
    first = [run["batches"][0].get("state") or {} for run in runs if run["batches"]]
    per_batch = {k: sums[k] / batches if batches else None for k in
                 ("keys_touched", "store_reads", "store_writes", "keys_read", "keys_written",
                  "write_conflicts", "cache_hits", "cache_misses")}
    return per_batch | {
        "warm_batches": batches, "batches_with_lost_writes": lost,
        "cache_hit_rate": sums["cache_hits"] / looked if looked else None,
        "read_share": sums["keys_read"] / sums["keys_touched"] if sums["keys_touched"] else None,
        "first_batch": {k: _median([f.get(k, 0) for f in first]) for k in
                        ("store_reads", "store_writes", "keys_read", "keys_written", "cache_misses")}}


def batch_profile(runs: list[dict[str, Any]], warm: int) -> dict[str, float | None]:
    batches = [b for run in runs for b in run["batches"][warm:]]
    return {part: _median([b.get(part) for b in batches]) for part in
            ("ms", "add_batch_ms", "latest_offset_ms", "logs_ms", "planning_ms", "read_ms", "state_ms",
             "read_task_ms", "state_task_ms")} | {
        "records_per_s": _median([b["rows"] * 1000 / b["ms"] for b in batches if b.get("ms")])}


def summarise(result: dict[str, Any], contenders: list[Contender]) -> dict[str, Any]:
    rounds, keys, warm = result["rounds"], result["setup"]["keys_per_batch"], result["setup"]["warm_batches"]
    summary: dict[str, Any] = {}
    for c in contenders:
        runs = [r[c.name] for r in rounds]
        summary[c.name] = {
            "label": c.label, "records_per_s": statistics.median(r["records_per_s"] for r in runs),
            "batches": statistics.median(len(r["batches"]) for r in runs),
            "batch": batch_profile(runs, warm),
            "cpu_us_per_record": statistics.median(r["cpu_us_per_record"] for r in runs),
            "cpu_s": {k: statistics.median(r["cpu_s"][k] for r in runs) for k in (*CPU_PARTS, "total")}}
        if c.kind != "native":
            summary[c.name]["state"] = state_profile(runs, keys, warm)
        else:
            ops = [b["native_state"] for r in runs for b in r["batches"][warm:]]
            summary[c.name]["native_state"] = {
                k: _median([o.get(k) for o in ops]) for k in ("numRowsUpdated", "allUpdatesTimeMs",
                                                             "commitTimeMs", "numRowsTotal")}
    base = summary["native"]
    for c in contenders[1:]:
        this = summary[c.name]
        this["round_ratios"] = [r[c.name]["records_per_s"] / r["native"]["records_per_s"] for r in rounds]
        this["ratio"] = statistics.median(this["round_ratios"])
        steady, base_steady = this["batch"]["records_per_s"], base["batch"]["records_per_s"]
        this["steady_ratio"] = steady / base_steady if steady and base_steady else None
        this["cpu_ratio"] = base["cpu_us_per_record"] / this["cpu_us_per_record"]
        this["target"] = c.target
    return summary


def print_summary(console: Console, result: dict[str, Any], contenders: list[Contender]) -> None:
    setup, summary, rounds = result["setup"], result["summary"], result["rounds"]
    table = Table(title=f"word count into state: {setup['sentences']:,} sentences ({setup['words']:,} words, "
                        f"{setup['vocabulary']:,}-word vocabulary), batches of {setup['batch']:,}, "
                        f"{setup['shuffle_partitions']} shuffle partitions - sentences/s")
    table.add_column("run")
    for c in contenders:
        table.add_column(escape(c.name), justify="right", overflow="fold")
    for c in contenders[1:]:
        table.add_column(escape(f"{c.name} / native"), justify="right", overflow="fold")
    for n, r in enumerate(rounds, 1):
        base = r["native"]["records_per_s"]
        table.add_row(str(n), *(f"{r[c.name]['records_per_s']:,.0f}" for c in contenders),
                      *(f"{r[c.name]['records_per_s'] / base:.2f}" for c in contenders[1:]))
    table.add_row("median", *(f"{summary[c.name]['records_per_s']:,.0f}" for c in contenders),
                  *(f"[bold]{summary[c.name]['ratio']:.2f}[/]" for c in contenders[1:]))
    table.add_row("steady", *(f"{summary[c.name]['batch']['records_per_s'] or 0:,.0f}" for c in contenders),
                  *(f"{summary[c.name]['steady_ratio'] or 0:.2f}" for c in contenders[1:]))
    table.add_row("CPU us/sent.", *(f"{summary[c.name]['cpu_us_per_record']:.1f}" for c in contenders),
                  *(f"{summary[c.name]['cpu_ratio']:.2f}" for c in contenders[1:]))
    console.print(table)
    console.print(f"median: whole query per run (median of the runs' ratios); steady: one micro-batch, "
                  f"the first {setup['warm_batches']} of each run left out")

    state = Table(title=f"state per warm batch (means over batches {setup['warm_batches']}+ of every run; "
                        "keys touched = distinct words of the batch)")
    for column in ("contender", "keys touched", "store reads", "store writes", "keys read", "keys written",
                   "lost writes", "batches with lost writes", "cache hit rate", "keys read / touched",
                   "first batch reads/writes"):
        state.add_column(column, justify="left" if column == "contender" else "right", overflow="fold")
    for c in contenders[1:]:
        s = summary[c.name]["state"]
        first = s["first_batch"]
        state.add_row(escape(c.name), f"{s['keys_touched'] or 0:,.0f}", f"{s['store_reads'] or 0:.1f}",
                      f"{s['store_writes'] or 0:.1f}", f"{s['keys_read'] or 0:,.0f}",
                      f"{s['keys_written'] or 0:,.0f}", f"{s['write_conflicts'] or 0:,.0f}",
                      f"{s['batches_with_lost_writes']} of {s['warm_batches']}",
                      "-" if s["cache_hit_rate"] is None else f"{s['cache_hit_rate']:.1%}",
                      "-" if s["read_share"] is None else f"{s['read_share']:.1%}",
                      f"{first['store_reads']:.0f}/{first['store_writes']:.0f}")
    console.print(state)

    parts = Table(title="one micro-batch, medians (ms): Spark's stages from its REST API")
    for column in ("contender", "batch", "addBatch", "read+split+partial", "(task ms)", "shuffle+count+state",
                   "(task ms)", "logs", "CPU JVM/py/driver/broker/store s per run"):
        parts.add_column(column, justify="left" if column == "contender" else "right", overflow="fold")
    for c in contenders:
        p, cpu = summary[c.name]["batch"], summary[c.name]["cpu_s"]
        parts.add_row(escape(c.name), *(f"{p[k]:,.0f}" if p[k] is not None else "-" for k in
                                ("ms", "add_batch_ms", "read_ms", "read_task_ms", "state_ms", "state_task_ms",
                                 "logs_ms")),
                      "/".join(f"{cpu[k]:.1f}" for k in CPU_PARTS))
    console.print(parts)
    n = summary["native"].get("native_state", {})
    console.print(f"native state operator per batch: {n.get('numRowsUpdated') or 0:,.0f} rows updated, "
                  f"updates {n.get('allUpdatesTimeMs') or 0:,.0f} ms, "
                  f"commit {n.get('commitTimeMs') or 0:,.0f} ms (task time, summed over partitions)")
    for c in contenders[1:]:
        s = summary[c.name]
        share = s["state"]["read_share"]
        line = (f"{c.label} / native: {s['ratio']:.2f} end to end, {s['steady_ratio'] or 0:.2f} per batch, "
                f"{s['cpu_ratio']:.2f} in CPU")
        if s["target"] is not None:
            line += f"; target >= {s['target']}: " + ("[green]meets[/]" if s["ratio"] >= s["target"]
                                                      else "[red]below[/]")
        if share is not None:
            line += (f"; warm reads {share:.1%} of keys touched (<= {READ_SHARE_TARGET:.0%}: "
                     + ("[green]meets[/]" if share <= READ_SHARE_TARGET else "[red]above[/]") + ")")
        console.print(line)


def plot(result: dict[str, Any], path: Path) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    rounds, summary = result["rounds"], result["summary"]
    names = list(summary)
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(18, 4.8))
    xs = list(range(1, len(rounds) + 1))
    for name in names:
        left.plot(xs, [r[name]["records_per_s"] / 1e3 for r in rounds], "o-", label=name)
    left.set(xlabel="round", ylabel="thousand sentences/s", xticks=xs, title="word count into state, per run")
    left.set_ylim(bottom=0)
    left.legend(fontsize=7)
    bottom = [0.0] * len(names)
    for key, label in (("read_ms", "read + split + partial count"), ("state_ms", "shuffle + count + state"),
                       ("logs_ms", "offset + commit logs")):
        heights = [summary[n]["batch"][key] or 0 for n in names]
        middle.bar(names, heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    middle.set(ylabel="median ms per micro-batch", title="one warm micro-batch")
    middle.tick_params(axis="x", labelrotation=20, labelsize=7)
    middle.legend(fontsize=7)
    cpu_bars(right, names, [summary[n]["cpu_s"] for n in names], CPU_PARTS, result["setup"]["sentences"])
    right.tick_params(axis="x", labelrotation=20, labelsize=7)
    right.legend(fontsize=7)
    return save_figure(fig, path)
