"""Best-effort telemetry emission: a telemetry failure never breaks the operation that emitted it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["emit"]


def emit(telemetry: Any, kind: str, build: Callable[[], tuple[dict[str, Any], str, dict[str, Any]]]) -> None:
    """Call ``telemetry.record(kind, features=..., choice=..., outcome=...)`` from ``build()``; swallow any failure."""
    if telemetry is None:
        return
    try:
        features, choice, outcome = build()
        telemetry.record(kind, features=features, choice=choice, outcome=outcome)
    except Exception:  # noqa: BLE001 - the telemetry protocol: a sink failure must never break the caller
        pass
