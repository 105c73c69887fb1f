"""What every command shares: opening the store named by --url/--root, showing its URL, and printing JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "NoStore",
    "add_as_of_option",
    "add_store_options",
    "display_url",
    "open_store",
    "print_json",
    "print_json_line",
    "store_exists",
]


class NoStore(FileNotFoundError):
    """A reading command named a root that holds no store: it is refused instead of made."""


def store_exists(root: Path) -> bool:
    """Whether ``root`` holds a store: its embedded cluster, or an ``items.jsonl`` a new store would adopt."""
    from service.store.export import SNAPSHOT_NAME

    return (root / "pgdata" / "PG_VERSION").is_file() or (root / SNAPSHOT_NAME).is_file()


def open_store(args: argparse.Namespace, *, create: bool = False, **kw: Any) -> Any:
    """The store a command works on: --url, else $SUBSTRATE_DATABASE_URL, else --root (default ./.substrate).

    Only a command that writes (``create``) makes a new store at a root that holds none. A command that only
    reads refuses with NoStore (exit 2), so one run from the wrong directory, or given a mistyped --root, neither
    reports on an empty store nor leaves a new cluster behind.
    """
    from service.substrate import Substrate

    url = getattr(args, "url", None) or os.environ.get("SUBSTRATE_DATABASE_URL")
    if url:
        return Substrate(url=url, **kw)
    root = Path(getattr(args, "root", None) or ".substrate")
    if not create and not store_exists(root):
        raise NoStore(
            f"there is no store at {root.resolve()}; give --root DIR or --url (or $SUBSTRATE_DATABASE_URL), "
            "or create one there with `substrate db upgrade --root DIR`"
        )
    return Substrate(root=str(root), **kw)


def display_url(url: str, *, password: bool = False) -> str:
    """``url`` as a person or libpq reads it: no SQLAlchemy driver suffix, the password masked unless asked."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    u = u.set(drivername=u.drivername.split("+", 1)[0])
    if not u.password:
        u = u._replace(password=None)  # pgserver's "user:@" (an empty password) is no password
    return u.render_as_string(hide_password=not password)


def add_store_options(p: argparse.ArgumentParser) -> None:
    """--url / --root, shared by every command that opens a store."""
    p.add_argument("--url", help="PostgreSQL URL (default: $SUBSTRATE_DATABASE_URL)")
    p.add_argument("--root", help="persistent embedded store directory (default: ./.substrate)")


def _position(value: str) -> Any:
    from service.store.timetravel import parse_position

    try:
        return parse_position(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_as_of_option(p: argparse.ArgumentParser) -> None:
    """--as-of SEQ|TIME: read the store as it was right after that log position, or at that ISO-8601 time."""
    p.add_argument(
        "--as-of",
        type=_position,
        metavar="SEQ|TIME",
        help="read the store as it was after this log position (integer) or at this ISO-8601 time",
    )


def print_json(value: Any) -> None:
    """Pretty JSON on stdout: for one report."""
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def print_json_line(value: Any) -> None:
    """One compact JSON object on one line (JSON Lines): for outputs that stream one record at a time."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":")) + "\n")
