"""The grants and approvers as of a log position are those of that moment (admin grants included), and a replay
rebuilds them identically."""

from __future__ import annotations

from projections.runner import rebuild
from service import Substrate
from service.teams.access import grant_access, list_access, revoke_access
from service.teams.approvers import grant_approver, list_approvers, revoke_approver


def _grants(store: Substrate) -> list[tuple[str, str, int]]:
    return [(g["principal"], g["mode"], g["seq"]) for g in list_access(store, scope="lab")]


def _approvers(store: Substrate) -> list[str]:
    return [a["who"] for a in list_approvers(store, scope="lab")]


def test_grants_and_approvers_as_of_a_position_are_those_then(store: Substrate) -> None:
    read = grant_access(store, "bob", "lab", "read", by="lab")
    approver = grant_approver(store, "qa", "lab", by="lab")
    admin = grant_access(store, "bob", "lab", "admin", by="lab")
    assert revoke_approver(store, "qa", "lab", by="qa") and revoke_access(store, "bob", "lab", by="lab")

    assert _grants(store) == [] and _approvers(store) == []
    expected = {
        read: ([("bob", "read", read)], []),
        approver: ([("bob", "read", read)], ["qa"]),
        admin: ([("bob", "admin", admin)], ["qa"]),
    }
    for seq, (grants, approvers) in expected.items():
        view = store.as_of(seq)
        assert (_grants(view), _approvers(view)) == (grants, approvers), seq
    assert _grants(store.as_of(read - 1)) == []

    rebuild(store.engine)  # the states are a pure function of the log
    for seq, (grants, approvers) in expected.items():
        assert (_grants(store.as_of(seq)), _approvers(store.as_of(seq))) == (grants, approvers), seq
