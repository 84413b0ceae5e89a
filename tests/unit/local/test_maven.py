"""The jar cache: a complete set is used without Maven; a set's pom lists its coordinates."""

from __future__ import annotations

from pathlib import Path

import pytest

from trident_spark.local import maven
from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.local.maven import ArtifactSet, cached_jars, resolve_jars


def test_a_complete_set_in_the_cache_is_used_without_maven(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    artifacts = ArtifactSet("demo", ("org.example:lib:1.0",))
    directory = tmp_path / artifacts.directory_name
    directory.mkdir()
    (directory / "lib-1.0.jar").write_bytes(b"jar")
    (directory / ".complete").write_text("org.example:lib:1.0\n")
    monkeypatch.setattr(maven.shutil, "which", lambda name: None)
    assert resolve_jars(artifacts, root=tmp_path) == [directory / "lib-1.0.jar"]


def test_a_half_fetched_set_is_not_taken_and_no_maven_says_how_to_get_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    artifacts = ArtifactSet("demo", ("org.example:lib:1.0",))
    (tmp_path / artifacts.directory_name).mkdir()
    assert cached_jars(artifacts, root=tmp_path) is None
    monkeypatch.setattr(maven.shutil, "which", lambda name: None)
    with pytest.raises(ServiceNotInstalledError, match=r"apt-get install maven"):
        resolve_jars(artifacts, root=tmp_path)


def test_the_pom_lists_each_coordinate_with_the_exclusions() -> None:
    pom = ArtifactSet("s", ("g:a:1", "h:b:2"), exclusions=("x:y",)).pom()
    assert "<groupId>g</groupId><artifactId>a</artifactId><version>1</version>" in pom
    assert pom.count("<exclusion><groupId>x</groupId><artifactId>y</artifactId></exclusion>") == 2


def test_sets_with_other_contents_get_other_directories() -> None:
    assert (ArtifactSet("s", ("g:a:1",)).directory_name
            != ArtifactSet("s", ("g:a:2",)).directory_name)
