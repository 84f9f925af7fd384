"""The wheel's base install is lean: core, contracts and embedded adapters import without extras."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: What the base install must import: the core, the contract suites, the embedded adapters.
BASE_MODULES = [
    "transcriber_core.entities",
    "transcriber_core.intake",
    "transcriber_core.notices",
    "transcriber_core.worker",
    "transcriber_contracts.condition_store",
    "transcriber_contracts.converter",
    "transcriber_contracts.file_store",
    "transcriber_contracts.job_repository",
    "transcriber_contracts.notifier",
    "transcriber_contracts.login_throttle",
    "transcriber_contracts.recognizer",
    "transcriber_adapters.ffmpeg",
    "transcriber_adapters.filesystem",
    "transcriber_adapters.memory",
    "transcriber_adapters.sqlite",
]
#: Packages only an extra brings: none may be importable after the base install.
EXTRA_PACKAGES = ["starlette", "uvicorn", "aiogram", "aioboto3", "aiohttp", "jinja2"]

#: Run in the clean venv: import the base, find no extra, print a word that proves it ran.
CHECK = f"""
import importlib, importlib.util
for name in {BASE_MODULES!r}:
    importlib.import_module(name)
present = [name for name in {EXTRA_PACKAGES!r} if importlib.util.find_spec(name) is not None]
assert present == [], present
print("base-ok")
"""


def run(*command: str | Path, cwd: Path, status: int = 0) -> subprocess.CompletedProcess[str]:
    """Run ``command`` without this checkout on the path; fail unless it exits with ``status``."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == status, done.stdout + done.stderr
    return done


@pytest.mark.slow
@pytest.mark.timeout(300)  # a venv, a wheel build and a pip install: a minute on a busy box
def test_the_base_wheel_imports_the_library_and_serve_names_its_extra(tmp_path: Path) -> None:
    """The wheel without extras imports core, contracts and embedded adapters, and nothing more.

    It installs under its own name, ``transcriber --version`` says which, and
    its ``transcriber serve`` exits 2 with the pip command that adds the server.
    """
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", project / "src", ignore=ignore)
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    dist = tmp_path / "dist"
    run(python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, project, cwd=tmp_path)
    # Published as selfhosted-transcriber (ADR 47): "transcriber" on PyPI is another project.
    [wheel] = dist.glob("selfhosted_transcriber-*.whl")
    # pytest is the runner the contract suites are written for: a library user brings it.
    constraints = ROOT / "constraints.txt"
    run(python, "-m", "pip", "install", "-q", "-c", constraints, wheel, "pytest", cwd=tmp_path)
    assert run(python, "-c", CHECK, cwd=tmp_path).stdout.strip() == "base-ok"
    shown = run(venv / "bin" / "transcriber", "--version", cwd=tmp_path).stdout
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert shown.strip() == f"transcriber {project['version']} (selfhosted-transcriber)"

    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\ndata_dir = "{tmp_path / "data"}"\n', encoding="utf-8")
    served = run(venv / "bin" / "transcriber", "serve", "-c", config, cwd=tmp_path, status=2)
    assert "transcriber serve needs: pip install 'selfhosted-transcriber[server]'" in served.stderr
    assert not (tmp_path / "data").exists()
