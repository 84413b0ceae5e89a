"""Print the requirements the app image installs: pyproject.toml's dependencies and its redis and
elasticsearch extras, one a line. docker/Dockerfile runs it to install the dependencies in a layer of
their own (editing the code then does not reinstall pyspark); docker/images.sh, to build their wheels.

Run: ``python docker/requirements.py [pyproject.toml]`` (Python 3.11+: tomllib).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

EXTRAS = ("redis", "elasticsearch")


def requirements(pyproject: Path) -> list[str]:
    """The dependencies and the ``EXTRAS`` of the project in ``pyproject``."""
    with pyproject.open("rb") as handle:
        project = tomllib.load(handle)["project"]
    extras = project.get("optional-dependencies", {})
    return [*project["dependencies"], *(req for extra in EXTRAS for req in extras.get(extra, []))]


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parents[1] / "pyproject.toml"
    print("\n".join(requirements(path)))
