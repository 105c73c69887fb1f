"""Cyclic garbage collection paused around bulk work (a replay, a bulk append), process-wide and re-entrant.

Such work allocates hundreds of thousands of short-lived containers (decoded events, item dicts); each of them
counts towards the collector's thresholds, so it keeps running full passes over every long-lived object of the
process, which cost a third of a replay's Python time (measured on 32k events). Reference counting still frees
each batch as soon as it is done; only cycles wait for the collector, which is on again when the last user leaves.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block (nested and concurrent blocks share one pause); on leaving the
    outermost one it is enabled again if it was enabled when the first began."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
