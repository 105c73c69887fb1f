"""What every command shares: opening the store named by --url/--root, and printing JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_store_options", "open_store", "print_json"]


def open_store(args: argparse.Namespace, *, create: bool = False, **kw: Any) -> Any:
    """The store a command works on: --url, else $SUBSTRATE_DATABASE_URL, else --root (default ./.substrate).

    A root that does not exist yet becomes a new, empty store. For a command that only reads (not ``create``)
    that is said on stderr: a mistyped --root would otherwise be verified, searched or exported as an empty store
    without a word.
    """
    from service.substrate import Substrate

    url = getattr(args, "url", None) or os.environ.get("SUBSTRATE_DATABASE_URL")
    if url:
        return Substrate(url=url, **kw)
    root = Path(getattr(args, "root", None) or ".substrate")
    new = not root.exists()
    store = Substrate(root=str(root), **kw)
    if new and not create:
        print(
            f"substrate: note: there was no store at {root.resolve()}; this is a new, empty one "
            "(give --root or --url to use another)",
            file=sys.stderr,
        )
    return store


def add_store_options(p: argparse.ArgumentParser) -> None:
    """--url / --root, shared by every command that opens a store."""
    p.add_argument("--url", help="PostgreSQL URL (default: $SUBSTRATE_DATABASE_URL)")
    p.add_argument("--root", help="persistent embedded store directory (default: ./.substrate)")


def print_json(value: Any) -> None:
    """Pretty JSON on stdout."""
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")
