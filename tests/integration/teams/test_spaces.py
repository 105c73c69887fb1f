"""Publishing and merging as events: history, revisions and every documented denial (MXR-080-0264/0265/0266)."""

from __future__ import annotations

import pytest

from projections.runner import rebuild, shadow_digests, table_digests
from service.domain.validation import InvalidArgument
from service.teams.access import PUBLIC, AccessDeniedError, AccessPolicy
from service.teams.spaces import MergeStrategy, Space, history, merge_versions, publish, revision, version_of


def _events(store, since: int):  # type: ignore[no-untyped-def]
    return list(store.events.read(since=since))


def test_publish_rescopes_audits_and_appends_one_event_per_item(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "alpha", scope="team-a", provenance={"source": "doc.md"})
    before = store.get(a).to_json()
    head = store.events.head()
    assert publish(store, [a], to=PUBLIC, by="team-a") == [a]
    item = store.get(a)
    assert item.scope == PUBLIC
    assert item.provenance == {
        "source": "doc.md",
        "published_by": "team-a",
        "published_from": "team-a",
        "share_version": 1,
        "version_history": [
            {
                "published_by": "team-a",
                "published_from": "team-a",
                "action": "publish",
                "by": "team-a",
                "from": "team-a",
                "to": PUBLIC,
                "version": 1,
                "revision": item.provenance["version_history"][0]["revision"],
            }
        ],
    }
    assert revision(store, item.provenance["version_history"][0]["revision"]) == before
    assert version_of(item) == 1
    (e,) = _events(store, head)
    assert (e.type, e.stream, e.principal, e.scope) == ("ItemPublished", a, "team-a", PUBLIC)
    assert e.data["item"] == item.to_json()
    assert revision(store, e.data["entry"]["revision"]) == before


def test_history_lists_who_from_to_and_a_resolvable_revision_per_publish(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "v0", scope="team-a")
    v0 = store.get(a).to_json()
    publish(store, [a], to=PUBLIC, by="team-a")
    v1 = store.get(a).to_json()
    store.update(a, text="v1 edited")
    publish(store, [a], to=PUBLIC, by="team-a")
    entries = history(store, a)
    assert [(h["action"], h["by"], h["from"], h["to"], h["version"]) for h in entries] == [
        ("publish", "team-a", "team-a", PUBLIC, 1),
        ("publish", "team-a", PUBLIC, PUBLIC, 2),
    ]
    assert revision(store, entries[0]["revision"]) == v0
    assert revision(store, entries[1]["revision"])["text"] == "v1 edited"
    assert revision(store, entries[1]["revision"])["provenance"] == v1["provenance"]
    assert version_of(store.get(a)) == 2
    assert all(isinstance(h["at"], float) and h["seq"] > 0 for h in entries)
    # The item carries the same record: each entry names the revision its publish replaced.
    carried = store.get(a).provenance["version_history"]
    assert [{k: v for k, v in h.items() if k not in ("seq", "at")} for h in entries] == carried
    assert revision(store, carried[0]["revision"]) == v0


def test_revision_returns_an_independent_deep_copy(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("record", payload={"nested": {"k": [1, 2]}}, scope="team-a")
    publish(store, [a], by="team-a")
    digest = history(store, a)[0]["revision"]
    first = revision(store, digest)
    first["payload"]["nested"]["k"].append(99)
    first["tags"].append("tampered")
    again = revision(store, digest)
    assert again["payload"] == {"nested": {"k": [1, 2]}} and again["tags"] == []
    assert set(again) >= {"kind", "text", "payload", "provenance", "tags", "links", "scope", "created_at"}


def test_revision_of_an_unknown_digest_is_none_and_a_non_string_is_rejected(store) -> None:  # type: ignore[no-untyped-def]
    assert revision(store, "sha256:" + "0" * 64) is None
    with pytest.raises(InvalidArgument):
        revision(store, 42)  # type: ignore[arg-type]


def test_publishing_into_an_unwritable_scope_is_denied_up_front(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "alpha", scope="team-a")
    head = store.events.head()
    with pytest.raises(AccessDeniedError) as info:
        publish(store, [a], to="team-b", by="team-a")
    assert (info.value.scope, info.value.mode) == ("team-b", "write")
    assert store.events.head() == head and store.get(a).scope == "team-a"


@pytest.mark.parametrize("from_scope", [None, "team-b"])
def test_an_item_from_an_unreadable_scope_is_never_moved(store, from_scope) -> None:  # type: ignore[no-untyped-def]
    b = store.add("text", "b's private", scope="team-b")
    head = store.events.head()
    assert publish(store, [b], to=PUBLIC, by="team-a", from_scope=from_scope) == []
    assert store.events.head() == head and store.get(b).scope == "team-b"
    assert history(store, b) == []


def test_publish_skips_missing_ids_and_from_scope_mismatches_but_moves_the_rest(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "a", scope="team-a")
    p = store.add("text", "p", scope=PUBLIC)
    head = store.events.head()
    assert publish(store, ["nope", p, a], to=PUBLIC, by="team-a", from_scope="team-a") == [a]
    assert [e.stream for e in _events(store, head)] == [a]


def test_a_multi_item_publish_is_one_append(store) -> None:  # type: ignore[no-untyped-def]
    ids = [store.add("text", f"t{i}", scope="team-a") for i in range(3)]
    head = store.events.head()
    assert publish(store, ids, by="team-a") == ids
    events = _events(store, head)
    assert [e.seq for e in events] == [head + 1, head + 2, head + 3]
    assert len({e.recorded_at for e in events}) == 1  # one transaction stamps one batch time


def test_publish_requires_a_principal(store) -> None:  # type: ignore[no-untyped-def]
    a = store.add("text", "a", scope="team-a")
    for by in ("", None):
        with pytest.raises(AccessDeniedError):  # no principal is a refusal, as upstream (spec: by must be non-empty)
            publish(store, [a], by=by)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        publish(store, [a], by=42)  # type: ignore[arg-type]  # a non-string is still a bad argument
    with pytest.raises(InvalidArgument):
        publish(store, a, by="team-a")  # a bare string is not a list of ids


def test_space_publish_moves_only_own_scope_items(store) -> None:  # type: ignore[no-untyped-def]
    own = store.add("text", "mine", scope="team-a")
    granted = store.add("text", "theirs", scope="team-b")
    space = Space(store, "team-a", shared=(PUBLIC, "team-b"), policy=AccessPolicy().grant_read("team-a", "team-b"))
    assert space.publish([own, granted]) == [own]
    assert store.get(granted).scope == "team-b"


def test_space_publish_as_another_principal_needs_that_principals_own_grants(store) -> None:  # type: ignore[no-untyped-def]
    own = store.add("text", "mine", scope="team-a")
    policy = AccessPolicy()
    space = Space(store, "team-a", policy=policy)
    head = store.events.head()
    assert space.publish([own], by="intern") == []  # intern cannot read team-a
    assert store.events.head() == head
    policy.grant_read("intern", "team-a")
    assert space.publish([own], by="intern") == [own]
    assert history(store, own)[0]["by"] == "intern"


# ------------------------------------------------------------------ merge
def _pair(store, kind_other: str = "text", scope_other: str = "team-a"):  # type: ignore[no-untyped-def]
    keep = store.add("text", "keep text", scope="team-a", tags=["x"], links=["L1"])
    other = store.add(kind_other, "other text", scope=scope_other, tags=["y", "x"], links=["L2"])
    return keep, other


def test_merge_appends_items_merged_and_item_removed_in_one_append(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    k0, o0 = store.get(keep).to_json(), store.get(other).to_json()
    head = store.events.head()
    assert merge_versions(store, keep, other, by="team-a", confirm=True) == keep
    events = _events(store, head)
    assert [(e.type, e.stream, e.seq) for e in events] == [
        ("ItemsMerged", keep, head + 1),
        ("ItemRemoved", other, head + 2),
    ]
    assert events[0].data["removed"] == other
    merged = store.get(keep)
    assert other not in store and merged.tags == ["x", "y"] and merged.links == ["L1", "L2"]
    assert merged.provenance["merged_from"] == other and version_of(merged) == 1
    parents = history(store, keep)[-1]["parents"]
    assert [revision(store, p["revision"]) for p in parents] == [k0, o0]
    (carried,) = merged.provenance["version_history"]  # the survivor carries the merge, both parents named
    assert carried["action"] == "merge" and carried["parents"] == parents
    # The merged-away item keeps its history, and its pre-merge state stays recoverable.
    (gone,) = history(store, other)
    assert gone["merged_into"] == keep and revision(store, gone["parents"][1]["revision"]) == o0


def test_merge_latest_takes_the_higher_share_version_and_keep_takes_keep(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    publish(store, [other], to="team-a", by="team-a")  # other now has share version 1
    merge_versions(store, keep, other, by="team-a", prefer=MergeStrategy.LATEST, confirm=True)
    assert store.get(keep).text == "other text" and version_of(store.get(keep)) == 2
    keep2, other2 = _pair(store)
    publish(store, [other2], to="team-a", by="team-a")
    merge_versions(store, keep2, other2, by="team-a", prefer="keep", confirm=True)
    assert store.get(keep2).text == "keep text"


def test_merge_without_confirm_is_refused_and_writes_nothing(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    head = store.events.head()
    with pytest.raises(ValueError, match="confirm=True"):
        merge_versions(store, keep, other, by="team-a")
    assert store.events.head() == head and other in store


def test_merging_across_kinds_is_a_hard_reject(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store, kind_other="image")
    head = store.events.head()
    with pytest.raises(ValueError, match="image"):
        merge_versions(store, keep, other, by="team-a", confirm=True)
    assert store.events.head() == head and other in store


def test_merging_an_item_from_an_unwritable_scope_is_denied(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store, scope_other="team-b")
    head = store.events.head()
    with pytest.raises(AccessDeniedError) as info:
        merge_versions(store, keep, other, by="team-a", confirm=True)
    assert info.value.scope == "team-b"
    with pytest.raises(AccessDeniedError):
        merge_versions(
            store, keep, other, by="team-a", confirm=True, policy=AccessPolicy().grant_read("team-a", "team-b")
        )  # reading is not enough
    assert store.events.head() == head and other in store
    policy = AccessPolicy().grant_write("team-a", "team-b")
    assert merge_versions(store, keep, other, by="team-a", policy=policy, confirm=True) == keep


@pytest.mark.parametrize("prefer", ["newest", "", None, 3])
def test_an_unknown_merge_strategy_raises_value_error(store, prefer) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    with pytest.raises(ValueError):
        merge_versions(store, keep, other, by="team-a", prefer=prefer, confirm=True)
    assert other in store


def test_merge_with_a_missing_id_is_a_no_op_before_any_authorization(store) -> None:  # type: ignore[no-untyped-def]
    keep, _ = _pair(store)
    head = store.events.head()
    assert merge_versions(store, keep, "missing", by="nobody-at-all", confirm=True) is None
    assert merge_versions(store, "missing", keep) is None
    assert store.events.head() == head


def test_merge_requires_a_principal_and_two_distinct_items(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    with pytest.raises(AccessDeniedError):
        merge_versions(store, keep, other, confirm=True)
    with pytest.raises(ValueError):
        merge_versions(store, keep, keep, by="team-a", confirm=True)


def test_rebuild_reproduces_history_and_revisions_byte_for_byte(store) -> None:  # type: ignore[no-untyped-def]
    keep, other = _pair(store)
    publish(store, [keep, other], by="team-a")
    merge_versions(store, keep, other, by="team-a", confirm=True)
    before = (history(store, keep), history(store, other))
    with store.engine.connect() as c:
        _, digests = table_digests(c)
    _, _, shadow = shadow_digests(store.engine)
    assert shadow == digests
    report = rebuild(store.engine)
    assert report.digests["item_history"] == digests["item_history"]
    assert report.digests["revisions"] == digests["revisions"]
    assert (history(store, keep), history(store, other)) == before
