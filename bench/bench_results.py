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


def pyplot() -> Any | None:
    """matplotlib's ``pyplot`` drawing to files only (the Agg backend), or None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save_figure(fig: Any, path: Path) -> bool:
    """Lay out ``fig``, write it to ``path`` as a PNG and free it; True (what a ``plot`` returns)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
