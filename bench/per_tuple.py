"""The per-tuple path's overhead: Trident's per-tuple operations through the kernel against a
plain Python loop doing the same work, in one process, without Spark.

Not a test: it prints ratios (ours / the plain loop, lower is better; 1.00 is the loop itself)
and writes them to ``bench/results/per_tuple-<stamp>.json``. The workload: N sentences of W
words drawn (seeded) from a vocabulary of V words. Each figure is the best of several repeats,
the plain loop and ours alternating, in CPU time (``time.process_time``: the machine's other
work does not count), with the garbage collector paused (as the stage pauses it). Rows:

* ``split``: ``for w in s.split(" "): out.append(w)`` against a user ``BaseFunction`` as users
  write it (``collector.emit([w])``), through the kernel as the stage calls it
  (:class:`~trident_spark.executor.kernel.TupleColumns` and
  :func:`~trident_spark.executor.kernel.each_columns`), in its ``tuple.getString(0)`` and its
  ``tuple[0]`` form; and through ``each_values`` over ``tuple_views`` (a list of views, tuples
  as lists: the DRPC driver's way);
* ``filter``, ``map``: a ``BaseFilter``'s ``isKeep`` through ``keep_indices`` and a
  ``MapFunction``'s ``execute`` through ``map_columns``, over ``TupleColumns``, against their
  plain loops;
* ``... stage``: the whole ``run_stage`` over Arrow batches of the same sentences, against the
  plain loop with the same way in and out (``to_pylist`` in, ``pa.array`` out), so what the
  stage costs outside the loop shows;
* ``bound: ...``: what the user's own code costs whatever the kernel does: the Split body with
  ``emit`` a bound ``list.extend`` (a collector in C: no Python frame, no width check), and the
  plain loop calling an empty Python method once per word (what one Python-level ``emit``
  costs at the least).

Every round runs each row's plain loop and ours (in turn, A B then B A); a plain loop shared by
rows is timed with each and its best time is every such row's denominator.

Examples::

    .venv/bin/python bench/per_tuple.py                     # 200,000 sentences, 5 repeats
    .venv/bin/python bench/per_tuple.py --sentences 50000 --repeats 3
    .venv/bin/python bench/per_tuple.py --only split --label after
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_results import save_results

from trident_spark.executor.kernel import each_values, keep_indices, tuple_views
from trident_spark.executor.python_stage import PythonStep, run_stage
from trident_spark.fields import Fields
from trident_spark.operation import BaseFilter, BaseFunction, MapFunction

try:
    from trident_spark.executor.kernel import TupleColumns, each_columns, map_columns
except ImportError:  # a tree from before issue 31: its stage called these (to measure "before")
    from trident_spark.executor.kernel import each_values as each_columns  # type: ignore[assignment]
    from trident_spark.executor.kernel import map_values as map_columns  # type: ignore[assignment]
    from trident_spark.executor.kernel import tuple_views as TupleColumns  # type: ignore[assignment]

LINE = Fields("line")
WORD = Fields("word")
LENGTH = Fields("length")
#: A sentence longer than this is kept by the filter (about half of them with the defaults).
KEEP_ABOVE = 69


class SplitGetString(BaseFunction):
    """Split as users write it, with Trident's typed getter."""

    def execute(self, tuple: Any, collector: Any) -> None:
        for w in tuple.getString(0).split(" "):
            collector.emit([w])


class SplitIndex(BaseFunction):
    """Split as users write it, by position."""

    def execute(self, tuple: Any, collector: Any) -> None:
        for w in tuple[0].split(" "):
            collector.emit([w])


class LongLines(BaseFilter):
    """Keeps the sentences longer than :data:`KEEP_ABOVE`."""

    def isKeep(self, tuple: Any) -> bool:
        return len(tuple.getString(0)) > KEEP_ABOVE


class Length(MapFunction):
    """Each sentence's length (a single value stands for the one output field)."""

    def execute(self, tuple: Any) -> Any:
        return len(tuple.getString(0))


class Empty:
    """For the bound: a method that does nothing."""

    def call(self, value: Any) -> None:
        pass


def sentences(n: int, words: int, vocabulary: int, seed: int) -> list[str]:
    """``n`` sentences of ``words`` words from a seeded vocabulary of ``vocabulary`` words."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(vocabulary)]
    return [" ".join(rng.choice(vocab) for _ in range(words)) for _ in range(n)]


# --- the plain loops --------------------------------------------------------------------------
def plain_split(lines: list[str]) -> list[str]:
    out = []
    for s in lines:
        for w in s.split(" "):
            out.append(w)
    return out


def plain_filter(lines: list[str]) -> list[int]:
    kept = []
    for i, s in enumerate(lines):
        if len(s) > KEEP_ABOVE:
            kept.append(i)
    return kept


def plain_map(lines: list[str]) -> list[int]:
    out = []
    for s in lines:
        out.append(len(s))
    return out


def plain_stage(batches: list[pa.RecordBatch], loop: Callable[[list[str]], list[Any]],
                type_: pa.DataType) -> int:
    """The plain loop with the stage's way in and out: ``to_pylist`` in, ``pa.array`` out."""
    rows = 0
    for batch in batches:
        rows += len(pa.array(loop(batch.column(0).to_pylist()), type_))
    return rows


def plain_stage_filter(batches: list[pa.RecordBatch]) -> int:
    rows = 0
    for batch in batches:
        rows += batch.take(pa.array(plain_filter(batch.column(0).to_pylist()), pa.int64())).num_rows
    return rows


# --- ours -------------------------------------------------------------------------------------
def kernel_split(function: BaseFunction, lines: list[str]) -> list[Any]:
    return each_columns("each(Split)", function.execute, TupleColumns(LINE, [lines], len(lines)), WORD)[1]


def kernel_split_rows(function: BaseFunction, lines: list[str]) -> list[Any]:
    return each_values("each(Split)", function.execute, tuple_views(LINE, [lines], len(lines)), WORD)[1]


def kernel_filter(lines: list[str]) -> list[int]:
    return keep_indices("filter(LongLines)", LongLines().isKeep, TupleColumns(LINE, [lines], len(lines)))


def kernel_map(lines: list[str]) -> list[Any]:
    return map_columns("map(Length)", Length().execute, TupleColumns(LINE, [lines], len(lines)), LENGTH)[1]


def stage(batches: list[pa.RecordBatch], step: PythonStep, output: Sequence[str],
          new_types: dict[str, pa.DataType]) -> int:
    return sum(b.num_rows for b in run_stage([step], output, new_types, 0, iter(batches)))


# --- the bounds -------------------------------------------------------------------------------
class CCollector:
    """A collector whose ``emit`` is a bound ``list.extend``: no Python frame per emit."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.emit = self.values.extend


def bound_split_c_emit(lines: list[str]) -> list[Any]:
    """The Split body (``collector.emit([w])``) with a collector in C: what the user's code costs."""
    collector = CCollector()
    for s in lines:
        for w in s.split(" "):
            collector.emit([w])
    return collector.values


def bound_empty_call(lines: list[str]) -> int:
    """The plain loop plus one empty Python method call per word."""
    empty = Empty()
    out = []
    for s in lines:
        for w in s.split(" "):
            empty.call(w)
            out.append(w)
    return len(out)


@dataclass
class Case:
    """One row: ours against its plain loop."""

    name: str
    group: str
    plain: Callable[[], Any]
    ours: Callable[[], Any]
    base: str  # what the plain loop is, for the table: rows with the same one share its best time


def cases(lines: list[str], batch_rows: int) -> list[Case]:
    column = pa.array(lines, pa.string())
    batches = [pa.RecordBatch.from_arrays([column.slice(i, batch_rows)], ["line"])
               for i in range(0, len(lines), batch_rows)]
    split_step = PythonStep("each(Split)", SplitGetString(), LINE, WORD)
    filter_step = PythonStep("filter(LongLines)", LongLines(), LINE, Fields())
    map_step = PythonStep("map(Length)", Length(), LINE, LENGTH, kind="map")
    return [
        Case("split, tuple.getString(0)", "split", lambda: plain_split(lines),
             lambda: kernel_split(SplitGetString(), lines), "split loop"),
        Case("split, tuple[0]", "split", lambda: plain_split(lines),
             lambda: kernel_split(SplitIndex(), lines), "split loop"),
        Case("split, each_values over tuple_views", "split", lambda: plain_split(lines),
             lambda: kernel_split_rows(SplitGetString(), lines), "split loop"),
        Case("split stage (run_stage)", "split", lambda: plain_stage(batches, plain_split, pa.string()),
             lambda: stage(batches, split_step, ["word"], {"word": pa.string()}),
             "to_pylist + split loop + pa.array"),
        Case("filter", "filter", lambda: plain_filter(lines), lambda: kernel_filter(lines), "filter loop"),
        Case("filter stage (run_stage)", "filter", lambda: plain_stage_filter(batches),
             lambda: stage(batches, filter_step, ["line"], {}), "to_pylist + filter loop + take"),
        Case("map", "map", lambda: plain_map(lines), lambda: kernel_map(lines), "map loop"),
        Case("map stage (run_stage)", "map", lambda: plain_stage(batches, plain_map, pa.int64()),
             lambda: stage(batches, map_step, ["length"], {"length": pa.int64()}),
             "to_pylist + map loop + pa.array"),
        Case("bound: Split body, emit a C list.extend", "bound", lambda: plain_split(lines),
             lambda: bound_split_c_emit(lines), "split loop"),
        Case("bound: + an empty method call per word", "bound", lambda: plain_split(lines),
             lambda: bound_empty_call(lines), "split loop"),
    ]


def seconds(fn: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        fn()
        return time.process_time() - started
    finally:
        gc.enable()


def measure(chosen: list[Case], repeats: int, advance: Callable[[], None]) -> list[tuple[float, float]]:
    """Each row's best seconds (its plain loop's, shared by rows with the same one; ours), every
    round running every row, the plain loop and ours alternating A B, B A."""
    plain: dict[str, float] = {}
    ours = [float("inf")] * len(chosen)
    for r in range(repeats):
        for i, case in enumerate(chosen):
            for fn in ((case.plain, case.ours) if r % 2 == 0 else (case.ours, case.plain)):
                took = seconds(fn)
                if fn is case.plain:
                    plain[case.base] = min(plain.get(case.base, took), took)
                else:
                    ours[i] = min(ours[i], took)
            advance()
    return [(plain[case.base], ours[i]) for i, case in enumerate(chosen)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n  .venv/bin/python bench/per_tuple.py\n"
               "  .venv/bin/python bench/per_tuple.py --sentences 50000 --repeats 3\n"
               "  .venv/bin/python bench/per_tuple.py --only split --label after")
    parser.add_argument("--sentences", type=int, default=200_000, help="sentences (default 200000)")
    parser.add_argument("--words", type=int, default=10, help="words per sentence (default 10)")
    parser.add_argument("--vocabulary", type=int, default=10_000, help="distinct words (default 10000)")
    parser.add_argument("--seed", type=int, default=31, help="random seed (default 31)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per row, best kept (default 5)")
    parser.add_argument("--batch-rows", type=int, default=10_000,
                        help="rows per Arrow batch of the stage rows (default 10000)")
    parser.add_argument("--only", choices=["split", "filter", "map", "bound"], action="append",
                        help="run only these groups (repeatable)")
    parser.add_argument("--label", default="", help="a note kept in the JSON (e.g. before, after)")
    args = parser.parse_args(argv)

    console = Console(width=120)
    lines = sentences(args.sentences, args.words, args.vocabulary, args.seed)
    chosen = [c for c in cases(lines, args.batch_rows) if not args.only or c.group in args.only]
    console.print(f"{args.sentences:,} sentences x {args.words} words, vocabulary {args.vocabulary:,}, "
                  f"best of {args.repeats}, Python {sys.version.split()[0]}")
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("measuring", total=len(chosen) * args.repeats)
        best = measure(chosen, args.repeats, lambda: progress.advance(task))
    rows = [{"case": case.name, "baseline": case.base, "plain_s": plain, "ours_s": ours,
             "ratio": ours / plain} for case, (plain, ours) in zip(chosen, best, strict=True)]
    table = Table(title="per-tuple path: ours / the plain loop (lower is better; CPU seconds, best of "
                        f"{args.repeats})")
    for name in ("case", "baseline", "plain s", "ours s", "ratio"):
        table.add_column(name, justify="left" if name in ("case", "baseline") else "right")
    for row in rows:
        table.add_row(row["case"], row["baseline"], f"{row['plain_s']:.3f}", f"{row['ours_s']:.3f}",
                      f"{row['ratio']:.2f}")
    console.print(table)
    result = {"benchmark": "per_tuple", "label": args.label, "sentences": args.sentences,
              "words": args.words, "vocabulary": args.vocabulary, "seed": args.seed,
              "repeats": args.repeats, "batch_rows": args.batch_rows, "python": sys.version.split()[0],
              "rows": rows}
    save_results(result, "per_tuple", time.strftime("%Y%m%d-%H%M%S"), lambda _r, _p: False, console)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
