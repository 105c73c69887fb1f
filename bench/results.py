"""bench/RESULTS.md: each benchmark script owns one section between its begin/end markers."""

from __future__ import annotations

from pathlib import Path

__all__ = ["RESULTS", "replace_section"]

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def replace_section(section: str, begin: str, end: str) -> None:
    """Put ``section`` (which starts with ``begin`` and ends with ``end``) in place of the marked one, or append it."""
    old = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    if begin in old and end in old:
        new = old[: old.index(begin)] + section + old[old.index(end) + len(end) :]
    else:
        new = old.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(new, encoding="utf-8")
