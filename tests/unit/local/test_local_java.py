"""Reading `java -version` and the error when Spark's Java is missing or too old."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trident_spark.local import java
from trident_spark.local.java import JavaVersionError, parse_java_version, require_java


@pytest.mark.parametrize(
    ("output", "major"),
    [
        (
            'openjdk version "17.0.15" 2025-04-15\n'
            "OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)",
            17,
        ),
        ('java version "1.8.0_392"\nJava(TM) SE Runtime Environment', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "21-ea" 2023-09-19', 21),
        ('openjdk version "11.0.2" 2019-01-15 LTS', 11),
        ('Picked up JAVA_TOOL_OPTIONS: -Xmx1g\nopenjdk version "25.0.1" 2025-10-21', 25),
        ('java version "9"', 9),
        ("bash: java: command not found", None),
        ("", None),
    ],
)
def test_parse_java_version(output: str, major: int | None) -> None:
    assert parse_java_version(output) == major


def test_require_java_returns_the_major(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(java, "find_java", lambda: Path("/usr/bin/java"))
    monkeypatch.setattr(java, "java_major_version", lambda: 21)
    assert require_java(17) == 21


def test_require_java_names_an_old_java_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(java, "find_java", lambda: Path("/opt/jdk8/bin/java"))
    monkeypatch.setattr(java, "java_major_version", lambda: 8)
    with pytest.raises(JavaVersionError) as caught:
        require_java(17)
    message = str(caught.value)
    assert "Spark needs Java 17+, but /opt/jdk8/bin/java is Java 8" in message
    assert "apt-get install openjdk-17-jre-headless" in message
    assert "JAVA_HOME" in message


def test_require_java_without_java_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(JavaVersionError, match="Spark needs Java 17\\+, but found no java on PATH"):
        require_java(17)


def test_java_home_without_java_is_reported(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert java.find_java() is None
    with pytest.raises(JavaVersionError, match=f"JAVA_HOME={tmp_path} has no bin/java"):
        require_java(17)


def test_java_home_is_preferred_over_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "java"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'openjdk version \"19.0.2\" 2023-01-17' >&2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert java.find_java() == fake
    assert java.java_major_version() == 19
