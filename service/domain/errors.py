"""Every error the service raises on purpose: one tree under ``SubstrateError``, in this one module.

Each also derives from the builtin a caller of the spec's in-memory store would catch (``ValueError`` for bad
input, ``PermissionError`` for a refused principal), so both ``except SubstrateError`` and the spec's own
``except ValueError`` work. The HTTP edge maps these classes onto statuses without importing feature modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "AccessDeniedError",
    "ApprovalRedirectError",
    "ConcurrencyError",
    "GovernanceAuthorizationError",
    "InvalidArgument",
    "ReadOnlyError",
    "SecretPolicyError",
    "SnapshotError",
    "StateConflictError",
    "SubstrateError",
]


class SubstrateError(Exception):
    """The root of the service's own errors."""


class InvalidArgument(SubstrateError, ValueError, TypeError):
    """A bad argument: both a ValueError and a TypeError, so either ``except`` catches it."""


class ConcurrencyError(SubstrateError):
    """A writer's expected stream version was stale: another writer appended first; nothing was written."""

    def __init__(self, stream: str, expected: int, message: str | None = None) -> None:
        self.stream = stream
        self.expected = expected
        super().__init__(message or f"stream {stream!r} moved past version {expected}; nothing was written")


class ReadOnlyError(SubstrateError):
    """A write was attempted on a read-only view (for example a time-travel view)."""


class StateConflictError(SubstrateError):
    """The stored state does not allow this command: e.g. a belief's item was changed into something that is no
    longer a belief. Nothing was written; the request itself was well-formed (HTTP 409, not 422)."""


def _absent(name: Any) -> bool:
    return name is None or (isinstance(name, str) and not name.strip())


class AccessDeniedError(SubstrateError, PermissionError):
    """Raised when a principal is not authorized for the scope it tried to read, write, or publish."""

    def __init__(
        self, principal: str | None, scope: str | None = None, mode: str | None = None, detail: str = ""
    ) -> None:
        self.principal = principal
        self.scope = scope
        self.mode = mode
        if scope is None and mode is None:  # AccessDeniedError("message"), as a PermissionError is raised
            self.principal = None
            super().__init__(principal if principal is not None else "access denied")
            return
        if _absent(principal):
            msg = (
                f"an empty or missing principal ({principal!r}) may not {mode} scope {scope!r}; "
                "a non-empty, authenticated principal is required"
            )
        else:
            msg = f"principal {principal!r} may not {mode} scope {scope!r}"
        super().__init__(f"{msg}: {detail}" if detail else msg)


class GovernanceAuthorizationError(SubstrateError, PermissionError):
    """Raised when an actor attempts a governance transition they are not authorized to make.

    Built with (actor, scope, action[, detail]), or like any exception with just a message."""

    def __init__(self, actor: str, scope: str = "", action: str = "", detail: str = "") -> None:
        self.actor, self.scope, self.action = actor, scope, action
        if not (scope or action):
            super().__init__(actor)
            return
        msg = f"{actor!r} may not {action} in scope {scope!r}"
        super().__init__(f"{msg}: {detail}" if detail else msg)


class ApprovalRedirectError(GovernanceAuthorizationError, ValueError):
    """approve(to=X) for an item proposed to another scope: an approval decides a proposal, it never redirects it.
    Both a refused transition (PermissionError) and a bad argument (ValueError)."""


class SecretPolicyError(SubstrateError, ValueError):
    """A secret was found and could not be stored: policy "reject", or redaction did not reach a fixed point.

    ``scan`` holds the findings (a ``SecretScan``: rule, offsets within the field, masked preview), ``rules`` and
    ``fields`` name what matched where, ``item_id`` the item refused (None when not known)."""

    def __init__(
        self,
        message: str,
        *,
        rules: list[str] | None = None,
        fields: list[str] | None = None,
        scan: Any = None,
        item_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.rules = list(rules or [])
        self.fields = list(fields or [])
        self.scan = scan
        self.item_id = item_id


class SnapshotError(SubstrateError, ValueError):
    """A snapshot row failed to parse or validate: names the file, the 1-based line and a preview."""

    _PREVIEW = 80

    def __init__(self, path: Path, line: int, row: str, reason: str) -> None:
        self.path, self.line, self.reason = str(path), line, reason
        preview = row if len(row) <= self._PREVIEW else row[: self._PREVIEW] + "..."
        super().__init__(f"{path}:{line}: {reason}: {preview!r}")
