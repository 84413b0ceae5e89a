"""Find the Java that Spark will use and check its version.

Spark 4 needs Java 17 or newer. The ``java`` looked at is the one Spark's
launch scripts pick: ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set,
else ``java`` on ``PATH``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from trident_spark.errors import TridentSparkError

__all__ = [
    "JavaVersionError",
    "find_java",
    "java_major_version",
    "parse_java_version",
    "require_java",
]

# `java -version` prints e.g.: openjdk version "17.0.15" 2025-04-15,
# java version "1.8.0_392", openjdk version "21-ea".
_VERSION = re.compile(r'version\s+"(?P<version>[^"]+)"')
_MAJOR = re.compile(r"^(?P<first>\d+)(?:\.(?P<second>\d+))?")


class JavaVersionError(TridentSparkError, RuntimeError):
    """No suitable Java: the message says what was found and what to do.

    Examples
    --------
    >>> issubclass(JavaVersionError, RuntimeError)
    True
    """


def parse_java_version(output: str) -> int | None:
    """The major version in the output of ``java -version``, or ``None``.

    Examples
    --------
    >>> parse_java_version('openjdk version "17.0.15" 2025-04-15')
    17
    >>> parse_java_version('java version "1.8.0_392"')
    8
    >>> parse_java_version('openjdk version "21-ea" 2023-09-19')
    21
    >>> parse_java_version("command not found") is None
    True
    """
    found = _VERSION.search(output)
    if found is None:
        return None
    number = _MAJOR.match(found.group("version"))
    if number is None:
        return None
    first = int(number.group("first"))
    if first == 1 and number.group("second") is not None:  # "1.8" is Java 8
        return int(number.group("second"))
    return first


def find_java() -> Path | None:
    """The ``java`` executable Spark would run, or ``None`` if there is none.

    Examples
    --------
    >>> java = find_java()
    >>> java is None or java.name == "java"
    True
    """
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        return candidate if os.access(candidate, os.X_OK) else None
    found = shutil.which("java")
    return Path(found) if found else None


def java_major_version() -> int | None:
    """The major version of the Java Spark would run (``None`` if none runs).

    Examples
    --------
    >>> version = java_major_version()
    >>> version is None or version >= 8
    True
    """
    java = find_java()
    if java is None:
        return None
    try:
        result = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_java_version(result.stderr + result.stdout)


def require_java(min_major: int = 17) -> int:
    """Check that Java ``min_major`` or newer is what Spark will run; return its major.

    Raises
    ------
    JavaVersionError
        Naming what was found (path and version, or nothing) and what to do.

    Examples
    --------
    >>> require_java(8) >= 8  # doctest: +SKIP
    True
    """
    java = find_java()
    version = java_major_version()
    if version is not None and version >= min_major:
        return version
    fix = (
        f"install Java {min_major} or newer (Debian/Ubuntu: `sudo apt-get install "
        f"openjdk-{min_major}-jre-headless`), or set JAVA_HOME to such a JDK/JRE"
    )
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java is None:
        where = f"JAVA_HOME={java_home} has no bin/java" if java_home else "no java on PATH"
        raise JavaVersionError(f"Spark needs Java {min_major}+, but found {where}: {fix}")
    found = f"Java {version}" if version is not None else "a java whose version could not be read"
    raise JavaVersionError(f"Spark needs Java {min_major}+, but {java} is {found}: {fix}")
