"""Ingest on the real database: stable revisioned ids, per-row failures, content hashes, one append per batch."""

from __future__ import annotations

import gc
import hashlib
import json
from pathlib import Path

import pytest
from sqlalchemy import text

import service.ingest.batch as ingest_mod
from service import (
    IngestReceipt,
    ingest_artifacts,
    ingest_documents,
    ingest_file,
    ingest_records,
    ingest_traces,
)
from service.domain.validation import InvalidArgument
from service.store.audit import verify_store

SECRET = "token ghp_1234567890abcdefghijklmnopqrstuvwxyZ12"


def _sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_documents_return_a_receipt_that_is_the_list_of_ids(store) -> None:  # type: ignore[no-untyped-def]
    r = ingest_documents(store, ["alpha", {"text": "beta", "tags": ["t"], "payload": {"n": 1}}], source="s")
    assert isinstance(r, IngestReceipt) and isinstance(r, list) and len(r) == 2 and r.failed == []
    a, b = store.get(r[0]), store.get(r[1])
    assert a.kind == "text" and a.text == "alpha" and a.provenance == {"source": "s", "position": 0, "revision": 1}
    assert b.tags == ["t"] and b.payload == {"n": 1} and b.scope == "local"
    assert gc.isenabled()  # paused for the bulk work only


def test_a_source_that_breaks_mid_ingest_ends_the_collector_pause(store) -> None:  # type: ignore[no-untyped-def]
    def docs():  # type: ignore[no-untyped-def]
        yield "alpha"
        raise OSError("the source broke")

    with pytest.raises(OSError):
        ingest_documents(store, docs(), source="s")
    assert gc.isenabled()


def test_reingesting_a_source_revises_the_same_ids_instead_of_duplicating(store) -> None:  # type: ignore[no-untyped-def]
    first = ingest_documents(store, ["one", "two"], source="notes")
    second = ingest_documents(store, ["one v2", "two v2"], source="notes")
    assert list(first) == list(second) and len(store) == 2
    assert first.n_new == 2 and first.revised == [] and second.revised == list(first) and second.n_new == 0
    assert store.get(first[0]).text == "one v2"
    assert [e.version for e in store.events.read(stream=first[0])] == [1, 2]
    other = ingest_documents(store, ["one"], source="notes", scope="elsewhere")
    assert other[0] != first[0] and len(store) == 3  # another scope never overwrites this one's items


def test_reingesting_unchanged_content_appends_nothing(store) -> None:  # type: ignore[no-untyped-def]
    docs = [f"line {n}" for n in range(9)]
    first = ingest_documents(store, docs, source="notes")
    head = store.events.head()
    again = ingest_documents(store, docs, source="notes")
    assert list(again) == list(first) and again.unchanged == list(first) and again.revised == []
    assert again.as_dict()["unchanged"] == 9 and again.n_new == 0 and store.events.head() == head
    edited = [*docs[:4], "line 4, edited", *docs[5:], "line 9"]
    third = ingest_documents(store, edited, source="notes")
    assert list(third) == [*first, third[-1]]  # the row order, whatever was or was not written
    assert third.revised == [first[4]] and len(third.unchanged) == 8 and third.n_new == 1
    assert store.events.head() == head + 2 and store.get(first[4]).provenance["revision"] == 2
    store.update(first[0], tags=["reviewed"])  # changed in the store since: the ingest puts the row back
    assert ingest_documents(store, docs, source="notes").revised == [first[0], first[4]]


def test_unchanged_batches_keep_the_receipts_row_order(store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import service.ingest.batch as batch

    monkeypatch.setattr(batch, "BATCH_SIZE", 3)  # batches: 3 unchanged, 3 changed, 3 unchanged, 3 new
    docs = [f"doc {n}" for n in range(9)]
    first = ingest_documents(store, docs, source="s")
    again = ingest_documents(store, [*docs[:3], "x3", "x4", "x5", *docs[6:], "n9", "n10", "n11"], source="s")
    assert list(again)[:9] == list(first) and len(again) == 12
    assert again.unchanged == [*first[:3], *first[6:]] and again.revised == first[3:6] and again.n_new == 3


def test_each_ingest_of_a_record_counts_its_revision_in_provenance(store) -> None:  # type: ignore[no-untyped-def]
    first = ingest_documents(store, ["one", "two"], source="notes")
    assert [store.get(i).provenance["revision"] for i in first] == [1, 1]
    ingest_documents(store, ["one v2", "two v2"], source="notes")
    third = ingest_documents(store, ["one v3"], source="notes")
    assert store.get(third[0]).provenance["revision"] == 3 and store.get(first[1]).provenance["revision"] == 2
    store.update(first[1], provenance={"source": "notes", "position": 1})  # an edit that dropped the count
    ingest_documents(store, ["x", "two v3"], source="notes")
    assert store.get(first[1]).provenance["revision"] == 2  # an uncounted item is taken as revision 1


def test_a_bad_doc_is_reported_with_its_line_and_never_aborts_the_batch(store) -> None:  # type: ignore[no-untyped-def]
    r = ingest_documents(store, ["ok", 42, {"no": "text"}, "also ok"], source="mixed")
    assert len(r) == 2 and [store.get(i).text for i in r] == ["ok", "also ok"]
    assert [(f["line"], f["source"]) for f in r.failed] == [(2, "mixed"), (3, "mixed")]
    assert "got int" in r.failed[0]["reason"] and "'text' must be a string" in r.failed[1]["reason"]


def test_a_receipt_says_whether_all_went_in_and_each_failure_reads_as_attributes(store) -> None:  # type: ignore[no-untyped-def]
    assert ingest_documents(store, ["fine"], source="s").ok
    r = ingest_documents(store, ["ok", 42], source="mixed")
    assert not r.ok and len(r.failed) == 1
    f = r.failed[0]
    assert (f.source, f.line) == ("mixed", 2) and f == {"source": "mixed", "line": 2, "reason": f.reason}
    assert f.error.startswith("line 2: ") and "got int" in f.error
    assert json.loads(json.dumps(r.as_dict()))["failures"] == [dict(f)]


def test_a_rejected_secret_fails_only_its_own_doc(make_store) -> None:  # type: ignore[no-untyped-def]
    store = make_store(secret_policy="reject")
    r = ingest_documents(store, ["fine", SECRET, "fine too"], source="s")
    assert len(r) == 2 and len(store) == 2
    assert r.failed[0]["line"] == 2 and "github_token" in r.failed[0]["reason"]
    assert all("ghp_" not in e.data.__repr__() for e in store.events.read())


def test_indices_give_ids_and_failure_lines(store) -> None:  # type: ignore[no-untyped-def]
    r = ingest_documents(store, ["a", 7], source="f", indices=[3, 8])
    assert r.failed[0]["line"] == 8 and store.get(r[0]).provenance["position"] == 3
    with pytest.raises(InvalidArgument, match="indices"):
        ingest_documents(store, ["a", "b"], source="f", indices=[1])
    with pytest.raises(InvalidArgument, match="source"):
        ingest_documents(store, ["a"], source="")
    with pytest.raises(InvalidArgument, match="single str"):
        ingest_documents(store, "one string")
    with pytest.raises(InvalidArgument, match="single dict"):
        ingest_records(store, {"a": 1})
    with pytest.raises(InvalidArgument, match="scope"):
        ingest_documents(store, ["a"], scope=" ")


def test_a_readable_source_file_puts_its_full_content_hash_on_provenance(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "notes.txt"
    f.write_text("x\n")
    r = ingest_documents(store, ["from a file"], source=str(f))
    prov = store.get(r[0]).provenance
    assert prov["content_hash"] == _sha(f) and len(prov["content_hash"]) == 7 + 64
    assert prov["path"] == str(f.resolve())
    assert "content_hash" not in store.get(ingest_documents(store, ["label"], source="documents")[0]).provenance


def test_bulk_path_appends_one_batch_per_transaction_and_streams_input(store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(ingest_mod, "BATCH_SIZE", 10)
    pulled: list[int] = []

    def docs():  # type: ignore[no-untyped-def]
        for i in range(35):
            pulled.append(i)
            if i == 12:
                assert len(pulled) <= 13  # nothing read ahead of the batch being built
            yield f"doc {i}"

    r = ingest_documents(store, docs(), source="gen")
    with store.engine.connect() as c:  # xmin: the transaction that wrote each event row
        sizes = c.execute(text("SELECT count(*) FROM events GROUP BY xmin::text ORDER BY min(seq)")).scalars().all()
    assert sizes == [10, 10, 10, 5] and len(r) == 35 and len(store) == 35
    assert r.position == store.events.head() == store.position
    assert verify_store(store).ok


def test_records_dicts_tuples_text_fields_and_failures(store) -> None:  # type: ignore[no-untyped-def]
    r = ingest_records(
        store,
        [{"title": "Dune", "year": 1965}, ("a", 2), "nope", {"bad": {1, 2}}],
        source="books",
        text_fields=["title"],
    )
    assert len(r) == 2 and [f["line"] for f in r.failed] == [3, 4]
    dune, row = store.get(r[0]), store.get(r[1])
    assert dune.kind == "record" and dune.text == "Dune" and dune.payload == {"title": "Dune", "year": 1965}
    assert row.payload == {"values": ["a", 2]}
    assert store.search("Dune", k=1)[0][0].id == r[0]
    again = ingest_records(store, [{"title": "Dune Messiah"}], source="books", text_fields=["title"])
    assert again.revised == [r[0]] and store.get(r[0]).text == "Dune Messiah"
    with pytest.raises(InvalidArgument, match="text_fields"):
        ingest_records(store, [], text_fields="title")  # type: ignore[arg-type]


def test_text_file_one_item_per_non_blank_line_with_line_numbers(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "a.md"
    f.write_text("# Title\n\nfirst para\n   \nsecond\n")
    r = ingest_file(store, f)
    items = [store.get(i) for i in r]
    assert [i.text for i in items] == ["# Title", "first para", "second"]
    assert [i.provenance["position"] for i in items] == [1, 3, 5]
    assert {i.provenance["source"] for i in items} == {str(f.resolve())}
    assert {i.provenance["content_hash"] for i in items} == {_sha(f)}
    f.write_text("# Title\n\nfirst para, edited\n   \nsecond\n")
    again = ingest_file(store, f)
    assert list(again) == list(r) and len(again.revised) == 3 and len(store) == 3


def test_jsonl_mixes_docs_and_records_and_reports_bad_lines(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "mixed.jsonl"
    f.write_text(
        '"plain"\n{"text": "doc", "lang": "en"}\n{broken\n{"k": 1}\n\n[1, 2]\n{"text": 5}\n'
        '{"text": "tagged", "tags": ["t"], "payload": {"p": 1}}\n'
    )
    r = ingest_file(store, f)
    kinds = [(store.get(i).kind, store.get(i).provenance["position"]) for i in r]
    assert kinds == [("text", 1), ("text", 2), ("record", 4), ("record", 6), ("text", 8)]
    # An object with a text is a text item; its other fields are its payload (a corpus row stays searchable).
    assert store.get(r[1]).payload == {"lang": "en"}
    assert store.get(r[4]).payload == {"p": 1} and store.get(r[4]).tags == ["t"]
    assert [(x["line"], x["source"]) for x in r.failed] == [(3, str(f.resolve())), (7, str(f.resolve()))]
    assert "invalid JSON" in r.failed[0]["reason"]


def test_csv_rows_become_records_keyed_by_the_header(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "t.csv"
    f.write_text('name,note\nada,"multi\nline"\nbob\ncy,ok\n')
    r = ingest_file(store, f, source="people")
    assert [store.get(i).payload for i in r] == [{"name": "ada", "note": "multi\nline"}, {"name": "cy", "note": "ok"}]
    assert r.failed[0]["line"] == 4 and "expected 2 fields" in r.failed[0]["reason"]
    assert store.get(r[0]).provenance["source"] == "people" and "content_hash" in store.get(r[0]).provenance


def test_kind_forces_the_format_and_unknown_formats_raise(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "data.log"
    f.write_text('{"a": 1}\n')
    assert store.get(ingest_file(store, f, kind="jsonl")[0]).payload == {"a": 1}
    assert store.get(ingest_file(store, f, kind="text")[0]).text == '{"a": 1}'
    with pytest.raises(InvalidArgument, match="extension"):
        ingest_file(store, f)
    with pytest.raises(FileNotFoundError):
        ingest_file(store, tmp_path, kind="text")  # a directory, not a file


def test_a_missing_source_is_an_empty_receipt_naming_it(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    head = store.events.head()
    for receipt in (
        ingest_file(store, tmp_path / "missing.txt"),
        ingest_traces(store, tmp_path / "missing.jsonl"),
        ingest_artifacts(store, tmp_path / "no-registry"),
    ):
        assert receipt == [] and not receipt.ok
        (failure,) = receipt.failed
        assert failure.source.startswith(str(tmp_path)) and failure.reason == "no such file or directory"
    assert store.events.head() == head


def test_traces_index_rows_and_report_non_objects(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "runs.jsonl"
    f.write_text('{"input": "2+2", "answer": "4"}\n[1]\n{"answer": "x"}\nnot json\n{"input": "q", "label": "y"}\n')
    r = ingest_traces(store, str(f))
    # A row without an input is still a row: only the lines that are not JSON objects fail.
    assert [store.get(i).text for i in r] == ["2+2\nanswer: 4", "answer: x", "q\nlabel: y"]
    assert all(store.get(i).kind == "trace" and store.get(i).provenance["content_hash"] == _sha(f) for i in r)
    assert [x["line"] for x in r.failed] == [2, 4]
    assert list(ingest_traces(store, str(f))) == list(r) and len(store) == 3
    assert list(ingest_file(store, f, kind="trace")) == list(r)


def test_artifacts_reference_their_directory_and_bad_manifests_are_reported(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = tmp_path / "reg" / "model-a"
    good.mkdir(parents=True)
    (good / "manifest.json").write_text(json.dumps({"kind": "model", "io": "text->label", "lineage": {"run": 7}}))
    for name, body in (("broken", "{nope"), ("listy", "[1, 2]")):
        d = tmp_path / "reg" / name
        d.mkdir()
        (d / "manifest.json").write_text(body)
    r = ingest_artifacts(store, tmp_path / "reg")
    assert len(r) == 1
    item = store.get(r[0])
    assert item.kind == "artifact" and item.payload == {"ref": str(good.resolve())}
    assert "kind: model" in item.text and item.provenance["lineage"] == {"run": 7}
    assert item.provenance["artifact_kind"] == "model"
    assert item.provenance["content_hash"] == _sha(good / "manifest.json")
    assert sorted(Path(f["source"]).parent.name for f in r.failed) == ["broken", "listy"]
    assert any("JSON object" in f["reason"] for f in r.failed)
    assert list(ingest_artifacts(store, tmp_path / "reg")) == list(r) and len(store) == 1
    assert "parent" not in item.provenance
    # The artifact it derives from, top-level or under meta, is a lineage field too.
    child = tmp_path / "reg2"
    for name, manifest in (("top", {"kind": "model", "parent": "model-a"}), ("meta", {"meta": {"parent": "top"}})):
        (child / name).mkdir(parents=True)
        (child / name / "manifest.json").write_text(json.dumps(manifest))
    parents = {
        Path(it.payload["ref"]).name: it.provenance["parent"] for it in map(store.get, ingest_artifacts(store, child))
    }
    assert parents == {"top": "model-a", "meta": "top"}
    with pytest.raises(InvalidArgument, match="registry_root"):
        ingest_artifacts(store, good / "manifest.json")  # a file, not a directory


def test_an_artifact_tagged_the_spec_stores_way_names_its_kind(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    router = tmp_path / "reg" / "router"
    router.mkdir(parents=True)
    manifest = {"mixle_artifact": "solve/v1", "meta": {"solve": {"kind": "classifier"}}, "io": {"kind": "record"}}
    (router / "manifest.json").write_text(json.dumps(manifest))
    (item_id,) = ingest_artifacts(store, tmp_path / "reg")
    item = store.get(item_id)
    assert item.provenance["artifact_kind"] == "solve/v1" and "kind: solve/v1" in item.text
    assert item.payload["ref"] == str(router.resolve())


def test_a_failing_append_raises_and_stops_the_writer(store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import threading

    monkeypatch.setattr(ingest_mod, "BATCH_SIZE", 2)
    original, calls = store.events.insert_stamped, []

    def second_fails(stored, statement):  # type: ignore[no-untyped-def]
        calls.append(len(stored))
        if len(calls) == 2:
            raise RuntimeError("database went away")
        return original(stored, statement)

    monkeypatch.setattr(store.events, "insert_stamped", second_fails)
    with pytest.raises(RuntimeError, match="went away"):
        ingest_documents(store, ["a", "b", "c", "d", "e", "f", "g"], source="s")
    assert calls == [2, 2] and len(store) == 2  # the first batch committed, nothing after the failed one
    assert not [t for t in threading.enumerate() if t.name.startswith("bulk-append")]
    assert verify_store(store).ok
