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
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.local.process import ServiceStartError

__all__ = [
    "CACHE_ENV",
    "KAFKA_BROKER",
    "KAFKA_VERSION",
    "OPENSEARCH_NODE",
    "OPENSEARCH_VERSION",
    "ArtifactSet",
    "MavenFetchError",
    "cache_root",
    "cached_jars",
    "resolve_jars",
    "spark_kafka_connector",
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


def spark_kafka_connector(spark_version: str) -> ArtifactSet:
    """Spark's own Kafka source and sink at ``spark_version`` (the installed PySpark's).

    Examples
    --------
    >>> spark_kafka_connector("4.3.0").coordinates[0]
    'org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0'
    """
    return ArtifactSet(
        "spark-kafka",
        (f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark_version}",
         f"org.apache.spark:spark-token-provider-kafka-0-10_2.13:{spark_version}"),
    )


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
