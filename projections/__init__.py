"""Read models: each projector is a pure fold of events into its tables, applied inline or by replay."""

from __future__ import annotations

from projections.jsonutil import dumps, loads
from projections.registry import PROJECTORS, Projector, apply_events, read_model_tables

__all__ = ["PROJECTORS", "Projector", "apply_events", "dumps", "loads", "read_model_tables"]
