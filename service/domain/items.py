"""SubstrateItem: one typed, provenanced, scoped item, with validation and its JSON form."""

from __future__ import annotations

import copy
import math
import time
import uuid
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["DEFAULT_SCOPE", "MODALITIES", "SubstrateItem"]

MODALITIES: tuple[str, ...] = (
    "text",
    "record",
    "image",
    "signal",
    "graph",
    "field",
    "event_stream",
    "artifact",
    "trace",
    "context",
)
DEFAULT_SCOPE = "local"


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def json_time(value: float) -> float | str:
    """A time as strict JSON holds it: the number, or "NaN" / "Infinity" / "-Infinity"."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


class _GeneratedId(str):
    """An id this process generated (a plain str to everyone else): the bulk append need not look it up."""

    __slots__ = ()


def _new_id() -> str:
    # 64 random bits, as the spec's store generates them: short enough that a tight context budget still fits an
    # item's [kind:id] tag, and a collision among 10^9 items has odds of about 1 in 40,000.
    return _GeneratedId(uuid.uuid4().hex[:16])


def is_generated_id(value: object) -> bool:
    """Whether ``value`` is an id this process generated for a new item (a hint only: the log's UNIQUE(stream,
    version) still refuses a collision, and the append then takes the locked path)."""
    return type(value) is _GeneratedId


def _id_list(value: Any, name: str) -> list[str]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValueError(f"SubstrateItem.{name} must be a list of strings, got {type(value).__name__}")
    out = list(value)
    for v in out:
        if not isinstance(v, str) or not v:
            raise ValueError(f"SubstrateItem.{name} entries must be non-empty strings, got {v!r}")
    return out


@dataclass
class SubstrateItem:
    """One typed, provenanced, scoped item; ``links`` are untyped relations, ``derived_from`` is ancestry."""

    kind: str
    text: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    scope: str = DEFAULT_SCOPE
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    derived_from: list[str] = field(default_factory=list)
    id: str = field(default_factory=_new_id)
    created_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.kind not in MODALITIES:
            raise ValueError(f"SubstrateItem.kind must be one of {MODALITIES}, got {self.kind!r}")
        if self.text is None:
            self.text = ""
        if not isinstance(self.text, str):
            raise ValueError(f"SubstrateItem.text must be a string, got {type(self.text).__name__}")
        for name in ("payload", "provenance"):
            value = getattr(self, name)
            if value is None:
                setattr(self, name, {})
            elif not isinstance(value, dict):
                raise ValueError(f"SubstrateItem.{name} must be a dict, got {type(value).__name__}")
        if not isinstance(self.scope, str) or not self.scope.strip():
            raise ValueError(f"SubstrateItem.scope must be a non-empty string, got {self.scope!r}")
        if isinstance(self.tags, (str, bytes)) or not isinstance(self.tags, (list, tuple, set, frozenset)):
            raise ValueError(f"SubstrateItem.tags must be a list of strings, got {type(self.tags).__name__}")
        self.tags = list(self.tags)
        for t in self.tags:
            if not isinstance(t, str):
                raise ValueError(f"SubstrateItem.tags entries must be strings, got {t!r}")
        self.links = _id_list(self.links, "links")
        self.derived_from = _id_list(self.derived_from, "derived_from")
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError(f"SubstrateItem.id must be a non-empty string, got {self.id!r}")
        if isinstance(self.created_at, str) and self.created_at in _NON_FINITE:
            self.created_at = float(self.created_at)  # as stored: JSON has no NaN or infinity (see json_view)
        if isinstance(self.created_at, bool) or not isinstance(self.created_at, (int, float)):
            raise ValueError(f"SubstrateItem.created_at must be a number, got {self.created_at!r}")
        # A NaN or infinite time is kept: it is data that check_freshness() audits and reports STALE.
        self.created_at = float(self.created_at)

    def to_json(self) -> dict[str, Any]:
        """Return this item as a JSON-serializable dictionary (an independent deep copy)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "payload": copy.deepcopy(self.payload),
            "provenance": copy.deepcopy(self.provenance),
            "scope": self.scope,
            "tags": list(self.tags),
            "links": list(self.links),
            "derived_from": list(self.derived_from),
            "created_at": self.created_at,
        }

    def json_view(self) -> dict[str, Any]:
        """The ``to_json`` dictionary sharing this item's containers (no copy), strictly JSON: a non-finite
        ``created_at`` as "NaN", "Infinity" or "-Infinity" (how it is stored; the constructor reads it back)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "payload": self.payload,
            "provenance": self.provenance,
            "scope": self.scope,
            "tags": self.tags,
            "links": self.links,
            "derived_from": self.derived_from,
            "created_at": json_time(self.created_at),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SubstrateItem:
        """Build an item from its serialized dict; unknown keys or bad values raise ValueError."""
        if not isinstance(d, dict):
            raise ValueError(f"SubstrateItem.from_json expects a dict, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in d if k not in known)
        if unknown:
            raise ValueError(f"SubstrateItem.from_json: unknown field(s) {unknown}")
        if "kind" not in d:
            raise ValueError("SubstrateItem.from_json: missing required field 'kind'")
        return cls(**copy.deepcopy(d))

    def copy(self) -> SubstrateItem:
        """An independent deep copy."""
        return copy.deepcopy(self)
