"""Read models: each projector is a pure fold of events into its tables, applied inline or by replay.

``projector`` holds the type, ``registry`` the ordered list and the apply/plan steps, ``runner`` catch-up, rebuild
and digests; one module per read model.
"""

from __future__ import annotations

from projections.jsonutil import dumps, loads

__all__ = ["dumps", "loads"]
