"""Isolation under attack: mallory probes alice's scope by id, search, history, revisions, lineage and citations.

Two worlds hold identical mallory and public content; only one also holds alice's private items. Whatever
mallory asks (Python API through Space/policy paths, or HTTP), her answers must be the same in both worlds,
and an existing private id must answer exactly like an id that never existed.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from service import Substrate, SubstrateItem
from service.beliefs.commands import assimilate, retrieve_beliefs
from service.http.app import create_app
from service.ingest.lineage import audit_substrate, verify_lineage
from service.teams.access import AccessDeniedError, AccessPolicy
from service.teams.sharing import history, publish
from service.teams.spaces import Space
from service.teams.tokens import create_token

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette asks for httpx2; the httpx transport works the same here
    from fastapi.testclient import TestClient

SECRET = "zephyrcorp acquisition closes friday at the budget review"
SECRET_ID, DERIVED_ID = "alice-secret-1", "alice-derived-1"


@dataclass
class World:
    store: Substrate
    client: TestClient
    mallory: dict[str, str]
    alice: dict[str, str]
    eve: dict[str, str]  # a second prober whose writes (beliefs) never touch what mallory reads


def _fill(store: Substrate, secret: bool) -> None:
    def put(id_: str, scope: str, text: str, **kw: Any) -> None:
        store.put(SubstrateItem(kind="text", id=id_, scope=scope, text=text, created_at=1000.0, **kw))

    put("m-1", "mallory", "mallory notes on the quarterly budget review")
    put("m-2", "mallory", "mallory guesses about an acquisition", derived_from=[SECRET_ID])
    put("m-3", "mallory", "mallory cites something that never existed", derived_from=["never-existed-1"])
    put("p-1", "public", "public memo: the budget review moved to friday")
    put("p-2", "public", "public faq about acquisitions and closings")
    if secret:
        put(SECRET_ID, "alice", SECRET, tags=["secret"])
        put(DERIVED_ID, "alice", "alice derived analysis", derived_from=[SECRET_ID])
        store.update(SECRET_ID, text=SECRET + " (confirmed)")
        assimilate(
            store, "zephyrcorp closes friday", [{"source_id": SECRET_ID, "tier": "real_measurement"}], scope="alice"
        )


@pytest.fixture(scope="module")
def worlds() -> Iterator[dict[bool, World]]:
    out: dict[bool, World] = {}
    try:
        for secret in (True, False):
            store = Substrate()
            _fill(store, secret)
            client = TestClient(create_app(store), raise_server_exceptions=False)
            client.__enter__()
            auth = {
                name: {"Authorization": f"Bearer {create_token(store, name)[1]}"}
                for name in ("mallory", "alice", "eve")
            }
            out[secret] = World(store, client, auth["mallory"], auth["alice"], auth["eve"])
        yield out
    finally:
        for w in out.values():
            w.client.__exit__(None, None, None)
            w.store.close()


@pytest.fixture(scope="module")
def world(worlds: dict[bool, World]) -> World:
    return worlds[True]


def _scrub(value: Any, real: str, fake: str) -> str:
    return json.dumps(value, sort_keys=True).replace(real, "<ID>").replace(fake, "<ID>")


# ----------------------------------------------------------------- Python API (Space / policy paths)
def test_a_space_lists_and_retrieves_the_same_in_both_worlds(worlds: dict[bool, World]) -> None:
    def seen(w: World) -> Any:
        space = Space(w.store, "mallory")
        hits = space.retrieve(SECRET, k=10)
        return sorted(i.id for i in space.all()), [(h.item.id, round(h.score, 9)) for h in hits.hits]

    with_secret, without = seen(worlds[True]), seen(worlds[False])
    assert with_secret == without
    assert SECRET_ID not in json.dumps(with_secret)


def test_a_space_cannot_claim_another_scope(world: World) -> None:
    with pytest.raises(AccessDeniedError):
        Space(world.store, "mallory", shared=["alice"])


def test_publishing_a_private_id_is_a_silent_no_op_like_a_missing_one(world: World) -> None:
    head = world.store.events.head()
    space = Space(world.store, "mallory")
    assert space.publish([SECRET_ID]) == space.publish(["never-existed-2"]) == []
    assert publish(world.store, [SECRET_ID], by="mallory", policy=AccessPolicy()) == []
    assert world.store.events.head() == head and world.store.get(SECRET_ID).scope == "alice"


def test_lineage_through_a_private_ancestor_reads_like_a_missing_one(worlds: dict[bool, World]) -> None:
    store = worlds[True].store
    private = verify_lineage(store, "m-2", scope="mallory").as_dict()
    missing = verify_lineage(store, "m-3", scope="mallory").as_dict()
    assert _scrub(private, SECRET_ID, "never-existed-1").replace("m-2", "m-x") == _scrub(
        missing, SECRET_ID, "never-existed-1"
    ).replace("m-3", "m-x")
    direct = verify_lineage(store, SECRET_ID, scope="mallory").as_dict()
    absent = verify_lineage(store, "never-existed-3", scope="mallory").as_dict()
    assert _scrub(direct, SECRET_ID, "never-existed-3") == _scrub(absent, SECRET_ID, "never-existed-3")
    audits = [audit_substrate(w.store, scope="mallory") for w in worlds.values()]
    assert audits[0] == audits[1]


def test_citing_a_private_item_or_belief_earns_what_citing_nothing_earns(worlds: dict[bool, World]) -> None:
    store = worlds[True].store
    alice_belief = retrieve_beliefs(store, "zephyrcorp", scope="alice")[0].id
    outcomes = []
    for n, source in enumerate([SECRET_ID, alice_belief, "never-existed-4"]):
        b = assimilate(store, f"eve claim {n}", [{"source_id": source, "tier": "real_measurement"}], scope="eve")
        (entry,) = b.evidence_history
        outcomes.append((round(b.credence, 12), entry.verified, entry.weight))
    assert outcomes[0] == outcomes[1] == outcomes[2] and outcomes[0][1] is False
    found = [[b.id for b in retrieve_beliefs(w.store, "zephyrcorp friday", scope="mallory")] for w in worlds.values()]
    assert found[0] == found[1]


def test_a_space_cannot_overwrite_another_scopes_item_by_id(store: Substrate) -> None:
    _fill(store, secret=True)  # its own store: the attack, when it works, moves alice's item
    before = store.get(SECRET_ID)
    space = Space(store, "mallory")
    outcomes = []
    for target in (SECRET_ID, "never-existed-5"):
        try:
            space.add(kind="text", text="pwned", id=target)
            outcomes.append("stored")
        except (AccessDeniedError, ValueError) as exc:
            outcomes.append(type(exc).__name__)
    assert store.get(SECRET_ID) == before
    assert outcomes[0] == outcomes[1]  # an existing private id is no oracle either


# ----------------------------------------------------------------- HTTP
def _same(w: World, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
    """Call with the private id and with a fresh one; both answers must match once the id is masked."""
    fake = "never" + uuid.uuid4().hex[:10]
    answers = []
    for target in (SECRET_ID, fake):
        payload = None if body is None else json.loads(json.dumps(body).replace("{ID}", target))
        r = w.client.request(method, path.replace("{ID}", target), json=payload, headers=w.mallory, **kw)
        assert r.status_code < 500, r.text
        answers.append((r.status_code, _scrub(r.json(), target, fake)))
    assert answers[0] == answers[1], answers
    return answers[0]


def test_http_probes_by_id_answer_exactly_like_a_missing_id(world: World) -> None:
    head = world.store.events.head()
    assert _same(world, "GET", "/v1/items/{ID}")[0] == 404
    assert _same(world, "GET", f"/v1/items/{{ID}}?as_of={head}")[0] == 404
    assert _same(world, "GET", "/v1/history/{ID}")[0] == 404
    assert _same(world, "GET", f"/v1/history/{{ID}}?as_of={head}")[0] == 404
    assert _same(world, "PATCH", "/v1/items/{ID}", {"text": "pwned"})[0] == 404
    assert _same(world, "DELETE", "/v1/items/{ID}")[0] == 404
    assert _same(world, "GET", "/v1/events?stream={ID}") == (200, json.dumps({"events": [], "next_after": None}))
    assert _same(world, "POST", "/v1/publish", {"ids": ["{ID}"]})[0] == 200
    assert _same(world, "POST", "/v1/merge", {"keep": "m-1", "other": "{ID}", "confirm": True})[0] == 404
    assert _same(world, "POST", "/v1/proposals", {"ids": ["{ID}"], "to": "public"})[0] == 200
    assert _same(world, "POST", "/v1/proposals/{ID}/approve")[0] == 404
    assert _same(world, "POST", "/v1/proposals/{ID}/reject")[0] == 404
    assert world.store.events.head() == head and world.store.get(SECRET_ID).scope == "alice"


def test_http_probes_of_the_private_scope_answer_like_a_missing_scope(world: World) -> None:
    def same_scope(method: str, path: str, body: Any = None, status: int = 404) -> None:
        answers = []
        for scope in ("alice", "nosuchscope"):
            payload = None if body is None else json.loads(json.dumps(body).replace("{S}", scope))
            r = world.client.request(method, path.replace("{S}", scope), json=payload, headers=world.mallory)
            answers.append((r.status_code, json.dumps(r.json()).replace(scope, "<S>")))
        assert answers[0] == answers[1] and answers[0][0] == status, answers

    same_scope("GET", "/v1/items?scope={S}")
    same_scope("POST", "/v1/search", {"query": SECRET, "scope": "{S}"})
    same_scope("POST", "/v1/retrieve", {"query": SECRET, "scope": "{S}"})
    same_scope("POST", "/v1/context", {"task": SECRET, "scope": "{S}"})
    same_scope("POST", "/v1/ask", {"question": SECRET, "scope": "{S}"})
    # a scope written into: 403 whether it holds anything or not (the same answer, so nothing leaks)
    same_scope("POST", "/v1/items", {"kind": "text", "text": "x", "scope": "{S}"}, 403)
    same_scope("POST", "/v1/publish", {"ids": ["m-1"], "to": "{S}"}, 403)
    same_scope("POST", "/v1/publish", {"ids": ["m-1"], "from_scope": "{S}"})
    same_scope(
        "POST", "/v1/beliefs/assimilate", {"claim": "c", "evidence": [{"tier": "executable"}], "scope": "{S}"}, 403
    )
    same_scope("POST", "/v1/ingest?scope={S}", status=403)


def test_http_revision_digests_of_private_states_are_404_like_unknown_ones(world: World) -> None:
    changes = world.client.get(f"/v1/history/{SECRET_ID}", headers=world.alice).json()["changes"]
    digests = [c["digest"] for c in changes if c["digest"]]
    assert len(digests) == 2  # alice can resolve her own revisions
    assert world.client.get(f"/v1/revisions/{digests[0]}", headers=world.alice).status_code == 200
    for digest in digests:
        fake = "sha256:" + uuid.uuid4().hex * 2
        real = world.client.get(f"/v1/revisions/{digest}", headers=world.mallory)
        unknown = world.client.get(f"/v1/revisions/{fake}", headers=world.mallory)
        assert real.status_code == unknown.status_code == 404
        assert real.json()["detail"].replace(digest, "<D>") == unknown.json()["detail"].replace(fake, "<D>")
    assert history(world.store, SECRET_ID) == []  # never published: no share trail to leak either


def test_http_citations_of_private_items_and_beliefs_earn_nothing_more(world: World) -> None:
    belief = retrieve_beliefs(world.store, "zephyrcorp", scope="alice")[0].id
    seen = []
    for n, source in enumerate([SECRET_ID, belief, "never-existed-6"]):
        r = world.client.post(
            "/v1/beliefs/assimilate",
            headers=world.eve,
            json={"claim": f"http claim {n}", "evidence": [{"source_id": source, "tier": "real_measurement"}]},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        seen.append((body["credence"], [(e["verified"], e["weight"]) for e in body["evidence_history"]]))
    assert seen[0] == seen[1] == seen[2]


def test_http_reads_are_identical_with_or_without_the_private_scope(worlds: dict[bool, World]) -> None:
    requests = [
        ("GET", "/v1/items", None),
        ("POST", "/v1/search", {"query": SECRET, "k": 10}),
        ("POST", "/v1/retrieve", {"query": SECRET, "k": 10}),
        ("POST", "/v1/context", {"task": SECRET}),
        ("POST", "/v1/ask", {"question": "when does the zephyrcorp acquisition close?"}),
    ]
    for method, path, body in requests:
        answers = [w.client.request(method, path, json=body, headers=w.mallory) for w in worlds.values()]
        assert answers[0].status_code == answers[1].status_code == 200, answers[0].text
        assert answers[0].json() == answers[1].json(), path
        for private in ('"scope":"alice"', "(confirmed)", "alicederivedanalysis"):
            assert private not in answers[0].text.replace(" ", ""), (path, private)


def test_http_verify_reveals_nothing_about_unreadable_scopes(worlds: dict[bool, World]) -> None:
    answers = [w.client.get("/v1/audit/verify", headers=w.mallory) for w in worlds.values()]
    assert answers[0].status_code == answers[1].status_code
    assert answers[0].json()["projections"] == answers[1].json()["projections"]
