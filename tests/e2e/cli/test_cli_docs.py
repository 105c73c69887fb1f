"""Every CLI command has help and is documented in the README."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from service.cli.main import build_parser, main

README = (Path(__file__).resolve().parents[3] / "README.md").read_text()


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                nested = _commands(sub, full)
                out.extend(nested or [(full, sub)])
    return out


COMMANDS = _commands(build_parser())


def test_there_are_commands() -> None:
    assert {"verify", "replay", "export", "import", "db upgrade", "events"} <= {c for c, _ in COMMANDS}


@pytest.mark.parametrize("name,parser", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_command_has_help_and_is_in_readme(name: str, parser: argparse.ArgumentParser, capsys) -> None:  # type: ignore[no-untyped-def]
    assert parser.description, f"{name} has no description"
    with pytest.raises(SystemExit) as info:
        main([*name.split(), "--help"])
    assert info.value.code == 0
    assert "usage:" in capsys.readouterr().out
    assert f"`substrate {name}" in README, f"`substrate {name}` is not documented in README.md"
