"""Bad input at every edge: each input works or raises the documented error, and a failure writes nothing.

Properties live in bench/fuzz.py (its long run counts outcomes over many more examples); these are the short
versions, plus the SQL-parameterization probe and regression tests for the failures they found.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from bench import fuzz as fz
from service import Substrate, SubstrateItem
from service.beliefs.commands import assimilate, retract, retrieve_beliefs
from service.domain.validation import InvalidArgument
from service.http.app import create_app
from service.ingest.lineage import audit_substrate, verify_lineage
from service.ingest.sources import ingest_artifacts, ingest_documents, ingest_file, ingest_records, ingest_traces
from service.store.export import SnapshotError
from service.teams.access import AccessPolicy, grant_access, revoke_access, stored_policy
from service.teams.sharing import history, merge_versions, publish, revision
from service.teams.spaces import Space
from service.teams.tokens import create_token, list_tokens

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette asks for httpx2; the httpx transport works the same here
    from fastapi.testclient import TestClient


def examples(n: int) -> settings:
    """n examples, no deadline (a real database answers), fixtures shared across examples on purpose."""
    return settings(
        max_examples=n, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
    )


# ----------------------------------------------------------------- parsers and validators
@examples(40)
@given(d=fz.item_dicts)
def test_from_json_and_put_either_work_or_raise_value_error(store: Substrate, d: Any) -> None:
    fz.prop_from_json(store, d)


@examples(25)
@given(rows=st.lists(fz.snapshot_rows, max_size=6))
def test_load_of_any_bytes_is_all_or_nothing(store: Substrate, tmp_path_factory: Any, rows: list[bytes]) -> None:
    fz.prop_load(store, tmp_path_factory.mktemp("snap"), rows)


@examples(25)
@given(values=fz.ingest_values, fn=st.sampled_from(["ingest_documents", "ingest_records"]))
def test_ingest_values_report_every_bad_row_and_write_exactly_the_receipt(
    store: Substrate, values: list[Any], fn: str
) -> None:
    fz.prop_ingest_values(store, fn, values)


@examples(30)
@given(lines=fz.file_lines, fmt=st.sampled_from(["text", "markdown", "jsonl", "csv", "trace"]))
def test_ingest_file_in_every_format_never_raises_on_bad_content(
    store: Substrate, tmp_path_factory: Any, lines: list[bytes], fmt: str
) -> None:
    fz.prop_ingest_file(store, tmp_path_factory.mktemp("ingest"), fmt, lines)


@examples(10)
@given(manifests=st.lists(st.one_of(st.binary(max_size=40), fz.json_values.map(fz._dump)), min_size=1, max_size=4))
def test_ingest_artifacts_reports_bad_manifests_and_keeps_going(
    store: Substrate, tmp_path_factory: Any, manifests: list[bytes]
) -> None:
    root = tmp_path_factory.mktemp("registry")
    for n, raw in enumerate(manifests):
        (root / f"a{n}").mkdir()
        (root / f"a{n}" / "manifest.json").write_bytes(raw)
    head = store.events.head()
    receipt = ingest_artifacts(store, root, scope="fuzz")
    assert len(receipt) + len(receipt.failed) == len(manifests)
    assert all(f["reason"] and "manifest.json" in str(f["source"]) for f in receipt.failed)
    assert store.events.head() == head + len(receipt)


def test_bad_ingest_arguments_raise_invalid_argument_and_write_nothing(store: Substrate, tmp_path: Path) -> None:
    (tmp_path / "x.unknown").write_text("a file")
    head = store.events.head()
    for call in (
        lambda: ingest_documents(store, "a single string", source="s"),
        lambda: ingest_documents(store, ["x"], scope=""),
        lambda: ingest_documents(store, ["x"], source="   "),
        lambda: ingest_records(store, [{"a": 1}], text_fields="a"),
        lambda: ingest_documents(store, ["x", "y"], indices=[0]),
        lambda: ingest_documents(store, ["x"], indices=[-1]),
        lambda: ingest_file(store, tmp_path / "x.unknown"),
        lambda: ingest_artifacts(store, tmp_path / "x.unknown"),  # a file, not a directory
    ):
        with pytest.raises((InvalidArgument, FileNotFoundError)):
            call()
    assert store.events.head() == head


@pytest.fixture
def seeded(store: Substrate) -> Substrate:
    store.put_many(
        [
            SubstrateItem(kind=k, text=f"seed passage {i} about budgets and {k}", scope=s)
            for i in range(8)
            for s in ("fuzz", "local")
            for k in ("text", "record")
        ]
    )
    return store


@examples(40)
@given(
    query=fz.any_text,
    k=st.integers(0, 12),
    kind=st.one_of(st.none(), st.sampled_from(fz.KINDS)),
    scope=st.one_of(st.none(), st.sampled_from(["fuzz", "local"]), fz.key_text.filter(lambda s: bool(s.strip()))),
)
def test_search_with_any_query_returns_ranked_hits_or_a_value_error(
    seeded: Substrate, query: str, k: int, kind: str | None, scope: str | None
) -> None:
    fz.prop_search(seeded, query, k, kind, scope)


def test_search_rejects_bad_k_kind_and_scope_as_invalid_arguments(seeded: Substrate) -> None:
    for kw in ({"k": -1}, {"k": 1.5}, {"k": True}, {"kind": 3}, {"scope": ""}, {"scope": "  "}, {"scope": 3}):
        with pytest.raises(InvalidArgument):
            seeded.search("budgets", **kw)
    assert seeded.search("budgets", kind="video") == []  # an unknown kind filters everything out, as in all()
    assert seeded.search("budgets" * 200_000, k=3) is not None  # a huge query is cut, not an error


# ----------------------------------------------------------------- SQL never sees a value
@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL text psycopg is asked to run (values travel separately, as bound parameters)."""
    seen: list[str] = []

    def spy(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def wrapper(self: Any, query: Any, *args: Any, **kw: Any) -> Any:
            seen.append(query.decode() if isinstance(query, bytes) else str(query))
            return original(self, query, *args, **kw)

        monkeypatch.setattr(cls, name, wrapper)

    for cls, name in (
        (psycopg.Cursor, "execute"),
        (psycopg.Cursor, "executemany"),
        (psycopg.Cursor, "copy"),
        (psycopg.ServerCursor, "execute"),
    ):
        spy(cls, name)
    return seen


def _tolerant(call: Callable[[], Any]) -> None:
    try:
        result = call()
        if hasattr(result, "__next__"):
            list(result)
    except (ValueError, TypeError, KeyError, PermissionError, LookupError):
        pass  # refusing the probe is fine: what matters is the SQL text below


def test_sql_metacharacters_only_ever_reach_the_database_as_bound_parameters(
    store: Substrate, statements: list[str]
) -> None:
    keep = store.add("text", "a bystander item")
    for p in fz.SQL_PROBES:
        other = p + "-other"
        probes: list[Callable[[], Any]] = [
            lambda p=p: store.put(
                SubstrateItem(
                    kind="text",
                    id=p,
                    scope=p,
                    text=p,
                    tags=[p],
                    links=[p],
                    derived_from=[p],
                    payload={p: [p]},
                    provenance={p: p},
                )
            ),
            lambda p=p: store.put(SubstrateItem(kind="text", id=p + "-other", scope=p, text=p)),
            lambda p=p: store.get(p),
            lambda p=p: store.get_many([p, p + "x"]),
            lambda p=p: p in store,
            lambda p=p: store.all(kind="text", scope=p),
            lambda p=p: store.iter_items(scopes=[p, "local"]),
            lambda p=p: store.page_items(scopes=[p], limit=5),
            lambda p=p: store.search(p, k=3),
            lambda p=p: store.search(p, kind="text", scope=p),
            lambda p=p: store.update(p, text=p + " v2"),
            lambda p=p: ingest_documents(store, [p, {"text": p, "tags": [p], "payload": {p: p}}], source=p, scope=p),
            lambda p=p: ingest_records(store, [{p: p}], source=p, scope=p, text_fields=[p]),
            lambda p=p: publish(store, [p], to=p, by=p, policy=AccessPolicy()),
            lambda p=p: Space(store, p).all(),
            lambda p=p: Space(store, p).retrieve(p, k=3),
            lambda p=p: grant_access(store, p + "2", p, by=p),
            lambda p=p: revoke_access(store, p + "2", p, by=p),
            lambda p=p: stored_policy(store, live=True).can_read(p, p + "x"),
            lambda p=p: assimilate(store, p, [{"source_id": p, "tier": "executable"}], scope=p),
            lambda p=p: retrieve_beliefs(store, p, scope=p),
            lambda p=p: retract(store, p, scope=p),
            lambda p=p: verify_lineage(store, p, scope=p),
            lambda p=p: audit_substrate(store, scope=p),
            lambda p=p: history(store, p),
            lambda p=p: revision(store, p),
            lambda p=p: store.events.read(stream=p, types=[p], scopes=[p]),
            lambda p=p: store.events.stream_version(p),
            lambda p=p: create_token(store, p),
            lambda p=p: list_tokens(store, principal=p),
            lambda p=p, other=other: merge_versions(store, p, other, by=p, confirm=True),
            lambda p=p: store.remove(p),
        ]
        for call in probes:
            _tolerant(call)
    view = store.as_of(store.events.head())  # one time-travel view (a replay) for every probe
    for p in fz.SQL_PROBES:
        _tolerant(lambda p=p: view.get(p))
        _tolerant(lambda p=p: view.search(p, scope=p))
    view.close()
    leaked = [s for s in statements if fz.PROBE in s]
    assert leaked == [], leaked[:3]
    assert len(statements) > 200
    with store.engine.connect() as c:
        assert c.execute(text("SELECT to_regclass('items') IS NOT NULL AND to_regclass('events') IS NOT NULL")).scalar()
    assert store.get(keep) is not None and store.verify_chain().ok


# ----------------------------------------------------------------- HTTP bodies
class _Http:
    def __init__(self, store: Substrate, client: TestClient, headers: dict[str, str]) -> None:
        self.store, self.client, self.headers = store, client, headers

    def check(self, method: str, path: str, body: bytes | None) -> str:
        return fz.prop_http(self.client, self.headers, self.store, method, path, body)


@pytest.fixture(scope="module")
def http() -> Iterator[_Http]:
    with Substrate() as store:
        store.add("text", "a passage about budgets", scope="fuzzer")
        headers = {"Authorization": f"Bearer {create_token(store, 'fuzzer')[1]}"}
        with TestClient(create_app(store), raise_server_exceptions=False) as client:
            yield _Http(store, client, headers)


@pytest.mark.parametrize("route", sorted(fz.ROUTE_FIELDS))
def test_every_http_body_is_answered_without_a_500_and_errors_write_nothing(http: _Http, route: str) -> None:
    @settings(max_examples=12, deadline=None, database=None)
    @given(body=fz.http_bodies(route))
    def fuzz(body: bytes) -> None:
        http.check("POST", route, body)

    fuzz()


def test_patch_ingest_and_reads_by_any_id_never_answer_500(http: _Http) -> None:
    target = http.store.add("text", "patch me", scope="fuzzer")

    @settings(max_examples=15, deadline=None, database=None)
    @given(
        item_id=st.one_of(st.just(target), fz.any_text.filter(bool)),
        body=fz.http_bodies("/v1/items"),
        upload=fz.file_lines.map(b"\n".join),
    )
    def fuzz(item_id: str, body: bytes, upload: bytes) -> None:
        segment = fz.quoted(item_id)
        http.check("PATCH", f"/v1/items/{segment}", body)
        http.check("POST", "/v1/ingest", upload)
        for path in (
            f"/v1/items/{segment}",
            f"/v1/history/{segment}",
            f"/v1/revisions/{segment}",
            f"/v1/events?stream={segment}",
            f"/v1/items?scope={segment}",
        ):
            http.check("GET", path, None)

    fuzz()


_NUL_HTTP = [
    ("GET", "/v1/items/a%00b", None),
    ("GET", "/v1/history/a%00b", None),
    ("GET", "/v1/revisions/a%00b", None),
    ("GET", "/v1/events?stream=a%00b", None),
    ("PATCH", "/v1/items/a%00b", b'{"text": "x"}'),
    ("DELETE", "/v1/items/a%00b", None),
    ("POST", "/v1/publish", b'{"ids": ["a\\u0000b"]}'),
    ("POST", "/v1/merge", b'{"keep": "a\\u0000b", "other": "c", "confirm": true}'),
    ("POST", "/v1/proposals", b'{"ids": ["a\\u0000b"], "to": "public"}'),
    (
        "POST",
        "/v1/beliefs/assimilate",
        b'{"claim": "c", "evidence": [{"source_id": "a\\u0000b", "tier": "executable"}]}',
    ),
]


@pytest.mark.parametrize("method,path,body", _NUL_HTTP)
def test_a_nul_in_an_http_id_is_a_4xx_or_an_empty_answer(
    http: _Http, method: str, path: str, body: bytes | None
) -> None:
    http.check(method, path, body)


# ----------------------------------------------------------------- known failures (strict: fixing them flips these)
NUL = "a\x00b"
_NUL_READS: dict[str, Callable[[Substrate], Any]] = {
    "get": lambda s: s.get(NUL),
    "get_many": lambda s: s.get_many([NUL]),
    "contains": lambda s: NUL in s,
    "all(scope)": lambda s: s.all(scope=NUL),
    "page_items(scopes)": lambda s: s.page_items(scopes=[NUL]),
    "search(scope)": lambda s: s.search("x", scope=NUL),
    "events.read(stream)": lambda s: list(s.events.read(stream=NUL)),
    "stream_version": lambda s: s.events.stream_version(NUL),
    "history": lambda s: history(s, NUL),
    "revision": lambda s: revision(s, NUL),
    "publish(ids)": lambda s: publish(s, [NUL], by="local"),
    "verify_lineage": lambda s: verify_lineage(s, NUL),
}


def test_a_nul_in_a_read_key_is_a_miss_or_a_value_error(store: Substrate) -> None:
    broken = []
    for name, call in sorted(_NUL_READS.items()):
        try:
            call(store)
        except ValueError:
            pass
        except Exception as exc:  # noqa: BLE001 - collected so one run names every affected path
            broken.append(f"{name}: {type(exc).__name__}")
    assert broken == []


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_deeply_nested_row_fails_alone_in_every_ingest(store: Substrate, tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(
        f'{{"input": "ok", "answer": "a"}}\n{{"input": {_deep(50_000)}}}\n{{"input": "after", "answer": "b"}}\n'
    )
    for name, raw in (("m1", _deep(50_000)), ("m2", '{"name": "fine"}')):
        (tmp_path / "reg" / name).mkdir(parents=True)
        (tmp_path / "reg" / name / "manifest.json").write_text(raw)
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    calls = {
        "ingest_file": lambda: ingest_file(store, tmp_path / "a.jsonl"),
        "ingest_traces": lambda: ingest_traces(store, tmp_path / "a.jsonl"),
        "ingest_artifacts": lambda: ingest_artifacts(store, tmp_path / "reg"),
        "ingest_documents": lambda: ingest_documents(store, ["ok", {"text": "t", "payload": {"deep": deep}}, "after"]),
        "ingest_records": lambda: ingest_records(store, [{"a": 1}, {"deep": deep}, {"b": 2}]),
    }
    broken = []
    for name, call in calls.items():
        try:
            receipt = call()
        except RecursionError:
            broken.append(name)
            continue
        assert len(receipt) >= 1 and len(receipt.failed) == 1, name
    assert broken == []


def test_an_http_upload_never_errors_after_writing(http: _Http) -> None:
    body = b"".join(b'"line %d"\n' % i for i in range(2100)) + f'{{"x": {_deep(900)}}}\n'.encode()
    http.check("POST", "/v1/ingest", body)


def test_save_then_load_round_trips_unicode_line_separators(make_store: Any, tmp_path: Path) -> None:
    a = make_store()
    a.add("text", "one\u2028two\u2029three\x85four")
    a.save(tmp_path)
    b = make_store()
    b.load(tmp_path)
    assert [i.text for i in b.all()] == [i.text for i in a.all()]


def test_load_names_the_line_of_an_unstorable_row(store: Substrate, tmp_path: Path) -> None:
    good = json.dumps(SubstrateItem(kind="text", text="ok").to_json())
    head, unnamed = store.events.head(), []
    for row in (
        '{"kind": "text", "payload": {"x": NaN}}',
        '{"kind": "text", "text": "a\\u0000b"}',
        '{"kind": "text", "text": "\\ud800"}',
        f'{{"kind": "text", "payload": {_deep(50_000)}}}',
    ):
        (tmp_path / "items.jsonl").write_text(f"{good}\n{row}\n")
        try:
            store.load(tmp_path)
        except SnapshotError as exc:
            if exc.line != 2:
                unnamed.append(row[:40])
        except (ValueError, RecursionError):
            unnamed.append(row[:40])
        assert store.events.head() == head
    assert unnamed == []
