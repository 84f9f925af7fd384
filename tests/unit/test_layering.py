"""The rings of the architecture hold (ADR 1), and the library needs only the base install."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
#: Adapters that need an extra (``pip install 'transcriber[...]'``); the rest ship in the base.
EXTRA_ADAPTERS = (
    "transcriber_adapters/s3.py",
    "transcriber_adapters/yandex.py",
    "transcriber_adapters/telegram/",
    "transcriber_adapters/whisper.py",
    "transcriber_adapters/webhooks.py",
    "transcriber_adapters/postgres/",
)


#: A module each package must contain: proof the scan looked in the right place.
LANDMARKS = {
    "transcriber_core": "transcriber_core/entities.py",
    "transcriber_adapters": "transcriber_adapters/sqlite/repository.py",
    "transcriber_contracts": "transcriber_contracts/job_repository.py",
}


def imported_roots(package: str) -> dict[str, set[str]]:
    """Top-level names imported by each module of ``package``; fails if it finds no module.

    A scan of the wrong folder finds nothing and so no offender: without the
    check every layering test would pass on an empty find.
    """
    found: dict[str, set[str]] = {}
    paths = sorted((SRC / package).rglob("*.py"))
    assert paths, f"no modules found under {SRC / package}"
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        roots: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                roots.add(node.module.split(".")[0])
        found[str(path.relative_to(SRC))] = roots
    return found


def test_core_imports_only_stdlib_attrs_and_cattrs() -> None:
    """The core stays pure: no adapter, app, or third-party import but attrs and cattrs."""
    allowed = set(sys.stdlib_module_names) | {"attrs", "cattrs", "transcriber_core", "__future__"}
    offenders = {
        module: sorted(roots - allowed)
        for module, roots in imported_roots("transcriber_core").items()
        if roots - allowed
    }
    assert offenders == {}


@pytest.mark.parametrize("package", ["transcriber_adapters", "transcriber_contracts"])
def test_adapters_and_contracts_never_import_the_app(package: str) -> None:
    """Only the app knows which adapters exist; nothing below it imports it."""
    offenders = [m for m, roots in imported_roots(package).items() if "transcriber_app" in roots]
    assert offenders == []


def test_contracts_do_not_depend_on_our_adapters() -> None:
    """A third party runs the suites without our adapters being importable."""
    offenders = [
        m
        for m, roots in imported_roots("transcriber_contracts").items()
        if "transcriber_adapters" in roots
    ]
    assert offenders == []


def base_distributions() -> set[str]:
    """The distributions ``pip install transcriber`` brings: pyproject's dependencies, no extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {canonicalize_name(Requirement(line).name) for line in project["dependencies"]}


def outside_the_base(modules: dict[str, set[str]], also: frozenset[str]) -> dict[str, list[str]]:
    """Per module, the third-party imports that no base distribution (nor ``also``) provides."""
    providers = importlib.metadata.packages_distributions()
    allowed = base_distributions() | also
    ours = {"transcriber_core", "transcriber_adapters", "transcriber_contracts", "__future__"}
    offenders: dict[str, list[str]] = {}
    for module, roots in modules.items():
        foreign = roots - set(sys.stdlib_module_names) - ours
        bad = [
            root
            for root in sorted(foreign)
            if not {canonicalize_name(d) for d in providers.get(root, [])} & allowed
        ]
        if bad:
            offenders[module] = bad
    return offenders


@pytest.mark.parametrize(
    ("package", "also"),
    [
        ("transcriber_core", frozenset()),
        # The suites are pytest test classes: the user's test runner is theirs to bring.
        ("transcriber_contracts", frozenset({"pytest"})),
        ("transcriber_adapters", frozenset()),
    ],
)
def test_the_library_imports_nothing_outside_the_base_install(
    package: str, also: frozenset[str]
) -> None:
    """Core, contracts and embedded adapters need only what ``pip install transcriber`` brings."""
    modules = {
        module: roots
        for module, roots in imported_roots(package).items()
        if not module.startswith(EXTRA_ADAPTERS)
    }
    assert outside_the_base(modules, also) == {}


def test_an_import_outside_the_base_is_found() -> None:
    """The check flags a module importing an extra's package (aiogram), not only unknown names."""
    assert base_distributions() >= {"attrs", "cattrs", "imageio-ffmpeg"}
    found = outside_the_base({"m.py": {"attrs", "aiogram", "json"}}, frozenset())
    assert found == {"m.py": ["aiogram"]}


@pytest.mark.parametrize("package", sorted(LANDMARKS))
def test_the_scan_finds_each_package(package: str) -> None:
    """The scan reads the real tree: a known module of each package is among those it parsed."""
    found = imported_roots(package)
    assert LANDMARKS[package] in found
    assert len(found) > 3


def test_an_empty_find_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pointed at a folder without modules, the scan fails instead of finding no offender."""
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    with pytest.raises(AssertionError, match="no modules found"):
        imported_roots("transcriber_core")
