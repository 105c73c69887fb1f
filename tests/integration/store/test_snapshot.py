"""save()/load(): atomic snapshots and all-or-nothing loading."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from service import Substrate, SubstrateItem
from service.store.export import SnapshotError


def test_save_then_load_into_another_store(make_store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = make_store()
    ids = [a.add("text", f"t{n}", payload={"n": n}) for n in range(5)]
    assert a.save(tmp_path) == str(tmp_path)
    assert len((tmp_path / "items.jsonl").read_text().splitlines()) == 5
    b = make_store()
    b.add("text", "will be replaced")
    b.load(tmp_path)
    assert [i.id for i in b.all()] == ids and b.all() == a.all()


def test_load_lists_the_items_in_the_files_order(store: Substrate, tmp_path: Path) -> None:
    for name in ("x", "y", "z", "w"):
        store.add("text", name, id=name)
    rows = {i.id: i.to_json() for i in store.all()}
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(rows[i]) + "\n" for i in ("x", "z", "y")))
    store.load(tmp_path)
    assert [i.id for i in store.all()] == ["x", "z", "y"]  # w is gone; z and y in the file's order
    store.load(tmp_path)  # the same file again: already in its order, so nothing is moved
    assert [i.id for i in store.all()] == ["x", "z", "y"]
    with store.engine.connect() as c:
        types = dict(c.execute(text("SELECT stream, array_agg(type ORDER BY seq) FROM events GROUP BY stream")).all())
    assert types["x"] == ["ItemPut"] * 3  # first in both orders: never moved
    assert types["y"] == ["ItemPut", "ItemRemoved", "ItemPut", "ItemPut"]  # moved once, behind z
    assert types["w"] == ["ItemPut", "ItemRemoved"]


def test_save_and_load_remember_their_root(make_store, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a = make_store()
    a.add("text", "first")
    a.save(tmp_path / "a")
    a.add("text", "second")
    a.save()  # the root of the last save
    assert len((tmp_path / "a" / "items.jsonl").read_text().splitlines()) == 2
    b = make_store()
    b.load(tmp_path / "a")
    b.add("text", "third")
    b.save()  # the root of the last load
    assert len((tmp_path / "a" / "items.jsonl").read_text().splitlines()) == 3


def test_save_without_root_is_a_clear_error(store: Substrate) -> None:
    with pytest.raises(ValueError, match="root"):
        store.save()


def test_failed_save_leaves_previous_snapshot_intact(store: Substrate, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    store.add("text", "first")
    store.save(tmp_path)
    before = (tmp_path / "items.jsonl").read_bytes()
    store.add("text", "second")

    def boom(*a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        store.save(tmp_path)
    assert (tmp_path / "items.jsonl").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["items.jsonl"]


@pytest.mark.parametrize(
    "bad,reason",
    [("{not json", "invalid JSON"), ('{"kind": "video"}', "invalid item"), ("[1, 2]", "invalid item")],
)
def test_bad_row_names_file_line_and_preview_and_changes_nothing(
    store: Substrate, tmp_path: Path, bad: str, reason: str
) -> None:
    keep = store.add("text", "kept")
    good = json.dumps(SubstrateItem(kind="text", text="ok").to_json())
    (tmp_path / "items.jsonl").write_text(f"{good}\n{good}\n{bad}\n{good}\n")
    head = store.events.head()
    with pytest.raises(SnapshotError) as info:
        store.load(tmp_path)
    msg = str(info.value)
    assert str(tmp_path / "items.jsonl") in msg and ":3:" in msg and reason in msg and bad[:8] in msg
    assert info.value.line == 3
    assert [i.id for i in store.all()] == [keep] and store.events.head() == head


def test_a_row_that_is_not_utf8_is_named_by_its_line(store: Substrate, tmp_path: Path) -> None:
    keep = store.add("text", "kept")
    text = "line\u2028separator and\u0085next line, one row"
    good = json.dumps(SubstrateItem(kind="text", text=text).to_json(), ensure_ascii=False)  # raw, not escaped
    (tmp_path / "items.jsonl").write_bytes(f"{good}\n{good}\n".encode() + b'{"kind": "text", "text": "\xff"}\n')
    with pytest.raises(SnapshotError) as info:
        store.load(tmp_path)
    assert info.value.line == 3 and "not UTF-8" in str(info.value)
    assert [i.id for i in store.all()] == [keep]
    (tmp_path / "items.jsonl").write_text(f"{good}\n", encoding="utf-8")
    store.load(tmp_path)  # U+2028 and U+0085 inside a string do not end its row
    assert [i.text for i in store.all()] == [text]


def test_missing_snapshot_is_file_not_found(store: Substrate, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        store.load(tmp_path)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    lines=st.lists(
        st.one_of(
            st.text(max_size=30), st.builds(lambda t: json.dumps({"kind": "text", "text": t}), st.text(max_size=20))
        ),
        max_size=6,
    )
)
def test_load_either_loads_everything_or_nothing(store: Substrate, tmp_path_factory, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("snap")
    (root / "items.jsonl").write_text(
        "\n".join(line.replace("\n", " ").replace("\r", " ") for line in lines), encoding="utf-8"
    )
    before = store.all()
    try:
        store.load(root)
    except (ValueError, UnicodeError):
        assert store.all() == before
    else:
        assert len(store) == len({i.id for i in store.all()})


def test_a_load_longer_than_a_chunk_equals_a_replay(store: Substrate, tmp_path: Path) -> None:
    """A load of more events than one projection chunk (5,000) lands whole, in the file's order, and its read
    models are those a replay of the log makes; progress reports each phase's count."""
    from service.store.audit import verify_store

    old = [store.add("text", f"old {n}", id=f"old-{n}") for n in range(3)]
    rows = [SubstrateItem(kind="text", text=f"row {n}", id=f"row-{n}", tags=[f"t{n % 7}"]) for n in range(5_100)]
    rows.insert(2_600, store.get(old[1]))  # type: ignore[arg-type]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in rows))
    phases: list[str] = []
    counts: dict[str, int] = {}
    store.load(tmp_path, progress=lambda n: counts.__setitem__(phases[-1], n), on_phase=phases.append)
    assert phases == ["read", "guard", "write"]
    # old-1 stays, but out of the file's order it is removed and put anew; old-0 and old-2 are removed
    assert counts == {"read": 5_101, "guard": 5_101, "write": 5_101 + 3}
    assert [i.id for i in store.all()] == [r.id for r in rows]
    report = verify_store(store)
    assert report.ok and report.tables["items"]["live_rows"] == 5_101
