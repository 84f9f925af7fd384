"""The docs a newcomer reads stay true: ADR statuses and index, links, paths, config, examples."""

from __future__ import annotations

import re
import runpy
import typing
from pathlib import Path

import attrs
import pytest

from transcriber_app.config import Config, load_config

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
ADRS = DOCS / "adr"
INDEX = ADRS / "README.md"
README = ROOT / "README.md"
#: Every page a link or a path in it is checked on: the README and docs/, ADRs included.
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
#: Pages whose file paths in backticks must exist today (ADRs keep the names of their day).
CURRENT_PAGES = [README, *sorted(DOCS.glob("*.md")), INDEX]

STATUS = re.compile(
    r"^(?:Date: \d{4}-\d{2}-\d{2}\. )?Status: "
    r"(?P<status>(?:accepted|superseded by ADR \d+)"
    r"(?:; (?:amended|superseded in part) by ADR \d+(?:, \d+)*)*)\.$"
)
INDEX_ROW = re.compile(r"^\| \[(?P<number>\d+)\]\((?P<file>[^)]+)\) \| .+ \| (?P<status>[^|]+) \|$")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\s]+)`")
#: Where a path written in a page may start: the repository's folders and the packages in src/.
TOP = {"src", "tests", "docs", "scripts", "bench", "typing_tests", ".ci"}
PACKAGES = {p.name for p in (ROOT / "src").iterdir() if p.name.startswith("transcriber_")}


def sections() -> dict[str, type]:
    """Each config section's name and class (an optional section's, ``[llm]``, too)."""
    found = {}
    for field in attrs.fields(attrs.resolve_types(Config)):
        present = [arg for arg in typing.get_args(field.type) if arg is not type(None)]
        # ``Config.import_`` is the section ``[import]``: its name is a Python keyword.
        found[field.name.removesuffix("_")] = present[0] if present else field.type
    return found


def adr_files() -> dict[int, Path]:
    """Every ADR by its number, from the file names."""
    return {int(path.name[:4]): path for path in sorted(ADRS.glob("[0-9][0-9][0-9][0-9]-*.md"))}


def status_of(path: Path) -> str:
    """The status an ADR states in a ``Status:`` line under its title."""
    for line in path.read_text().splitlines()[1:6]:
        if match := STATUS.match(line):
            return match["status"]
    raise AssertionError(f"{path.name}: no 'Status: ...' line under the title")


def index_rows() -> dict[int, tuple[str, str]]:
    """The index's rows: number to (linked file, status)."""
    rows: dict[int, tuple[str, str]] = {}
    for line in INDEX.read_text().splitlines():
        if match := INDEX_ROW.match(line):
            number = int(match["number"])
            assert number not in rows, f"ADR {number} is in the index twice"
            rows[number] = (match["file"], match["status"].strip())
    return rows


def named_adrs(status: str) -> set[int]:
    """The ADR numbers a status names."""
    return {int(n) for n in re.findall(r"\d+", status)}


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (outside code blocks)."""
    text = FENCE.sub("", page.read_text())
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def test_every_adr_states_its_status() -> None:
    """Each ADR has a Status line in the index's words: accepted, amended or superseded by N."""
    files = adr_files()
    assert len(files) >= 39, "the ADR folder was not found"
    for number, path in files.items():
        assert path.read_text().startswith(f"# {number}. "), (
            f"{path.name}: title is not '# {number}. ...'"
        )
        status_of(path)


def test_the_index_lists_every_adr_with_the_status_it_states() -> None:
    """The index has one row per ADR, linking its file, with the same status as the file."""
    files = adr_files()
    rows = index_rows()
    assert sorted(rows) == sorted(files), "the index and docs/adr/ list different ADRs"
    for number, (linked, status) in rows.items():
        assert linked == files[number].name, f"ADR {number}: the index links {linked}"
        assert status == status_of(files[number]), f"ADR {number}: the index says {status!r}"


def test_statuses_name_later_adrs_that_exist() -> None:
    """An ADR is amended or superseded only by a later ADR that exists."""
    files = adr_files()
    for number, path in files.items():
        for other in named_adrs(status_of(path)):
            assert other in files, (
                f"{path.name}: its status names ADR {other}, which does not exist"
            )
            assert other > number, f"{path.name}: its status names an earlier ADR, {other}"


def test_the_readme_is_a_newcomers_page() -> None:
    """README stays at most 250 lines; the rest belongs in docs/."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move the detail to docs/"


def reaches(page: Path, target: str) -> bool:
    """Whether a relative link from ``page`` names a file that exists (and a heading in it)."""
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    if not resolved.exists():
        return False
    return not anchor or resolved.suffix != ".md" or anchor in anchors(resolved)


def in_repository(token: str) -> bool:
    """Whether a path written from the root or from src/ (``transcriber_core/...``) exists."""
    first = token.split("/", 1)[0]
    if first in TOP:
        return (ROOT / token).exists()
    if first in PACKAGES:
        return (ROOT / "src" / token).exists()
    return True


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_files_and_headings_that_exist(page: Path) -> None:
    """Every relative link in a page reaches an existing file, and its #anchor a heading there."""
    targets = LINK.findall(FENCE.sub("", page.read_text()))
    broken = [t for t in targets if not re.match(r"[a-z]+:", t) and not reaches(page, t)]
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


@pytest.mark.parametrize("page", CURRENT_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_named_in_a_page_exist(page: Path) -> None:
    """A repository path in backticks (`src/...`, `tests/...`, `transcriber_core/...`) exists."""
    tokens = CODE.findall(FENCE.sub("", page.read_text()))
    paths = [t for t in tokens if "/" in t and re.fullmatch(r"[\w./-]+", t) and "NNNN" not in t]
    missing = [path for path in paths if not in_repository(path)]
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_sample_config_is_every_key_at_its_default(tmp_path: Path) -> None:
    """docs/configuration.md's full config loads to the defaults and names every key."""
    text = (DOCS / "configuration.md").read_text()
    sample = text.split("## Every key at its default", 1)[1].split("```toml\n", 1)[1]
    sample = sample.split("```", 1)[0]
    path = tmp_path / "config.toml"
    path.write_text(sample)
    assert load_config(path, env={}) == load_config(None, env={})
    for name, cls in sections().items():
        # An optional section (``[llm]``) is shown commented out: present, it turns a feature on.
        body = re.split(rf"^(?:# )?\[{name}\]", sample, maxsplit=1, flags=re.M)[1]
        body = re.split(r"\n(?:# )?\[", body, maxsplit=1)[0]
        for key in attrs.fields(cls):
            assert re.search(rf"^#? ?{key.name} = ", body, re.M), f"[{name}] {key.name}"


def test_the_reference_lists_every_key() -> None:
    """docs/reference.md's Configuration chapter has every key of every section."""
    text = (DOCS / "reference.md").read_text()
    chapter = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    parts = chapter.split("\n### ")[1:]
    for name, cls in sections().items():
        tables = "".join(part for part in parts if f"[{name}]" in part.splitlines()[0])
        assert tables, f"no ### heading for [{name}] in reference.md"
        for key in attrs.fields(cls):
            named = f"`{key.name}`" in tables or f"`[{name}] {key.name}`" in tables
            assert named, f"reference.md does not list [{name}] {key.name}"


def test_the_library_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/library.md's program runs a recording through ffmpeg and the demo recognizer."""
    text = (DOCS / "library.md").read_text()
    program = tmp_path / "example.py"
    program.write_text(text.split("```python\n", 1)[1].split("```", 1)[0])
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(program), run_name="__main__")
    assert capsys.readouterr().out == "done A recording of 2.0 seconds.\n"
