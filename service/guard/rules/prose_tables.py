"""Credentials in Markdown tables: the column a credential's noun heads, or the row it labels."""

from __future__ import annotations

import re
from collections.abc import Iterator

from service.guard.rules.config import CSV_MAX_ROWS
from service.guard.rules.prose_values import prose_key_value, prose_password_value
from service.guard.rules.shapes import Span

__all__ = ["line_start", "table_values"]


def _cell_spans(line: str, offset: int) -> list[tuple[str, int, int]]:
    """The cells (stripped text, start, end) of a Markdown table row."""
    cells: list[tuple[str, int, int]] = []
    pos = line.index("|") + 1
    while (bar := line.find("|", pos)) != -1:
        raw = line[pos:bar]
        inner = raw.strip()
        value = inner.strip("`")
        start = offset + pos + (raw.find(value) if value else 0)
        cells.append((value, start, start + len(value)))
        pos = bar + 1
    return cells


_TABLE_LINE = 512  # longer lines are no table's rows (and each is read once: see _find_prose_secrets)


def line_start(text: str, pos: int) -> int | None:
    """Where the line holding ``pos`` starts, if within _TABLE_LINE characters."""
    start = text.rfind("\n", max(0, pos - _TABLE_LINE), pos) + 1
    return start if start > 0 or pos < _TABLE_LINE else None


def _line_end(text: str, pos: int) -> int | None:
    """Where the line holding ``pos`` ends (its newline, or the text's end), if within _TABLE_LINE characters."""
    end = text.find("\n", pos, pos + _TABLE_LINE)
    if end != -1:
        return end
    return len(text) if len(text) - pos < _TABLE_LINE else None


def table_values(text: str, m: re.Match[str], password: bool) -> Iterator[Span]:
    """A noun inside a Markdown table: the column it heads (rows below), or the row it labels (cells after it)."""
    start = line_start(text, m.start())
    end = _line_end(text, m.end())
    if start is None or end is None:
        return  # no table's row is that long
    line = text[start:end]
    if not line.lstrip().startswith("|"):
        return
    cells = _cell_spans(line, start)
    col = next((i for i, (_, a, b) in enumerate(cells) if a <= m.start() < max(b, a + 1)), None)
    if col is None:
        return
    nxt = _line_end(text, end + 1) if end < len(text) else None
    separator = text[end + 1 : nxt].strip() if nxt is not None else ""
    if nxt is not None and separator.startswith("|") and set(separator) <= set("|-: \t"):  # a header: its column
        row_start = nxt + 1
        for _ in range(CSV_MAX_ROWS):
            if row_start > len(text):
                return
            row_end = _line_end(text, row_start)
            if row_end is None:
                return
            row = text[row_start:row_end]
            if not row.lstrip().startswith("|"):
                return
            row_cells = _cell_spans(row, row_start)
            if col < len(row_cells):
                value, a, b = row_cells[col]
                if value and (prose_password_value(value) if password else prose_key_value(value)):
                    yield a, b
            row_start = row_end + 1
        return
    for value, a, b in cells[col + 1 :]:  # a row labelled by the credential: the value in a later cell
        if value and (prose_password_value(value) if password else prose_key_value(value)):
            yield a, b
            return
