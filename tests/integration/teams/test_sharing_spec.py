"""Spec conformance of publish/merge/history/revision with the upstream reference (MXR-080-0264/0265/0266).

History entries carry upstream's key names beside by/from/to, an empty or missing principal is an access
denial (never an argument error), merge checks run in the documented order, and history shows bare 64-hex
revision digests that revision() resolves (the stored "sha256:" form keeps working).
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import text

from service.teams.access import PUBLIC, AccessDeniedError, AccessPolicy
from service.teams.spaces import Space, history, merge_versions, publish, revision, version_of

HEX64 = re.compile(r"[0-9a-f]{64}")


def _pair(store, scope_other: str = "team-a", kind_other: str = "text"):  # type: ignore[no-untyped-def]
    keep = store.add("text", "keep text", scope="team-a")
    other = store.add(kind_other, "other text", scope=scope_other)
    return keep, other


# ------------------------------------------------------------------ 1. upstream entry names
def test_publish_entries_also_name_published_by_and_published_from(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "alpha", scope="team-a")
    publish(store, [a], by="team-a")
    publish(store, [a], by="team-a")
    first, second = history(store, a)
    assert (first["published_by"], first["published_from"], first["to"]) == ("team-a", "team-a", PUBLIC)
    assert (second["published_by"], second["published_from"]) == ("team-a", PUBLIC)
    assert (first["by"], first["from"]) == ("team-a", "team-a")  # the existing names stay


def test_merge_entries_also_name_merged_by_and_merged_from(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    merge_versions(store, keep, other, by="team-a", confirm=True)
    last = history(store, keep)[-1]
    assert (last["merged_by"], last["merged_from"], last["by"]) == ("team-a", other, "team-a")
    assert {p["id"] for p in last["parents"]} == {keep, other}
    (gone,) = history(store, other)
    assert (gone["merged_by"], gone["merged_from"], gone["merged_into"]) == ("team-a", other, keep)
    assert "published_by" not in last and "published_from" not in last


def test_stored_history_entries_are_not_rewritten(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "alpha", scope="team-a")
    head = store.events.head()
    publish(store, [a], by="team-a")
    (e,) = store.events.read(since=head)
    assert "published_by" not in e.data["entry"] and e.data["entry"]["revision"].startswith("sha256:")
    with store.engine.connect() as c:
        stored = c.execute(text("SELECT revision, entry->>'revision' FROM item_history WHERE item_id = :i"), {"i": a})
        ((column, in_entry),) = stored.all()
    assert column == in_entry == e.data["entry"]["revision"]


# ------------------------------------------------------------------ 2. an empty or missing principal
@pytest.mark.parametrize("by", ["", "   ", None])
def test_publish_without_a_principal_is_access_denied(store, by) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "alpha", scope="team-a")
    head = store.events.head()
    with pytest.raises(AccessDeniedError, match="authenticated principal") as info:
        publish(store, [a], to=PUBLIC, by=by)
    assert (info.value.principal, info.value.scope, info.value.mode) == (by, PUBLIC, "write")
    assert store.events.head() == head and store.get(a).scope == "team-a"


@pytest.mark.parametrize("by", ["", None])
def test_merge_without_a_principal_is_access_denied(store, by) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    head = store.events.head()
    with pytest.raises(AccessDeniedError, match="authenticated principal"):
        merge_versions(store, keep, other, by=by, confirm=True)
    assert store.events.head() == head and other in store
    assert merge_versions(store, keep, "nope", by=by, confirm=True) is None  # a missing id still comes first


def test_a_space_without_a_team_is_access_denied(store) -> None:  # type: ignore[no-untyped-def]
    for team in ("", None):
        with pytest.raises(AccessDeniedError, match="authenticated principal"):
            Space(store, team)  # type: ignore[arg-type]


def test_an_empty_principal_is_never_authorized_even_for_its_own_name() -> None:
    policy = AccessPolicy()
    assert policy.can_read("", "") is False and policy.can_write("", "") is False
    assert not policy.can_read(None, PUBLIC) and not policy.can_write("  ", PUBLIC)  # type: ignore[arg-type]
    assert not policy.can_read("team-a", "") and policy.readable("", [PUBLIC, ""]) == set()
    with pytest.raises(AccessDeniedError, match="empty or missing principal"):
        policy.require_read("", PUBLIC)


def test_a_live_policy_never_authorizes_an_empty_principal(store) -> None:  # type: ignore[no-untyped-def]
    from service.teams.access import stored_policy

    live = stored_policy(store, live=True)
    assert not live.can_read("", "") and live.readable("", [PUBLIC, "team-a"]) == set()
    assert live.readable("team-a", [PUBLIC, "", "team-a"]) == {PUBLIC, "team-a"}


# ------------------------------------------------------------------ 3. merge check order
def test_a_missing_id_returns_none_before_the_strategy_is_checked(store) -> None:  # type: ignore[no-untyped-def]
    keep, _ = _pair(store)
    assert merge_versions(store, keep, "nope", prefer="bogus") is None
    assert merge_versions(store, "nope", keep, by="team-a", prefer="bogus", confirm=True) is None
    assert merge_versions(store, "nope", "nope", by="team-a", confirm=True) is None


def test_authorization_is_checked_before_confirm_and_the_strategy(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store, scope_other="team-b")
    head = store.events.head()
    for kw in ({}, {"prefer": "bogus"}, {"prefer": "bogus", "confirm": True}):
        with pytest.raises(AccessDeniedError) as info:
            merge_versions(store, keep, other, by="team-a", **kw)  # team-a may write only one side
        assert (info.value.scope, info.value.mode) == ("team-b", "write")
    assert store.events.head() == head and other in store


def test_kind_then_strategy_then_confirm(store) -> None:  # type: ignore[no-untyped-def]
    keep, image = _pair(store, kind_other="image")
    with pytest.raises(ValueError, match="image"):
        merge_versions(store, keep, image, by="team-a", prefer="bogus")
    keep, other = _pair(store)
    with pytest.raises(ValueError, match="prefer"):
        merge_versions(store, keep, other, by="team-a", prefer="bogus")
    with pytest.raises(ValueError, match="confirm=True"):
        merge_versions(store, keep, other, by="team-a", prefer="keep")
    assert other in store and image in store


# ------------------------------------------------------------------ 4. bare 64-hex revision digests
def test_history_shows_bare_64_hex_digests_that_revision_resolves(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("record", payload={"a": [1, 2, "x"], "b": None, "c": True}, scope="team-a")
    before = store.get(a).to_json()
    publish(store, [a], by="team-a")
    digest = history(store, a)[0]["revision"]
    assert len(digest) == 64 and HEX64.fullmatch(digest)
    assert revision(store, digest) == revision(store, "sha256:" + digest) == before
    assert revision(store, "0" * 64) is None


def test_merge_parents_show_bare_digests_of_both_pre_merge_states(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    k0, o0 = store.get(keep).to_json(), store.get(other).to_json()
    merge_versions(store, keep, other, by="team-a", prefer="keep", confirm=True)
    parents = history(store, keep)[-1]["parents"]
    assert all(HEX64.fullmatch(p["revision"]) for p in parents)
    assert [revision(store, p["revision"]) for p in parents] == [k0, o0]


# ------------------------------------------------------------------ 5. the share version's key
def test_a_callers_own_provenance_version_survives_publish(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "spec v9", scope="team-a", provenance={"version": "v9"})
    publish(store, [a], by="team-a")
    publish(store, [a], by="team-a")
    item = store.get(a)
    assert item.provenance["version"] == "v9" and version_of(item) == 2
