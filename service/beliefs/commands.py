"""Calibrated beliefs in the log: harvest claims, assimilate and retract evidence as events, retrieve by credence.

``assimilate``/``retract`` append ``EvidenceAssimilated``/``EvidenceRetracted`` on the belief's own stream,
carrying the resulting belief item and the entry (a belief created with no evidence is one ``ItemPut`` of
it). Verification (MXR-080-0243) and anti-laundering (MXR-080-0244) are decided once, here, through an
access policy, and recorded on the entry, so the ``beliefs`` projection replays every credence exactly
without re-resolving anything.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from projections import loads
from projections.beliefs import claim_key
from service.beliefs.model import (
    MODEL_ASSERTION,
    MODEL_ASSERTION_CAP,
    BeliefItem,
    Claim,
    EvidenceEntry,
    belief_from_item,
    belief_to_item,
    credence_from_history,
    has_real_support,
    is_grounding,
    raw_entries,
)
from service.beliefs.query import retrieve_beliefs
from service.domain.errors import ConcurrencyError, StateConflictError
from service.domain.events import EvidenceAssimilated, EvidenceRetracted, ItemPut, NewEvent
from service.domain.items import DEFAULT_SCOPE
from service.domain.retry import retries
from service.domain.validation import InvalidArgument, require_name
from service.guard.secrets import guard_data

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = [
    "MODEL_ASSERTION",
    "MODEL_ASSERTION_CAP",
    "BeliefItem",
    "Claim",
    "EvidenceEntry",
    "assimilate",
    "credence_from_history",
    "harvest_knowledge",
    "retract",
    "retrieve_beliefs",
]

_STATE = text(
    # One statement, one snapshot: the stream version and the state it produced can never disagree. The trail is
    # the read model's (what the evidence commands decided), never the one an item's payload claims.
    "SELECT (SELECT coalesce(max(version), 0) FROM events WHERE stream = :id), "
    "(SELECT doc::text FROM items WHERE id = :id), (SELECT evidence::text FROM beliefs WHERE id = :id)"
)
_BY_KEY = text("SELECT id FROM beliefs WHERE scope = :scope AND claim_key = :key ORDER BY pos, id LIMIT 1")
_RESOLVE = text(
    "SELECT i.id, i.scope, b.evidence::text FROM items i LEFT JOIN beliefs b ON b.id = i.id "
    "WHERE i.id = ANY(CAST(:ids AS text[]))"
)


class _HomeAndPublic:
    """Fallback policy (only when service.teams.access offers none): a scope reads itself and "public"."""

    def can_read(self, principal: str, scope: str) -> bool:
        return scope in (principal, "public")


def _default_policy() -> Any:
    try:
        from service.teams.access import AccessPolicy
    except ImportError:
        return _HomeAndPublic()
    return AccessPolicy()


def harvest_knowledge(
    model_output: str, *, source: Mapping[str, Any], extract: Callable[[str], list[str]] | None = None
) -> list[Claim]:
    """Split ``model_output`` into atomic claims (default: sentence-level), each stamped with ``source``."""
    if not isinstance(model_output, str):
        raise InvalidArgument(f"model_output must be a string, got {type(model_output).__name__}")
    if not isinstance(source, Mapping):
        raise InvalidArgument(f"source must be a dict describing who produced the output, got {source!r}")
    from service.beliefs.corroborate import sentence_claims

    claims = []
    for i, part in enumerate((extract or sentence_claims)(model_output)):
        if not isinstance(part, str):
            raise InvalidArgument(f"extract returned a non-string claim at [{i}]: {part!r}")
        if part.strip():
            claims.append(Claim(text=part.strip(), produced_by=dict(source)))
    return claims


# ----------------------------------------------------------------- resolution (through the policy)
def _visible(sub: Substrate, ids: Iterable[str], scope: str, policy: Any) -> dict[str, list[EvidenceEntry] | None]:
    """id -> its belief trail (None for a non-belief item), for the ids ``scope`` may read; others are absent.

    An id that does not exist and one in a scope the caller cannot read are indistinguishable here.
    """
    wanted = sorted({i for i in ids if i})
    if not wanted:
        return {}
    with sub.engine.connect() as c:
        rows = c.execute(_RESOLVE, {"ids": wanted}).all()
    out: dict[str, list[EvidenceEntry] | None] = {}
    for item_id, item_scope, trail in rows:
        if policy.can_read(scope, item_scope):
            out[item_id] = None if trail is None else _trail(loads(trail))
    return out


def _trail(raw: Any) -> list[EvidenceEntry]:
    out = []
    for e in raw if isinstance(raw, list) else []:
        try:
            out.append(EvidenceEntry.from_json(e))
        except (ValueError, TypeError):
            continue  # a malformed stored entry grounds nothing
    return out


def _launders(sub: Substrate, source_id: str, belief_id: str, scope: str, policy: Any) -> bool:
    """True when citing ``source_id`` for ``belief_id`` would launder credence (MXR-080-0244).

    It does when the source is this belief, or a belief visible to ``scope`` with no independent support
    reachable without passing through ``belief_id`` -- checked at every hop through the same policy. The
    reachable belief graph is explored first, then grounding is a least fixpoint, so rings never ground.
    """
    if source_id == belief_id:
        return True
    graph: dict[str, list[EvidenceEntry]] = {}
    frontier, seen = [source_id], {belief_id}
    while frontier:
        seen.update(frontier)
        for node, trail in _visible(sub, frontier, scope, policy).items():
            if trail is not None:
                graph[node] = trail
        frontier = sorted({e.source_id for t in graph.values() for e in t if is_grounding(e)} - seen)
    if source_id not in graph:
        return False  # an external receipt (or something invisible to this scope) is never laundering
    grounded: set[str] = set()
    changed = True
    while changed:
        changed = False
        for node, trail in graph.items():
            if node not in grounded and any(
                is_grounding(e) and e.source_id != belief_id and (e.source_id not in graph or e.source_id in grounded)
                for e in trail
            ):
                grounded.add(node)
                changed = True
    return source_id not in grounded


# ----------------------------------------------------------------- assimilate
def _decide(
    sub: Substrate, raws: list[dict[str, Any]], belief_id: str, scope: str, policy: Any
) -> list[tuple[EvidenceEntry, dict[str, Any]]]:
    """Verification and laundering for each entry, decided once against the store as it is now.

    Returns each entry with its event record, which also keeps the claimed weight of a laundered entry.
    """
    visible = _visible(sub, (r["source_id"] for r in raws), scope, policy)
    out = []
    for r in raws:
        laundered = _launders(sub, r["source_id"], belief_id, scope, policy)
        entry = EvidenceEntry(
            **{**r, "weight": 0.0 if laundered else r["weight"], "verified": r["source_id"] in visible}
        )
        record = entry.to_json()
        if laundered:
            record.update(laundered=True, claimed_weight=r["weight"])
        out.append((entry, record))
    return out


def _belief_id(scope: str, key: str) -> str:
    # Deterministic per (scope, key): concurrent creators of one claim meet on one stream, and the
    # version check lets exactly one create it while the other retries as an update.
    return "belief-" + hashlib.sha256(f"{scope}\x1f{key}".encode()).hexdigest()[:32]


def _state(sub: Substrate, belief_id: str) -> tuple[BeliefItem | None, int, float | None]:
    with sub.engine.connect() as c:
        version, doc, trail = c.execute(_STATE, {"id": belief_id}).one()
    if doc is None:
        return None, int(version), None
    item = loads(doc)
    try:
        return belief_from_item(item, trail=loads(trail or "[]")), int(version), float(item["created_at"])
    except (ValueError, TypeError, KeyError):
        raise StateConflictError(f"item {belief_id!r} is not a well-formed belief; cannot update it") from None


def _guarded_claim(sub: Substrate, claim: Claim) -> Claim:
    # The secret guard runs on the claim before its text becomes a key or an id (the door guards the event again).
    guarded = guard_data(claim.to_json(), sub.secret_policy, field="claim")
    return Claim(text=guarded["text"], produced_by=guarded["produced_by"], quantity=guarded["quantity"])


def _evidence_events(
    sub: Substrate, belief: BeliefItem, raws: list[dict[str, Any]], version: int, created_at: float, policy: Any
) -> tuple[list[NewEvent], dict[str, Any]]:
    """One EvidenceAssimilated per entry, applied to ``belief`` in place; returns them and the final item."""
    events, data = [], {}
    for i, (entry, record) in enumerate(_decide(sub, raws, belief.id, belief.scope, policy)):
        belief.evidence_history.append(entry)
        belief.credence = credence_from_history(belief.evidence_history)
        data = sub.event_item(belief_to_item(belief, created_at), fresh=True)
        event = EvidenceAssimilated(item=data, entry=record)
        events.append(NewEvent(stream=belief.id, event=event, scope=belief.scope, expected_version=version + i))
    return events, data


def _creation(
    sub: Substrate, belief: BeliefItem, version: int, created_at: float
) -> tuple[list[NewEvent], dict[str, Any]]:
    """No evidence for a new belief: one ItemPut of it at the 0.5 prior, with an empty trail."""
    data = sub.event_item(belief_to_item(belief, created_at), fresh=True)
    return [NewEvent(stream=belief.id, event=ItemPut(item=data), scope=belief.scope, expected_version=version)], data


def assimilate(
    sub: Substrate, claim: Claim | str, evidence: Any, *, scope: str = DEFAULT_SCOPE, policy: Any = None
) -> BeliefItem:
    """Find or create the belief in ``claim`` within ``scope`` and apply ``evidence``; returns the new state.

    Entries are ``{"source_id", "tier", "direction": "+"/"-", "weight", "time"}`` (MXR-080-0242). A tier
    above model assertion counts only when ``source_id`` resolves through ``policy``'s view of ``scope``
    (MXR-080-0243); a cycle or an ungrounded belief source is stored at weight 0 (MXR-080-0244). Empty
    ``evidence`` creates the belief at the 0.5 prior if it is new, and leaves an existing one untouched.
    """
    claim = Claim(text=claim) if isinstance(claim, str) else claim
    if not isinstance(claim, Claim):
        raise InvalidArgument(f"claim must be a Claim or a string, got {type(claim).__name__}")
    require_name(scope, "scope")
    policy = _default_policy() if policy is None else policy
    if not callable(getattr(policy, "can_read", None)):
        raise InvalidArgument(f"policy must have can_read(principal, scope), got {type(policy).__name__}")
    raws = raw_entries(evidence)
    claim = _guarded_claim(sub, claim)
    key = claim_key(claim.text)
    created = time.time()
    for _ in retries():
        with sub.engine.connect() as c:
            found = c.execute(_BY_KEY, {"scope": scope, "key": key}).scalar()
        belief_id = found or _belief_id(scope, key)
        belief, version, created_at = _state(sub, belief_id)
        if belief is not None and not raws:
            return belief
        if belief is None:
            belief = BeliefItem(belief_id, claim, 0.5, [], scope)
        when = created if created_at is None else created_at
        if raws:
            events, data = _evidence_events(sub, belief, raws, version, when, policy)
        else:
            events, data = _creation(sub, belief, version, when)
        try:
            stored = sub.append(events)
        except ConcurrencyError:
            time.sleep(0.001)
            continue
        return belief_from_item(stored[-1].data["item"])
    raise ConcurrencyError(key, -1, f"assimilate of {claim.text!r} kept colliding with other writers; gave up")


# ----------------------------------------------------------------- retract
def _citers(sub: Substrate, source_id: str, scope: str | None) -> list[str]:
    sql = "SELECT id FROM beliefs WHERE sources @> CAST(:src AS text[])"
    params: dict[str, Any] = {"src": [source_id]}
    if scope is not None:
        sql += " AND scope = :scope"
        params["scope"] = scope
    with sub.engine.connect() as c:
        return [r[0] for r in c.execute(text(sql + " ORDER BY pos, id"), params)]


def _retraction(sub: Substrate, source_id: str, scope: str | None) -> tuple[list[NewEvent], dict[str, dict[str, Any]]]:
    """Plan the whole cascade: one EvidenceRetracted per (belief, stripped source), with expected versions."""
    states: dict[str, tuple[BeliefItem, int, float | None]] = {}
    last: dict[str, dict[str, Any]] = {}
    events: list[NewEvent] = []
    frontier, visited = [source_id], set()
    while frontier:
        cur = frontier.pop(0)
        if cur in visited:
            continue
        visited.add(cur)
        for belief_id in _citers(sub, cur, scope):
            if belief_id not in states:
                belief, version, created_at = _state(sub, belief_id)
                if belief is None:
                    continue
                states[belief_id] = (belief, version, created_at)
            belief, version, created_at = states[belief_id]
            kept = [e for e in belief.evidence_history if e.source_id != cur]
            if len(kept) == len(belief.evidence_history):
                continue
            was_grounded = has_real_support(belief.evidence_history)
            removed = len(belief.evidence_history) - len(kept)
            belief.evidence_history = kept
            belief.credence = credence_from_history(kept)
            data = sub.event_item(belief_to_item(belief, created_at), fresh=True)
            entry = {"source_id": cur, "removed": removed, "cause": source_id}
            events.append(
                NewEvent(
                    stream=belief_id,
                    event=EvidenceRetracted(item=data, entry=entry),
                    scope=belief.scope,
                    expected_version=version,
                )
            )
            states[belief_id] = (belief, version + 1, created_at)
            last[belief_id] = data
            if was_grounded and not has_real_support(kept):
                frontier.append(belief_id)  # it lost its independent support: strip citations of it too
    return events, last


def retract(sub: Substrate, source_id: str, *, scope: str | None = None) -> list[BeliefItem]:
    """Remove every entry citing ``source_id`` and cascade through beliefs that lose their only support.

    The whole cascade is one transaction; returns every belief it touched (final state, first-touched order).
    """
    require_name(source_id, "source_id")
    if scope is not None:
        require_name(scope, "scope")
    for _ in retries():
        events, last = _retraction(sub, source_id, scope)
        try:
            stored = sub.append(events)
        except ConcurrencyError:
            time.sleep(0.001)
            continue
        final = {s.stream: s.data["item"] for s in stored}  # as the door stored them (secret-guarded)
        return [belief_from_item(final[belief_id]) for belief_id in last]
    raise ConcurrencyError(source_id, -1, f"retract of {source_id!r} kept colliding with other writers; gave up")
