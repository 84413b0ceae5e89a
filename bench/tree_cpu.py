"""CPU seconds of this process and its descendants, by kind: what each benchmark spends.

Wall time suffers when other work shares the machine; CPU seconds much less so. Exited
children count through their parent's ``cutime`` once reaped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: Names a descendant's kind from its command line (argv joined by NULs).
Classify = Callable[[bytes], str]


def _processes() -> tuple[dict[int, int], dict[int, float]]:
    """Every process's parent and CPU seconds (utime stime cutime cstime), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parent[int(entry)] = int(fields[1])
        used[int(entry)] = sum(int(f) for f in fields[11:15]) / ticks
    return parent, used


def tree_cpu(parts: Sequence[str], classify: Classify) -> dict[str, float]:
    """CPU seconds so far, by kind: ``driver`` is this process alone, each descendant is
    counted under ``classify(its command line)`` (one of ``parts``)."""
    parent, used = _processes()
    me = os.getpid()
    spent = dict.fromkeys(parts, 0.0)
    for pid, seconds in used.items():
        ancestor = pid
        while ancestor not in (me, 0, 1) and ancestor in parent:
            ancestor = parent[ancestor]
        if ancestor != me:
            continue
        if pid == me:
            own = os.times()  # this process without its children (they are counted apart)
            spent["driver"] += own.user + own.system
            continue
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        spent[classify(command)] += seconds
    return spent


def cpu_since(before: dict[str, float], now: dict[str, float]) -> dict[str, float]:
    """What was spent between two ``tree_cpu`` readings, with the ``total``."""
    spent = {k: max(0.0, now[k] - before[k]) for k in before}
    return spent | {"total": sum(spent.values())}


def cpu_bars(axis: Any, names: Sequence[str], cpu_s: Sequence[dict[str, float]], parts: Sequence[str],
             records: int) -> None:
    """Stacked bars on a matplotlib ``axis``: CPU microseconds per record of each contender, by kind."""
    bottom = [0.0] * len(names)
    for part in parts:
        heights = [spent[part] * 1e6 / records for spent in cpu_s]
        axis.bar(names, heights, bottom=bottom, label=part.replace("_", " "))
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    axis.set(ylabel="CPU us per sentence (median run)", title="where the CPU goes (process tree)")
