"""Fill a Docker build context with a real service's jars from the jar cache (used by docker/images.sh).

``python docker/service_context.py kafka|opensearch DIR`` copies the cached jar set that the local
service starts from (:data:`trident_spark.local.maven.KAFKA_BROKER` or ``OPENSEARCH_NODE``) into
``DIR/jars``, writes ``DIR/classpath`` (the jars in the order the local launcher uses), ``DIR/jvm.options``
(the local launcher's JVM options, one a line) and the logging configuration, and for OpenSearch
the compiled launcher class (``DIR/launcher``). Nothing is fetched when the cache is full (``make
setup`` fills it); files are copied with their times kept, so an unchanged set keeps Docker's cache.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def _copy_jars(jars: list[Path], context: Path) -> None:
    target = context / "jars"
    target.mkdir(parents=True, exist_ok=True)
    names = {jar.name for jar in jars}
    for stale in target.iterdir():
        if stale.name not in names:
            stale.unlink()
    for jar in jars:
        destination = target / jar.name
        if not destination.exists() or destination.stat().st_size != jar.stat().st_size:
            shutil.copy2(jar, destination)
    (context / "classpath").write_text(
        ":".join(f"/opt/service/jars/{jar.name}" for jar in jars) + "\n", encoding="utf-8")


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def kafka(context: Path) -> None:
    """The Apache Kafka broker's jars, JVM options and log4j configuration."""
    from trident_spark.local import apache_kafka
    from trident_spark.local.maven import KAFKA_BROKER, resolve_jars

    _copy_jars(resolve_jars(KAFKA_BROKER), context)
    _write(context / "jvm.options", "\n".join(apache_kafka.JVM_OPTIONS) + "\n")
    _write(context / "log4j.properties", apache_kafka._LOG4J)
    _write(context / "log4j2.properties", apache_kafka._LOG4J2)


def opensearch(context: Path) -> None:
    """The OpenSearch node's jars, its compiled launcher, JVM options and log4j2 configuration."""
    from trident_spark.local import opensearch as local_opensearch
    from trident_spark.local.maven import OPENSEARCH_NODE, resolve_jars

    jars = resolve_jars(OPENSEARCH_NODE)
    _copy_jars(jars, context)
    classes = local_opensearch.launcher_classes(local_opensearch._java(), jars)
    launcher = context / "launcher"
    launcher.mkdir(exist_ok=True)
    for compiled in classes.glob("*.class"):
        destination = launcher / compiled.name
        if not destination.exists() or destination.read_bytes() != compiled.read_bytes():
            shutil.copy2(compiled, destination)
    _write(context / "jvm.options", "\n".join(local_opensearch.JVM_OPTIONS) + "\n")
    _write(context / "log4j2.properties", local_opensearch._LOG4J2)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("kafka", "opensearch"):
        sys.exit("usage: service_context.py kafka|opensearch DIR")
    directory = Path(sys.argv[2])
    directory.mkdir(parents=True, exist_ok=True)
    {"kafka": kafka, "opensearch": opensearch}[sys.argv[1]](directory)
