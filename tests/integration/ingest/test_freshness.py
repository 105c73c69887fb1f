"""Freshness on the real database: three states, named signals, STALE > UNVERIFIABLE > FRESH, validated arguments."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from service import (
    Freshness,
    FreshnessState,
    check_freshness,
    content_hash,
    freshness_report,
    ingest_artifacts,
    ingest_file,
)
from service.substrate import Substrate


def test_content_hash_is_labelled_full_sha256_or_none(tmp_path: Path) -> None:
    f = tmp_path / "a.bin"
    f.write_bytes(b"\x00\x01" * 100_000)
    assert content_hash(f) == "sha256:" + hashlib.sha256(f.read_bytes()).hexdigest()
    assert len(content_hash(str(f))) == len("sha256:") + 64
    assert content_hash(tmp_path / "missing") is None and content_hash(tmp_path) is None


def _file_item(store, tmp_path: Path, body: str = "one\n") -> tuple[str, Path]:  # type: ignore[no-untyped-def]
    f = tmp_path / "src.txt"
    f.write_text(body)
    return ingest_file(store, f)[0], f


def test_an_unchanged_ingested_file_is_fresh(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    item_id, _ = _file_item(store, tmp_path)
    v = check_freshness(store, item_id)
    assert v.state is FreshnessState.FRESH and v.fresh and v.signals == [] and v.age_s >= 0
    assert json.loads(json.dumps(v.as_dict()))["state"] == "fresh"


def test_a_changed_file_is_stale_and_a_moved_one_too(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    item_id, f = _file_item(store, tmp_path)
    f.write_text("one\nmore\n")
    v = check_freshness(store, item_id)
    assert v.state is FreshnessState.STALE and not v.fresh and v.signals[0].startswith("changed:")
    f.unlink()
    v = check_freshness(store, item_id)
    assert v.state is FreshnessState.STALE and v.signals[0].startswith("moved:")


def test_a_missing_item_is_stale(store) -> None:  # type: ignore[no-untyped-def]
    v = check_freshness(store, "no-such-id")
    assert v.state is FreshnessState.STALE and v.signals == ["missing: no such item"]


def test_an_unreadable_reference_with_a_recorded_hash_is_unverifiable(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    art = tmp_path / "reg" / "m"
    art.mkdir(parents=True)
    (art / "manifest.json").write_text('{"kind": "model"}')
    item_id = ingest_artifacts(store, tmp_path / "reg")[0]
    v = check_freshness(store, item_id)  # payload["ref"] is a directory: it cannot be re-hashed
    assert v.state is FreshnessState.UNVERIFIABLE and not v.fresh and v.signals[0].startswith("unreadable:")
    # A directory with a deliberately wrong hash is never reported fresh either.
    d = store.add("text", "x", payload={"ref": str(art)}, provenance={"content_hash": "sha256:" + "0" * 64})
    assert check_freshness(store, d).state is FreshnessState.UNVERIFIABLE


def test_stale_outranks_unverifiable(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    art = tmp_path / "reg" / "m"
    art.mkdir(parents=True)
    (art / "manifest.json").write_text("{}")
    item_id = ingest_artifacts(store, tmp_path / "reg")[0]
    created = store.get(item_id).created_at
    v = check_freshness(store, item_id, max_age_s=10, now=created + 100)
    assert v.state is FreshnessState.STALE
    assert [s.split(":")[0] for s in v.signals] == ["aged", "unreadable"]  # every signal named, confirmed first


def test_age_is_measured_against_an_injectable_now(store) -> None:  # type: ignore[no-untyped-def]
    item_id = store.add("text", "t", created_at=1000.0)
    assert check_freshness(store, item_id, max_age_s=60, now=1059.0).state is FreshnessState.FRESH
    v = check_freshness(store, item_id, max_age_s=60, now=1061.0)
    assert v.state is FreshnessState.STALE and v.age_s == 61.0 and v.signals[0].startswith("aged:")
    assert check_freshness(store, item_id, now=10**9).state is FreshnessState.FRESH  # no max_age: age alone is fine


def test_a_future_dated_item_is_stale_not_an_error(store) -> None:  # type: ignore[no-untyped-def]
    item_id = store.add("text", "t", created_at=5000.0)
    v = check_freshness(store, item_id, now=4000.0)
    assert v.state is FreshnessState.STALE and v.signals[0].startswith("invalid timestamp")


def test_superseded_items_are_stale_both_ways(store) -> None:  # type: ignore[no-untyped-def]
    old = store.add("text", "v1")
    store.add("text", "v2", provenance={"supersedes": old})
    marked = store.add("text", "v0", provenance={"superseded_by": "somewhere"})
    assert check_freshness(store, old).signals[0].startswith("superseded: by ")
    assert check_freshness(store, marked).signals == ["superseded: by somewhere"]


@pytest.mark.parametrize(
    "kw",
    [
        {"max_age_s": math.nan},
        {"max_age_s": math.inf},
        {"max_age_s": -1},
        {"now": math.nan},
        {"now": -math.inf},
        {"max_age_s": True},
        {"max_age_s": "60"},
    ],
)
def test_invalid_arguments_raise_value_error_up_front(store, kw) -> None:  # type: ignore[no-untyped-def]
    item_id = store.add("text", "t")
    with pytest.raises(ValueError):
        check_freshness(store, item_id, **kw)
    with pytest.raises(ValueError):
        freshness_report(store, **kw)


def test_report_sweeps_names_and_counts_each_state(store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    now = time.time() + 60
    fresh = store.add("text", "fresh", scope="a", created_at=now - 100)
    aged = store.add("text", "aged", scope="a", created_at=now - 1000)
    art = tmp_path / "reg" / "m"
    art.mkdir(parents=True)
    (art / "manifest.json").write_text("{}")
    unverifiable = ingest_artifacts(store, tmp_path / "reg", scope="b")[0]
    report = freshness_report(store, max_age_s=500, now=now)
    assert (report["n_items"], report["n_fresh"], report["n_stale"], report["n_unverifiable"]) == (3, 1, 1, 1)
    assert report["stale"] == [aged] and report["unverifiable"] == [unverifiable]
    assert report["signals"][aged][0].startswith("aged:") and fresh not in report["signals"]
    scoped = freshness_report(store, max_age_s=500, now=now, scope="a")
    assert scoped["n_items"] == 2 and scoped["unverifiable"] == []
    json.dumps(report)


def test_a_corrupted_timestamp_is_named_and_the_sweep_continues(store) -> None:  # type: ignore[no-untyped-def]
    bad = store.add("text", "bad")
    good = store.add("text", "good")
    with store.engine.begin() as c:  # simulate a damaged read-model row (the log itself is immutable)
        c.execute(
            text("UPDATE items SET doc = jsonb_set(doc, '{created_at}', '\"yesterday\"') WHERE id = :i"), {"i": bad}
        )
    report = freshness_report(store)
    assert report["stale"] == [bad] and report["signals"][bad][0].startswith("invalid timestamp")
    assert good not in report["stale"]


def test_one_hash_per_file_per_sweep(store, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import service.ingest.freshness as freshness

    f = tmp_path / "many.txt"
    f.write_text("".join(f"line {i}\n" for i in range(50)))
    ingest_file(store, f)
    calls: list[str] = []
    original = freshness.content_hash
    monkeypatch.setattr(freshness, "content_hash", lambda p: calls.append(os.fspath(p)) or original(p))
    report = freshness_report(store)
    assert report["n_fresh"] == 50 and len(calls) == 1


def test_freshness_is_three_state_not_boolean() -> None:
    assert {s.value for s in FreshnessState} == {"fresh", "stale", "unverifiable"}
    assert not Freshness("x", FreshnessState.UNVERIFIABLE).fresh


@pytest.mark.parametrize("when", [math.nan, math.inf, -math.inf])
def test_a_non_finite_created_at_is_stored_and_reported_stale_not_raised(store, when: float, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from projections.runner import rebuild, table_digests
    from service import SubstrateItem

    i = store.put(SubstrateItem(kind="text", text="corrupted clock", created_at=when))
    got = store.get(i).created_at
    assert (math.isnan(got) and math.isnan(when)) or got == when  # kept as data, not refused
    verdict = check_freshness(store, i)
    assert verdict.state is FreshnessState.STALE and verdict.signals[0].startswith("invalid timestamp")
    report = freshness_report(store)  # the sweep names it and goes on
    assert report["stale"] == [i]
    store.update(i, text="still corrupted")
    store.save(tmp_path)  # strict JSON on disk, read back to the same time
    other = Substrate(root=tmp_path)
    try:
        back = other.get(i).created_at
        assert (math.isnan(back) and math.isnan(when)) or back == when
    finally:
        other.close()
    with store.engine.connect() as c:
        live = table_digests(c)[1]
    assert rebuild(store.engine).digests == live
