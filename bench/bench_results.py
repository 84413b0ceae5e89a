"""What every benchmark does with its results: JSON and a PNG plot under bench/results/."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def save_results(result: dict[str, Any], name: str, stamp: str,
                 plot: Callable[[dict[str, Any], Path], bool], console: Console) -> Path:
    """Write ``result`` to ``results/<name>-<stamp>.json`` and its plot next to it; say where."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"{name}-{stamp}.json"
    out.write_text(json.dumps(result, indent=2))
    console.print(f"results: {out}")
    png = out.with_suffix(".png")
    if plot(result, png):
        console.print(f"plot:    {png}")
    return out
