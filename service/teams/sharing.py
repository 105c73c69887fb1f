"""Publishing and merging as events (ItemPublished / ItemsMerged), and the history and revisions they leave."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from projections import loads
from service.domain.errors import ConcurrencyError
from service.domain.events import ItemPublished, ItemRemoved, ItemsMerged, NewEvent
from service.domain.items import SubstrateItem
from service.domain.retry import retries
from service.domain.validation import InvalidArgument, require_name
from service.store import records
from service.teams.access import PUBLIC, AccessPolicy, require_principal

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = [
    "LiveItem",
    "MergeStrategy",
    "acting_principal",
    "history",
    "item_ids",
    "live_items",
    "merge_versions",
    "publish",
    "published_state",
    "revision",
    "version_of",
]

# Where an item's share version lives (a dedicated key: a caller's own provenance "version" is left alone).
SHARE_VERSION = "share_version"
# The item's own record of its publishes and merges (entries as history() shows them, each naming the revision).
VERSION_HISTORY = "version_history"
# Revision digests are stored as "sha256:<64 hex>"; history() shows the bare hex, revision() takes either form.
_DIGEST_PREFIX = "sha256:"
_BARE_DIGEST = re.compile(r"[0-9a-f]{64}")


class MergeStrategy(StrEnum):
    """Which side's text/payload survives a merge (MXR-080-0266): a closed vocabulary; anything else raises."""

    LATEST = "latest"  # the side with the higher share version wins (the kept side on a tie)
    KEEP = "keep"  # the kept side always wins


@dataclasses.dataclass(frozen=True)
class LiveItem:
    """A live item as a command sees it before deciding: its state, that state's digest and its stream version."""

    item: SubstrateItem
    digest: str  # the content address of this exact state (resolvable with revision())
    version: int  # the item stream's version, for the optimistic check


def live_items(store: Substrate, ids: Sequence[str]) -> dict[str, LiveItem]:
    """The live rows of ``ids`` in one query."""
    sql = text("SELECT id, doc::text, digest, version FROM items WHERE id = ANY(CAST(:ids AS text[]))")
    with store.engine.connect() as c:
        rows = c.execute(sql, {"ids": list(ids)}).all()
    return {r[0]: LiveItem(SubstrateItem(**loads(r[1])), r[2], int(r[3])) for r in rows}


def item_ids(ids: Any) -> list[str]:
    """``ids`` as a list of distinct item ids, in order (a single string is refused: it is not a list of ids)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple, set, frozenset)):
        raise InvalidArgument(f"ids must be a list of item ids, got {type(ids).__name__}")
    return list(dict.fromkeys(require_name(i, "item id") for i in ids))


def acting_principal(by: Any, name: str = "by") -> str:
    """``by`` if it is a non-blank string, else InvalidArgument (governance's check; sharing refuses via access)."""
    if not isinstance(by, str) or not by.strip():
        raise InvalidArgument(f"{name} must be a non-empty, authenticated principal, got {by!r}")
    return by


def version_of(item: Any) -> int:
    """The share version of an item (0 if never published): a monotonic counter bumped by each publish."""
    prov = item.get("provenance") if isinstance(item, dict) else getattr(item, "provenance", None)
    value = prov.get(SHARE_VERSION, 0) if isinstance(prov, dict) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def published_state(live: LiveItem, to: str, by: str, **entry_extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The item re-scoped into ``to`` with a bumped share version, and its history entry (pure)."""
    item = live.item
    version = version_of(item) + 1
    entry = {
        "action": "publish",
        "by": by,
        "from": item.scope,
        "to": to,
        "version": version,
        "revision": live.digest,
        **entry_extra,
    }
    provenance = {
        **item.provenance,
        "published_by": by,
        "published_from": item.scope,
        SHARE_VERSION: version,
        VERSION_HISTORY: _with_entry(item.provenance, entry),
    }
    published = dataclasses.replace(item, scope=to, provenance=provenance)
    return published.to_json(), entry


def _with_entry(provenance: dict[str, Any], entry: dict[str, Any]) -> list[Any]:
    """The item's version history with ``entry`` appended (as history() shows it)."""
    kept = provenance.get(VERSION_HISTORY)
    return [*(kept if isinstance(kept, list) else []), _shown(entry)]


def publish(
    substrate: Substrate,
    ids: Sequence[str],
    *,
    to: str = PUBLIC,
    by: str,
    from_scope: str | None = None,
    policy: AccessPolicy | None = None,
) -> list[str]:
    """Share items into ``to`` (MXR-080-0264/0265): write on ``to`` checked up front, read per item; one append."""
    to = require_name(to, "to")
    by = require_principal(by, to, "write", detail="pass by=<principal>")
    wanted = item_ids(ids)
    if from_scope is not None:
        require_name(from_scope, "from_scope")
    policy = AccessPolicy() if policy is None else policy
    policy.require_write(by, to)
    for _ in retries():
        live = live_items(substrate, wanted)
        # One decision for the distinct source scopes (one query even for a live stored policy).
        sources = {row.item.scope for row in live.values()}
        readable = policy.readable(by, sources)
        # Publishing takes an item out of its scope: on a principal-bound handle that needs write there too (the
        # write door's rule); a trusted store keeps the spec's read check alone.
        movable = {s for s in sources if substrate.allows("write", s)}
        events, done = [], []
        for item_id in wanted:
            row = live.get(item_id)
            # Skipped, not fatal: missing ids, a from_scope mismatch, and items `by` may not read.
            if row is None or (from_scope is not None and row.item.scope != from_scope):
                continue
            if row.item.scope not in readable or row.item.scope not in movable:
                continue
            data, entry = published_state(row, to, by)
            events.append(
                NewEvent(
                    item_id,
                    ItemPublished(item=substrate.event_item(SubstrateItem(**data), fresh=True), entry=entry),
                    scope=to,
                    expected_version=row.version,
                )
            )
            done.append(item_id)
        try:
            if events:
                substrate.append(events, by=by)
        except ConcurrencyError:
            continue
        return done
    raise ConcurrencyError(wanted[0] if wanted else "", -1, "publish kept colliding with other writers; gave up")


def _union(*lists: Sequence[str], drop: frozenset[str] | set[str] = frozenset()) -> list[str]:
    return [x for x in dict.fromkeys(x for xs in lists for x in xs) if x not in drop]


def _merged(keep: LiveItem, other: LiveItem, by: str, prefer: MergeStrategy) -> tuple[dict[str, Any], dict[str, Any]]:
    k, o = keep.item, other.item
    vk, vo = version_of(k), version_of(o)
    winner = o if prefer is MergeStrategy.LATEST and vo > vk else k
    version = max(vk, vo) + 1
    ids = {k.id, o.id}
    entry = {
        "action": "merge",
        "by": by,
        "from": o.scope,
        "to": k.scope,
        "version": version,
        "prefer": prefer.value,
        "winner": winner.id,
        "parents": [
            {"id": k.id, "revision": keep.digest, "scope": k.scope, "version": vk},
            {"id": o.id, "revision": other.digest, "scope": o.scope, "version": vo},
        ],
    }
    provenance = {
        **k.provenance,
        SHARE_VERSION: version,
        "merged_from": o.id,
        "merged_by": by,
        VERSION_HISTORY: _with_entry(k.provenance, entry),
    }
    merged = dataclasses.replace(
        k,
        text=winner.text,
        payload=winner.payload,
        provenance=provenance,
        tags=_union(k.tags, o.tags),
        links=_union(k.links, o.links, drop=ids),
        derived_from=_union(k.derived_from, o.derived_from, drop=ids),
    )
    return merged.to_json(), entry


def _strategy(prefer: MergeStrategy | str) -> MergeStrategy:
    """``prefer`` as a MergeStrategy; an unknown value raises ValueError (never a silent fallback)."""
    try:
        return MergeStrategy(prefer)
    except ValueError:
        raise ValueError(f"prefer must be one of {[m.value for m in MergeStrategy]}, got {prefer!r}") from None


def _check_merge(
    keep: SubstrateItem,
    other: SubstrateItem,
    by: Any,
    policy: AccessPolicy,
    prefer: MergeStrategy | str,
    confirm: bool,
) -> tuple[str, MergeStrategy]:
    """The acting principal and strategy of a merge of two live items, checked in upstream's order.

    Authorization (a principal with write on both scopes) comes before any argument check, so a caller without
    standing learns nothing more than AccessDeniedError; then kind, then ``prefer``, then ``confirm``.
    """
    by = require_principal(by, keep.scope, "write", detail="pass by=<principal>")
    policy.require_write(by, keep.scope)
    policy.require_write(by, other.scope)
    if keep.id == other.id:
        raise ValueError(f"cannot merge item {keep.id!r} into itself")
    if keep.kind != other.kind:
        raise ValueError(f"cannot merge a {other.kind!r} item into a {keep.kind!r} item ({other.id!r} -> {keep.id!r})")
    strategy = _strategy(prefer)
    if confirm is not True:
        raise ValueError(f"merging deletes live item {other.id!r}; pass confirm=True to acknowledge it")
    return by, strategy


def merge_versions(
    substrate: Substrate,
    keep_id: str,
    other_id: str,
    *,
    by: str | None = None,
    prefer: MergeStrategy | str = MergeStrategy.LATEST,
    policy: AccessPolicy | None = None,
    confirm: bool = False,
) -> str | None:
    """Merge ``other_id`` into ``keep_id`` (MXR-080-0265/0266): one append of ItemsMerged + ItemRemoved.

    Checked in order: a missing id is a no-op (None); then authorization and kind; then ``prefer``; then ``confirm``.
    """
    keep_id, other_id = require_name(keep_id, "keep_id"), require_name(other_id, "other_id")
    policy = AccessPolicy() if policy is None else policy
    for _ in retries():
        live = live_items(substrate, [keep_id, other_id])
        if keep_id not in live or other_id not in live:
            return None  # a no-op, decided before any authorization question
        keep, other = live[keep_id], live[other_id]
        by, strategy = _check_merge(keep.item, other.item, by, policy, prefer, confirm)
        data, entry = _merged(keep, other, by, strategy)
        events = [
            NewEvent(
                keep_id,
                ItemsMerged(
                    item=substrate.event_item(SubstrateItem(**data), fresh=True), removed=other_id, entry=entry
                ),
                scope=keep.item.scope,
                expected_version=keep.version,
            ),
            NewEvent(other_id, ItemRemoved(id=other_id), scope=other.item.scope, expected_version=other.version),
        ]
        try:
            substrate.append(events, by=by)
        except ConcurrencyError:
            continue
        return keep_id
    raise ConcurrencyError(keep_id, -1, "merge kept colliding with other writers; gave up")


def _bare(digest: Any) -> Any:
    """A stored "sha256:<hex>" revision digest as its bare 64-hex form (anything else unchanged)."""
    return digest.removeprefix(_DIGEST_PREFIX) if isinstance(digest, str) else digest


def _shown(entry: dict[str, Any]) -> dict[str, Any]:
    """A stored history entry as history() shows it: upstream's key names beside by/from/to, digests bare.

    Stored entries are never rewritten (events are immutable): the names are added here, at the API boundary.
    """
    parents, action = entry.get("parents"), entry.get("action")
    names: dict[str, Any] = {}
    if action == "publish":
        names = {"published_by": entry.get("by"), "published_from": entry.get("from")}
    elif action == "merge":
        last = parents[-1] if isinstance(parents, list) and parents and isinstance(parents[-1], dict) else {}
        names = {"merged_by": entry.get("by"), "merged_from": last.get("id")}
    shown = {**names, **entry}
    if "revision" in shown:
        shown["revision"] = _bare(shown["revision"])
    if isinstance(parents, list):
        shown["parents"] = [{**p, "revision": _bare(p.get("revision"))} if isinstance(p, dict) else p for p in parents]
    return shown


def history(substrate: Substrate, item_id: str) -> list[dict[str, Any]]:
    """Every publish/merge of an item (also one merged away), oldest first: who, from, to, version, revisions.

    Publish entries name ``by``/``from``/``to`` and also ``published_by``/``published_from``; merge entries name
    ``by`` and also ``merged_by``/``merged_from`` (the merged-away id). Revision digests are bare 64-hex.
    """
    require_name(item_id, "item_id")
    with substrate.engine.connect() as c:
        rows = records.share_history(c, item_id, substrate.as_of_seq)
    return [
        {**_shown(loads(e)), "seq": int(seq), "at": at.timestamp() if at is not None else None} for e, seq, at in rows
    ]


def revision(substrate: Substrate, digest: str) -> dict[str, Any] | None:
    """The full item state recorded under ``digest`` as an independent JSON dict, or None if never recorded.

    ``digest`` may be the stored "sha256:<64 hex>" form or the bare 64-hex form history() shows.
    """
    if not isinstance(digest, str):
        raise InvalidArgument(f"digest must be a string, got {type(digest).__name__}")
    stored = _DIGEST_PREFIX + digest if _BARE_DIGEST.fullmatch(digest) else digest
    with substrate.engine.connect() as c:
        doc = records.revision_doc(c, stored, substrate.as_of_seq)
    # Parsed fresh from the database on every call, so a caller's mutation never reaches the stored snapshot.
    return None if doc is None else loads(doc)
