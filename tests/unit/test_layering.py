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
#: Adapters that need an extra (``pip install 'selfhosted-transcriber[...]'``); the rest: base.
EXTRA_ADAPTERS = (
    "transcriber_adapters/s3.py",
    "transcriber_adapters/yandex.py",
    "transcriber_adapters/telegram/",
    "transcriber_adapters/whisper.py",
    "transcriber_adapters/diarization.py",
    "transcriber_adapters/campplus/",
    "transcriber_adapters/clustering.py",
    "transcriber_adapters/webhooks.py",
    "transcriber_adapters/postgres/",
    "transcriber_adapters/chat_model.py",
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
    """What ``pip install selfhosted-transcriber`` brings: pyproject's dependencies, no extra."""
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
    """Core, contracts and embedded adapters need only what the base install brings."""
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


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` under ``SRC`` (a package is its ``__init__``)."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """Every module of ``src/`` and the modules of ``src/`` it imports, wherever the import is.

    Imports under ``TYPE_CHECKING`` and inside functions count too: a circle
    a type checker or a late import hides is still a circle a reader walks.
    ``from pkg import name`` names the module ``pkg.name`` when there is one.
    """
    paths = sorted(SRC.rglob("*.py"))
    assert paths, f"no modules found under {SRC}"
    modules = {module_name(path): path for path in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in modules else node.module)
        graph[name] = {target for target in targets if target in modules and target != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_anywhere_in_src() -> None:
    """No module of src/ reaches itself through imports (TYPE_CHECKING and late ones included)."""
    graph = import_graph()
    assert "transcriber_app.bootstrap" in graph, "the scan must read the real tree"
    assert circles(graph) == []


def test_a_circle_is_found() -> None:
    """The circle finder sees a three-module loop and leaves a chain alone."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def private_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Per module, the underscore modules it imports from outside the package holding them."""
    offenders: dict[str, list[str]] = {}
    for importer, targets in graph.items():
        bad = []
        for target in sorted(targets):
            parts = target.split(".")
            private = [i for i, part in enumerate(parts) if part.startswith("_")]
            if not private:
                continue
            home = ".".join(parts[: private[0]])
            if not importer.startswith(home + "."):
                bad.append(target)
        if bad:
            offenders[importer] = bad
    return offenders


def test_no_module_imports_another_packages_underscore_module() -> None:
    """An underscore module (``transcriber_adapters._threads``) is its own package's alone."""
    graph = import_graph()
    assert "transcriber_adapters._threads" in graph
    assert private_imports(graph) == {}


def test_an_import_of_another_packages_private_module_is_found() -> None:
    """The check flags the app importing an adapter's private module, not the adapter itself."""
    graph = {
        "transcriber_app.web.uploads": {"transcriber_adapters._threads"},
        "transcriber_adapters.memory.files": {"transcriber_adapters._threads"},
    }
    assert private_imports(graph) == {
        "transcriber_app.web.uploads": ["transcriber_adapters._threads"]
    }


#: The roles of the job database (``transcriber_core.ports``) as ``Services`` hands them out.
ROLES = {
    "queue": "JobQueue",
    "parts": "PartQueue",
    "jobs": "Jobs",
    "file_records": "FileRecords",
    "outbox": "Outbox",
    "removals": "Removals",
    "listings": "Listings",
}

#: Which role(s) of the job database each core module takes; a change here is a design change.
CORE_ROLES = {
    "transcriber_core/copies.py": {"FileRecords"},
    "transcriber_core/deletion.py": {"FileRecords", "Jobs", "Listings", "Removals"},
    "transcriber_core/edits.py": {"Jobs"},
    "transcriber_core/intake.py": {"Jobs"},
    "transcriber_core/outbox.py": {"Jobs", "Outbox"},
    "transcriber_core/part_steps.py": {"FileRecords", "JobQueue", "Jobs", "PartQueue"},
    "transcriber_core/progress.py": {"JobQueue"},
    "transcriber_core/retention.py": {"Removals"},
    "transcriber_core/speakers.py": {"FileRecords", "Jobs"},
    "transcriber_core/steps.py": {"FileRecords", "Jobs"},
    "transcriber_core/fetching.py": {"FileRecords", "Jobs"},
    "transcriber_core/summary_steps.py": {"Jobs"},
    "transcriber_core/voices.py": {"Jobs"},
    "transcriber_core/waiting.py": {"Jobs"},
    "transcriber_core/worker.py": {"JobQueue", "PartQueue"},
}


def roles_taken(package: str) -> dict[str, set[str]]:
    """Per module of ``package``, the roles it reads off ``Services`` (``services.<role>``)."""
    taken: dict[str, set[str]] = {}
    for path in sorted((SRC / package).rglob("*.py")):
        roles = {
            ROLES[node.attr]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute)
            and node.attr in ROLES
            and isinstance(node.value, ast.Name)
            and node.value.id == "services"
        }
        if roles:
            taken[str(path.relative_to(SRC))] = roles
    return taken


def test_each_core_module_takes_only_the_roles_listed() -> None:
    """Core callers depend on role ports, each on the ones ``CORE_ROLES`` lists for it."""
    assert roles_taken("transcriber_core") == CORE_ROLES


@pytest.mark.parametrize("package", ["transcriber_core", "transcriber_app"])
def test_only_the_composition_root_holds_the_whole_job_repository(package: str) -> None:
    """Only ``bootstrap`` (and the bundle itself) reads ``services.repo`` or names the union."""
    allowed = {
        "transcriber_core/ports.py",
        "transcriber_core/services.py",
        "transcriber_app/bootstrap.py",
    }
    offenders = []
    for path in sorted((SRC / package).rglob("*.py")):
        module = str(path.relative_to(SRC))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            whole = (isinstance(node, ast.Attribute) and node.attr == "repo") or (
                isinstance(node, ast.Name | ast.alias)
                and getattr(node, "id", getattr(node, "name", None)) == "JobRepository"
            )
            if whole and module not in allowed:
                offenders.append(module)
    assert offenders == []
