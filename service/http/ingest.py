"""POST /v1/ingest: a JSONL upload, read line by line from the request stream and ingested in batches."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import AfterValidator

from service.http.auth import Caller, CallerDep
from service.http.errors import ProblemError
from service.http.models import IngestOut, storable
from service.ingest.batch import IngestFailure
from service.ingest.sources import IngestReceipt, document_shaped, ingest_documents, ingest_records

__all__ = ["router"]

LINES_PER_BATCH = 2000  # lines handed to the library per call (it appends them in one transaction per batch)
_SOURCE_PREFIX = "http:"

router = APIRouter(tags=["ingest"])

_BODY = {
    "requestBody": {
        "required": True,
        "description": 'JSON Lines: a string or {"text", "tags"?, "payload"?} per line becomes a text item; '
        "any other object (or array) a record.",
        "content": {
            "application/x-ndjson": {"schema": {"type": "string"}},
            "text/plain": {"schema": {"type": "string"}},
        },
    }
}


def _parse(line: int, raw: bytes, source: str, failed: list[dict[str, Any]]) -> Any:
    try:
        text = raw.decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError as exc:
        failed.append({"source": source, "line": line, "reason": f"not valid UTF-8 (byte {exc.start})"})
        return None
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        failed.append({"source": source, "line": line, "reason": f"invalid JSON: {exc.msg} (column {exc.colno})"})
    except (ValueError, RecursionError) as exc:
        failed.append({"source": source, "line": line, "reason": f"invalid JSON: {exc}"})
    return None


def _ingest_batch(
    caller: Caller, rows: Sequence[tuple[int, bytes]], scope: str, source: str, failed: list[dict[str, Any]]
) -> IngestReceipt:
    """Parse one batch of lines; documents and records go to the library's bulk ingest (ids keyed on line)."""
    docs: list[Any] = []
    doc_lines: list[int] = []
    records: list[Any] = []
    record_lines: list[int] = []
    for line, raw in rows:
        value = _parse(line, raw, source, failed)
        if value is None:
            continue
        if isinstance(value, str) or document_shaped(value):
            docs.append(value)
            doc_lines.append(line)
        else:
            records.append(value)
            record_lines.append(line)
    receipt = IngestReceipt()
    if docs:
        receipt = receipt.merge(ingest_documents(caller.store, docs, source=source, scope=scope, indices=doc_lines))
    if records:
        receipt = receipt.merge(ingest_records(caller.store, records, source=source, scope=scope, indices=record_lines))
    return receipt


@router.post("/ingest", response_model=IngestOut, summary="Upload JSON Lines", openapi_extra=_BODY)
async def ingest(
    caller: CallerDep,
    request: Request,
    scope: Annotated[
        str | None, Query(max_length=512, description="target scope (default: home)"), AfterValidator(storable)
    ] = None,
    source: Annotated[
        str | None,
        Query(
            max_length=256,
            description="source label; re-uploading the same "
            "source into the same scope revises its items (default: a fresh label)",
        ),
        AfterValidator(storable),
    ] = None,
) -> IngestOut:
    """Stream the body line by line; each batch is secret-guarded and appended in one transaction; bad lines fail alone."""
    target = scope if scope is not None else caller.name
    if not target.strip():
        raise ProblemError(422, "scope must be a non-empty string")
    caller.require_write_target(target)
    label = source if source is not None else f"upload-{uuid.uuid4().hex[:12]}"
    if not label.strip():
        raise ProblemError(422, "source must be a non-empty label")
    # A label, never a server path: the library hashes a source that names a readable file.
    src = _SOURCE_PREFIX + label
    if os.path.exists(src):
        raise ProblemError(422, f"source {label!r} is not usable as a label")
    # The server's body limit (serve --max-body) bounds each line: a longer one is reported failed, never buffered.
    max_line: int = request.app.state.max_body
    receipt = IngestReceipt()
    failed: list[dict[str, Any]] = []
    batch: list[tuple[int, bytes]] = []
    pending, line, skipping = b"", 0, False

    async def flush() -> None:
        nonlocal receipt, batch
        if batch:
            rows, batch = batch, []
            receipt = receipt.merge(await run_in_threadpool(_ingest_batch, caller, rows, target, src, failed))

    async for chunk in request.stream():
        parts = (pending + chunk).split(b"\n")
        pending = parts.pop()
        for part in parts:
            line += 1
            if skipping or len(part.removesuffix(b"\r")) > max_line:
                failed.append({"source": src, "line": line, "reason": f"line longer than {max_line} bytes"})
                skipping = False
                continue
            batch.append((line, part))
        if len(pending) > max_line:
            pending, skipping = b"", True
        if len(batch) >= LINES_PER_BATCH:
            await flush()
    if pending or skipping:
        line += 1
        if skipping or len(pending) > max_line:
            failed.append({"source": src, "line": line, "reason": f"line longer than {max_line} bytes"})
        else:
            batch.append((line, pending))
    await flush()
    receipt.failed = sorted([*receipt.failed, *map(IngestFailure, failed)], key=lambda f: f["line"] or 0)
    return IngestOut(**receipt.as_dict(), source=label)
