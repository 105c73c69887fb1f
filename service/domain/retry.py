"""The optimistic-concurrency retry schedule shared by every command that re-reads and re-appends."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

__all__ = ["RETRY_SECONDS", "retries"]

RETRY_SECONDS = 30.0  # a contended command keeps retrying (with jittered backoff) this long before giving up


def retries(seconds: float = RETRY_SECONDS) -> Iterator[int]:
    """Attempt numbers for a retry loop, sleeping with jittered exponential backoff between attempts."""
    deadline = time.monotonic() + seconds
    attempt = 0
    while True:
        yield attempt
        if time.monotonic() > deadline:
            return
        attempt += 1
        time.sleep(random.uniform(0, min(0.05, 0.0005 * 2 ** min(attempt, 10))))
