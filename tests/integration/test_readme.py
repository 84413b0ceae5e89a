"""The README's examples run as written, against the session's Kafka broker (Tansu locally).

Every ```python block of README.md is executed as ``python app.py`` would run it (``__name__``
is ``"__main__"``, so the guarded part runs), with ``KAFKA_BOOTSTRAP_SERVERS`` pointing at the
session's broker, the topic ``sentences`` replaced by a fresh one holding a known corpus and
``/tmp/`` by a fresh directory; what it prints is compared with counts of that corpus.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from tests.integration.test_docs_examples import parse_blocks

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
SENTENCES = ["the nation the cat", "a nation of cats"] * 20  # the: 40, nation: 40


def readme_blocks() -> list[str]:
    return [b.code for b in parse_blocks(README) if b.lang == "python"]


def test_the_readme_has_one_example_and_it_shows_the_main_guard():
    blocks = readme_blocks()
    assert len(blocks) == 1
    assert 'if __name__ == "__main__":' in blocks[0]
    assert "topology.explain()" in blocks[0]


@pytest.mark.integration
@pytest.mark.slow  # a Kafka topic, a topology run and a DRPC request: make test runs it
def test_the_readme_example_runs_as_written(spark, kafka_bootstrap, new_topic, tmp_path, monkeypatch):
    from trident_spark.local import produce

    topic = new_topic(partitions=2, prefix="sentences")
    produce(kafka_bootstrap, topic, SENTENCES)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    (code,) = readme_blocks()
    assert code.count('topics=["sentences"]') == 1 and "/tmp/" in code
    code = code.replace('topics=["sentences"]', f"topics=[{topic!r}]").replace("/tmp/", f"{tmp_path}/")
    namespace = {"__name__": "__main__"}
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "README.md", "exec"), namespace)
    finally:
        running = [q.name for q in spark.streams.active]
        for query in spark.streams.active:
            query.stop()
    assert not running, f"the README example left streaming queries running: {running}"
    lines = printed.getvalue().splitlines()
    assert json.loads(lines[0]) == [["the", 40], ["nation", 40]]  # the DRPC answer
    assert lines[1].startswith("[") and "rows" in lines[1]  # the batches' progress lines
    assert lines[2] == "[40, 40]"  # open_state(...).multiGet, outside Spark
    explained = "\n".join(lines[3:])
    assert "== query 'sentences'" in explained and "== query 'drpc-words'" in explained, explained
