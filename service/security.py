"""Secret detection and redaction (placeholder guard until the security module lands)."""

from __future__ import annotations

from service.items import SubstrateItem

__all__ = ["SecretPolicyError"]


class SecretPolicyError(ValueError):
    """A write carried a secret and the policy was "reject": nothing was stored."""


def guard_item(item: SubstrateItem, policy: str) -> SubstrateItem:
    """Return a copy of ``item`` safe to store under ``policy`` ("redact" or "reject")."""
    if policy not in ("redact", "reject"):
        raise ValueError(f"secret_policy must be 'redact' or 'reject', got {policy!r}")
    return item.copy()
