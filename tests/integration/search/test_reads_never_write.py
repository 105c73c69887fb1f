"""Reads never write: every read route answers on a connection where PostgreSQL refuses any write.

The store is filled by a normal handle, indexed and fitted, then written again (so searches read the index and
a tail it has not seen, with an embedder older than the text). A second handle over the same database whose
every transaction is READ ONLY (``default_transaction_read_only=on``, as on a hot standby) then runs every Python
read and every HTTP read route: each must answer, with the data, and none may fail on a refused write.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from service import (
    Substrate,
    SubstrateItem,
    answer_from_substrate,
    assemble_context,
    assimilate,
    history,
    multihop,
    publish,
    retrieve,
    retrieve_beliefs,
    revision,
)
from service.http.app import create_app
from service.store.database import Database, guard_parameters
from service.teams.access import grant_access
from service.teams.tokens import create_token

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette asks for httpx2; the httpx transport works the same here
    from fastapi.testclient import TestClient

TEXTS = [
    "Glaciers retreat as the global climate warms",
    "Rising sea levels threaten coastal cities with flooding",
    "Volcanic eruptions release ash and sulfur dioxide",
    "Central banks raise interest rates to slow inflation",
    "Bond yields rise when investors expect higher inflation",
    "Vaccines train the immune system to recognise viral proteins",
    "Antibiotics kill bacteria but do not work against viruses",
    "Neural networks learn layered representations from data",
    "Gradient descent minimises the loss of a model",
    "Bread dough rises because yeast ferments the sugar",
    "A slow cooked tomato sauce needs garlic and olive oil",
    "Tennis players serve faster on grass than on clay",
]


@pytest.fixture
def stores(store: Substrate) -> Iterator[tuple[Substrate, Substrate]]:
    """(the writable handle, a handle over the same database on which every transaction is read-only)."""
    store.put_many(SubstrateItem(kind="text", text=t, scope="alice", id=f"t{i}") for i, t in enumerate(TEXTS))
    store.put_many(SubstrateItem(kind="text", text=t, id=f"l{i}") for i, t in enumerate(TEXTS))
    store.add("record", payload={"topic": "inflation report", "rate": 4.5}, tags=["finance"], scope="alice", id="r1")
    evidence = {"source_id": "t1", "tier": "model_assertion", "direction": "+", "weight": 1.0}
    assimilate(store, "Sea levels are rising.", evidence, scope="alice")
    publish(store, ["t0"], to="public", by="alice")
    grant_access(store, "bob", "alice", "read", by="alice")
    store.reindex()  # indexed and fitted; what follows is a tail the index has not seen
    store.update("t3", text="Central banks cut interest rates when inflation falls")
    store.add("text", "Coastal flooding worsens with every storm surge", scope="alice", id="t-new")
    store.remove("t11")
    engine = guard_parameters(
        sa.create_engine(store.url, connect_args={"options": "-c default_transaction_read_only=on"})
    )
    with engine.connect() as c:
        assert c.exec_driver_sql("SHOW default_transaction_read_only").scalar() == "on"
        with pytest.raises(DBAPIError, match="read-only transaction"):
            c.exec_driver_sql("INSERT INTO checkpoints (name, seq) VALUES ('x', 1)")
    ro = Substrate(_database=Database(engine=engine, url=store.url))
    try:
        yield store, ro
    finally:
        ro.close()


def _answerer(question: str, context: str) -> str:
    return context.splitlines()[0] if context else ""


def test_every_python_read_answers_without_writing(stores: tuple[Substrate, Substrate]) -> None:
    rw, ro = stores
    assert ro.get("t3") == rw.get("t3") and ro.get("t11") is None
    assert ro.get_many(["t0", "t1"]).keys() == {"t0", "t1"}
    assert [i.id for i in ro.all(scope="alice")] == [i.id for i in rw.all(scope="alice")]
    assert len(ro) == len(rw) and "t1" in ro
    assert [i.id for i in ro.iter_items(scope="alice")] == [i.id for i in rw.all(scope="alice")]
    page = ro.page_items(limit=3)
    assert len(page[0]) == 3
    # Search: the index plus the tail (an updated, a new and a removed item), with an embedder older than the text.
    hits = ro.search("interest rates inflation", k=3, scope="alice")
    assert hits[0][0].id == "t3" and hits[0][0].text.startswith("Central banks cut")
    assert "t-new" in {i.id for i, s in ro.search("coastal flooding storm", k=3, scope="alice") if s > 0}
    assert "t11" not in {i.id for i, _ in ro.search("tennis grass clay", k=20)}
    assert ro.search("inflation", k=5, kind="record")[0][0].id == "r1"
    assert [(i.id, s) for i, s in ro.search("glaciers climate", k=4)] == [
        (i.id, s) for i, s in rw.search("glaciers climate", k=4)
    ]
    assert retrieve(ro, "inflation rates", k=4, scope="alice").items
    assert assemble_context(ro, "sea levels and flooding", scope="alice").items
    assert answer_from_substrate(ro, "what threatens coastal cities?", _answerer, scope="alice").answer
    assert retrieve_beliefs(ro, "sea levels", scope="alice")
    assert multihop(ro, "glaciers and sea levels", scope="alice").items
    shares = history(ro, "t0")
    assert shares == history(rw, "t0") and shares[-1]["action"] == "publish"
    assert revision(ro, shares[-1]["revision"]) == revision(rw, shares[-1]["revision"]) is not None


def test_every_http_read_route_answers_without_writing(stores: tuple[Substrate, Substrate]) -> None:
    rw, ro = stores
    _, token = create_token(rw, "alice")
    with TestClient(create_app(ro)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        assert client.get("/healthz").status_code == 200
        item = client.get("/v1/items/t3")
        assert item.status_code == 200, item.text
        assert item.json()["text"].startswith("Central banks cut")
        listed = client.get("/v1/items", params={"scope": "alice", "limit": 5})
        assert listed.status_code == 200 and listed.json()["items"], listed.text
        hist = client.get("/v1/history/t0")
        assert hist.status_code == 200, hist.text
        digest = [c["digest"] for c in hist.json()["changes"] if c["digest"]][-1]
        assert client.get(f"/v1/revisions/{digest}").status_code == 200
        for route, body in [
            ("/v1/search", {"query": "interest rates inflation", "k": 3}),
            ("/v1/retrieve", {"query": "inflation rates", "k": 3}),
            ("/v1/context", {"task": "sea levels and flooding"}),
            ("/v1/ask", {"question": "what threatens coastal cities?"}),
        ]:
            r = client.post(route, json=body)
            assert r.status_code == 200, (route, r.text)
        hits = client.post("/v1/search", json={"query": "interest rates inflation", "k": 3}).json()["hits"]
        assert hits[0]["item"]["id"] == "t3"
        events = client.get("/v1/events", params={"limit": 5})
        assert events.status_code == 200, events.text
        for route in ("/v1/admin/access", "/v1/admin/approvers", "/v1/items/t0/history"):
            r = client.get(route)
            assert r.status_code == 200, (route, r.text)
