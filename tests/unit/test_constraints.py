"""constraints.txt, the pins CI and the Docker image install, agrees with pyproject's ranges."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from transcriber_app import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[2]


def pins() -> dict[str, Version]:
    """Each pinned package's version, by canonical name."""
    found: dict[str, Version] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, version = line.partition("==")
        assert version, f"not an exact pin: {line!r}"
        found[canonicalize_name(name)] = Version(version)
    return found


def declared() -> list[Requirement]:
    """Every third-party requirement in pyproject: the service's and each extra's."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        lines.extend(extra)
    requirements = [Requirement(line) for line in lines]
    return [r for r in requirements if canonicalize_name(r.name) != DISTRIBUTION]


def test_every_requirement_is_pinned_inside_its_range() -> None:
    """A range changed in pyproject without refreshing the pins fails here, not in the image."""
    pinned = pins()
    problems = []
    for requirement in declared():
        version = pinned.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name}: not pinned")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}: pin {version} outside {requirement.specifier}")
    assert problems == []


def test_the_project_itself_is_not_pinned() -> None:
    """The pins never name the project, so installing it from source is never refused."""
    assert DISTRIBUTION not in pins()
    assert len(pins()) > 20
