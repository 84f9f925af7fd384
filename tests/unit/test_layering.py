"""The rings of the architecture hold (SPEC §2, ADR 1)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"


def imported_roots(package: str) -> dict[str, set[str]]:
    """Top-level names imported by each module of ``package``."""
    found: dict[str, set[str]] = {}
    for path in sorted((SRC / package).rglob("*.py")):
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
