"""The layer rules of DESIGN.md hold: projections never import the service; the library never its entrypoints."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter is a dev dependency")
def test_import_contracts_are_kept() -> None:
    result = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.skipif(shutil.which("mypy") is None, reason="mypy is a dev dependency")
def test_the_packages_type_check(tmp_path: Path) -> None:
    result = subprocess.run(
        ["mypy", "--cache-dir", str(tmp_path / "mypy"), "service", "projections"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is a dev dependency")
def test_the_code_passes_the_linter_and_is_formatted() -> None:
    result = subprocess.run(["ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
    code = ["service", "projections", "tests", "bench", "migrations"]
    result = subprocess.run(["ruff", "format", "--check", *code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]


def test_importing_the_package_leaves_the_heavy_libraries_for_when_they_are_used() -> None:
    # scikit-learn alone takes most of a second to import: every CLI command and every process would pay it.
    code = "import sys, service; print(sorted(m for m in ('sklearn', 'fastapi', 'uvicorn') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
