"""Event types (frozen, past tense), their registry, canonical JSON and content addresses."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, ClassVar

from projections.canonical import canonical_json, canonical_time, event_address, item_digest
from service.domain.validation import InvalidArgument

__all__ = [
    "AccessGranted",
    "AccessRevoked",
    "ApproverGranted",
    "ApproverRevoked",
    "DomainEvent",
    "EVENT_TYPES",
    "HASH_VERSION",
    "EvidenceAssimilated",
    "EvidenceRetracted",
    "ItemPublished",
    "ItemPut",
    "ItemRemoved",
    "ItemUpdated",
    "ItemsMerged",
    "NewEvent",
    "PromotionApproved",
    "PromotionProposed",
    "PromotionRejected",
    "StoredEvent",
    "canonical_json",
    "canonical_time",
    "event_address",
    "item_digest",
    "normalize_json",
    "stored_address",
]

EVENT_TYPES: dict[str, type[DomainEvent]] = {}
# How new events are addressed: 2 puts recorded_at under the address; 1 (events written before) left it out.
HASH_VERSION = 2


class DomainEvent:
    """Base of every event payload; subclasses register themselves by class name."""

    type_name: ClassVar[str] = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.type_name = cls.__name__
        EVENT_TYPES[cls.__name__] = cls

    def to_data(self) -> dict[str, Any]:
        # Shallow on purpose: the appender normalizes (and so deep-copies) the data right after.
        return {name: getattr(self, name) for name in _field_names(type(self))}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> DomainEvent:
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names})


_FIELD_NAMES: dict[type[DomainEvent], tuple[str, ...]] = {}


def _field_names(cls: type[DomainEvent]) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    return names


# Item-changing events carry the resulting item state ("item"), so projections stay pure folds.
@dataclass(frozen=True, slots=True)
class ItemPut(DomainEvent):
    item: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ItemUpdated(DomainEvent):
    item: dict[str, Any]
    fields: list[str]


@dataclass(frozen=True, slots=True)
class ItemRemoved(DomainEvent):
    id: str


@dataclass(frozen=True, slots=True)
class ItemPublished(DomainEvent):
    item: dict[str, Any]
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ItemsMerged(DomainEvent):
    item: dict[str, Any]
    removed: str
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PromotionProposed(DomainEvent):
    item: dict[str, Any]
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PromotionApproved(DomainEvent):
    item: dict[str, Any]
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PromotionRejected(DomainEvent):
    item: dict[str, Any]
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EvidenceAssimilated(DomainEvent):
    item: dict[str, Any]
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EvidenceRetracted(DomainEvent):
    item: dict[str, Any]
    entry: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AccessGranted(DomainEvent):
    principal: str
    scope: str
    mode: str


@dataclass(frozen=True, slots=True)
class AccessRevoked(DomainEvent):
    principal: str
    scope: str


@dataclass(frozen=True, slots=True)
class ApproverGranted(DomainEvent):
    who: str
    scope: str
    by: str
    bootstrap: bool = False


@dataclass(frozen=True, slots=True)
class ApproverRevoked(DomainEvent):
    who: str
    scope: str
    by: str


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event about to be appended: its stream, payload, scope and the version the writer expects."""

    stream: str
    event: DomainEvent
    scope: str | None = None
    # None: append after whatever is there (a blind, idempotent-to-retry write);
    # an int: the stream must be exactly at this version or the append fails with ConcurrencyError.
    expected_version: int | None = None
    # True when the payload was already made JSON-native by normalize_json (skips a second deep copy).
    normalized: bool = False


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One row of the log."""

    seq: int
    stream: str
    version: int
    type: str
    data: dict[str, Any]
    principal: str
    scope: str | None
    recorded_at: datetime | None
    event_id: str
    prev: str | None
    hash_version: int = HASH_VERSION

    def as_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["recorded_at"] = self.recorded_at.isoformat() if self.recorded_at else None
        return d


def stored_address(e: StoredEvent) -> str:
    """The content address ``e`` must have, by its hash version (version 2 needs its recorded_at)."""
    when = None
    if e.hash_version >= 2:
        if e.recorded_at is None:
            raise ValueError(f"event {e.seq}: hash version {e.hash_version} needs its recorded_at")
        when = canonical_time(e.recorded_at)
    return event_address(
        stream=e.stream,
        version=e.version,
        type=e.type,
        data=e.data,
        principal=e.principal,
        scope=e.scope,
        prev=e.prev,
        recorded_at=when,
    )


def _normalize(value: Any, path: str) -> Any:
    # Mirror what jsonb gives back, so the hash of what we write equals the hash of what we read.
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value!r} is not representable in JSON")
        if value == 0.0:
            return 0.0
        if value.is_integer() and abs(value) >= 1e16:
            return int(value)
        return value
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{path}: NUL characters cannot be stored")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{path}: not valid UTF-8 ({exc.reason})") from None
        return value if type(value) is str else str.__str__(value)  # the characters, whatever its __str__ says
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidArgument(f"{path}: keys must be strings, got {k!r}")
            out[_normalize(k, path)] = _normalize(v, f"{path}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        return [_normalize(v, f"{path}[{i}]") for i, v in enumerate(value)]
    raise InvalidArgument(f"{path}: {type(value).__name__} is not JSON-serializable")


class _Unusual(Exception):
    """Raised by the fast normalizer on anything it does not handle; the path-tracking one then decides."""


def _normalize_fast(value: Any) -> Any:
    # The same result as _normalize for plain JSON types, without building a path string per node.
    t = type(value)
    if t is str:
        if "\x00" in value or not (value.isascii() or _utf8(value)):
            raise _Unusual
        return value
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str or "\x00" in k or not (k.isascii() or _utf8(k)):
                raise _Unusual
            out[k] = _normalize_fast(v)
        return out
    if t is list or t is tuple:
        return [_normalize_fast(v) for v in value]
    if t is int or t is bool or value is None:
        return value
    if t is float and math.isfinite(value) and not (value.is_integer() and abs(value) >= 1e16):
        return 0.0 if value == 0.0 else value
    if isinstance(value, str):  # a str subclass (a generated id, an enum) is stored as the plain string
        return _normalize_fast(str.__str__(value))
    raise _Unusual


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def normalize_json(value: Any, path: str = "data") -> Any:
    """A JSON-native deep copy of ``value`` as PostgreSQL jsonb will return it; ValueError naming the path."""
    try:
        try:
            return _normalize_fast(value)
        except _Unusual:
            return _normalize(value, path)
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply to store") from None
