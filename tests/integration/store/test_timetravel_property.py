"""Every read as of every log position equals a replay of the log prefix (hypothesis, random histories).

The oracle is the replay the product no longer does: the log copied into a fresh database, its read models rebuilt
up to position S, read live. The product answers the same questions from the validity intervals of the live store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from projections.runner import rebuild
from service import Substrate, SubstrateItem
from service.beliefs.commands import Claim, assimilate, retract
from service.domain.errors import SubstrateError
from service.store import records
from service.store.database import ephemeral_database
from service.teams.access import PUBLIC, grant_access, revoke_access, stored_policy
from service.teams.governance import (
    approve,
    grant_approver,
    pending,
    proposal_history,
    propose,
    reject,
    stored_governance,
)
from service.teams.spaces import history, merge_versions, publish, revision

_IDS = ("a", "b", "c")
_TEAM, _OTHER = "team-a", "team-b"
_PRINCIPALS = ("p1", "p2")
_SOURCES = ("s1", "s2")
_CLAIMS = ("The sky is blue.", "Water is wet.")

_op = st.one_of(
    st.tuples(st.just("put"), st.sampled_from(_IDS), st.integers(0, 3)),
    st.tuples(st.just("update"), st.sampled_from(_IDS), st.integers(0, 3)),
    st.tuples(st.just("remove"), st.sampled_from(_IDS)),
    st.tuples(st.just("publish"), st.sampled_from(_IDS)),
    st.tuples(st.just("merge"), st.sampled_from(_IDS), st.sampled_from(_IDS)),
    st.tuples(st.just("grant"), st.sampled_from(_PRINCIPALS), st.sampled_from(("read", "write", "readwrite"))),
    st.tuples(st.just("revoke"), st.sampled_from(_PRINCIPALS)),
    st.tuples(st.just("propose"), st.sampled_from(_IDS)),
    st.tuples(st.just("approve"), st.sampled_from(_IDS)),
    st.tuples(st.just("reject"), st.sampled_from(_IDS)),
    st.tuples(st.just("believe"), st.sampled_from(_CLAIMS), st.sampled_from(_SOURCES)),
    st.tuples(st.just("retract"), st.sampled_from(_SOURCES)),
)


def _run(store: Substrate, op: tuple[Any, ...]) -> None:
    """Apply one operation through the public API (one that does not apply here is a no-op or a refusal)."""
    name, *args = op
    item = store.get(args[0]) if name in ("update", "remove", "publish", "merge", "propose") else None
    if name == "put":
        store.put(SubstrateItem(kind="text", text=f"{args[0]} says {args[1]}", id=args[0], scope=_TEAM))
    elif name == "update" and item is not None:
        store.update(args[0], text=f"{args[0]} now says {args[1]}")
    elif name == "remove":
        store.remove(args[0])
    elif name == "publish" and item is not None and item.scope == _TEAM:
        publish(store, [args[0]], to=PUBLIC, by=_TEAM)
    elif name == "merge" and item is not None and args[0] != args[1] and item.scope == _TEAM:
        other = store.get(args[1])
        if other is not None and other.scope == _TEAM:
            merge_versions(store, args[0], args[1], by=_TEAM, confirm=True)
    elif name == "grant":
        grant_access(store, args[0], _TEAM, args[1], by=_TEAM)
    elif name == "revoke":
        revoke_access(store, args[0], _TEAM, by=_TEAM)
    elif name == "propose" and item is not None and item.scope == _TEAM:
        propose(store, [args[0]], to=_OTHER, by=_TEAM)
    elif name == "approve":
        approve(store, args[0], by=_OTHER, governance=stored_governance(store))
    elif name == "reject":
        reject(store, args[0], by=_OTHER, governance=stored_governance(store), reason="no")
    elif name == "believe":
        assimilate(store, Claim(args[0]), [{"source_id": args[1], "tier": "real_measurement"}])
    elif name == "retract":
        retract(store, args[0])


def _copy_log(src: Substrate, dst: Substrate) -> None:
    cols = "seq, stream, version, type, data, principal, scope, recorded_at, event_id, prev"
    with src.engine.connect() as c:
        rows = [dict(r._mapping) for r in c.execute(text(f"SELECT {cols} FROM events ORDER BY seq"))]
    with dst.engine.begin() as c:
        for r in rows:
            r["data"] = json.dumps(r["data"])
        c.execute(
            text(
                f"INSERT INTO events ({cols}) VALUES (:seq, :stream, :version, :type, CAST(:data AS jsonb), "
                ":principal, :scope, :recorded_at, :event_id, :prev)"
            ),
            rows,
        )
        c.execute(
            text("UPDATE log_head SET seq = :seq, event_id = :id WHERE id = 1"),
            {"seq": rows[-1]["seq"], "id": rows[-1]["event_id"]},
        )


def _reads(store: Substrate, at: int | None, digests: list[str]) -> dict[str, Any]:
    """Every as-of read the product offers, as plain values (``store`` is a view or the oracle's live store)."""
    pages, after = [], 0
    while True:
        page, nxt = store.page_items(scopes=[_TEAM, PUBLIC, _OTHER, "local"], after=after, limit=2)
        pages.append([i.to_json() for i in page])
        if nxt is None:
            break
        after = nxt
    policy, live_policy = stored_policy(store), stored_policy(store, live=True)
    gov = stored_governance(store)
    with store.engine.connect() as c:
        bounds = records.belief_bounds(c, -1.0, None, [], at)
        beliefs = records.beliefs_among(c, [i.id for i in store.all()], -1.0, at)
    return {
        "all": [i.to_json() for i in store.all()],
        "team": [i.id for i in store.all(scope=_TEAM)],
        "len": len(store),
        "get": {i: (x.to_json() if (x := store.get(i)) is not None else None) for i in _IDS},
        "many": sorted(store.get_many(list(_IDS))),
        "in": [i in store for i in _IDS],
        "pages": pages,
        "history": {i: history(store, i) for i in _IDS},
        "revisions": {d: revision(store, d) for d in digests},
        "grants": {(p, m): getattr(policy, f"can_{m}")(p, _TEAM) for p in _PRINCIPALS for m in ("read", "write")},
        "live_grants": {p: sorted(live_policy.readable(p, [_TEAM, PUBLIC])) for p in _PRINCIPALS},
        "approvers": (dict(gov.approvers), [dict(g) for g in gov.grants]),
        "pending": [i.id for i in pending(store)],
        "proposals": {i: proposal_history(store, i) for i in _IDS},
        "beliefs": (bounds, sorted(beliefs)),
    }


@pytest.fixture
def stores(server_url: str) -> Iterator[Any]:
    opened: list[Substrate] = []

    def make() -> Substrate:
        s = Substrate(_database=ephemeral_database(server_url))
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=14))
def test_every_read_as_of_every_position_equals_a_replay_of_the_prefix(stores: Any, ops: list[tuple[Any, ...]]) -> None:
    store = stores()
    grant_approver(store, _OTHER, _OTHER, by=_OTHER)
    for op in ops:
        try:
            _run(store, op)
        except (SubstrateError, ValueError, KeyError):
            pass  # a refusal writes nothing; the history goes on
    head = store.events.head()
    with store.engine.connect() as c:
        digests = [r[0] for r in c.execute(text("SELECT digest FROM revisions ORDER BY digest"))]
    oracle = stores()
    _copy_log(store, oracle)
    try:
        for at in range(head + 1):
            rebuild(oracle.engine, until=at)
            expected = _reads(oracle, None, digests)
            assert _reads(store.as_of(at), at, digests) == expected, f"as of seq {at}"
    finally:
        for s in (store, oracle):
            s.close()
