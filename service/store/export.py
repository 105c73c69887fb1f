"""items.jsonl snapshots: atomic write (temp + fsync + os.replace) and all-or-nothing parse."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from service.domain.errors import SnapshotError
from service.domain.events import normalize_json
from service.domain.items import SubstrateItem
from service.store.eventread import PROGRESS_EVERY

__all__ = ["SNAPSHOT_NAME", "SnapshotError", "read_snapshot", "write_snapshot"]

SNAPSHOT_NAME = "items.jsonl"


def write_snapshot(root: Path, items: Iterable[SubstrateItem], progress: Callable[[int], None] | None = None) -> str:
    """Write one JSON item per line to ``root/items.jsonl`` so a failure leaves the old file intact (``progress``
    gets the items written so far, every 5,000 and at the end)."""
    root.mkdir(parents=True, exist_ok=True)
    target = root / SNAPSHOT_NAME
    fd, tmp = tempfile.mkstemp(prefix=".items.", suffix=".tmp", dir=root)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            n = 0
            for item in items:
                f.write(json.dumps(item.json_view(), ensure_ascii=False, allow_nan=False))
                f.write("\n")
                n += 1
                if progress is not None and n % PROGRESS_EVERY == 0:
                    progress(n)
            if progress is not None:
                progress(n)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return str(target)


def read_snapshot(root: Path, progress: Callable[[int], None] | None = None) -> list[SubstrateItem]:
    """Parse and validate every row of ``root/items.jsonl`` (later rows win on duplicate ids) before returning any;
    ``progress`` gets the lines read so far, every 5,000 and at the end."""
    path = root / SNAPSHOT_NAME
    items: dict[str, SubstrateItem] = {}
    n = 0
    # Streamed row by row (memory holds the items, not the file twice over). Only "\n" ends a row: a binary file
    # splits on nothing else (str.splitlines() would also split on U+2028/U+2029/U+0085 inside strings).
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            try:
                line = raw.rstrip(b"\n").decode("utf-8")
            except UnicodeDecodeError as exc:
                preview = raw.rstrip(b"\n").decode("utf-8", errors="replace")
                raise SnapshotError(path, n, preview, f"not UTF-8 ({exc.reason})") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SnapshotError(path, n, line, f"invalid JSON ({exc.msg})") from None
            except RecursionError:
                raise SnapshotError(path, n, line, "invalid JSON (nested too deeply)") from None
            try:
                item = SubstrateItem.from_json(row)
                normalize_json(item.json_view(), "item")  # storable: no NaN, NUL or lone surrogates
            except (TypeError, ValueError, RecursionError) as exc:
                raise SnapshotError(path, n, line, f"invalid item ({exc or 'nested too deeply'})") from None
            items.pop(item.id, None)
            items[item.id] = item
            if progress is not None and n % PROGRESS_EVERY == 0:
                progress(n)
    if progress is not None:
        progress(n)
    return list(items.values())
