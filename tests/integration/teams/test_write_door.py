"""One write door (Substrate.append): read-only views refuse, bound handles are authorized, every string is guarded."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from service import Substrate, SubstrateItem
from service.beliefs.commands import assimilate, retract, retrieve_beliefs
from service.domain.errors import AccessDeniedError, ReadOnlyError, SecretPolicyError
from service.ingest.sources import ingest_documents
from service.teams.access import grant_access, stored_policy
from service.teams.approvers import grant_approver
from service.teams.governance import approve, propose, reject, stored_governance
from service.teams.sharing import merge_versions, publish
from service.teams.spaces import Space

ROOT = Path(__file__).resolve().parents[3]
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _log_text(store: Substrate) -> str:
    with store.engine.connect() as c:
        return "\n".join(
            c.execute(text("SELECT stream || ' ' || coalesce(scope, '') || ' ' || data::text FROM events")).scalars()
        )


# ----------------------------------------------------------------- 1. read-only views
WRITES: dict[str, Callable[[Substrate, dict[str, str]], Any]] = {
    "put": lambda v, ids: v.put(SubstrateItem(kind="text", text="x")),
    "update": lambda v, ids: v.update(ids["a"], text="changed"),
    "remove": lambda v, ids: v.remove(ids["a"]),
    "publish": lambda v, ids: publish(v, [ids["a"]], to="public", by="local"),
    "merge_versions": lambda v, ids: merge_versions(v, ids["a"], ids["b"], by="local", confirm=True),
    "grant_access": lambda v, ids: grant_access(v, "bob", "local", by="local"),
    "grant_approver": lambda v, ids: grant_approver(v, "qa", "public", by="qa"),
    "propose": lambda v, ids: propose(v, [ids["a"]], to="public", by="local"),
    "space_add": lambda v, ids: Space(v, "local").add(kind="text", text="x"),
    "assimilate": lambda v, ids: assimilate(v, "water is wet", {"source_id": ids["a"], "tier": "executable"}),
    "retract": lambda v, ids: retract(v, ids["a"]),
    "put_many": lambda v, ids: v.put_many([SubstrateItem(kind="text", text="x")]),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_through_a_time_travel_view_is_refused_and_the_log_untouched(store: Substrate, write: str) -> None:
    ids = {"a": store.add("text", "first"), "b": store.add("text", "second")}
    assimilate(store, "the sky is blue", {"source_id": ids["a"], "tier": "executable"})
    head = store.events.head()
    view = store.as_of(head)
    try:
        with pytest.raises(ReadOnlyError):
            WRITES[write](view, ids)
    finally:
        view.close()
    assert store.events.head() == head


def test_approve_and_reject_through_a_view_are_refused(store: Substrate) -> None:
    a, b = store.add("text", "a"), store.add("text", "b")
    propose(store, [a, b], to="public", by="local")
    grant_approver(store, "qa", "public", by="qa")
    head = store.events.head()
    view = store.as_of(head)
    try:
        with pytest.raises(ReadOnlyError):
            approve(view, a, by="qa", governance=stored_governance(store))
        with pytest.raises(ReadOnlyError):
            reject(view, b, by="qa", governance=stored_governance(store), reason="no")
    finally:
        view.close()
    assert store.events.head() == head


# ----------------------------------------------------------------- 2. every string is guarded
def test_secrets_in_every_field_are_masked_before_the_log(store: Substrate) -> None:
    item_id = store.put(
        SubstrateItem(
            kind="text",
            text="plain",
            provenance={"source": f"https://user:{SECRET}@example.com/repo", SECRET: "as a key"},
            links=[f"see {SECRET}"],
            derived_from=[f"from {SECRET}"],
        )
    )
    store.update(item_id, provenance={"note": f"rotated {SECRET}"})
    propose(store, [item_id], to="public", by="local")
    grant_approver(store, "qa", "public", by="qa")
    reject(store, item_id, by="qa", governance=stored_governance(store), reason=f"it leaks {SECRET}")
    assimilate(store, "pipes leak", [{"source_id": f"lab-{SECRET}", "tier": "executable"}])
    receipt = ingest_documents(store, ["a plain document"], source=f"https://user:{SECRET}@host/feed")
    assert receipt.ok
    assert SECRET not in _log_text(store)
    assert "[REDACTED:" in _log_text(store)


@pytest.mark.parametrize(
    "write",
    [
        lambda s: s.put(
            SubstrateItem(kind="text", provenance={"url": f"https://u:{SECRET}@h"}), secret_policy="reject"
        ),
        lambda s: s.put(SubstrateItem(kind="text", links=[SECRET]), secret_policy="reject"),
        lambda s: s.put(SubstrateItem(kind="text", id=f"doc-{SECRET}")),  # an id is refused even when redacting
        lambda s: s.put(SubstrateItem(kind="text", scope=f"team-{SECRET}")),
    ],
)
def test_a_refused_secret_names_its_field_and_writes_nothing(
    store: Substrate, write: Callable[[Substrate], Any]
) -> None:
    with pytest.raises(SecretPolicyError) as info:
        write(store)
    assert info.value.fields and all(f.startswith("data.") for f in info.value.fields)
    assert SECRET not in str(info.value)
    assert store.events.head() == 0


def test_ingest_reports_a_row_the_door_refuses_as_failed(make_store: Callable[..., Substrate]) -> None:
    store = make_store(secret_policy="reject")
    receipt = ingest_documents(
        store, ["clean one", {"text": "ok", "payload": {"k": SECRET}}, "clean two"], source="docs"
    )
    assert len(receipt) == 2 and [f.line for f in receipt.failed] == [2]
    assert "data.item.payload.k" in receipt.failed[0].reason
    assert SECRET not in _log_text(store)


# ----------------------------------------------------------------- 3 and the bound handle
@pytest.fixture
def teams(store: Substrate) -> tuple[Substrate, Substrate, str]:
    """team-a owns item a1; team-b may only read team-a."""
    a1 = store.add("text", "team-a's own finding", scope="team-a")
    grant_access(store, "team-b", "team-a", "read", by="team-a")
    return store.with_principal("team-a"), store.with_principal("team-b"), a1


def test_a_read_only_grantee_cannot_publish_the_owners_item_away(store: Substrate, teams: Any) -> None:
    _, b, a1 = teams
    done = publish(b, [a1], to="team-b", by="team-b", policy=stored_policy(store, live=True))
    assert done == [] and store.get(a1).scope == "team-a"  # type: ignore[union-attr]


def test_a_bound_handle_cannot_take_another_teams_item_by_id_or_scope(store: Substrate, teams: Any) -> None:
    a, b, a1 = teams
    head = store.events.head()
    with pytest.raises(AccessDeniedError):
        b.put(SubstrateItem(kind="text", text="mine now", id=a1, scope="team-b"))
    with pytest.raises(AccessDeniedError):
        b.update(a1, scope="team-b")
    with pytest.raises(AccessDeniedError):
        b.remove(a1)
    with pytest.raises(AccessDeniedError):
        b.put_many([SubstrateItem(kind="text", text="mine now", id=a1, scope="team-b")])
    with pytest.raises(AccessDeniedError):  # nor act as someone else
        grant_access(b, "team-b", "team-a", "write", by="team-a")
    assert store.events.head() == head and store.get(a1).scope == "team-a"  # type: ignore[union-attr]
    a.update(a1, text="the owner may")
    assert store.get(a1).text == "the owner may"  # type: ignore[union-attr]


def test_a_plain_store_keeps_the_specs_trusted_behaviour(store: Substrate, teams: Any) -> None:
    _, _, a1 = teams
    store.put(SubstrateItem(kind="text", text="moved by the trusted caller", id=a1, scope="team-b"))
    assert store.get(a1).scope == "team-b"  # type: ignore[union-attr]
    assert grant_approver(store, "qa", "public", by="qa") > 0  # the spec's bootstrap, on a trusted store


def test_nobody_claims_an_unowned_scope_through_a_bound_handle(make_store: Callable[..., Substrate]) -> None:
    store = make_store(operator="ops")
    with pytest.raises(AccessDeniedError):
        grant_approver(store.with_principal("qa"), "qa", "public", by="qa")
    assert grant_approver(store.with_principal("ops"), "qa", "public", by="ops") > 0
    grant_access(store.with_principal("team-a"), "lead", "team-a", "admin", by="team-a")  # the owner makes an admin
    grant_approver(store.with_principal("lead"), "lead", "team-a", by="lead")  # which administers it
    with pytest.raises(AccessDeniedError):
        grant_approver(store.with_principal("team-b"), "team-b", "team-a", by="team-b")


# ----------------------------------------------------------------- 4. credence is a projection
def test_a_put_cannot_forge_a_beliefs_credence(store: Substrate) -> None:
    forged = {
        "key": "the moon is cheese",
        "claim": {"text": "the moon is cheese", "produced_by": {}, "quantity": None},
        "credence": 0.99,
        "evidence_history": [
            {
                "source_id": "x",
                "tier": "real_measurement",
                "direction": "+",
                "weight": 9.0,
                "time": 0.0,
                "verified": True,
            }
        ],
    }
    store.put(SubstrateItem(kind="record", text="the moon is cheese", payload=forged, tags=["belief"]))
    (belief,) = retrieve_beliefs(store, "moon cheese", k=3)
    assert belief.credence == 0.5 and belief.evidence_history == []
    # Evidence decided by assimilate moves it, from the read model's trail, not the forged one.
    lab = store.add("record", "a measurement of the moon")
    after = assimilate(store, "the moon is cheese", {"source_id": lab, "tier": "model_assertion", "direction": "-"})
    assert [e.source_id for e in after.evidence_history] == [lab] and after.credence < 0.5
    (belief,) = retrieve_beliefs(store, "moon cheese", k=3)
    assert belief.credence == after.credence


def test_a_put_racing_an_evidence_command_loses_no_evidence(store: Substrate, monkeypatch: pytest.MonkeyPatch) -> None:
    """The door reads a belief's decided trail, then appends: an assimilate committed in between must not be
    overwritten by the stale trail (the put retries on the version it pinned and carries both entries)."""
    import service.substrate.door as door

    lab = store.add("record", "a lab measurement")
    first = assimilate(store, "the sea is salty", {"source_id": lab, "tier": "real_measurement"})
    original, calls = door.decided_trails, []

    def read_then_race(engine: Any, ids: Any) -> Any:
        found = original(engine, ids)
        if not calls:  # another writer's evidence commits right after the door read the trail
            calls.append(assimilate(store, "the sea is salty", {"source_id": lab, "tier": "model_assertion"}))
        return found

    monkeypatch.setattr(door, "decided_trails", read_then_race)
    item = store.get(first.id)
    assert item is not None
    store.put(SubstrateItem.from_json({**item.to_json(), "tags": [*item.tags, "reviewed"]}))
    after = store.get(first.id)
    assert after is not None and "reviewed" in after.tags
    assert len(after.payload["evidence_history"]) == 2 == len(calls[0].evidence_history)
    (belief,) = retrieve_beliefs(store, "sea salty", k=1)
    assert belief.credence == calls[0].credence and len(belief.evidence_history) == 2


# ----------------------------------------------------------------- structure
_INSERTS = re.compile(r"\b(INSERT\s+INTO|COPY)\s+(public\.)?events\b", re.IGNORECASE)
_EVENT_STORE = {"service/store/appendsql.py", "service/store/eventstore.py", "service/store/chunked.py"}


def test_no_module_but_the_event_store_writes_events() -> None:
    writers = {
        str(p.relative_to(ROOT))
        for folder in ("service", "projections")
        for p in (ROOT / folder).rglob("*.py")
        if _INSERTS.search(p.read_text())
    }
    assert writers <= _EVENT_STORE, writers - _EVENT_STORE


def test_only_the_facade_calls_the_event_stores_appends() -> None:
    """EventStore.append/insert_stamped and BulkAppender are the event store's; the facade alone drives them."""
    allowed = {
        "append": {"service/substrate/door.py", "service/substrate/facade.py", "service/store/bulk_append.py"},
        "insert_stamped": {"service/store/bulk_append.py"},
        "BulkAppender": {"service/substrate/door.py"},
    }
    for p in (ROOT / "service").rglob("*.py"):
        where = str(p.relative_to(ROOT))
        for node in ast.walk(ast.parse(p.read_text())):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("append", "insert_stamped"):
                # x.events.append(...), or the appender's own self.store.append(...): an EventStore's append.
                receiver = ast.unparse(f.value)
                if f.attr == "insert_stamped" or receiver.endswith(".events") or receiver == "self.store":
                    assert where in allowed[f.attr], f"{where}: {ast.unparse(node)[:80]}"
            if isinstance(f, ast.Name) and f.id == "BulkAppender":
                assert where in allowed["BulkAppender"], where
