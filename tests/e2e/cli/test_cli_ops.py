"""Operating a store from the shell: `substrate stats`, `substrate url`, `substrate psql` and docs/analytics.md."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from service import Substrate
from service.cli import main
from service.store.embedded import embedded_program
from service.teams.access import PUBLIC, grant_access
from service.teams.governance import propose
from service.teams.sharing import merge_versions, publish

ANALYTICS = (Path(__file__).resolve().parents[3] / "docs" / "analytics.md").read_text()


def _five_queries() -> list[str]:
    section = ANALYTICS.split("## Five useful queries", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, re.S)


@pytest.fixture
def shared(store):  # type: ignore[no-untyped-def]
    """team-a's store after a publish into public, a merge and a pending proposal; team-b's item it must not see."""
    a = store.add("text", "aspirin note", scope="team-a")
    keep = store.add("text", "dose v1", scope="team-a")
    other = store.add("text", "dose v2", scope="team-a")
    store.add("text", "team-b secret plan", scope="team-b")
    store.add("text", "team-c shared doc", scope="team-c")
    publish(store, [a], to=PUBLIC, by="team-a")
    merge_versions(store, keep, other, by="team-a", confirm=True)
    propose(store, [keep], to="prod", by="team-a")
    grant_access(store, "team-a", "team-c", "read", by="team-c")
    return store


def test_the_five_documented_queries_run_through_substrate_psql_as_a_principal(  # type: ignore[no-untyped-def]
    shared, tmp_path: Path, capfd
) -> None:
    queries = _five_queries()
    assert len(queries) == 5
    results = []
    for n, sql in enumerate(queries, 1):
        script = tmp_path / f"q{n}.sql"
        script.write_text(sql)
        code = main(
            ["psql", "--url", shared.url, "--as", "team-a", "--", "-X", "-v", "ON_ERROR_STOP=1", "-Atf", str(script)]
        )
        out, err = capfd.readouterr()
        assert code == 0, f"query {n} failed: {err}"
        results.append([line.split("|") for line in out.splitlines()])
    by_scope, per_day, shares, merges, queue = results
    assert {r[0] for r in by_scope} == {"team-a", "team-c", PUBLIC}  # never team-b
    assert {r[1] for r in per_day} >= {"ItemPut", "ItemPublished", "ItemsMerged"}
    assert [r[3] for r in shares] == ["team-a"] and len(merges) == 2  # both parents of the one merge
    assert [r[0] for r in queue] == ["prod"] and queue[0][1] == "1"


def test_psql_as_a_principal_sees_exactly_its_readable_scopes(shared, capfd) -> None:  # type: ignore[no-untyped-def]
    sql = (
        "SELECT principal, array_to_string(visible_scopes, ','), (SELECT count(*) FROM items) FROM analytics_principal"
    )
    assert main(["psql", "--url", shared.url, "--as", "team-a", "--", "-X", "-Atc", sql]) == 0
    principal, scopes, items = capfd.readouterr().out.strip().split("|")
    assert principal == "team-a" and set(scopes.split(",")) == {PUBLIC, "team-a", "team-c"} and items == "3"
    # without --as psql is the store's owner, who sees everything
    assert main(["psql", "--url", shared.url, "--", "-X", "-Atc", "SELECT count(*) FROM items"]) == 0
    assert capfd.readouterr().out.strip() == "4"  # the merged-away item is gone
    # psql's own exit code comes back
    assert main(["psql", "--url", shared.url, "--", "-X", "-v", "ON_ERROR_STOP=1", "-c", "SELECT nope"]) != 0


def test_a_login_role_per_principal_sees_its_scopes_and_cannot_become_another(shared) -> None:  # type: ignore[no-untyped-def]
    role = f"team-a-{uuid.uuid4().hex[:8]}"
    grant_access(shared, role, "team-c", "read", by="team-c")
    shared.add("text", "the role's own note", scope=role)
    statement = 'GRANT substrate_reader TO "team-a" WITH INHERIT TRUE, SET FALSE;'
    assert statement in ANALYTICS  # the documented way, run as documented
    with shared.engine.begin() as c:
        c.exec_driver_sql(f'CREATE ROLE "{role}" LOGIN')
        c.exec_driver_sql(statement.replace('"team-a"', f'"{role}"'))
    url = make_url(shared.url).set(drivername="postgresql", username=role).render_as_string(hide_password=False)
    sql = (
        "SELECT array_to_string(visible_scopes, ',') FROM analytics_principal;"
        "SET substrate.principal = 'team-b';"
        "SELECT array_to_string(visible_scopes, ',') FROM analytics_principal;"
        "SELECT DISTINCT scope FROM items ORDER BY 1;"
    )
    try:
        run = subprocess.run(
            [embedded_program("psql"), url, "-X", "-v", "ON_ERROR_STOP=1", "-Atc", sql], capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        first, _set, after_set, *scopes = run.stdout.split()
        assert set(first.split(",")) == {PUBLIC, role, "team-c"} and after_set == first
        assert set(scopes) == {PUBLIC, role, "team-c"}
        # the shared reader's door is closed to it: it cannot SET ROLE and then name any principal
        run = subprocess.run(
            [embedded_program("psql"), url, "-X", "-v", "ON_ERROR_STOP=1", "-Atc", "SET ROLE substrate_reader"],
            capture_output=True,
            text=True,
        )
        assert run.returncode != 0 and "permission denied" in run.stderr
    finally:
        with shared.engine.begin() as c:
            c.exec_driver_sql(f'DROP OWNED BY "{role}"')
            c.exec_driver_sql(f'DROP ROLE "{role}"')


def test_url_prints_what_psql_connects_to(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "store"
    Substrate(root=str(root)).close()
    assert main(["url", "--root", str(root)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"postgresql://postgres@/substrate?host={str(root / 'pgdata').replace('/', '%2F')}"
    assert "runs only while a substrate process uses it" in err


def test_stats_reports_events_items_per_scope_sizes_and_the_wal(store, capsys) -> None:  # type: ignore[no-untyped-def]
    for n in range(30):
        store.add("text", f"note {n} about aspirin", scope="pharma" if n % 3 else "qa")
    store.reindex()  # builds the search postings: their tables have a size
    with store.engine.begin() as c:
        c.exec_driver_sql("ANALYZE")  # row counts are the planner's estimates: exact right after ANALYZE
    assert main(["stats", "--url", store.url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["events"] == 30 and report["items"] == {"pharma": {"text": 20}, "qa": {"text": 10}}
    tables = {t["name"]: t for t in report["tables"]}
    assert {"events", "items", "revisions", "search_lists"} <= set(tables)
    assert tables["events"]["rows"] == 30 and tables["events"]["total_bytes"] > 0
    assert report["wal"]["bytes"] > 0 and report["wal"]["max_wal_size"] == "512MB"
    assert report["wal"]["wal_level"] == "replica"  # a standby can still stream from the embedded server
    assert main(["stats", "--url", store.url]) == 0
    out = capsys.readouterr().out
    assert "events     30" in out and re.search(r"pharma\s+20\s+\(text 20\)", out)
    assert re.search(r"WAL\s+[\d.,]+ [kMG]?B \(max_wal_size 512MB", out)
