"""HTTP workflows against a real `substrate serve`: publish, merge, promotion, beliefs, streamed ingest, forensics."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from service import Substrate
from service.http.app import create_app
from service.teams.access import grant_access
from service.teams.governance import grant_approver
from tests.e2e.http_server import Server, create_token, start_server

SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("http-flows")
    server = start_server(str(root / "store"), root)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def clients(srv: Server) -> Iterator[dict[str, httpx.Client]]:
    out = {name: srv.client(create_token(srv.root, name)) for name in ("alice", "bob", "carol")}
    yield out
    for c in out.values():
        c.close()


@pytest.fixture(scope="module")
def admin(srv: Server) -> Iterator[Substrate]:
    store = Substrate(root=srv.root)
    yield store
    store.close()


def _add(c: httpx.Client, text: str, **kw: Any) -> str:
    r = c.post("/v1/items", json={"kind": "text", "text": text, **kw})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def test_publish_shares_into_public_and_leaves_an_audited_history(clients: dict[str, httpx.Client], uid: str) -> None:
    alice, bob = clients["alice"], clients["bob"]
    item_id = _add(alice, f"finding {uid}")
    assert bob.get(f"/v1/items/{item_id}").status_code == 404
    r = alice.post("/v1/publish", json={"ids": [item_id, f"missing{uid}"], "to": "public"})
    assert r.status_code == 200 and r.json()["published"] == [item_id]
    shared = bob.get(f"/v1/items/{item_id}").json()
    assert shared["scope"] == "public" and shared["provenance"]["published_by"] == "alice"
    shares = bob.get(f"/v1/history/{item_id}").json()["shares"]
    assert [(s["action"], s["by"], s["from"], s["to"]) for s in shares] == [("publish", "alice", "alice", "public")]
    # The pre-publish revision was in alice's scope: bob may not read it, alice may.
    assert bob.get(f"/v1/revisions/{shares[0]['revision']}").status_code == 404
    assert alice.get(f"/v1/revisions/{shares[0]['revision']}").json()["item"]["scope"] == "alice"
    assert (
        bob.post("/v1/publish", json={"ids": [item_id], "to": "alice"}).status_code == 403
    )  # a target bob may not write


def test_merge_needs_confirmation_and_write_access_to_both(clients: dict[str, httpx.Client], uid: str) -> None:
    alice, bob = clients["alice"], clients["bob"]
    keep, other = _add(alice, f"merge keep {uid}"), _add(alice, f"merge other {uid}")
    assert alice.post("/v1/merge", json={"keep": keep, "other": other}).status_code == 422
    assert bob.post("/v1/merge", json={"keep": keep, "other": other, "confirm": True}).status_code == 404
    r = alice.post("/v1/merge", json={"keep": keep, "other": other, "confirm": True, "prefer": "keep"})
    assert r.status_code == 200 and r.json()["id"] == keep
    assert alice.get(f"/v1/items/{other}").status_code == 404
    assert alice.get(f"/v1/history/{other}").json()["shares"][0]["merged_into"] == keep


def test_promotion_is_approved_only_by_an_approver_of_the_target(
    clients: dict[str, httpx.Client], admin: Substrate, uid: str
) -> None:
    alice, bob, carol = clients["alice"], clients["bob"], clients["carol"]
    target = f"curated{uid}"
    grant_approver(admin, "carol", target, by="carol")
    item_id = _add(alice, f"candidate {uid}")
    assert bob.post("/v1/proposals", json={"ids": [item_id], "to": target}).json()["proposed"] == []
    assert alice.post("/v1/proposals", json={"ids": [item_id], "to": target}).json()["proposed"] == [item_id]
    assert bob.post(f"/v1/proposals/{item_id}/approve", json={}).status_code == 404  # cannot even see it
    r = carol.post(f"/v1/proposals/{item_id}/approve", json={"to": target})
    assert r.status_code == 200 and r.json()["status"] == "approved", r.text
    assert carol.post(f"/v1/proposals/{item_id}/approve").status_code == 404  # now in a scope carol cannot read
    events = alice.get("/v1/events", params={"stream": item_id}).json()["events"]
    assert [(e["type"], e["principal"]) for e in events][:2] == [("ItemPut", "alice"), ("PromotionProposed", "alice")]
    withdrawn = _add(alice, f"withdrawn {uid}")
    alice.post("/v1/proposals", json={"ids": [withdrawn], "to": target})
    r = alice.post(f"/v1/proposals/{withdrawn}/reject", json={"reason": "not ready"})
    assert r.status_code == 200 and r.json()["status"] == "rejected"
    assert alice.post(f"/v1/proposals/{withdrawn}/reject", json={}).status_code == 409


def test_approving_without_approver_rights_is_403_when_the_item_is_readable(
    clients: dict[str, httpx.Client], uid: str
) -> None:
    alice, bob = clients["alice"], clients["bob"]
    item_id = _add(alice, f"public candidate {uid}", scope="public")
    alice.post("/v1/proposals", json={"ids": [item_id], "to": f"gold{uid}"})
    r = bob.post(f"/v1/proposals/{item_id}/approve", json={})
    assert r.status_code == 403 and r.headers["content-type"].startswith("application/problem+json")


def test_belief_evidence_is_verified_only_through_readable_sources(clients: dict[str, httpx.Client], uid: str) -> None:
    alice, bob = clients["alice"], clients["bob"]
    mine, theirs = _add(alice, f"measurement {uid}"), _add(bob, f"bob measurement {uid}")
    claim = f"the widget {uid} weighs 3 kg"
    r = alice.post(
        "/v1/beliefs/assimilate",
        json={
            "claim": claim,
            "evidence": [
                {"source_id": mine, "tier": "real_measurement"},
                {"source_id": theirs, "tier": "real_measurement"},
            ],
        },
    )
    assert r.status_code == 200, r.text
    trail = r.json()["evidence_history"]
    assert [e["verified"] for e in trail] == [True, False] and r.json()["scope"] == "alice"
    assert r.json()["credence"] > 0.5
    bad = alice.post("/v1/beliefs/assimilate", json={"claim": claim, "evidence": [{"tier": "gossip"}]})
    assert bad.status_code == 422 and "tier" in bad.json()["detail"]
    assert (
        alice.post(
            "/v1/beliefs/assimilate", json={"claim": claim, "scope": "bob", "evidence": [{"tier": "executable"}]}
        ).status_code
        == 403  # a scope alice may not write into
    )


def test_ingest_streams_jsonl_reports_bad_lines_and_revises_on_reupload(
    clients: dict[str, httpx.Client], uid: str
) -> None:
    alice, bob = clients["alice"], clients["bob"]
    body = "\r\n".join(
        [
            json.dumps({"text": f"doc one {uid}", "tags": ["a"]}),
            json.dumps(f"doc two {uid}"),
            "",
            json.dumps({"sku": uid, "price": 3}),
            "{broken",
            json.dumps({"text": f"leak {SECRET}"}),
        ]
    ).encode()
    params = {"source": f"catalog{uid}"}
    r = alice.post("/v1/ingest", params=params, content=body, headers={"content-type": "application/x-ndjson"})
    assert r.status_code == 200, r.text
    receipt = r.json()
    assert (receipt["ingested"], receipt["new"], receipt["failed"]) == (4, 4, 1)
    assert receipt["failures"][0]["line"] == 5 and "invalid JSON" in receipt["failures"][0]["reason"]
    head = alice.get("/v1/events", params={"after": 0, "limit": 1000}).json()
    again = alice.post("/v1/ingest", params=params, content=body).json()
    # the same upload again appends nothing: every line's content is stored as it is
    assert (again["ingested"], again["unchanged"], again["revised"], again["new"]) == (4, 4, 0, 0)
    assert alice.get("/v1/events", params={"after": 0, "limit": 1000}).json() == head
    edited = body.replace(f"doc two {uid}".encode(), f"doc two, edited {uid}".encode())
    third = alice.post("/v1/ingest", params=params, content=edited).json()
    assert (third["unchanged"], third["revised"]) == (3, 1)
    texts = [
        h["item"]["text"] for h in alice.post("/v1/search", json={"query": f"leak {uid} doc", "k": 10}).json()["hits"]
    ]
    assert texts and not any(SECRET in t for t in texts)
    assert bob.post("/v1/ingest", params={"scope": "alice"}, content=body).status_code == 403


def test_ingest_reads_a_large_upload_as_a_stream(clients: dict[str, httpx.Client], uid: str) -> None:
    n = 5000

    def lines() -> Iterator[bytes]:
        for i in range(n):
            yield (json.dumps({"text": f"bulk {uid} line {i}"}) + "\n").encode()

    started = time.perf_counter()
    r = clients["bob"].post("/v1/ingest", params={"source": f"bulk{uid}"}, content=lines())
    assert r.status_code == 200 and r.json()["ingested"] == n, r.text
    assert time.perf_counter() - started < 60
    page = clients["bob"].get("/v1/items", params={"limit": 1000}).json()
    assert len(page["items"]) == 1000 and page["next_cursor"]


def test_forensic_walkthrough_who_what_when_and_an_intact_log(
    clients: dict[str, httpx.Client], srv: Server, admin: Substrate, uid: str
) -> None:
    alice, bob = clients["alice"], clients["bob"]
    scope = f"ops{uid}"
    grant_access(admin, "alice", scope, "readwrite", by=scope)
    grant_access(admin, "bob", scope, "readwrite", by=scope)
    item_id = _add(alice, "the runbook says restart nightly", scope=scope)
    time.sleep(0.05)
    t = datetime.now(UTC).isoformat()
    time.sleep(0.05)
    bob.patch(f"/v1/items/{item_id}", json={"text": "the runbook says restart weekly"})
    changes = alice.get(f"/v1/history/{item_id}").json()["changes"]
    assert [(c["type"], c["principal"]) for c in changes] == [("ItemPut", "alice"), ("ItemUpdated", "bob")]
    assert changes[1]["fields"] == ["text"]
    assert alice.get(f"/v1/items/{item_id}", params={"as_of": t}).json()["text"] == "the runbook says restart nightly"
    report = alice.get("/v1/audit/verify").json()
    assert report["ok"] and report["chain"]["ok"] and all(p["match"] for p in report["projections"].values())
    # Counts, digests and the head describe every team's activity: they stay with the operator's CLI.
    assert "events" not in report["chain"] and "head" not in report["chain"]
    assert all(set(p) == {"match"} for p in report["projections"].values())


def test_healthz_is_503_when_the_database_is_gone(make_store: Any) -> None:
    store = make_store()

    async def probe() -> tuple[int, httpx.Response]:
        transport = httpx.ASGITransport(app=create_app(store))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            before = (await client.get("/healthz")).status_code
            store.close()  # an ephemeral store's database is dropped
            return before, await client.get("/healthz")

    before, r = asyncio.run(probe())
    assert before == 200
    assert r.status_code == 503 and r.headers["content-type"].startswith("application/problem+json")


def test_a_second_verify_while_one_runs_is_told_to_retry(make_store: Any, monkeypatch: Any) -> None:
    """Each verification is a full rebuild's worth of work: one at a time per server, the others get 429."""
    import threading
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette asks for httpx2; the httpx transport works the same here
        from fastapi.testclient import TestClient

    import service.http.audit as http_audit
    from service.teams.tokens import create_token

    store = make_store()
    store.add("text", "x", scope="ops")
    started, release = threading.Event(), threading.Event()
    real = http_audit.verify_store

    def slow(live: Any) -> Any:
        started.set()
        release.wait(10)
        return real(live)

    monkeypatch.setattr(http_audit, "verify_store", slow)
    headers = {"Authorization": f"Bearer {create_token(store, 'ops')[1]}"}
    with TestClient(create_app(store)) as client:
        first: dict[str, Any] = {}
        runner = threading.Thread(target=lambda: first.update(r=client.get("/v1/audit/verify", headers=headers)))
        runner.start()
        assert started.wait(10)
        second = client.get("/v1/audit/verify", headers=headers)
        release.set()
        runner.join(10)
    assert second.status_code == 429 and second.headers["retry-after"] == "10"
    assert second.headers["content-type"].startswith("application/problem+json")
    assert first["r"].status_code == 200 and first["r"].json()["ok"]
    with TestClient(create_app(store)) as client:  # the guard is released: the next one runs
        assert client.get("/v1/audit/verify", headers=headers).json()["ok"]
