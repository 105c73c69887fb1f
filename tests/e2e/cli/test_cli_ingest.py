"""`substrate ingest`, `substrate freshness` and `substrate audit`, run as a person would on a folder of files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "nested" / "deeper").mkdir(parents=True)
    (root / "notes.txt").write_text("first note\n\nsecond note\n")
    (root / "nested" / "rows.jsonl").write_text('{"text": "a doc"}\n{broken\n{"k": 2}\n')
    (root / "nested" / "deeper" / "t.csv").write_text("name,age\nada,36\nbob\n")
    (root / "nested" / "image.png").write_bytes(b"\x89PNG")  # not an ingest format: skipped in a folder walk
    (root / ".hidden.txt").write_text("never\n")
    return root


def test_ingest_a_folder_then_again_appends_nothing_then_revises_what_changed(  # type: ignore[no-untyped-def]
    store, corpus: Path, capsys
) -> None:
    url = ["--url", store.url]
    assert main(["ingest", str(corpus), *url]) == 1  # some rows failed
    out, err = capsys.readouterr()
    assert "ingested 5 items from 3 file(s)" in out and "5 new, 0 revised, 0 unchanged, 2 failed" in out
    rows = str((corpus / "nested" / "rows.jsonl").resolve())
    assert f"failed {rows}:2: invalid JSON" in out
    assert f"{(corpus / 'nested' / 'deeper' / 't.csv').resolve()}:3: expected 2 fields" in out
    # what the walk left out is said, with how to include it
    assert "skipped 1 hidden file(s)/folder(s) (add --hidden" in err and "1 file(s) of other types [.png]" in err
    head = store.events.head()
    assert main(["ingest", str(corpus), *url, "--json"]) == 1
    receipt = json.loads(capsys.readouterr().out)
    counts = (receipt["ingested"], receipt["new"], receipt["revised"], receipt["unchanged"], receipt["failed"])
    assert counts == (5, 0, 0, 5, 2)
    assert {f["line"] for f in receipt["failures"]} == {2, 3} and receipt["files"] == 3
    assert store.events.head() == head  # nothing changed, nothing appended
    (corpus / "notes.txt").write_text("first note\n\nsecond note, edited\n")
    assert main(["ingest", str(corpus / "notes.txt"), *url, "--json"]) == 0
    receipt = json.loads(capsys.readouterr().out)
    # the file's content hash is in every row's provenance: both rows of the edited file are revised
    assert (receipt["revised"], receipt["unchanged"]) == (2, 0)
    assert store.events.head() == head + 2 and len(store) == 5


def test_ingest_hidden_walks_dot_entries_and_a_folder_with_nothing_to_ingest_fails(  # type: ignore[no-untyped-def]
    store, tmp_path: Path, capsys
) -> None:
    pkg = tmp_path / "site-packages" / "fastapi"
    (pkg / ".cache").mkdir(parents=True)
    (pkg / "app.py").write_text("print('x')\n")
    (pkg / ".cache" / "notes.md").write_text("cached note\n")
    assert main(["ingest", str(pkg), "--url", store.url]) == 1  # not "0 items, exit 0"
    err = capsys.readouterr().err
    assert "no file to ingest under" in err and "1 hidden" in err and "[.py]" in err
    assert main(["ingest", str(pkg), "--hidden", "--url", store.url]) == 0
    assert "1 new" in capsys.readouterr().out and [i.text for i in store.all()] == ["cached note"]


def test_ingest_options_scope_kind_source(store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "data.log"
    f.write_text('{"x": 1}\n')
    assert main(["ingest", str(f), "--kind", "jsonl", "--scope", "team", "--source", "feed", "--url", store.url]) == 0
    assert "1 new" in capsys.readouterr().out
    (item,) = store.all()
    assert item.scope == "team" and item.payload == {"x": 1} and item.provenance["source"] == "feed"
    assert main(["ingest", str(f), str(f), "--source", "x", "--url", store.url]) == 2
    assert "--source names one source" in capsys.readouterr().err
    head = store.events.head()
    for missing in ("missing.txt", "missing"):  # with and without an extension: the same plain error
        assert main(["ingest", str(tmp_path / missing), "--url", store.url]) == 2
        err = capsys.readouterr().err
        assert f"no such file or directory: {tmp_path / missing}" in err and "infer the format" not in err
    assert store.events.head() == head


def test_freshness_reports_changed_files_and_exits_1(store, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "a.txt"
    f.write_text("one\ntwo\n")
    assert main(["ingest", str(f), "--url", store.url, "--json"]) == 0
    capsys.readouterr()
    assert main(["freshness", "--url", store.url]) == 0
    assert "2 items: 2 fresh, 0 stale, 0 unverifiable" in capsys.readouterr().out
    f.write_text("one\ntwo\nthree\n")
    assert main(["freshness", "--url", store.url, "--json", "--max-age", "7d"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["n_stale"] == 2 and all(s[0].startswith("changed:") for s in report["signals"].values())
    assert main(["freshness", "--url", store.url, "--scope", "elsewhere"]) == 0
    with pytest.raises(SystemExit):
        main(["freshness", "--url", store.url, "--max-age", "soon"])


def test_audit_reports_broken_lineage(store, capsys) -> None:  # type: ignore[no-untyped-def]
    base = store.add("text", "base")
    store.add("text", "good", derived_from=[base])
    bad = store.add("text", "bad", derived_from=["gone"])
    assert main(["audit", "--url", store.url]) == 1
    out = capsys.readouterr().out
    assert "3 items: 2 intact, 1 broken, 0 unverified" in out and f"broken     {bad}  dangling ['gone']" in out
    assert main(["audit", "--url", store.url, "--json", "--scope", "nobody"]) == 0
    assert json.loads(capsys.readouterr().out)["n_items"] == 0


def test_ingest_runs_as_a_process_with_a_progress_bar(store, corpus: Path) -> None:  # type: ignore[no-untyped-def]
    proc = subprocess.run(
        [sys.executable, "-m", "service.cli", "ingest", str(corpus / "notes.txt"), "--url", store.url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ingested 2 items from 1 file(s)" in proc.stdout and "items/s" in proc.stdout
    assert "ingest" in proc.stderr  # the progress bar (rich) goes to stderr


@pytest.mark.parametrize("command", ["ingest", "freshness", "audit"])
def test_commands_have_help(command: str, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0 and "usage: substrate " + command in capsys.readouterr().out
