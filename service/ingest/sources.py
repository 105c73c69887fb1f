"""Ingest: documents, records, files, traces and artifacts become items, in bulk, with stable revisioned ids.

Identity (MXR-080-0268): an ingested item's id is the sha256 of the JSON array ``[scope, source, position]``
as hex, cut to 32 characters (128 bits, the width of the uuid4 hex ids ``put`` generates; collisions need ~2^64 items).
Re-ingesting the same source into the same scope therefore reuses the same ids and revises those items
instead of duplicating them. The scope is part of the key so that ingesting a same-named source into another
scope can never overwrite (and silently move) items across a scope boundary.

Bulk path (service.ingest.batch): every row is parsed and validated first (``store.event_item``), then
secret-guarded by the store's write door;
rows that fail are reported on ``IngestReceipt.failed`` with their 1-based line and reason (MXR-080-0269); the
rest are appended in one transaction per batch of ``BATCH_SIZE`` (the event store COPYs them), never one per
item. Inputs are streamed, so memory stays flat however large the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from pathlib import Path
from typing import Any

from service.domain.items import DEFAULT_SCOPE, SubstrateItem
from service.domain.validation import InvalidArgument, require_name
from service.ingest.batch import BatchWriter, IngestFailure, IngestReceipt, Progress
from service.ingest.formats import (
    Bad,
    artifact_kind,
    detect_format,
    doc_fields,
    iter_with_indices,
    manifest_summary,
    parse_csv,
    parse_jsonl,
    parse_text_lines,
    record_fields,
    trace_fields,
)
from service.ingest.freshness import content_hash

__all__ = [
    "IngestFailure",
    "IngestReceipt",
    "ingest_artifacts",
    "ingest_documents",
    "ingest_file",
    "ingest_records",
    "ingest_traces",
]


def _check(scope: Any, source: Any) -> None:
    require_name(scope, "scope")
    require_name(source, "source")


def _file_provenance(source: str) -> dict[str, Any]:
    # Only a real, readable file has bytes to hash; a label such as "documents" records none.
    if not os.path.isfile(source):
        return {}
    digest = content_hash(source)
    return {} if digest is None else {"path": str(Path(source).resolve()), "content_hash": digest}


def _checked_indices(values: Any, indices: Any, name: str) -> Any:
    # A lone string or dict would otherwise be ingested character by character, or key by key.
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InvalidArgument(f"{name} must be an iterable of {name}, got a single {type(values).__name__}")
    if indices is not None and isinstance(values, Sized) and isinstance(indices, Sized):
        if len(indices) != len(values):
            raise InvalidArgument(f"indices has {len(indices)} entries but the input has {len(values)}")
    return indices


def _doc_item(doc: Any, scope: str, prov: dict[str, Any]) -> Callable[[str], SubstrateItem]:
    def build(item_id: str) -> SubstrateItem:
        body, tags, payload = doc_fields(doc)
        return SubstrateItem(
            kind="text", text=body, payload=payload, provenance=dict(prov), scope=scope, tags=tags, id=item_id
        )

    return build


def _record_item(
    record: Any, scope: str, prov: dict[str, Any], text_fields: Sequence[str] | None
) -> Callable[[str], SubstrateItem]:
    def build(item_id: str) -> SubstrateItem:
        body, payload = record_fields(record, text_fields)
        return SubstrateItem(kind="record", text=body, payload=payload, provenance=dict(prov), scope=scope, id=item_id)

    return build


def ingest_documents(
    substrate: Any,
    docs: Iterable[Any],
    *,
    source: str = "documents",
    scope: str = DEFAULT_SCOPE,
    indices: Iterable[int] | None = None,
    progress: Progress | None = None,
) -> IngestReceipt:
    """Add text passages (strings or {"text", "tags", "payload"} dicts) as kind="text" items; bad docs -> .failed."""
    _check(scope, source)
    indices = _checked_indices(docs, indices, "docs")
    base = {"source": source, **_file_provenance(source)}
    with BatchWriter(substrate, scope, source, progress) as batch:
        for position, line, doc in iter_with_indices(docs, indices):
            batch.add(line, position, _doc_item(doc, scope, {**base, "position": position}))
        return batch.finish()


def _check_text_fields(text_fields: Any) -> list[str] | None:
    if text_fields is None:
        return None
    if (
        isinstance(text_fields, (str, bytes))
        or not isinstance(text_fields, (list, tuple))
        or not all(isinstance(f, str) for f in text_fields)
    ):
        raise InvalidArgument(f"text_fields must be a list of field names, got {text_fields!r}")
    return list(text_fields)


def ingest_records(
    substrate: Any,
    records: Iterable[Any],
    *,
    source: str = "records",
    scope: str = DEFAULT_SCOPE,
    text_fields: Sequence[str] | None = None,
    indices: Iterable[int] | None = None,
    progress: Progress | None = None,
) -> IngestReceipt:
    """Add records (dicts or tuples) as kind="record" items, searchable by text_fields; bad records -> .failed."""
    _check(scope, source)
    fields = _check_text_fields(text_fields)
    indices = _checked_indices(records, indices, "records")
    base = {"source": source, **_file_provenance(source)}
    with BatchWriter(substrate, scope, source, progress) as batch:
        for position, line, record in iter_with_indices(records, indices):
            batch.add(line, position, _record_item(record, scope, {**base, "position": position}, fields))
        return batch.finish()


_NO_CHECK = object()


def _missing(path: Any, source: Any = None, scope: Any = _NO_CHECK) -> IngestReceipt | None:
    """An empty receipt naming the path on ``.failed`` when nothing is there: a missing source has no rows to
    ingest, as the historical list API answered (``[]``); a path that exists but is the wrong thing still raises.
    Given ``scope``, the arguments a file ingest would check are checked first (source defaults to the path)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(f"path must be a file path, got {path!r}")
    if os.path.lexists(path):
        return None
    if scope is not _NO_CHECK:
        _check(scope, os.fspath(path) if source is None else source)
    return IngestReceipt(failed=[{"source": os.fspath(path), "line": None, "reason": "no such file or directory"}])


def _open_source(path: Any, source: Any, scope: Any) -> tuple[str, str, dict[str, Any]]:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(f"path must be a file path, got {path!r}")
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"path {os.fspath(path)!r} is not a readable file")
    resolved = str(p.resolve())
    src = resolved if source is None else source
    _check(scope, src)
    digest = content_hash(resolved)
    if digest is None:
        raise PermissionError(f"path {resolved!r} cannot be read")
    return resolved, src, {"source": src, "path": resolved, "content_hash": digest}


def ingest_file(
    substrate: Any,
    path: str | os.PathLike[str],
    *,
    kind: str | None = None,
    source: str | None = None,
    scope: str = DEFAULT_SCOPE,
    progress: Progress | None = None,
) -> IngestReceipt:
    """Ingest a .txt/.md (a text item per non-blank line), .jsonl (text or record per line) or .csv (record per row).

    ``kind`` forces the format (text, jsonl, csv, trace). Ids come from (source, 1-based line), so a re-ingest
    revises the rows whose content changed and appends nothing for the others (``.unchanged``); every item's
    provenance carries the file's content_hash; a bad line lands on ``.failed``.
    """
    missing = _missing(path, source, scope)  # first: a path that is not there has no format to infer
    if missing is not None:
        return missing
    fmt = detect_format(path, kind)
    if fmt == "trace":
        return ingest_traces(substrate, path, source=source, scope=scope, progress=progress)
    resolved, src, prov = _open_source(path, source, scope)
    with BatchWriter(substrate, scope, src, progress) as batch, open(resolved, "rb") as fh:
        rows = parse_text_lines(fh) if fmt == "text" else parse_jsonl(fh) if fmt == "jsonl" else parse_csv(fh)
        for line, value in rows:
            if isinstance(value, Bad):
                batch.fail(line, value.reason)
                continue
            row_prov = {**prov, "position": line}
            is_doc = fmt == "text" or isinstance(value, str) or document_shaped(value)
            build = _doc_item(value, scope, row_prov) if is_doc else _record_item(value, scope, row_prov, None)
            batch.add(line, line, build)
        return batch.finish()


def document_shaped(value: Any) -> bool:
    """Whether a parsed .jsonl value is a document object: one with a "text" (its other fields become the item's
    payload, so a corpus row such as {"_id", "title", "text"} is a searchable text item)."""
    return isinstance(value, Mapping) and "text" in value


def ingest_traces(
    substrate: Any,
    jsonl_path: str | os.PathLike[str],
    *,
    source: str | None = None,
    scope: str = DEFAULT_SCOPE,
    progress: Progress | None = None,
) -> IngestReceipt:
    """Index a .jsonl of {"input", "answer"/"label"/"call"} rows as kind="trace" items; bad rows -> .failed."""
    missing = _missing(jsonl_path, source, scope)
    if missing is not None:
        return missing
    resolved, src, prov = _open_source(jsonl_path, source, scope)
    with BatchWriter(substrate, scope, src, progress) as batch, open(resolved, "rb") as fh:
        for line, row in parse_jsonl(fh):
            if isinstance(row, Bad):
                batch.fail(line, row.reason)
                continue

            def build(item_id: str, row: Any = row, line: int = line) -> SubstrateItem:
                body, payload = trace_fields(row)
                return SubstrateItem(
                    kind="trace",
                    text=body,
                    payload=payload,
                    scope=scope,
                    id=item_id,
                    provenance={**prov, "position": line},
                )

            batch.add(line, line, build)
        return batch.finish()


def _manifests(root: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "manifest.json" in filenames:
            yield Path(dirpath) / "manifest.json"


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"unreadable manifest: {exc.strerror or exc}") from None
    try:
        manifest = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    if not isinstance(manifest, dict):  # checked before any .get(): a list or a number is not a manifest
        raise ValueError(f"a manifest must be a JSON object, got {type(manifest).__name__}")
    return manifest


def _manifest_parent(manifest: dict[str, Any]) -> Any:
    """The artifact this one derives from, as a manifest names it: top-level ``parent``, else ``meta.parent``."""
    meta = manifest.get("meta")
    parent = manifest.get("parent")
    if parent is None and isinstance(meta, dict):
        parent = meta.get("parent")
    return parent


def ingest_artifacts(
    substrate: Any,
    registry_root: str | os.PathLike[str],
    *,
    scope: str = DEFAULT_SCOPE,
    progress: Progress | None = None,
) -> IngestReceipt:
    """Index every artifact directory (one holding manifest.json) under registry_root; bad manifests -> .failed."""
    require_name(scope, "scope")
    if not isinstance(registry_root, (str, os.PathLike)):
        raise InvalidArgument(f"registry_root must be a directory path, got {registry_root!r}")
    missing = _missing(registry_root)
    if missing is not None:  # nothing deployed there: no artifacts
        return missing
    if not Path(registry_root).is_dir():
        raise InvalidArgument(f"registry_root must be a directory, got {registry_root!r}")
    root = Path(registry_root).resolve()
    with BatchWriter(substrate, scope, str(root), progress) as batch:
        for manifest_path in _manifests(root):
            directory = str(manifest_path.parent)

            def build(item_id: str, manifest_path: Path = manifest_path, directory: str = directory) -> SubstrateItem:
                manifest = _read_manifest(manifest_path)
                prov: dict[str, Any] = {
                    "source": directory,
                    "manifest_path": str(manifest_path),
                    "content_hash": content_hash(manifest_path),
                }
                if isinstance(manifest.get("lineage"), dict):
                    prov["lineage"] = manifest["lineage"]
                parent = _manifest_parent(manifest)
                if parent is not None:
                    prov["parent"] = parent
                if artifact_kind(manifest) is not None:
                    prov["artifact_kind"] = artifact_kind(manifest)
                name = manifest["name"] if isinstance(manifest.get("name"), str) else manifest_path.parent.name
                return SubstrateItem(
                    kind="artifact",
                    text=manifest_summary(name, manifest),
                    payload={"ref": directory},
                    provenance=prov,
                    scope=scope,
                    id=item_id,
                )

            batch.add(None, "manifest", build, source=directory, where=str(manifest_path))
        return batch.finish()
