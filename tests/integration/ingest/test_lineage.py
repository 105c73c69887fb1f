"""Lineage on the real database: derived_from only, cycle-safe, depth cap UNVERIFIED, scope-authorized ancestry."""

from __future__ import annotations

import json

import pytest

from service import LineageReport, LineageState, audit_substrate, verify_lineage
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument


def _put(store, item_id: str, parents: list[str] = (), scope: str = "local", **kw) -> str:  # type: ignore[no-untyped-def, assignment]
    return store.put(
        SubstrateItem(kind="text", text=item_id, id=item_id, scope=scope, derived_from=list(parents), **kw)
    )


def _chain(store, n: int, scope: str = "local") -> list[str]:  # type: ignore[no-untyped-def]
    """n items, each derived from the next: c0 <- c1 <- ... (c0 is the root of the walk)."""
    ids = [f"c{i}" for i in range(n)]
    for i in reversed(range(n)):
        _put(store, ids[i], ids[i + 1 : i + 2], scope)
    return ids


def test_a_resolving_chain_is_intact(store) -> None:  # type: ignore[no-untyped-def]
    ids = _chain(store, 4)
    r = verify_lineage(store, ids[0])
    assert r.state is LineageState.INTACT and r.intact and r.n_links == 3 and r.visited == 4 and r.depth == 3
    assert json.loads(json.dumps(r.as_dict()))["state"] == "intact"


def test_a_dangling_ancestor_is_broken(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "a", ["gone"])
    r = verify_lineage(store, "a")
    assert r.state is LineageState.BROKEN and not r.intact and r.dangling == ["gone"]


def test_links_are_never_traversed(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "a", links=["not-there", "b"])
    _put(store, "b", ["gone"])
    r = verify_lineage(store, "a")
    assert r.state is LineageState.INTACT and r.n_links == 0 and r.visited == 1


def test_cycles_are_broken_and_named(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "a", ["b"])
    _put(store, "b", ["c"])
    _put(store, "c", ["a"])
    r = verify_lineage(store, "b")
    assert r.state is LineageState.BROKEN and r.cycles == ["b"] and r.dangling == []
    _put(store, "self", ["self"])
    assert verify_lineage(store, "self").cycles == ["self"]


def test_a_diamond_is_not_a_cycle_and_is_walked_once(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "base")
    _put(store, "l", ["base"])
    _put(store, "r", ["base"])
    _put(store, "top", ["l", "r"])
    r = verify_lineage(store, "top")
    assert r.state is LineageState.INTACT and r.cycles == [] and r.visited == 4 and r.n_links == 4


def test_the_depth_cap_is_unverified_naming_the_truncated_node(store) -> None:  # type: ignore[no-untyped-def]
    ids = _chain(store, 6)
    r = verify_lineage(store, ids[0], max_depth=2)
    assert r.state is LineageState.UNVERIFIED and not r.intact and r.truncated == [ids[2]]
    exact = verify_lineage(store, ids[0], max_depth=5)  # the node at the cap is a genuine leaf
    assert exact.state is LineageState.INTACT and exact.truncated == []
    assert verify_lineage(store, ids[0], max_depth=0).truncated == [ids[0]]


def test_a_shorter_branch_reaches_a_shared_ancestor_before_the_cap(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "deep3")
    _put(store, "shared", ["deep3"])
    _put(store, "long2", ["shared"])
    _put(store, "long1", ["long2"])
    _put(store, "root", ["long1", "shared"])
    r = verify_lineage(store, "root", max_depth=2)
    assert r.state is LineageState.INTACT and r.truncated == []  # shared sits at distance 1, not 3


def test_a_back_edge_from_the_cap_is_still_a_cycle(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "root", ["a"])
    _put(store, "a", ["b"])
    _put(store, "b", ["root"])
    r = verify_lineage(store, "root", max_depth=2)
    assert r.state is LineageState.BROKEN and r.cycles == ["root"] and r.truncated == []


def test_broken_outranks_unverified(store) -> None:  # type: ignore[no-untyped-def]
    ids = _chain(store, 5)
    _put(store, "root", [ids[0], "gone"])
    r = verify_lineage(store, "root", max_depth=2)
    assert r.state is LineageState.BROKEN and r.dangling == ["gone"] and r.truncated == [ids[1]]


def test_a_scoped_walk_cannot_see_or_probe_other_scopes(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "secret", scope="team-b")
    _put(store, "shared", scope="public")
    _put(store, "mine", ["secret"], scope="team-a")
    _put(store, "probe", ["does-not-exist"], scope="team-a")
    _put(store, "ok", ["shared"], scope="team-a")
    hidden, missing = verify_lineage(store, "mine", scope="team-a"), verify_lineage(store, "probe", scope="team-a")
    assert hidden.state is missing.state is LineageState.UNVERIFIED
    assert (hidden.unverified, hidden.dangling) == (["secret"], []) and (missing.unverified, missing.dangling) == (
        ["does-not-exist"],
        [],
    )
    assert verify_lineage(store, "ok", scope="team-a").state is LineageState.INTACT
    assert verify_lineage(store, "mine").state is LineageState.INTACT  # unrestricted: no boundary
    assert verify_lineage(store, "probe").state is LineageState.BROKEN


def test_a_policy_grant_authorizes_ancestry(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "secret", scope="team-b")
    _put(store, "mine", ["secret"], scope="team-a")

    class Grants:
        def can_read(self, principal: str, scope: str) -> bool:
            return scope in (principal, "public", "team-b")

    assert verify_lineage(store, "mine", scope="team-a", policy=Grants()).state is LineageState.INTACT
    with pytest.raises(InvalidArgument, match="can_read"):
        verify_lineage(store, "mine", scope="team-a", policy=object())


def test_a_missing_or_unreadable_root(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "theirs", scope="team-b")
    assert verify_lineage(store, "nope").state is LineageState.BROKEN
    assert verify_lineage(store, "nope", scope="team-a").state is LineageState.UNVERIFIED
    r = verify_lineage(store, "theirs", scope="team-a")
    assert r.state is LineageState.UNVERIFIED and r.unverified == ["theirs"]


@pytest.mark.parametrize("depth", [-1, 1.5, True, None])
def test_max_depth_must_be_a_non_negative_int(store, depth) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument, match="max_depth"):
        verify_lineage(store, "x", max_depth=depth)


def test_audit_counts_and_names_every_item(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "base")
    _put(store, "good", ["base"])
    _put(store, "bad", ["gone"])
    _put(store, "loop", ["loop"])
    report = audit_substrate(store)
    assert (report["n_items"], report["n_intact"], report["n_broken"], report["n_unverified"]) == (4, 2, 2, 0)
    assert report["broken"] == [
        {"item_id": "bad", "dangling": ["gone"], "cycles": []},
        {"item_id": "loop", "dangling": [], "cycles": ["loop"]},
    ]
    assert set(report) == {"n_items", "n_intact", "n_broken", "n_unverified", "broken", "unverified"}
    json.dumps(report)


def test_a_scoped_audit_only_certifies_with_ancestors_it_may_read(store) -> None:  # type: ignore[no-untyped-def]
    _put(store, "secret", scope="team-b")
    _put(store, "mine", ["secret"], scope="team-a")
    _put(store, "plain", scope="team-a")
    scoped = audit_substrate(store, scope="team-a")
    assert scoped["n_items"] == 2 and scoped["broken"] == []
    assert scoped["unverified"] == [{"item_id": "mine", "unverified": ["secret"], "truncated": []}]
    assert audit_substrate(store)["n_intact"] == 3


def test_report_is_three_state() -> None:
    assert {s.value for s in LineageState} == {"intact", "broken", "unverified"}
    assert not LineageReport("x", LineageState.UNVERIFIED, 0).intact
