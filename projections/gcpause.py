"""Cyclic garbage collection paused around bulk work (a replay, a bulk append), process-wide and re-entrant.

Such work allocates hundreds of thousands of short-lived containers (decoded events, item dicts); each of them
counts towards the collector's thresholds, so it keeps running full passes over every long-lived object of the
process, which cost a third of a replay's Python time (measured on 32k events). Reference counting still frees
each batch as soon as it is done; only cycles wait for the collector, which is on again when the last user leaves.
Pauses that keep overlapping (bulk writes in several threads of a server, one after the other) never leave it off
for long: a block that ends more than ``COLLECT_EVERY`` seconds after the last collection runs one.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["COLLECT_EVERY", "gc_paused"]

COLLECT_EVERY = 30.0

_lock = threading.Lock()
_depth = 0
_was_enabled = False
_collected_at = 0.0


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block (nested and concurrent blocks share one pause); on leaving the
    outermost one it is enabled again if it was enabled when the first began."""
    global _depth, _was_enabled, _collected_at
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            _collected_at = time.monotonic()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                if _was_enabled:
                    gc.enable()
            elif _was_enabled and time.monotonic() - _collected_at > COLLECT_EVERY:
                _collected_at = time.monotonic()
                gc.collect()
