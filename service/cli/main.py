"""The ``substrate`` command line: a thin wrapper over the library (no SQL here)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["COMMAND_MODULES", "build_parser", "main", "open_store"]

# Modules that add subcommands: each defines ``register(subparsers)``; handlers receive parsed args.
COMMAND_MODULES = [
    "service.cli_core",
    "service.cli_ingest",
    "service.cli_ask",
    "service.cli_serve",
    "service.cli_search",
]


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


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every registered command."""
    parser = argparse.ArgumentParser(
        prog="substrate", description="Substrate: an event-sourced knowledge service on PostgreSQL."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int | None] = args.handler
    try:
        return int(handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, KeyError, FileNotFoundError, PermissionError) as exc:
        print(f"substrate {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
