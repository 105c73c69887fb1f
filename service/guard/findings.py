"""What a secret scan found: each finding (rule, span, masked preview) and the scan holding them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SecretFinding", "SecretScan", "preview"]


@dataclass(frozen=True)
class SecretFinding:
    """One detected secret: which rule matched, where, and a safe preview (the value stays masked)."""

    rule: str
    start: int
    end: int
    preview: str


@dataclass
class SecretScan:
    """The result of scanning a text: whether anything leaked and every finding (iterable like a list of them)."""

    findings: list[SecretFinding] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Whether the scan found no secrets."""
        return not self.findings

    def rules(self) -> list[str]:
        """Return the sorted names of triggered secret-detection rules."""
        return sorted({f.rule for f in self.findings})

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable scan summary."""
        return {
            "clean": self.clean,
            "n_findings": len(self.findings),
            "rules": self.rules(),
            "findings": [{"rule": f.rule, "start": f.start, "end": f.end, "preview": f.preview} for f in self.findings],
        }

    def __iter__(self) -> Iterator[SecretFinding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __getitem__(self, index: int) -> SecretFinding:
        return self.findings[index]


def preview(secret: str) -> str:
    """A safe preview of ``secret``: at most a quarter of it (and never more than 4 chars) shows."""
    keep = min(4, len(secret) // 4)
    return secret[:keep] + "*" * min(max(len(secret) - keep, 1), 8)
