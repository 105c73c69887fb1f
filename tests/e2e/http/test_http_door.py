"""The write door over HTTP: guarded fields, publishing rules, administration, the body limit, the database down, and
an access log that never records a query string's secret."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from service import Substrate
from service.http.app import create_app
from service.teams.access import grant_access
from service.teams.tokens import create_token
from tests.e2e.http_server import cli, start_server
from tests.e2e.http_server import create_token as cli_token

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


class Api:
    """A TestClient over an app on ``store``, with a token per principal."""

    def __init__(self, store: Substrate, client: TestClient) -> None:
        self.store, self.client, self._tokens = store, client, {}

    def as_(self, who: str) -> dict[str, str]:
        if who not in self._tokens:
            self._tokens[who] = create_token(self.store, who)[1]
        return {"Authorization": f"Bearer {self._tokens[who]}"}

    def post(self, who: str, path: str, body: Any = None, **kw: Any) -> httpx.Response:
        return self.client.post(path, json=body, headers=self.as_(who), **kw)

    def get(self, who: str, path: str, **kw: Any) -> httpx.Response:
        return self.client.get(path, headers=self.as_(who), **kw)


@pytest.fixture
def api(make_store: Callable[..., Substrate]) -> Iterator[Api]:
    store = make_store(operator="ops")
    with TestClient(create_app(store, max_body=64 * 1024), raise_server_exceptions=False) as client:
        yield Api(store, client)


def _problem(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    return r.json()  # type: ignore[no-any-return]


def _log(store: Substrate) -> str:
    with store.engine.connect() as c:
        return "\n".join(c.execute(text("SELECT data::text FROM events")).scalars())


# ----------------------------------------------------------------- 2. every field guarded
def test_a_secret_in_provenance_is_refused_by_policy_reject_and_masked_by_default(api: Api) -> None:
    body = {"kind": "text", "text": "plain", "provenance": {"url": f"https://u:{SECRET}@h"}, "links": [SECRET]}
    problem = _problem(api.post("alice", "/v1/items", {**body, "secret_policy": "reject"}), 422)
    assert "data.item.provenance.url" in problem["detail"] and SECRET not in problem["detail"]
    assert api.store.events.head() == 0
    r = api.post("alice", "/v1/items", body)
    assert r.status_code == 201, r.text
    item = api.get("alice", f"/v1/items/{r.json()['id']}").json()
    assert SECRET not in str(item) and SECRET not in _log(api.store)


# ----------------------------------------------------------------- 3. publishing needs write on the source
def test_a_read_only_grantee_cannot_publish_the_owners_item(api: Api) -> None:
    a1 = api.post("team-a", "/v1/items", {"kind": "text", "text": "team-a's own"}).json()["id"]
    grant_access(api.store, "team-b", "team-a", "read", by="team-a")
    assert api.get("team-b", f"/v1/items/{a1}").status_code == 200  # it may read it
    r = api.post("team-b", "/v1/publish", {"ids": [a1], "to": "team-b"})
    assert r.status_code == 200 and r.json()["published"] == []
    assert api.store.get(a1).scope == "team-a"  # type: ignore[union-attr]
    _problem(api.client.patch(f"/v1/items/{a1}", json={"scope": "team-b"}, headers=api.as_("team-b")), 403)
    done = api.post("team-a", "/v1/publish", {"ids": [a1], "to": "public"}).json()
    assert done["published"] == [a1]


# ----------------------------------------------------------------- administration
def test_administration_over_http_grants_and_revokes_only_as_an_administrator(api: Api) -> None:
    # Nobody claims public by being first: its administrator is the operator.
    _problem(api.post("qa", "/v1/admin/approvers", {"who": "qa", "scope": "public"}), 403)
    assert api.post("ops", "/v1/admin/approvers", {"who": "qa", "scope": "public"}).status_code == 201
    listed = api.get("ops", "/v1/admin/approvers", params={"scope": "public"}).json()["approvers"]
    assert [(a["who"], a["by"], a["bootstrap"]) for a in listed] == [("qa", "ops", False)]
    # An owner grants on its home scope; another team may not, and does not even learn that the scope exists.
    assert (
        api.post("team-a", "/v1/admin/access", {"principal": "team-b", "scope": "team-a", "mode": "read"}).status_code
        == 201
    )
    _problem(api.post("team-c", "/v1/admin/access", {"principal": "team-c", "scope": "team-a"}), 404)
    grants = api.get("team-a", "/v1/admin/access").json()["grants"]
    assert [(g["principal"], g["scope"], g["mode"]) for g in grants] == [("team-b", "team-a", "read")]
    assert api.get("team-c", "/v1/admin/access").json()["grants"] == []
    r = api.post("team-a", "/v1/admin/access/revoke", {"principal": "team-b", "scope": "team-a"})
    assert r.json()["revoked"] is True
    r = api.post("ops", "/v1/admin/approvers/revoke", {"who": "qa", "scope": "public"})
    assert r.json()["revoked"] is True
    assert api.get("ops", "/v1/admin/approvers").json()["approvers"] == []
    # As of a position before the revocations, the listings show what held then.
    then = api.get("ops", "/v1/admin/approvers", params={"as_of": r.json()["seq"] - 2}).json()
    assert [a["who"] for a in then["approvers"]] == ["qa"] and then["as_of"] == r.json()["seq"] - 2
    past = api.get("team-a", "/v1/admin/access", params={"as_of": r.json()["seq"] - 2}).json()["grants"]
    assert [(g["principal"], g["mode"]) for g in past] == [("team-b", "read")]


def test_a_promotion_end_to_end_propose_grant_approve(api: Api) -> None:
    item = api.post("team-a", "/v1/items", {"kind": "text", "text": "ready for everyone"}).json()["id"]
    assert api.post("team-a", "/v1/proposals", {"ids": [item], "to": "public"}).json()["proposed"] == [item]
    _problem(api.post("qa", f"/v1/proposals/{item}/approve"), 404)  # not an approver yet: it sees nothing
    assert api.post("ops", "/v1/admin/approvers", {"who": "qa", "scope": "public"}).status_code == 201
    assert api.post("qa", f"/v1/proposals/{item}/approve").json()["status"] == "approved"
    assert api.get("team-b", f"/v1/items/{item}").json()["scope"] == "public"


# ----------------------------------------------------------------- 6. the body limit
def test_an_oversized_body_is_413_before_any_work(api: Api) -> None:
    big = {"kind": "text", "text": "x" * (70 * 1024)}
    problem = _problem(api.post("alice", "/v1/items", big), 413)
    assert "65536" in problem["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"kind": "text", "text": "'
        for _ in range(80):
            yield b"y" * 1024
        yield b'"}'

    r = api.client.post("/v1/items", content=chunks(), headers={**api.as_("alice"), "content-type": "application/json"})
    _problem(r, 413)
    assert api.store.events.head() == 0
    # An upload is limited per line by the same number.
    lines = b'{"text": "small"}\n' + b'{"text": "' + b"z" * (70 * 1024) + b'"}\n'
    r = api.client.post(
        "/v1/ingest", content=lines, headers={**api.as_("alice"), "content-type": "application/x-ndjson"}
    )
    assert r.status_code == 200 and r.json()["ingested"] == 1
    assert [f["line"] for f in r.json()["failures"]] == [2]


# ----------------------------------------------------------------- 7. the database down
def test_the_database_down_is_503_with_retry_after(api: Api, server_url: str) -> None:
    headers = api.as_("alice")
    name = api.store.engine.url.database
    admin = Substrate(url=server_url)  # the server's own database: to close the store's to new connections
    try:
        with admin.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
            c.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"), {"d": name})
        for method, path, body in (
            ("GET", "/v1/items", None),
            ("POST", "/v1/items", {"kind": "text", "text": "x"}),
            ("GET", "/healthz", None),
        ):
            r = api.client.request(method, path, json=body, headers=headers)
            problem = _problem(r, 503)
            assert r.headers["retry-after"].isdigit() and problem["status"] == 503
    finally:
        with admin.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        admin.close()
    api.store.engine.dispose()
    assert api.get("alice", "/v1/items").status_code == 200


# ----------------------------------------------------------------- the README's promotion, and the access log
def test_the_readme_promotion_with_curl_and_the_cli_and_an_access_log_without_secrets(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("promotion")
    server = start_server(str(root / "store"), root, "--admin", "ops", "--log-level", "info")
    try:
        pharma, qa, ops = (cli_token(server.root, who) for who in ("pharma", "qa", "ops"))
        with server.client(pharma) as p, server.client(qa) as q, server.client(ops) as o:
            item = p.post("/v1/items", json={"kind": "text", "text": "Aspirin inhibits platelets."}).json()["id"]
            assert p.post("/v1/proposals", json={"ids": [item], "to": "public"}).json()["proposed"] == [item]
            assert q.post("/v1/admin/approvers", json={"who": "qa", "scope": "public"}).status_code == 403
            with pytest.raises(AssertionError, match="exited 2"):  # the CLI acting as qa is refused too
                cli("approver", "grant", "qa", "public", "--as", "qa", root=server.root)
            assert o.post("/v1/admin/approvers", json={"who": "qa", "scope": "public"}).status_code == 201
            cli("approver", "grant", "qa", "public", "--admin", "ops", root=server.root)
            listed = cli("approver", "list", "--scope", "public", "--json", root=server.root).stdout
            assert '"who": "qa"' in listed and '"by": "ops"' in listed
            assert q.post(f"/v1/proposals/{item}/approve").json()["status"] == "approved"
            assert p.get(f"/v1/items/{item}").json()["scope"] == "public"
            cli("access", "grant", "auditor", "pharma", "--mode", "read", "--as", "pharma", root=server.root)
            assert "auditor" in cli("access", "list", "--scope", "pharma", root=server.root).stdout
            r = p.post(
                "/v1/ingest",
                params={"source": f"https://user:{SECRET}@host/feed"},
                content=b'{"text": "hello"}\n',
                headers={"content-type": "application/x-ndjson"},
            )
            assert r.status_code == 200, r.text
    finally:
        server.stop()
    log = server.log.read_text()
    assert "/v1/ingest" in log and SECRET not in log
