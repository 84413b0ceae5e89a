"""The documentation's examples run: every ```python block of docs/api.md, port-guide.md, state.md,
tuning.md, spouts-and-states.md, windows.md, drpc.md, deployment.md, notebooks.md and scaling.md
(README.md's in test_readme.py).

A block is skipped only when an HTML comment ``<!-- not run: reason -->`` stands right
before it (state operations that do not run yet, fragments next to Java). Every other
block is a complete program: it is executed with two names given, ``spark`` (the
session's SparkSession) and ``checkpoint`` (a fresh directory), and

* when a ```text block follows it directly, what the block prints must equal that text;
* otherwise it must check itself with ``assert``.

A block must also stop what it starts: no streaming query may still run afterwards.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "docs" / "api.md", ROOT / "docs" / "port-guide.md", ROOT / "docs" / "state.md",
        ROOT / "docs" / "tuning.md", ROOT / "docs" / "spouts-and-states.md", ROOT / "docs" / "windows.md",
        ROOT / "docs" / "drpc.md", ROOT / "docs" / "deployment.md", ROOT / "docs" / "notebooks.md",
        ROOT / "docs" / "scaling.md"]

_FENCE = re.compile(r"^```(\S*)\s*$")
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<reason>.*?)\s*-->$")
_COMMENT = re.compile(r"^<!--.*-->$")


@dataclass
class Block:
    """One fenced code block of a page."""

    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    comment: str | None  # an HTML comment right before the block, if any
    expected: str | None = None  # a ```text block right after a python block: its printed output

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"

    @property
    def not_run_reason(self) -> str | None:
        match = _NOT_RUN.match(self.comment or "")
        return match.group("reason") if match else None


def parse_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``; a python block takes the ```text block right after it as
    its expected output."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    previous: str | None = None  # the last non-blank line outside blocks
    adjacent = False  # nothing but blank lines since the last block closed
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            if lines[i].strip():
                previous, adjacent = lines[i].strip(), False
            i += 1
            continue
        start, lang = i, opening.group(1)
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path.name}:{start + 1}: unclosed ``` block")
        i += 1
        code = "\n".join(body) + "\n"
        if lang == "text" and adjacent and blocks and blocks[-1].lang == "python" \
                and blocks[-1].expected is None:
            blocks[-1].expected = code
        else:
            comment = previous if previous and _COMMENT.match(previous) else None
            blocks.append(Block(path, start + 1, lang, code, comment))
        previous, adjacent = None, True
    return blocks


def python_blocks() -> list[Block]:
    return [b for path in DOCS for b in parse_blocks(path) if b.lang == "python"]


RUNNABLE = [b for b in python_blocks() if b.not_run_reason is None]


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


# --- the pages themselves (no Spark) ----------------------------------------------------------
def test_every_block_that_runs_checks_something():
    unchecked = [b.id for b in RUNNABLE if b.expected is None and not re.search(r"^\s*assert\b", b.code,
                                                                                 re.MULTILINE)]
    assert not unchecked, f"blocks with neither an output block after them nor an assert: {unchecked}"


def test_every_skipped_block_says_why():
    for block in python_blocks():
        if block.comment and "not run" in block.comment:
            assert block.not_run_reason, f"{block.id}: write <!-- not run: reason --> with a reason"


def test_the_api_page_shows_every_operator_in_code():
    code = "".join(b.code for b in parse_blocks(DOCS[0]) if b.lang == "python")
    operators = [
        "each", "filter", "map", "flatMap", "peek", "project", "partitionAggregate", "aggregate",
        "chainedAgg", "chainEnd", "groupBy", "persistentAggregate", "partitionPersist", "stateQuery",
        "minBy", "maxBy", "shuffle", "partitionBy", "global_", "batchGlobal", "broadcast",
        "localOrShuffle", "parallelismHint", "name", "toStream", "applyAssembly", "collect",
        "newStream", "merge", "join", "newStaticState", "run", "explain", "newValuesStream", "foreachBatch",
        "newDRPCStream",
    ]
    missing = [op for op in operators if not re.search(rf"\.{op}\(", code)]
    assert not missing, f"docs/api.md has no example calling {missing}"


def test_most_examples_run():
    # A guard against marking examples "not run" wholesale: at most half of a page's blocks.
    for path in DOCS:
        blocks = [b for b in python_blocks() if b.path == path]
        skipped = [b for b in blocks if b.not_run_reason is not None]
        assert len(skipped) * 2 <= len(blocks), f"{path.name}: {len(skipped)} of {len(blocks)} blocks not run"


# --- the examples, on Spark -------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.slow  # about 85 runs on Spark, several minutes: `make test` runs them, `make test-fast` not
@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_example_runs_and_prints_what_the_page_shows(block: Block, spark, tmp_path):
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    # A module name that is not importable: cloudpickle ships the example's classes and
    # functions to the executors by value, as it does for a user's __main__ script.
    namespace = {"__name__": f"docs_example_{block.line}", "spark": spark, "checkpoint": str(checkpoint)}
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(block.code, block.id, "exec"), namespace)
    finally:
        running = [q.name for q in spark.streams.active]
        for query in spark.streams.active:
            query.stop()
    assert not running, f"{block.id} left streaming queries running: {running}; stop the handle"
    if block.expected is not None:
        assert _normalized(printed.getvalue()) == _normalized(block.expected), (
            f"{block.id} printed something else than the page shows")
