"""Jars from Maven Central, fetched once into a cache that later runs reuse.

The real services (Apache Kafka, OpenSearch) and Spark's own Kafka connector are
plain Maven artifacts. :func:`resolve_jars` asks Maven (``mvn``, Debian's
``maven`` package) for an artifact set and its runtime dependencies and keeps
them in one directory per set under the cache (``$TRIDENT_SPARK_JARS`` or
``~/.cache/trident-spark/jars``); a set already complete there is used as it is,
without Maven. ``make setup`` fills the cache; tests, the demo and the bench
read it.

Each set is named by what it is for (:data:`KAFKA_BROKER`, :data:`OPENSEARCH_NODE`,
:func:`spark_kafka_connector`) and pinned to a version here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.local.process import ServiceStartError

log = logging.getLogger(__name__)

__all__ = [
    "CACHE_ENV",
    "KAFKA_BROKER",
    "KAFKA_VERSION",
    "OPENSEARCH_NODE",
    "OPENSEARCH_VERSION",
    "SPARK_KAFKA_ARTIFACT",
    "SPARK_KAFKA_GROUP",
    "ArtifactSet",
    "MavenFetchError",
    "artifact_name",
    "cache_root",
    "cached_jars",
    "choose_connector_version",
    "resolve_jars",
    "served_versions",
    "spark_kafka_connector",
    "spark_kafka_connector_jars",
    "spark_kafka_connector_version",
]

CACHE_ENV = "TRIDENT_SPARK_JARS"
"""Environment variable naming the jar cache's directory (default ``~/.cache/trident-spark/jars``)."""

KAFKA_VERSION = "4.1.1"
"""Apache Kafka's version for the local broker (KRaft; its broker runs on Java 17)."""

OPENSEARCH_VERSION = "2.19.4"
"""OpenSearch's version for the local node (2.19.x: the newest line that runs on Java 17)."""

_COMPLETE = ".complete"
_MVN_TIMEOUT_S = 900.0


class MavenFetchError(ServiceStartError):
    """Maven could not fetch an artifact set; the message names the coordinates and Maven's words.

    Examples
    --------
    >>> issubclass(MavenFetchError, ServiceStartError)
    True
    """


@dataclass(frozen=True)
class ArtifactSet:
    """Maven coordinates fetched together with their runtime dependencies, under one name.

    Parameters
    ----------
    name
        A directory-safe name saying what the set is for ("kafka-broker").
    coordinates
        ``group:artifact:version`` strings.
    exclusions
        ``group:artifact`` strings left out of every coordinate's dependencies.

    Examples
    --------
    >>> s = ArtifactSet("demo", ("org.example:lib:1.0",))
    >>> s.directory_name.startswith("demo-")
    True
    """

    name: str
    coordinates: tuple[str, ...]
    exclusions: tuple[str, ...] = ()

    @property
    def directory_name(self) -> str:
        """The set's directory under the cache: its name and a digest of what it holds."""
        digest = hashlib.sha256("\n".join((*self.coordinates, "--", *self.exclusions)).encode())
        return f"{self.name}-{digest.hexdigest()[:12]}"

    def pom(self) -> str:
        """A Maven project whose dependencies are this set (for ``dependency:copy-dependencies``)."""
        exclusions = "".join(
            f"<exclusion><groupId>{escape(g)}</groupId><artifactId>{escape(a)}</artifactId></exclusion>"
            for g, a in (item.split(":", 1) for item in self.exclusions))
        dependencies = []
        for coordinate in self.coordinates:
            group, artifact, version = coordinate.split(":")
            dependencies.append(
                f"<dependency><groupId>{escape(group)}</groupId><artifactId>{escape(artifact)}</artifactId>"
                f"<version>{escape(version)}</version><exclusions>{exclusions}</exclusions></dependency>")
        return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
                "<groupId>trident-spark.local</groupId><artifactId>jars</artifactId><version>0</version>"
                "<packaging>pom</packaging>"
                f"<dependencies>{''.join(dependencies)}</dependencies></project>\n")


KAFKA_BROKER = ArtifactSet(
    "kafka-broker",
    (f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
     f"org.apache.kafka:kafka-storage:{KAFKA_VERSION}",
     f"org.apache.kafka:kafka-tools:{KAFKA_VERSION}",
     "org.slf4j:slf4j-reload4j:1.7.36"),
)
"""Apache Kafka's broker (``kafka.Kafka``) and storage tool, with a logging binding."""

OPENSEARCH_NODE = ArtifactSet(
    "opensearch-node",
    (f"org.opensearch:opensearch:{OPENSEARCH_VERSION}",
     f"org.opensearch.plugin:transport-netty4-client:{OPENSEARCH_VERSION}",
     "org.apache.logging.log4j:log4j-core:2.21.0"),
)
"""An OpenSearch node's server jar, its HTTP/transport module (netty4) and log4j's core."""


SPARK_KAFKA_GROUP = "org.apache.spark"
"""The Maven group of Spark's Kafka connector."""

SPARK_KAFKA_ARTIFACT = "spark-sql-kafka-0-10_2.13"
"""Spark's Kafka source and sink (Scala 2.13, the only Scala of Spark 4)."""


def spark_kafka_connector(spark_version: str) -> ArtifactSet:
    """Spark's own Kafka source and sink at ``spark_version`` (see :func:`spark_kafka_connector_jars`
    for the version a session takes).

    Examples
    --------
    >>> spark_kafka_connector("4.3.0").coordinates[0]
    'org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0'
    """
    return ArtifactSet(
        "spark-kafka",
        (f"{SPARK_KAFKA_GROUP}:{SPARK_KAFKA_ARTIFACT}:{spark_version}",
         f"{SPARK_KAFKA_GROUP}:spark-token-provider-kafka-0-10_2.13:{spark_version}"),
    )


def _release(version: str) -> tuple[int, ...] | None:
    """``"4.2.0"`` as ``(4, 2, 0)``; None for anything but a plain release (``4.2.0-preview5``)."""
    parts = version.strip().split(".")
    if not parts or not all(part.isdigit() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def choose_connector_version(installed: str, served: Sequence[str]) -> str:
    """The connector's version for Spark ``installed``: that version when Maven Central serves it,
    else the newest release served of the same major version that is not newer (the data source
    API the connector uses is stable within a major version). Previews are never chosen.

    Raises
    ------
    MavenFetchError
        No such version is served.

    Examples
    --------
    >>> choose_connector_version("4.3.0", ["4.1.3", "4.2.0", "4.2.0-preview5"])
    '4.2.0'
    >>> choose_connector_version("4.2.0", ["4.1.3", "4.2.0"])
    '4.2.0'
    """
    if installed in served:
        return installed
    leading = re.match(r"^\d+(\.\d+)*", installed)  # "4.3.0.dev0" is 4.3.0
    wanted = _release(leading.group(0)) if leading else None
    candidates = sorted((release, version) for version in served
                        if (release := _release(version)) is not None and wanted is not None
                        and release[0] == wanted[0] and release <= wanted)
    if not candidates:
        raise MavenFetchError(
            f"{SPARK_KAFKA_GROUP}:{SPARK_KAFKA_ARTIFACT}: no release for Spark {installed} nor an "
            f"earlier {installed.split('.')[0]}.x one is served (served: {', '.join(served) or 'none'}); "
            "put the connector's jars on the classpath yourself (spark.jars)")
    return candidates[-1][1]


def served_versions(group: str, artifact: str, *, timeout: float = 120.0) -> list[str]:
    """The versions the Maven repository serves for ``group:artifact``, read from its metadata
    through Maven (so Maven's own settings, mirrors and proxies apply).

    Raises
    ------
    ServiceNotInstalledError
        ``mvn`` is not installed.
    MavenFetchError
        Maven could not read the metadata.

    Examples
    --------
    >>> "4.2.0" in served_versions(SPARK_KAFKA_GROUP, SPARK_KAFKA_ARTIFACT)  # doctest: +SKIP
    True
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServiceNotInstalledError(
            f"{group}:{artifact}: listing its versions needs Maven (mvn), which is not on PATH: install "
            "it (Debian/Ubuntu: `sudo apt-get install maven`)")
    with tempfile.TemporaryDirectory(prefix="trident-spark-versions-") as work:
        local = Path.home() / ".m2" / "repository"
        # LATEST makes Maven fetch the artifact's metadata, which lists every version served.
        command = [mvn, "-q", "-B", f"-Dmaven.repo.local={local}", "dependency:get",
                   f"-Dartifact={group}:{artifact}:LATEST:pom", "-Dtransitive=false"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                  check=False, cwd=work)
        except subprocess.TimeoutExpired:
            raise MavenFetchError(f"{group}:{artifact}: Maven did not read the versions served within "
                                  f"{timeout:.0f} s") from None
    folder = local.joinpath(*group.split("."), artifact)
    versions: set[str] = set()
    for metadata in folder.glob("maven-metadata-*.xml"):
        versions.update(re.findall(r"<version>([^<]+)</version>", metadata.read_text(encoding="utf-8")))
    if not versions:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
        raise MavenFetchError(f"{group}:{artifact}: Maven found no versions served (exit "
                              f"{done.returncode}); check that Maven Central is reachable:\n{tail}")
    return sorted(versions)


_CHOICE_DAYS = 7.0


def _choice_file(installed: str, root: Path | None) -> Path:
    return (root or cache_root()) / f"spark-kafka-for-spark-{installed}.version"


def spark_kafka_connector_version(installed: str | None = None, *, root: Path | None = None,
                                  cached_only: bool = False) -> str:
    """The connector's version a session with Spark ``installed`` (default: PySpark's) takes.

    ``installed`` when its set is cached or Maven Central serves it; else the newest release
    served not newer (:func:`choose_connector_version`), logged once, and remembered in the
    cache for a week (then asked again, so a release published later is taken). With
    ``cached_only`` nothing is fetched: the remembered choice, else ``installed``.

    Examples
    --------
    >>> spark_kafka_connector_version("4.2.0", root=Path("/nonexistent"), cached_only=True)
    '4.2.0'
    """
    installed = installed or _pyspark_version()
    if cached_jars(spark_kafka_connector(installed), root=root) is not None:
        return installed
    choice = _choice_file(installed, root)
    remembered = choice.read_text(encoding="utf-8").strip() if choice.is_file() else None
    if remembered and (cached_only or time.time() - choice.stat().st_mtime < _CHOICE_DAYS * 86400):
        return remembered
    if cached_only:
        return installed
    try:
        chosen = choose_connector_version(installed, served_versions(SPARK_KAFKA_GROUP, SPARK_KAFKA_ARTIFACT))
    except MavenFetchError:
        if remembered:  # Maven Central out of reach: the last choice still holds
            return remembered
        raise
    if chosen != installed:
        log.warning("Spark's Kafka connector %s:%s is not served at Spark's version %s; using %s, the "
                    "newest %s.x release not newer", SPARK_KAFKA_GROUP, SPARK_KAFKA_ARTIFACT, installed,
                    chosen, installed.split(".")[0])
    choice.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    choice.write_text(chosen + "\n", encoding="utf-8")
    return chosen


def spark_kafka_connector_jars(installed: str | None = None, *, root: Path | None = None,
                               provided: Sequence[Path] | None = None) -> list[Path]:
    """The jars a session puts on ``spark.jars`` for Spark's Kafka source: the connector at
    :func:`spark_kafka_connector_version` and what it needs that Spark does not bundle
    (``kafka-clients``, ``commons-pool2``); a jar whose artifact Spark already has (Hadoop's
    client, Scala, lz4, snappy, slf4j) is left out so the classpath keeps one of each.

    ``provided``: Spark's own jars (default: PySpark's ``jars`` directory).

    Examples
    --------
    >>> [j.name for j in spark_kafka_connector_jars()]  # doctest: +SKIP
    ['commons-pool2-2.13.1.jar', 'kafka-clients-3.9.2.jar', 'spark-sql-kafka-0-10_2.13-4.2.0.jar', ...]
    """
    version = spark_kafka_connector_version(installed, root=root)
    jars = resolve_jars(spark_kafka_connector(version), root=root)
    if provided is None:
        import pyspark

        provided = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))
    bundled = {artifact_name(jar) for jar in provided}
    return [jar for jar in jars if artifact_name(jar) not in bundled]


def artifact_name(jar: Path) -> str:
    """A jar's artifact without its version: ``kafka-clients-3.9.2.jar`` -> ``kafka-clients``.

    Examples
    --------
    >>> artifact_name(Path("scala-parallel-collections_2.13-1.2.0.jar"))
    'scala-parallel-collections_2.13'
    """
    match = re.match(r"^(.*?)-\d[^-]*(-[A-Za-z][\w.]*)?\.jar$", jar.name)
    return match.group(1) if match else jar.stem


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def cache_root() -> Path:
    """The jar cache's directory: ``$TRIDENT_SPARK_JARS`` or ``~/.cache/trident-spark/jars``.

    Examples
    --------
    >>> os.environ[CACHE_ENV] = "/tmp/jars"
    >>> str(cache_root())
    '/tmp/jars'
    >>> del os.environ[CACHE_ENV]
    """
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "trident-spark" / "jars"


def cached_jars(artifacts: ArtifactSet, *, root: Path | None = None) -> list[Path] | None:
    """The set's jars if the cache holds it complete, else ``None``; never runs Maven.

    Examples
    --------
    >>> cached_jars(ArtifactSet("absent", ("a:b:1",)), root=Path("/nonexistent")) is None
    True
    """
    directory = (root or cache_root()) / artifacts.directory_name
    if not (directory / _COMPLETE).is_file():
        return None
    return sorted(directory.glob("*.jar"))


def resolve_jars(artifacts: ArtifactSet, *, root: Path | None = None,
                 timeout: float = _MVN_TIMEOUT_S) -> list[Path]:
    """The set's jars with their runtime dependencies, fetched by Maven unless already cached.

    The set is copied into a temporary directory beside its final place, then
    renamed into place: a fetch that dies half way leaves no partial set.

    Raises
    ------
    ServiceNotInstalledError
        ``mvn`` is not installed (the message says how to get it).
    MavenFetchError
        Maven failed (no network, an unknown version): its last lines are in the message.

    Examples
    --------
    >>> jars = resolve_jars(KAFKA_BROKER)  # doctest: +SKIP
    >>> any(j.name.startswith("kafka_2.13-") for j in jars)  # doctest: +SKIP
    True
    """
    found = cached_jars(artifacts, root=root)
    if found is not None:
        return found
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServiceNotInstalledError(
            f"{artifacts.name}: fetching {', '.join(artifacts.coordinates)} needs Maven (mvn), which is "
            "not on PATH: install it (Debian/Ubuntu: `sudo apt-get install maven`; `make setup` does as "
            f"root), or put the jars in {(root or cache_root()) / artifacts.directory_name}")
    base = root or cache_root()
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    work = Path(tempfile.mkdtemp(prefix=f".{artifacts.name}-", dir=base))
    try:
        (work / "pom.xml").write_text(artifacts.pom(), encoding="utf-8")
        jars = work / "jars"
        command = [mvn, "-q", "-B", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
                   f"-DoutputDirectory={jars}", "-DincludeScope=runtime"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise MavenFetchError(
                f"{artifacts.name}: Maven did not fetch {', '.join(artifacts.coordinates)} within "
                f"{timeout:.0f} s: check that Maven Central is reachable (`mvn dependency:get "
                f"-Dartifact={artifacts.coordinates[0]}`)") from None
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise MavenFetchError(
                f"{artifacts.name}: Maven could not fetch {', '.join(artifacts.coordinates)} "
                f"(exit {done.returncode}); check the coordinates and that Maven Central is "
                f"reachable:\n{tail}")
        (jars / _COMPLETE).write_text("\n".join(artifacts.coordinates) + "\n", encoding="utf-8")
        final = base / artifacts.directory_name
        try:
            jars.rename(final)
        except OSError:
            if cached_jars(artifacts, root=root) is None:  # another process won the race: take its set
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = cached_jars(artifacts, root=root)
    assert result is not None
    return result


def classpath(jars: Sequence[Path]) -> str:
    """A JVM ``-cp`` value for ``jars``.

    Examples
    --------
    >>> classpath([Path("/a.jar"), Path("/b.jar")])
    '/a.jar:/b.jar'
    """
    return os.pathsep.join(str(jar) for jar in jars)
