"""Freshness audits: is an item still backed by what it was ingested from, and is it recent enough?

The staleness signals, each named in ``Freshness.signals``:

- ``missing``: the item does not exist (STALE).
- ``moved``: the file or directory it references no longer exists (STALE). The reference is the first of
  ``payload["ref"]``, ``payload["path"]`` (any non-empty string), then ``provenance["path"]``,
  ``provenance["source"]`` (only when path-like: holding a ``/`` or ``\\``, since a source may be a bare label).
- ``changed``: the referenced file's bytes no longer hash to the recorded ``provenance["content_hash"]`` (STALE).
- ``unreadable``: the referenced path exists and a hash was recorded, but it cannot be read as file bytes (a
  directory, no permission) so the hash cannot be checked (UNVERIFIABLE).
- ``superseded``: ``provenance["superseded_by"]`` names a replacement, or another live item's
  ``provenance["supersedes"]`` names this one (STALE).
- ``aged``: older than ``max_age_s`` (STALE).
- ``invalid timestamp``: ``created_at`` is not a finite number, or lies in the future of ``now`` (STALE).

Precedence (MXR-080-0267): STALE outranks UNVERIFIABLE outranks FRESH.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from sqlalchemy import text

from projections import loads
from service.domain.validation import InvalidArgument, require_finite

__all__ = ["Freshness", "FreshnessState", "check_freshness", "content_hash", "freshness_report"]

_CHUNK = 1 << 20
_PAGE = 2000


class FreshnessState(StrEnum):
    """The three-state freshness verdict (MXR-080-0267): never a bare boolean."""

    FRESH = "fresh"
    STALE = "stale"
    UNVERIFIABLE = "unverifiable"


@dataclass
class Freshness:
    """One item's freshness verdict: a three-state ``state``, every signal named in ``signals``."""

    item_id: str
    state: FreshnessState
    signals: list[str] = field(default_factory=list)
    age_s: float = 0.0

    @property
    def fresh(self) -> bool:
        """True iff state is FRESH (STALE and UNVERIFIABLE both read False)."""
        return self.state is FreshnessState.FRESH

    def as_dict(self) -> dict[str, Any]:
        """A JSON-serializable freshness verdict."""
        return {"item_id": self.item_id, "state": self.state.value, "signals": list(self.signals), "age_s": self.age_s}


def content_hash(path: str | os.PathLike[str]) -> str | None:
    """The full, algorithm-labelled digest of a file's bytes ("sha256:<64 hex>"), or None if unreadable."""
    try:
        if not os.path.isfile(path):  # a directory, a FIFO or a device is not "a file's bytes"
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                digest.update(chunk)
    except (OSError, TypeError, ValueError):
        return None
    return "sha256:" + digest.hexdigest()


def _path_like(value: Any) -> bool:
    return isinstance(value, str) and ("/" in value or "\\" in value)


def _referenced_path(payload: dict[str, Any], provenance: dict[str, Any]) -> str | None:
    """The file an item points at: payload ref/path first, then a path-like provenance path/source."""
    for key in ("ref", "path"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    for key in ("path", "source"):
        value = provenance.get(key)
        if _path_like(value):
            return str(value)
    return None


def _check_args(max_age_s: Any, now: Any) -> tuple[float | None, float]:
    # Arguments are the caller's: a NaN/infinite/negative value is a bug and raises, never clamps.
    if max_age_s is not None:
        max_age_s = require_finite(max_age_s, "max_age_s", minimum=0.0)
    if now is None:
        return max_age_s, time.time()
    return max_age_s, require_finite(now, "now", minimum=None)


class _Auditor:
    """Applies the signals to raw item documents, hashing each referenced file once per sweep."""

    def __init__(self, max_age_s: float | None, now: float, superseding: dict[str, list[str]]) -> None:
        self.max_age_s = max_age_s
        self.now = now
        self.superseding = superseding
        self._hashes: dict[str, tuple[bool, str | None]] = {}

    def _probe(self, path: str) -> tuple[bool, str | None]:
        if path not in self._hashes:
            self._hashes[path] = (os.path.lexists(path), content_hash(path))
        return self._hashes[path]

    def audit(self, item_id: str, doc: Any) -> Freshness:
        if not isinstance(doc, dict):
            return Freshness(item_id, FreshnessState.STALE, ["invalid timestamp: unreadable item document"])
        stale: list[str] = []
        open_questions: list[str] = []
        age = self._age(doc, stale)
        payload: dict[str, Any] = doc["payload"] if isinstance(doc.get("payload"), dict) else {}
        prov: dict[str, Any] = doc["provenance"] if isinstance(doc.get("provenance"), dict) else {}
        ref = _referenced_path(payload, prov)
        recorded = prov.get("content_hash")
        if ref is not None:
            exists, actual = self._probe(ref)
            if not exists:
                stale.append(f"moved: {ref} no longer exists")
            elif isinstance(recorded, str) and recorded:
                if actual is None:
                    open_questions.append(f"unreadable: {ref} cannot be read to check its recorded hash (unverifiable)")
                elif actual != recorded:
                    stale.append(f"changed: {ref} now hashes to {actual}, recorded {recorded}")
        successors = list(self.superseding.get(item_id, []))
        by = prov.get("superseded_by")
        if isinstance(by, str) and by:
            successors.insert(0, by)
        elif isinstance(by, list):
            successors[:0] = [str(b) for b in by if b]
        if successors:
            stale.append(f"superseded: by {', '.join(dict.fromkeys(successors))}")
        if self.max_age_s is not None and age > self.max_age_s:
            stale.append(f"aged: {age:.0f}s old > max_age_s {self.max_age_s:g} (a reason to review, not proof)")
        state = (
            FreshnessState.STALE if stale else FreshnessState.UNVERIFIABLE if open_questions else FreshnessState.FRESH
        )
        return Freshness(item_id, state, stale + open_questions, age)

    def _age(self, doc: dict[str, Any], stale: list[str]) -> float:
        created = doc.get("created_at")
        if isinstance(created, bool) or not isinstance(created, (int, float)) or not math.isfinite(created):
            stale.append(f"invalid timestamp: created_at is {created!r}, not a finite timestamp")
            return 0.0
        if created > self.now:
            stale.append(f"invalid timestamp: created_at {created} is future-dated (now is {self.now})")
        return self.now - float(created)


_SUPERSEDES = (
    "SELECT id, doc->'provenance'->>'supersedes' FROM items "
    "WHERE doc->'provenance' ? 'supersedes' AND jsonb_typeof(doc->'provenance'->'supersedes') = 'string'"
)


def _superseding(conn: Any, target: str | None = None) -> dict[str, list[str]]:
    sql, params = _SUPERSEDES, {}
    if target is not None:
        sql += " AND doc->'provenance'->>'supersedes' = :target"
        params["target"] = target
    out: dict[str, list[str]] = {}
    for successor, old in conn.execute(text(sql + " ORDER BY pos"), params):
        out.setdefault(old, []).append(successor)
    return out


def check_freshness(
    substrate: Any, item_id: str, *, max_age_s: float | None = None, now: float | None = None
) -> Freshness:
    """Audit one item for the staleness signals; a three-state verdict (MXR-080-0267). Missing item -> STALE."""
    max_age_s, now = _check_args(max_age_s, now)
    if not isinstance(item_id, str) or not item_id:
        raise InvalidArgument(f"item_id must be a non-empty string, got {item_id!r}")
    with substrate.engine.connect() as c:
        doc = c.execute(text("SELECT doc::text FROM items WHERE id = :id"), {"id": item_id}).scalar()
        if doc is None:
            return Freshness(item_id, FreshnessState.STALE, ["missing: no such item"])
        superseding = _superseding(c, item_id)
    return _Auditor(max_age_s, now, superseding).audit(item_id, _safe_loads(doc))


def _safe_loads(doc: str) -> Any:
    try:
        return loads(doc)
    except ValueError:
        return None


def _rows(substrate: Any, scope: str | None) -> Iterator[tuple[str, str]]:
    # Keyset pages over pos: memory stays flat however many items the sweep covers.
    where, params = "pos > :after", {"after": -1}
    if scope is not None:
        where += " AND scope = :scope"
        params["scope"] = scope  # type: ignore[assignment]
    sql = text(f"SELECT id, doc::text, pos FROM items WHERE {where} ORDER BY pos LIMIT {_PAGE}")
    while True:
        with substrate.engine.connect() as c:
            rows = c.execute(sql, params).all()
        for r in rows:
            yield r[0], r[1]
        if len(rows) < _PAGE:
            return
        params["after"] = rows[-1][2]


def freshness_report(
    substrate: Any, *, max_age_s: float | None = None, scope: str | None = None, now: float | None = None
) -> dict[str, Any]:
    """Sweep the store: {n_items, n_fresh, n_stale, n_unverifiable, stale, unverifiable, signals}."""
    max_age_s, now = _check_args(max_age_s, now)
    if scope is not None and (not isinstance(scope, str) or not scope.strip()):
        raise InvalidArgument(f"scope must be a non-empty string or None, got {scope!r}")
    with substrate.engine.connect() as c:
        superseding = _superseding(c)
    auditor = _Auditor(max_age_s, now, superseding)
    report: dict[str, Any] = {
        "n_items": 0,
        "n_fresh": 0,
        "n_stale": 0,
        "n_unverifiable": 0,
        "stale": [],
        "unverifiable": [],
        "signals": {},
    }
    for item_id, doc in _rows(substrate, scope):
        verdict = auditor.audit(item_id, _safe_loads(doc))
        report["n_items"] += 1
        report[f"n_{verdict.state.value}"] += 1
        if verdict.state is not FreshnessState.FRESH:
            report[verdict.state.value].append(item_id)
            report["signals"][item_id] = verdict.signals
    return report
