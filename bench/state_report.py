"""bench/state.py's report: medians over the rounds, ratios to native (end to end and steady, per
round), fractions of the limit, issue 31's targets, state counters per warm batch, and where each
contender's batches spend their time; printed as tables and plotted."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from bench_results import pyplot, save_figure
from limit import limit_fractions
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from state_contenders import Contender
from state_runs import CPU_PARTS
from state_stages import COLUMNS, batch_rows
from state_targets import verdict
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


def steady_rate(run: dict[str, Any], warm: int) -> float | None:
    """One run's steady sentences/s: the median over its batches after the first ``warm`` of
    each batch's rows over its wall time (Spark's ``triggerExecution``).

    Examples
    --------
    >>> steady_rate({"batches": [{"rows": 100, "ms": 1000}, {"rows": 100, "ms": 500},
    ...                          {"rows": 100, "ms": 250}]}, 1)
    300.0
    """
    return _median([b["rows"] * 1000 / b["ms"] for b in run["batches"][warm:] if b.get("ms")])


def summarise_limit(result: dict[str, Any], contenders: list[Contender]) -> dict[str, Any] | None:
    """The limit's rate (median over the rounds) and each contender's fraction of it, per round
    (the runs of the same round) and of the medians; None when the limit did not run."""
    rounds, cores = result["rounds"], result["setup"]["cores"]
    if not rounds or "limit" not in rounds[0]:
        return None
    rates = [r["limit"]["records_per_s"] for r in rounds]
    rate = statistics.median(rates)
    out: dict[str, Any] = {
        "records_per_s": rate, "round_rates": rates, "cores": cores, "contenders": {},
        "cpu_us_per_record": statistics.median(r["limit"]["cpu_us_per_record"] for r in rounds)}
    for c in contenders:
        median_rate = statistics.median(r[c.name]["records_per_s"] for r in rounds)
        out["contenders"][c.name] = limit_fractions(median_rate, rate, cores) | {
            "rounds": [limit_fractions(r[c.name]["records_per_s"], limit, cores)["of_one"]
                       for r, limit in zip(rounds, rates, strict=True)]}
    return out


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
            "cpu_s": {k: statistics.median(r["cpu_s"][k] for r in runs) for k in (*CPU_PARTS, "total")},
            "round_steady": [steady_rate(r, warm) for r in runs],
            "batch_rows": batch_rows(runs, warm)}
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
        this["round_steady_ratios"] = [s / b if s and b else None for s, b in
                                       zip(this["round_steady"], base["round_steady"], strict=True)]
        this["cpu_ratio"] = base["cpu_us_per_record"] / this["cpu_us_per_record"]
        this["target"] = c.target
        if c.target is not None:
            steady_row = this["batch_rows"][-1][1]
            this["verdict"] = verdict(c.target, this["ratio"], this["steady_ratio"], steady_row,
                                      result["setup"]["cores"], warm)
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
    print_ratios(console, result, contenders)

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

    for c in contenders:
        print_batches(console, c, summary[c.name], setup["warm_batches"])
    n = summary["native"].get("native_state", {})
    console.print(f"native state operator per batch: {n.get('numRowsUpdated') or 0:,.0f} rows updated, "
                  f"updates {n.get('allUpdatesTimeMs') or 0:,.0f} ms, "
                  f"commit {n.get('commitTimeMs') or 0:,.0f} ms (task time, summed over partitions)")
    for c in contenders[1:]:
        s = summary[c.name]
        share = s["state"]["read_share"]
        line = (f"{escape(c.label)} / native: {s['ratio']:.2f} end to end, {s['steady_ratio'] or 0:.2f} "
                f"per batch, {s['cpu_ratio']:.2f} in CPU")
        if "verdict" in s:
            v = s["verdict"]
            line += f"; issue 31's target >= {v['target']:g}: " + (
                "[green]met[/]" if v["met"] else f"[red]missed[/] (binding: {escape(v['binding'])})")
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


def print_ratios(console: Console, result: dict[str, Any], contenders: list[Contender]) -> None:
    """Issue 31's table: each contender's ratios to native per round (end to end / steady), their
    medians, its fraction of the limit, and its target met or missed with the binding term."""
    setup, summary, limit = result["setup"], result["summary"], result.get("limit")
    table = Table(title="ratios to native per round (end to end / steady), fraction of the limit, targets")
    table.add_column("contender")
    for n in range(1, len(result["rounds"]) + 1):
        table.add_column(f"round {n}", justify="right")
    cores_limit = f"of {setup['cores']}-core limit"
    for column in ("median", "steady", "of limit", cores_limit, "target", "binding term"):
        table.add_column(column, justify="left" if column == "binding term" else "right", overflow="fold")
    for c in contenders:
        s = summary[c.name]
        fractions = (limit or {}).get("contenders", {}).get(c.name)
        of_limit = ("-", "-") if fractions is None else (f"{fractions['of_one']:.2f}",
                                                          f"{fractions['of_cores']:.2f}")
        if c.kind == "native":
            table.add_row(escape(c.name), *("1.00 / 1.00" for _ in result["rounds"]), "1.00", "1.00",
                          *of_limit, "", "")
            continue
        steady = [f"{x:.2f}" if x is not None else "-" for x in s["round_steady_ratios"]]
        v = s.get("verdict")
        target = "-" if v is None else (f">= {v['target']:g}: "
                                        + ("[green]met[/]" if v["met"] else "[red]missed[/]"))
        per_round = (f"{e:.2f} / {t}" for e, t in zip(s["round_ratios"], steady, strict=True))
        binding = escape(v["binding"] or "") if v else ""
        table.add_row(escape(c.name), *per_round, f"[bold]{s['ratio']:.2f}[/]",
                      f"{s['steady_ratio'] or 0:.2f}", *of_limit, target, binding)
    console.print(table)
    if limit is not None:
        rates = ", ".join(f"{r:,.0f}" for r in limit["round_rates"])
        console.print(f"the limit: one Python process consuming the topic (confluent-kafka) and counting in "
                      f"a dict, {limit['records_per_s']:,.0f} sentences/s (rounds {rates}; CPU "
                      f"{limit['cpu_us_per_record']:.1f} us/sentence); 'of limit' is a contender's rate over "
                      f"it, 'of {limit['cores']}-core limit' over {limit['cores']} such processes")
    console.print("targets: issue 31's, end to end (median of the rounds' ratios); binding term: for a miss, "
                  "the largest term of the steady batch (task time per core, or the driver's wall time), or "
                  "the query's fixed costs when the steady ratio meets the target")


def print_batches(console: Console, c: Contender, summary: dict[str, Any], warm: int) -> None:
    """Where one contender's batches spend their time: the first ``warm`` batches and the steady
    median, ms; the run's own metrics by term (task time summed over tasks) and Spark's stages."""
    cpu = summary["cpu_s"]
    table = Table(title=f"{escape(c.name)}: where the time goes per batch, ms (terms: task time summed over "
                        f"tasks, from the run's metrics; CPU s per run JVM/py/driver/broker/store "
                        + "/".join(f"{cpu[k]:.1f}" for k in CPU_PARTS) + ")")
    table.add_column("batch")
    for heading in COLUMNS.values():
        table.add_column(heading, justify="right", overflow="fold")
    for label, row in summary["batch_rows"]:
        table.add_row(label, *(f"{row[k]:,.0f}" if row[k] is not None else "-" for k in COLUMNS))
    console.print(table)
