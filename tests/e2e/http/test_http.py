"""The HTTP API against a real `substrate serve` process: tokens, isolation, redaction, problems, pages, time travel."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from service import Substrate
from service.teams.access import grant_access
from tests.e2e.http_server import Server, cli, create_token, start_server

README = (Path(__file__).resolve().parents[3] / "README.md").read_text()
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PROBLEM_KEYS = {"type", "title", "status", "detail"}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("http")
    server = start_server(str(root / "store"), root)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tokens(srv: Server) -> dict[str, str]:
    return {name: create_token(srv.root, name) for name in ("alice", "bob", "carol")}


@pytest.fixture(scope="module")
def alice(srv: Server, tokens: dict[str, str]) -> Iterator[httpx.Client]:
    with srv.client(tokens["alice"]) as c:
        yield c


@pytest.fixture(scope="module")
def bob(srv: Server, tokens: dict[str, str]) -> Iterator[httpx.Client]:
    with srv.client(tokens["bob"]) as c:
        yield c


@pytest.fixture(scope="module")
def admin(srv: Server) -> Iterator[Substrate]:
    """The same persistent store, opened in-process (for grants, which have no HTTP route)."""
    store = Substrate(root=srv.root)
    yield store
    store.close()


def _problem(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert set(body) == PROBLEM_KEYS and body["status"] == status and body["detail"]
    return body


def _add(client: httpx.Client, text: str, **kw: Any) -> str:
    r = client.post("/v1/items", json={"kind": "text", "text": text, **kw})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


# ----------------------------------------------------------------- service and auth
def test_healthz_and_openapi_need_no_token_and_describe_every_route(srv: Server) -> None:
    with srv.client() as anon:
        assert anon.get("/healthz").json()["status"] == "ok"
        doc = anon.get("/openapi.json").json()
    paths = doc["paths"]
    for path in (
        "/v1/items",
        "/v1/items/{item_id}",
        "/v1/search",
        "/v1/retrieve",
        "/v1/context",
        "/v1/ask",
        "/v1/history/{item_id}",
        "/v1/revisions/{digest}",
        "/v1/publish",
        "/v1/merge",
        "/v1/proposals",
        "/v1/proposals/{item_id}/approve",
        "/v1/proposals/{item_id}/reject",
        "/v1/beliefs/assimilate",
        "/v1/ingest",
        "/v1/events",
        "/v1/audit/verify",
    ):
        assert path in paths, path
        for op in paths[path].values():
            assert "200" in op["responses"] or "201" in op["responses"]
            assert "401" in op["responses"] and "404" in op["responses"]
    assert "HTTPBearer" in doc["components"]["securitySchemes"]


def test_healthz_without_a_token_says_ok_and_nothing_about_the_log(srv: Server, alice: httpx.Client) -> None:
    _add(alice, "activity that must not show")
    with srv.client() as anon:
        r = anon.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_the_openapi_document_names_no_internal_spec_and_states_the_checks(srv: Server) -> None:
    with srv.client() as anon:
        raw = anon.get("/openapi.json").text
    doc = json.loads(raw)
    assert "MXR-" not in raw and "spec" not in raw.lower().replace("openapi", "")
    search = doc["components"]["schemas"]["SearchIn"]["properties"]
    assert search["query"]["minLength"] == 1 and re.fullmatch(search["query"]["pattern"], " ") is None
    assert search["k"]["type"] == "integer" and (search["k"]["minimum"], search["k"]["maximum"]) == (0, 1000)
    as_of = next(p for p in doc["paths"]["/v1/items"]["get"]["parameters"] if p["name"] == "as_of")
    assert {s.get("format") for s in as_of["schema"]["anyOf"]} == {None, "date-time"}


def test_a_context_budget_too_small_for_its_header_packs_nothing_and_says_why(alice: httpx.Client) -> None:
    task = "a long task " * 20
    r = alice.post("/v1/context", json={"task": task, "max_chars": 5})
    assert r.status_code == 200 and r.json()["text"] == "" and r.json()["items"] == []
    header = len(f"# Context for: {' '.join(task.split())}\n")
    assert f"cannot hold even the header for this task ({header} chars)" in r.json()["packet"]["note"]


def test_a_wrong_method_answers_405_with_every_allowed_method(alice: httpx.Client) -> None:
    r = alice.request("OPTIONS", "/v1/items")
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) >= {"GET", "POST"}
    r = alice.put("/v1/items/some-id", json={})
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) >= {"GET", "PATCH", "DELETE"}


def test_docs_work_offline_from_the_packages_own_files(srv: Server) -> None:
    with srv.client() as anon:
        for page in ("/docs", "/redoc"):
            html = anon.get(page).text
            refs = re.findall(r'(?:src|href)="([^"]+)"', html)
            assert refs and all(ref.startswith("/docs/assets/") for ref in refs), refs
            assert "http://" not in html and "https://" not in html  # no CDN, no font service
            for ref in refs:
                asset = anon.get(ref)
                assert asset.status_code == 200 and len(asset.content) > 1000, ref
        assert "SwaggerUIBundle" in anon.get("/docs/assets/swagger-ui-bundle.js").text


def test_the_readmes_as_of_example_runs_on_a_fresh_store(tmp_path: Path) -> None:
    """The README's time-travel example uses the position its own add answered, so it works on a new store."""
    block = README.split("# the store as it was", 1)[1].split("```", 1)[0]
    lines = [line for line in ("# the store as it was" + block).splitlines() if line.strip()]
    script = "\n".join(lines).replace("\\\n", " ")
    server = start_server(str(tmp_path / "fresh"), tmp_path)
    try:
        token = create_token(server.root, "pharma")
        env = {**os.environ, "AUTH": f"Authorization: Bearer {token}"}
        script = script.replace("localhost:8000", server.url.removeprefix("http://"))
        run = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script.replace("curl -s ", "curl -sf ")],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr + run.stdout
    assert '"as_of":' in run.stdout and "platelet" in run.stdout


def test_every_v1_route_answers_401_without_or_with_a_bad_token(srv: Server) -> None:
    for headers in ({}, {"Authorization": "Bearer sbt_nope_nope"}, {"Authorization": "Basic YTpi"}):
        with httpx.Client(base_url=srv.url, headers=headers) as c:
            for method, path in (
                ("GET", "/v1/items"),
                ("POST", "/v1/search"),
                ("GET", "/v1/events"),
                ("GET", "/v1/audit/verify"),
                ("DELETE", "/v1/items/x"),
                ("POST", "/v1/ingest"),
            ):
                r = c.request(method, path, json={})
                _problem(r, 401)
                assert r.headers["www-authenticate"].startswith("Bearer")


def test_a_revoked_token_stops_working_at_once(srv: Server) -> None:
    token = create_token(srv.root, "dave")
    with srv.client(token) as c:
        assert c.get("/v1/items").status_code == 200
        listed = cli("token", "list", "--principal", "dave", root=srv.root).stdout
        token_id = token.split("_")[1]
        assert token_id in listed and token not in listed
        cli("token", "revoke", token_id, root=srv.root)
        _problem(c.get("/v1/items"), 401)


def test_tokens_are_stored_only_as_their_sha256(admin: Substrate, tokens: dict[str, str]) -> None:
    with admin.engine.connect() as c:
        stored = {r[0] for r in c.execute(text("SELECT token_hash FROM api_tokens"))}
        dumped = c.execute(text("SELECT string_agg(t::text, ' ') FROM api_tokens t")).scalar_one()
    for token in tokens.values():
        assert hashlib.sha256(token.encode()).hexdigest() in stored
        assert token.split("_", 2)[2] not in dumped


def test_writes_are_recorded_as_the_authenticated_principal(alice: httpx.Client, uid: str) -> None:
    r = alice.post("/v1/items", json={"kind": "text", "text": f"note {uid}"})
    assert r.status_code == 201 and r.headers["location"] == f"/v1/items/{r.json()['id']}"
    item_id, seq = r.json()["id"], r.json()["seq"]
    assert alice.get(f"/v1/items/{item_id}").json()["scope"] == "alice"  # the home scope by default
    events = alice.get("/v1/events", params={"stream": item_id}).json()["events"]
    assert [(e["seq"], e["type"], e["principal"]) for e in events] == [(seq, "ItemPut", "alice")]


# ----------------------------------------------------------------- isolation
def test_another_teams_item_is_404_exactly_like_a_missing_one(alice: httpx.Client, bob: httpx.Client, uid: str) -> None:
    secret_id = _add(alice, f"alice only {uid}")
    missing = _problem(bob.get(f"/v1/items/nope{uid}"), 404)
    hidden = _problem(bob.get(f"/v1/items/{secret_id}"), 404)
    assert hidden["detail"].replace(secret_id, "X") == missing["detail"].replace(f"nope{uid}", "X")
    _problem(bob.patch(f"/v1/items/{secret_id}", json={"text": "mine now"}), 404)
    _problem(bob.delete(f"/v1/items/{secret_id}"), 404)
    _problem(bob.get(f"/v1/history/{secret_id}"), 404)
    _problem(bob.get(f"/v1/items/{secret_id}/history"), 404)  # the route's earlier address answers the same
    digest = alice.get(f"/v1/history/{secret_id}").json()["changes"][0]["digest"]
    assert alice.get(f"/v1/items/{secret_id}/history").json()["changes"][0]["digest"] == digest
    assert alice.get(f"/v1/revisions/{digest}").json()["item"]["text"] == f"alice only {uid}"
    _problem(bob.get(f"/v1/revisions/{digest}"), 404)
    # writing into a scope names no item: 403 for any scope bob may not write, whether or not anything is in it
    into = _problem(bob.post("/v1/items", json={"kind": "text", "text": "x", "scope": "alice"}), 403)
    empty = _problem(bob.post("/v1/items", json={"kind": "text", "text": "x", "scope": f"none{uid}"}), 403)
    assert into["detail"].replace("alice", "X") == empty["detail"].replace(f"none{uid}", "X")
    _problem(bob.post("/v1/search", json={"query": "alice", "scope": "alice"}), 404)
    assert alice.get(f"/v1/items/{secret_id}").json()["text"] == f"alice only {uid}"  # untouched


def test_a_read_grant_makes_items_readable_but_writes_403(
    srv: Server, admin: Substrate, alice: httpx.Client, uid: str
) -> None:
    scope = f"proj{uid}"
    token = create_token(srv.root, f"erin{uid}")
    grant_access(admin, "alice", scope, "readwrite", by=scope)
    grant_access(admin, f"erin{uid}", scope, "read", by=scope)
    item_id = _add(alice, f"shared plan {uid}", scope=scope)
    with srv.client(token) as erin:
        assert erin.get(f"/v1/items/{item_id}").json()["text"] == f"shared plan {uid}"
        assert _problem(erin.patch(f"/v1/items/{item_id}", json={"text": "edit"}), 403)["detail"]
        _problem(erin.post("/v1/items", json={"kind": "text", "text": "x", "scope": scope}), 403)
        hits = erin.post("/v1/search", json={"query": f"plan {uid}", "k": 5}).json()["hits"]
        assert [h["item"]["id"] for h in hits] == [item_id]


def test_search_never_returns_or_is_shaped_by_unreadable_scopes(
    alice: httpx.Client, bob: httpx.Client, uid: str
) -> None:
    word = f"zq{uid}"
    mine = _add(bob, f"the {word} report on trains and buses")
    before = bob.post("/v1/search", json={"query": f"{word} trains", "k": 10}).json()["hits"]
    for n in range(6):  # a lot of alice text about the very same words
        _add(alice, f"{word} trains {word} buses {word} secret alice plan {n}")
    after = bob.post("/v1/search", json={"query": f"{word} trains", "k": 10}).json()["hits"]
    assert [h["item"]["id"] for h in after] == [mine]
    assert [(h["item"]["id"], h["score"]) for h in after] == [(h["item"]["id"], h["score"]) for h in before]
    assert all(h["item"]["scope"] == "alice" for h in alice.post("/v1/search", json={"query": word}).json()["hits"])
    retrieved = bob.post("/v1/retrieve", json={"query": word, "k": 10}).json()["hits"]
    assert [h["item"]["id"] for h in retrieved] == [mine]
    ctx = bob.post("/v1/context", json={"task": f"{word} trains", "max_chars": 400}).json()
    assert [i["id"] for i in ctx["items"]] == [mine] and len(ctx["text"]) <= 400 and "alice" not in ctx["text"]
    answer = bob.post("/v1/ask", json={"question": f"What is the {word} report about?"}).json()
    assert [c["id"] for c in answer["citations"]] == [mine] and "alice" not in (answer["answer"] or "")


def test_events_show_only_the_principals_visible_part_of_the_log(
    alice: httpx.Client, bob: httpx.Client, uid: str
) -> None:
    _add(alice, f"alice event {uid}")
    _add(bob, f"bob event {uid}")
    seen = []
    after = 0
    while True:
        page = bob.get("/v1/events", params={"after": after, "limit": 2}).json()
        seen += page["events"]
        if page["next_after"] is None:
            break
        after = page["next_after"]
    assert seen and all(e["scope"] in ("bob", "public") for e in seen)
    assert [e["seq"] for e in seen] == sorted({e["seq"] for e in seen})


# ----------------------------------------------------------------- secrets and problems
def test_secrets_in_request_bodies_are_redacted_before_the_log(alice: httpx.Client, uid: str) -> None:
    r = alice.post(
        "/v1/items",
        json={"kind": "record", "text": f"deploy {SECRET}", "payload": {"token": SECRET}, "tags": [SECRET, uid]},
    )
    item_id = r.json()["id"]
    stored = alice.get(f"/v1/items/{item_id}").json()
    assert SECRET not in str(stored) and "[REDACTED:" in stored["text"]
    log = alice.get("/v1/events", params={"stream": item_id}).json()["events"]
    assert SECRET not in str(log)
    patched = alice.patch(f"/v1/items/{item_id}", json={"text": f"again {SECRET}"}).json()
    assert SECRET not in str(patched) and patched["seq"] > r.json()["seq"]


def test_secret_policy_reject_refuses_and_stores_nothing(alice: httpx.Client, uid: str) -> None:
    head = alice.post("/v1/items", json={"kind": "text", "text": f"before {uid}"}).json()["seq"]
    r = alice.post("/v1/items", json={"kind": "text", "text": f"{uid} {SECRET}", "secret_policy": "reject"})
    assert SECRET not in _problem(r, 422)["detail"]
    assert alice.post("/v1/items", json={"kind": "text", "text": f"after {uid}"}).json()["seq"] == head + 1


@pytest.mark.parametrize(
    "method,path,kw,status",
    [
        ("POST", "/v1/items", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 400),
        ("POST", "/v1/items", {"json": {"kind": "hologram"}}, 422),
        ("POST", "/v1/items", {"json": {"kind": "text", "colour": "red"}}, 422),
        ("POST", "/v1/items", {"json": {"kind": "text", "text": "bad\u0000nul"}}, 422),
        ("POST", "/v1/items", {"json": {"kind": "text", "scope": " "}}, 422),
        ("POST", "/v1/search", {"json": {"query": "x", "k": -1}}, 422),
        ("POST", "/v1/search", {"json": {"query": "x", "k": 1.5}}, 422),
        ("POST", "/v1/retrieve", {"json": {"query": "x", "weights": {"text": -1}}}, 422),
        ("POST", "/v1/merge", {"json": {"keep": "a", "other": "a"}}, 404),
        ("GET", "/v1/items?cursor=%%%", {}, 400),
        ("GET", "/v1/items?as_of=yesterday", {}, 422),
        ("GET", "/v1/items?as_of=99999999999", {}, 404),  # a position the log has not reached
        ("POST", "/v1/search", {"json": {"query": "x", "k": True}}, 422),  # true is not the count 1
        ("POST", "/v1/search", {"json": {"query": "x", "k": "5"}}, 422),
        ("POST", "/v1/search", {"json": {"query": "  "}}, 422),
        ("PATCH", "/v1/items/nope", {"json": {"secret_policy": "reject"}}, 422),  # nothing to change
        ("PATCH", "/v1/items/nope", {"json": {"kind": None}}, 422),
        ("GET", "/v1/events?after=-1", {}, 422),
        ("PATCH", "/v1/items/nope", {"json": {}}, 422),
        ("GET", "/v1/nowhere", {}, 404),
    ],
)
def test_bad_input_is_a_problem_document_never_a_500(
    alice: httpx.Client, method: str, path: str, kw: dict[str, Any], status: int
) -> None:
    _problem(alice.request(method, path, **kw), status)


# ----------------------------------------------------------------- pages and time travel
def test_cursor_pages_cover_every_item_once_in_insertion_order(alice: httpx.Client, uid: str) -> None:
    scope = "alice"
    ids = [_add(alice, f"page {uid} {n}") for n in range(7)]
    record = alice.post("/v1/items", json={"kind": "record", "payload": {"n": uid}}).json()["id"]
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 3, "kind": "text", "scope": scope, **({"cursor": cursor} if cursor else {})}
        page = alice.get("/v1/items", params=params).json()
        pages += 1
        seen += [i["id"] for i in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [i for i in seen if i in ids] == ids and len(seen) == len(set(seen)) and record not in seen
    assert pages == -(-len(seen) // 3)


def test_reads_as_of_a_past_position_show_the_store_as_it_was(alice: httpx.Client, uid: str) -> None:
    word = f"tt{uid}"
    r = alice.post("/v1/items", json={"kind": "text", "text": f"{word} version one about rivers"})
    item_id, then = r.json()["id"], r.json()["seq"]
    at_time = datetime.now(UTC).isoformat()
    time.sleep(0.05)
    alice.patch(f"/v1/items/{item_id}", json={"text": f"{word} version two about mountains"})
    later = [_add(alice, f"{word} rivers {n}") for n in range(3)]
    assert alice.get(f"/v1/items/{item_id}").json()["text"].endswith("mountains")
    old = alice.get(f"/v1/items/{item_id}", params={"as_of": then}).json()
    assert old["text"] == f"{word} version one about rivers"
    assert alice.get(f"/v1/items/{item_id}", params={"as_of": at_time}).json()["text"] == old["text"]
    listed = alice.get("/v1/items", params={"as_of": then, "limit": 1000})
    assert listed.json()["as_of"] == then
    ids = {i["id"] for i in listed.json()["items"]}
    assert item_id in ids and not ids & set(later)
    history = alice.get(f"/v1/history/{item_id}", params={"as_of": then}).json()
    assert [c["type"] for c in history["changes"]] == ["ItemPut"]
    events = alice.get("/v1/events", params={"as_of": then, "stream": item_id}).json()["events"]
    assert [e["seq"] for e in events] == [then]
    first, now = history["changes"][0]["digest"], alice.get(f"/v1/history/{item_id}").json()["changes"][-1]
    assert alice.get(f"/v1/revisions/{first}", params={"as_of": then}).json()["item"]["text"] == old["text"]
    _problem(alice.get(f"/v1/revisions/{now['digest']}", params={"as_of": then}), 404)  # recorded later
    assert alice.get(f"/v1/revisions/{now['digest']}").status_code == 200


def test_search_as_of_a_past_position_reproduces_the_results_given_then(alice: httpx.Client, uid: str) -> None:
    word = f"sr{uid}"
    for n in range(12):
        then = alice.post(
            "/v1/items", json={"kind": "text", "text": f"{word} note {n} about rivers lakes and mountains {n % 5}"}
        ).json()["seq"]
    given = alice.post("/v1/search", json={"query": f"{word} rivers", "k": 5}).json()["hits"]
    for n in range(12):
        _add(alice, f"{word} rivers rivers deltas estuaries {n}")
    alice.post("/v1/search", json={"query": f"{word} rivers", "k": 5})  # the live index moves on
    replay = alice.post("/v1/search", params={"as_of": then}, json={"query": f"{word} rivers", "k": 5}).json()
    assert replay["as_of"] == then
    assert [(h["item"]["id"], h["score"]) for h in replay["hits"]] == [(h["item"]["id"], h["score"]) for h in given]
