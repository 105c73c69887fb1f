"""The ``substrate`` command line (entrypoint: ``main``)."""

from service.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
