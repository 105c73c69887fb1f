"""AccessPolicy: the one decision point (MXR-080-0264), plus the pure helpers around it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.teams.access import PUBLIC, AccessDeniedError, AccessPolicy, visible_scopes
from service.teams.sharing import MergeStrategy, version_of

names = st.sampled_from(["team-a", "team-b", "team-c", "ops"])


def test_home_scope_and_public_are_always_readable_and_writable() -> None:
    policy = AccessPolicy()
    for scope in ("team-a", PUBLIC):
        assert policy.can_read("team-a", scope)
        assert policy.can_write("team-a", scope)
    assert PUBLIC == "public"


def test_another_teams_scope_is_denied_until_granted() -> None:
    policy = AccessPolicy()
    assert not policy.can_read("team-a", "team-b")
    assert not policy.can_write("team-a", "team-b")
    with pytest.raises(AccessDeniedError):
        policy.require_read("team-a", "team-b")


def test_read_and_write_grants_are_independent() -> None:
    policy = AccessPolicy().grant_read("team-a", "team-b").grant_write("team-a", "drop")
    assert policy.can_read("team-a", "team-b") and not policy.can_write("team-a", "team-b")
    assert policy.can_write("team-a", "drop") and not policy.can_read("team-a", "drop")
    assert not policy.can_read("team-c", "team-b")  # grants are per principal


def test_grant_gives_both_and_methods_chain_on_the_same_policy() -> None:
    policy = AccessPolicy()
    assert policy.grant("team-a", "team-b") is policy
    assert policy.can_read("team-a", "team-b") and policy.can_write("team-a", "team-b")
    assert policy.revoke("team-a", "team-b") is policy


def test_revoke_removes_both_grants() -> None:
    policy = AccessPolicy().grant("team-a", "team-b").revoke("team-a", "team-b")
    assert not policy.can_read("team-a", "team-b")
    assert not policy.can_write("team-a", "team-b")


def test_revoke_can_never_remove_home_scope_or_public() -> None:
    policy = AccessPolicy().revoke("team-a", "team-a").revoke("team-a", PUBLIC)
    assert policy.can_write("team-a", "team-a") and policy.can_write("team-a", PUBLIC)


def test_denial_is_a_permission_error_naming_principal_scope_and_mode() -> None:
    with pytest.raises(PermissionError) as info:
        AccessPolicy().require_write("team-a", "team-b")
    err = info.value
    assert isinstance(err, AccessDeniedError)
    assert (err.principal, err.scope, err.mode) == ("team-a", "team-b", "write")
    assert "team-a" in str(err) and "team-b" in str(err) and "write" in str(err)


@pytest.mark.parametrize("bad", ["", "  ", None, 3])
def test_blank_or_non_string_names_are_rejected(bad: object) -> None:
    if bad == 3:
        with pytest.raises(InvalidArgument):
            AccessPolicy().can_read(bad, "x")  # type: ignore[arg-type]
    else:  # no principal is never authorized: a refusal, not an error
        assert AccessPolicy().can_read(bad, "x") is False  # type: ignore[arg-type]
        assert AccessPolicy().can_write(bad, "x") is False  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        AccessPolicy().grant_read("team-a", bad)  # type: ignore[arg-type]


def test_readable_filters_a_set_in_one_decision() -> None:
    policy = AccessPolicy().grant_read("team-a", "team-b")
    assert policy.readable("team-a", ["team-a", "team-b", "team-c", PUBLIC]) == {"team-a", "team-b", PUBLIC}


def test_visible_scopes_is_a_pure_union_of_own_and_shared() -> None:
    assert visible_scopes("team-a") == {"team-a", PUBLIC}
    assert visible_scopes("team-a", shared=("x", "y")) == {"team-a", "x", "y"}
    with pytest.raises(InvalidArgument):
        visible_scopes("team-a", shared="public")  # type: ignore[arg-type]


@given(st.lists(st.tuples(st.sampled_from(["read", "write", "both", "revoke"]), names, names), max_size=30))
def test_policy_matches_a_set_model_under_any_grant_revoke_sequence(ops: list[tuple[str, str, str]]) -> None:
    policy, reads, writes = AccessPolicy(), set(), set()
    for op, principal, scope in ops:
        if op in ("read", "both"):
            policy.grant_read(principal, scope)
            reads.add((principal, scope))
        if op in ("write", "both"):
            policy.grant_write(principal, scope)
            writes.add((principal, scope))
        if op == "revoke":
            policy.revoke(principal, scope)
            reads.discard((principal, scope))
            writes.discard((principal, scope))
    for principal in ["team-a", "team-b", "team-c", "ops"]:
        for scope in ["team-a", "team-b", "team-c", "ops", PUBLIC]:
            intrinsic = scope in (principal, PUBLIC)
            assert policy.can_read(principal, scope) == (intrinsic or (principal, scope) in reads)
            assert policy.can_write(principal, scope) == (intrinsic or (principal, scope) in writes)


def test_merge_strategy_is_a_closed_str_vocabulary() -> None:
    assert MergeStrategy("latest") is MergeStrategy.LATEST and MergeStrategy.KEEP == "keep"
    with pytest.raises(ValueError):
        MergeStrategy("newest")


def test_version_of_reads_the_share_version_and_defaults_to_zero() -> None:
    assert version_of(SubstrateItem(kind="text")) == 0
    assert version_of(SubstrateItem(kind="text", provenance={"share_version": 3})) == 3
    assert version_of({"provenance": {"share_version": 2}}) == 2
    # A caller's own provenance "version" (e.g. a document version) is not the share version.
    assert version_of(SubstrateItem(kind="text", provenance={"version": "v9"})) == 0
    assert version_of({"provenance": {"share_version": True}}) == 0
    assert version_of(object()) == 0


def test_access_denied_can_be_raised_with_a_message_alone() -> None:
    err = AccessDeniedError("denied by the custom policy")
    assert isinstance(err, PermissionError) and str(err) == "denied by the custom policy"
    assert err.principal is None and err.scope is None and err.mode is None
    named = AccessDeniedError("bob", "team-a", "read")
    assert (named.principal, named.scope, named.mode) == ("bob", "team-a", "read") and "team-a" in str(named)
