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


SERVED = ["3.5.7", "4.0.0", "4.0.0-preview2", "4.1.3", "4.2.0", "4.2.0-preview5", "5.0.0"]


@pytest.mark.parametrize(("installed", "chosen"), [
    ("4.2.0", "4.2.0"),   # served: the installed version
    ("4.3.0", "4.2.0"),   # not served: the newest 4.x release not newer (never a preview)
    ("4.1.4", "4.1.3"),
    ("4.3.0.dev0", "4.2.0"),
])
def test_the_connector_is_the_installed_version_when_served_else_the_newest_not_newer(installed, chosen):
    assert maven.choose_connector_version(installed, SERVED) == chosen


def test_no_release_of_the_same_major_version_is_an_error_naming_what_is_served():
    with pytest.raises(maven.MavenFetchError, match=r"no release for Spark 6.0.0 nor an earlier 6.x one is "
                                                    r"served \(served: 4.2.0, 5.0.0\)"):
        maven.choose_connector_version("6.0.0", ["4.2.0", "5.0.0"])


def test_a_remembered_choice_is_taken_without_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "spark-kafka-for-spark-4.3.0.version").write_text("4.2.0\n")
    monkeypatch.setattr(maven.shutil, "which", lambda name: None)
    assert maven.spark_kafka_connector_version("4.3.0", root=tmp_path) == "4.2.0"
    assert maven.spark_kafka_connector_version("4.4.0", root=tmp_path, cached_only=True) == "4.4.0"


def test_the_session_takes_only_the_jars_spark_does_not_bundle(tmp_path: Path) -> None:
    names = ["commons-pool2-2.13.1.jar", "hadoop-client-runtime-3.5.0.jar", "kafka-clients-3.9.2.jar",
             "scala-library-2.13.15.jar", "spark-sql-kafka-0-10_2.13-4.3.0.jar", "snappy-java-1.1.10.5.jar"]
    artifacts = maven.spark_kafka_connector("4.3.0")
    directory = tmp_path / artifacts.directory_name
    directory.mkdir()
    for name in names:
        (directory / name).write_bytes(b"jar")
    (directory / ".complete").write_text("\n")
    provided = [Path(n) for n in ("hadoop-client-runtime-3.5.0.jar", "scala-library-2.13.18.jar",
                                  "snappy-java-1.1.10.8.jar", "spark-core_2.13-4.3.0.jar")]
    jars = maven.spark_kafka_connector_jars("4.3.0", root=tmp_path, provided=provided)
    assert [j.name for j in jars] == ["commons-pool2-2.13.1.jar", "kafka-clients-3.9.2.jar",
                                      "spark-sql-kafka-0-10_2.13-4.3.0.jar"]


@pytest.mark.parametrize(("jar", "artifact"), [
    ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13"),
    ("log4j-slf4j2-impl-2.25.4.jar", "log4j-slf4j2-impl"),
    ("javassist-3.30.2-GA.jar", "javassist"),
    ("HdrHistogram-2.2.2.jar", "HdrHistogram"),
])
def test_a_jars_artifact_is_its_name_without_the_version(jar, artifact):
    assert maven.artifact_name(Path(jar)) == artifact
