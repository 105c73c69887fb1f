"""An install that is not editable (a wheel, the Docker image) carries the whole package and its migrations."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

_PROBE = """
import service
assert service.__file__.startswith({target!r}), service.__file__
from service import Substrate
store = Substrate()
item = store.add("text", "hello from a wheel")
assert store.get(item).text == "hello from a wheel"
assert store.search("wheel", k=1)[0][0].id == item
store.close()
print("ok")
"""


@pytest.mark.slow
def test_the_wheel_holds_every_package_and_a_store_opens_from_it(tmp_path: Path) -> None:
    # What the Dockerfile copies, into a fresh directory (no build/ left over from another build).
    source_tree = tmp_path / "src"
    for name in ("pyproject.toml", "README.md"):
        source_tree.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, source_tree / name)
    for package in ("service", "projections", "migrations"):
        shutil.copytree(ROOT / package, source_tree / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source_tree),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("*.whl")
    shipped = {name.rsplit("/", 1)[0] for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".py")}
    source = {
        str(path.parent.relative_to(ROOT))
        for package in ("service", "projections", "migrations")
        for path in (ROOT / package).rglob("*.py")
    }
    assert source <= shipped, sorted(source - shipped)

    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("SUBSTRATE_DATABASE_URL", None)
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE.format(target=str(target))],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0 and probe.stdout.strip().endswith("ok"), probe.stderr[-2000:]
