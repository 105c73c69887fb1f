"""The ``substrate`` command line: a thin wrapper over the library (no SQL here)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from service.cli import admin, ask, core, ingest, ops, search, serve

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

# Modules that add subcommands, in --help order: each defines ``register(subparsers)``; handlers get parsed args.
COMMAND_MODULES = (core, ingest, ask, serve, admin, search, ops)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every registered command."""
    parser = argparse.ArgumentParser(
        prog="substrate", description="Substrate: an event-sourced knowledge service on PostgreSQL."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        module.register(sub)
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
