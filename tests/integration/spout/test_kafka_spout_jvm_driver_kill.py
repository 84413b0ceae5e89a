"""KafkaSpout(engine="jvm"): SIGKILL the driver inside a batch, restart from the checkpoint: the
batch is replayed with the same offsets and the word count is exact (Apache Kafka)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from trident_spark.local.kafka import produce
from trident_spark.local.services import describe_provider

ON_TANSU = pytest.mark.skipif(
    describe_provider("kafka") == "local (tansu)",
    reason="Tansu answers ListOffsets(latest) with a value that lags the log's end by a producer "
           "batch, and Spark's Kafka source reads up to it: this test needs Apache Kafka "
           "(KAFKA_BOOTSTRAP_SERVERS, or the local Apache broker)")


pytestmark = [pytest.mark.integration, pytest.mark.faults,
              ON_TANSU, pytest.mark.usefixtures("kafka_connector")]

DRIVER = Path(__file__).with_name("jvm_kill_driver.py")
WORDS = ["cat", "dog", "the", "a", "bird"]


def run_driver(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(DRIVER), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).parents[3])


def wait_until_gone(pid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.1)


def test_jvm_engine_word_count_is_exact_after_a_driver_sigkill(kafka_bootstrap, new_topic, tmp_path):
    from trident_spark.state import open_state

    topic = new_topic(partitions=3)
    n = 1500
    sentences = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(1 + i % 4)) for i in range(n)]
    produce(kafka_bootstrap, topic, [(None, s.encode(), i % 3) for i, s in enumerate(sentences)])
    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"
    out.mkdir()
    kill_at = 2
    args = [kafka_bootstrap, topic, str(checkpoint), str(out), str(kill_at)]

    first = run_driver(args)
    assert first.returncode == -signal.SIGKILL, first.stderr[-3000:]
    first_pid = int((out / "killed").read_text())
    wait_until_gone(int((out / f"jvm-{first_pid}").read_text()))
    assert (checkpoint / "wc" / "offsets" / str(kill_at)).exists(), "the batch's offsets were logged"
    assert not (checkpoint / "wc" / "commits" / str(kill_at)).exists(), "the killed batch is not committed"

    second = run_driver(args)
    assert second.returncode == 0, second.stderr[-3000:]
    (second_pid,) = {int(p.name.split("-")[1]) for p in out.glob("jvm-*")} - {first_pid}
    before = json.loads((out / f"batch-{kill_at}-{first_pid}.json").read_text())
    after = json.loads((out / f"batch-{kill_at}-{second_pid}.json").read_text())
    assert before == after and len(after) == 300  # the same offsets, within max_offsets_per_trigger

    expected = Counter(word for s in sentences for word in s.split())
    state = open_state(f"sqlite:///{out / 'counts.db'}?table=wc&type=opaque")
    assert dict(zip(expected, state.multiGet([[w] for w in expected]), strict=True)) == expected
