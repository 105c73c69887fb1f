"""Pure parsers for the ingest formats: each yields (1-based line, value or Bad) and never raises on bad data."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from service.domain.validation import InvalidArgument

__all__ = [
    "FORMATS",
    "Bad",
    "detect_format",
    "doc_fields",
    "iter_with_indices",
    "manifest_summary",
    "parse_csv",
    "parse_jsonl",
    "parse_text_lines",
    "record_fields",
    "trace_fields",
]

# kind= value (or file extension) -> canonical format name.
FORMATS: dict[str, str] = {
    "text": "text",
    "txt": "text",
    "md": "text",
    "markdown": "text",
    "jsonl": "jsonl",
    "ndjson": "jsonl",
    "csv": "csv",
    "trace": "trace",
    "traces": "trace",
}
_TRACE_OUTPUTS = ("answer", "label", "call")


@dataclass(frozen=True, slots=True)
class Bad:
    """A row that could not be parsed, and why (reported on a receipt's .failed, never raised)."""

    reason: str


def detect_format(path: str | os.PathLike[str], kind: str | None = None) -> str:
    """The canonical format of ``path``: ``kind`` when given, else from the extension; InvalidArgument otherwise."""
    if kind is not None:
        if not isinstance(kind, str) or kind.lower().lstrip(".") not in FORMATS:
            raise InvalidArgument(f"kind must be one of {sorted(FORMATS)}, got {kind!r}")
        return FORMATS[kind.lower().lstrip(".")]
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if ext not in FORMATS or ext in ("text", "trace", "traces", "markdown"):
        raise InvalidArgument(
            f"path {os.fspath(path)!r}: cannot infer the format from extension {ext or '(none)'!r}; "
            "use .txt/.md/.jsonl/.csv or pass kind="
        )
    return FORMATS[ext]


def _decoded_lines(fh: IO[bytes]) -> Iterator[tuple[int, str | Bad]]:
    # Decoding line by line means one bad byte sequence costs one row, not the whole file.
    for n, raw in enumerate(fh, start=1):
        if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            yield n, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield n, Bad(f"not valid UTF-8 (byte {exc.start})")


def parse_text_lines(fh: IO[bytes]) -> Iterator[tuple[int, str | Bad]]:
    """One value per non-blank line, stripped of surrounding whitespace as the spec's store strips each line."""
    for n, line in _decoded_lines(fh):
        if isinstance(line, Bad):
            yield n, line
            continue
        text = line.strip()
        if text:
            yield n, text


def parse_jsonl(fh: IO[bytes]) -> Iterator[tuple[int, Any]]:
    """One JSON value per non-blank line; a line that is not JSON is Bad naming the parser's reason."""
    for n, line in _decoded_lines(fh):
        if isinstance(line, Bad):
            yield n, line
        elif line.strip():
            try:
                yield n, json.loads(line)
            except ValueError as exc:
                yield n, Bad(f"invalid JSON: {getattr(exc, 'msg', str(exc))} (column {getattr(exc, 'colno', '?')})")
            except RecursionError:
                yield n, Bad("invalid JSON: nested too deeply")


def parse_csv(fh: IO[bytes]) -> Iterator[tuple[int, dict[str, str] | Bad]]:
    """One dict per data row keyed by the header row; a row with the wrong field count is Bad."""
    lines = _csv_lines(fh)
    reader = csv.reader(lines)
    header: list[str] | None = None
    consumed = 0
    while True:
        start = consumed + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if reader.line_num == consumed:  # the reader made no progress: give up rather than spin
                yield start, Bad(f"unreadable CSV: {exc}")
                return
            consumed = reader.line_num
            yield start, Bad(f"malformed CSV: {exc}")
            continue
        consumed = reader.line_num
        bad = lines.bad_between(start, consumed)
        if bad is not None:
            yield start, bad
            continue
        if not row or all(not f.strip() for f in row):
            continue
        if header is None:
            header = [h.strip() for h in row]
            dupes = sorted({h for h in header if header.count(h) > 1})
            if dupes:
                yield start, Bad(f"duplicate column name(s) {dupes} in the header; no row can be keyed")
                return
            continue
        if len(row) != len(header):
            yield start, Bad(f"expected {len(header)} fields (the header's), got {len(row)}")
            continue
        yield start, dict(zip(header, row))


class _csv_lines:
    """Decoded lines for csv.reader, remembering which line numbers were not valid UTF-8."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._it = _decoded_lines(fh)
        self._bad: dict[int, Bad] = {}

    def __iter__(self) -> Iterator[str]:
        for n, line in self._it:
            if isinstance(line, Bad):
                self._bad[n] = line
                yield "\n"
            else:
                yield line

    def bad_between(self, first: int, last: int) -> Bad | None:
        found = [self._bad.pop(n) for n in range(first, last + 1) if n in self._bad]
        return found[0] if found else None


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def doc_fields(doc: Any) -> tuple[str, list[str], dict[str, Any]]:
    """(text, tags, payload) of a document: a string, or {"text", "tags"?, "payload"?, ...extra keys -> payload}."""
    if isinstance(doc, str):
        return doc, [], {}
    if not isinstance(doc, Mapping):
        raise ValueError(f"a document must be a string or a {{'text': ...}} object, got {type(doc).__name__}")
    text = doc.get("text")
    if not isinstance(text, str):
        raise ValueError(f"document 'text' must be a string, got {type(text).__name__}")
    tags = doc.get("tags") or []
    if (
        isinstance(tags, (str, bytes))
        or not isinstance(tags, (list, tuple))
        or not all(isinstance(t, str) for t in tags)
    ):
        raise ValueError(f"document 'tags' must be a list of strings, got {tags!r}"[:200])
    payload = doc.get("payload") or {}
    if not isinstance(payload, Mapping):
        raise ValueError(f"document 'payload' must be an object, got {type(payload).__name__}")
    extra = {str(k): v for k, v in doc.items() if k not in ("text", "tags", "payload")}
    return text, list(tags), {**extra, **dict(payload)}


def record_fields(record: Any, text_fields: Sequence[str] | None) -> tuple[str, dict[str, Any]]:
    """(text surface, payload) of a record: a dict is stored as is, a tuple/list as {"values": [...]}."""
    if isinstance(record, Mapping):
        payload = {str(k): v for k, v in record.items()}
        if text_fields:
            parts = [_text_of(payload[f]) for f in text_fields if payload.get(f) is not None]
            return " ".join(parts), payload
        return _text_of(payload), payload
    if isinstance(record, (tuple, list)):
        values = list(record)
        return _text_of(values), {"values": values}
    raise ValueError(f"a record must be an object (dict) or a tuple/list, got {type(record).__name__}")


def trace_fields(row: Any) -> tuple[str, dict[str, Any]]:
    """(text surface, payload) of a trace row {"input": ..., "answer"/"label"/"call": ...}. Any JSON object is a
    row (the spec fails only lines that are not objects): without an input or an output, its text is the row."""
    if not isinstance(row, Mapping):
        raise ValueError(f"a trace row must be a JSON object, got {type(row).__name__}")
    parts = [] if row.get("input") is None else [_text_of(row["input"])]
    for key in _TRACE_OUTPUTS:
        if row.get(key) is not None:
            parts.append(f"{key}: {_text_of(row[key])}")
            break
    payload = {str(k): v for k, v in row.items()}
    return "\n".join(parts) if parts else _text_of(payload), payload


def artifact_kind(manifest: Mapping[str, Any]) -> str | None:
    """The artifact's kind as its manifest names it: ``kind``, else the spec's store's ``mixle_artifact`` tag."""
    for key in ("kind", "mixle_artifact"):
        if isinstance(manifest.get(key), str) and manifest[key].strip():
            return str(manifest[key])
    return None


def manifest_summary(name: str, manifest: Mapping[str, Any]) -> str:
    """A human summary of an artifact manifest: its kind, io and meta."""
    parts = [f"artifact {name}"]
    kind = artifact_kind(manifest)
    if kind is not None:
        parts.append(f"kind: {kind}")
    for key in ("io", "meta"):
        if manifest.get(key) is not None:
            parts.append(f"{key}: {_text_of(manifest[key])}")
    return "; ".join(parts)


def iter_with_indices(values: Iterable[Any], indices: Iterable[Any] | None) -> Iterator[tuple[int, int, Any]]:
    """(position used for the id, 1-based line for reports, value); InvalidArgument when indices misalign."""
    if indices is None:
        for i, v in enumerate(values):
            yield i, i + 1, v
        return
    idx = iter(indices)
    for i, v in enumerate(values):
        try:
            pos = next(idx)
        except StopIteration:
            raise InvalidArgument(f"indices has fewer entries than the input ({i})") from None
        if isinstance(pos, bool) or not isinstance(pos, int) or pos < 0:
            raise InvalidArgument(f"indices[{i}] must be a non-negative int, got {pos!r}")
        yield pos, pos, v
