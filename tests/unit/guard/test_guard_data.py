"""guard_data: every string of a JSON-like value (keys and values, any depth) masked or refused, never stored raw."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument
from service.guard.rules import (
    _JOIN,
    _joinable,
    sensitive_key,
    sensitive_key_in_any,
    triggered,
    triggered_in_any,
)
from service.guard.secrets import (
    SecretPolicyError,
    _reference_scan,
    detect_secrets,
    guard_data,
    guard_item,
    redact_secrets,
)
from tests.unit.guard.test_security import B62
from tests.unit.guard.test_security_speed_equivalence import WORDS, texts

_RNG = random.Random(20261204)  # secrets are generated, so this file holds none


def _r(n: int) -> str:
    return "".join(_RNG.choice(B62) for _ in range(n))


GHP = "ghp_" + _r(36)
STRIPE = "sk_live_" + _r(24)
URL = f"https://deploy:{_r(10)}7x@db.internal:5432/app"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _strings(v)


def _event() -> dict[str, Any]:
    return {
        "item": {
            "id": "item-1",
            "kind": "text",
            "text": "A clean sentence about T cells.",
            "payload": {"n": 3, "ratio": 0.5, "ok": True, "none": None},
            "provenance": {"source": "notes", "url": URL},
            "links": ["item-0", GHP],
            "tags": ["a", "b"],
            "created_at": 1.0,
        },
        "reason": f"rotated {STRIPE} after the leak",
        GHP: "a key that is itself a token",
    }


def test_redact_masks_every_string_as_redact_secrets_masks_it() -> None:
    out = guard_data(_event(), "redact")
    assert out["item"]["provenance"]["url"] == redact_secrets(URL)
    assert out["item"]["links"] == ["item-0", redact_secrets(GHP)]
    assert out["reason"] == redact_secrets(f"rotated {STRIPE} after the leak")
    assert redact_secrets(GHP) in out and GHP not in out
    flat = " ".join(_strings(out))
    assert GHP not in flat and STRIPE not in flat and URL not in flat
    assert out["item"]["payload"] == {"n": 3, "ratio": 0.5, "ok": True, "none": None}
    assert out["item"]["text"] == "A clean sentence about T cells."


def test_reject_names_each_field_path_and_rule_never_the_secret() -> None:
    with pytest.raises(SecretPolicyError) as info:
        guard_data(_event(), "reject")
    err = info.value
    assert {"data.item.provenance.url", "data.item.links[1]", "data.reason"} <= set(err.fields)
    assert f"data.{redact_secrets(GHP)} (key)" in err.fields
    assert {"url_credentials", "github_token", "stripe_key"} <= set(err.rules)
    message = str(err) + " ".join(err.fields) + repr(err.scan.as_dict())
    for secret in (GHP, STRIPE, URL.split(":")[2].split("@")[0]):
        assert secret not in message


def test_the_field_argument_roots_the_paths() -> None:
    with pytest.raises(SecretPolicyError) as info:
        guard_data({"note": STRIPE}, "reject", field="evidence")
    assert info.value.fields == ["evidence.note"]
    with pytest.raises(SecretPolicyError) as info:
        guard_data([1, [STRIPE]], "reject")
    assert info.value.fields == ["data[1][0]"]
    with pytest.raises(SecretPolicyError) as info:
        guard_data(STRIPE, "reject", field="reason")
    assert info.value.fields == ["reason"]


def test_keys_that_mask_to_the_same_text_keep_both_entries() -> None:
    other = "ghp_" + _r(36)
    out = guard_data({GHP: 1, other: 2, "x": 3}, "redact")
    masked = redact_secrets(GHP)
    assert out == {masked: 1, f"{masked}#2": 2, "x": 3}
    # an existing key of the same text is kept, the masked one takes the next free suffix
    out = guard_data({masked: 0, f"{masked}#2": 1, GHP: 2}, "redact")
    assert out == {masked: 0, f"{masked}#2": 1, f"{masked}#3": 2}


def test_a_credential_named_key_masks_its_literal_value() -> None:
    out = guard_data({"provenance": {"password": "Tr0ub4dor&3x", "user": "deploy"}}, "redact")
    assert out == {"provenance": {"password": "[REDACTED:sensitive_assignment]", "user": "deploy"}}
    with pytest.raises(SecretPolicyError) as info:
        guard_data({"provenance": {"password": "Tr0ub4dor&3x"}}, "reject")
    assert info.value.fields == ["data.provenance.password"]


def test_non_strings_are_untouched_and_the_input_is_not_changed() -> None:
    marker = object()
    value = {"n": 10**30, "f": 1.5, "b": False, "o": marker, "l": [None, (1, STRIPE)], "s": STRIPE}
    out = guard_data(value, "redact")
    assert out["o"] is marker and out["n"] == 10**30 and out["b"] is False and out["f"] == 1.5
    assert out["l"] == [None, (1, redact_secrets(STRIPE))]
    assert value["s"] == STRIPE and value["l"][1][1] == STRIPE  # the caller's value is not masked in place
    clean = {"a": [1, {"b": "c"}]}
    copied = guard_data(clean, "redact")
    assert copied == clean and copied is not clean and copied["a"] is not clean["a"]


def test_sha256_content_addresses_and_ids_pass() -> None:
    value = {
        "event_id": "sha256:" + "0f" * 32,
        "derived_from": ["sha256:" + "a1" * 32, "item-" + "ab12" * 8],
        "id": "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    }
    assert guard_data(value, "reject") == value


def test_an_unknown_policy_or_field_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="secret_policy"):
        guard_data({}, "mask")
    with pytest.raises(InvalidArgument, match="field"):
        guard_data({}, "redact", field=3)  # type: ignore[arg-type]


# JSON-like values whose strings are slices of real secrets, keywords, glue and noise; keys too.
_keys = st.one_of(texts, st.sampled_from(["password", "api_key", "token", "url", "reason", "db_password", *WORDS]))
_leaves = st.one_of(texts, st.integers(), st.floats(allow_nan=False), st.none(), st.booleans())
json_values = st.recursive(
    _leaves,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(_keys, children, max_size=4)),
    max_leaves=12,
)
_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(json_values)
def test_the_result_holds_no_detected_secret_and_guarding_again_changes_nothing(value: Any) -> None:
    out = guard_data(value, "redact")
    assert all(detect_secrets(s).clean for s in _strings(out))
    assert guard_data(out, "redact") == out
    guard_data(out, "reject")  # nothing left to refuse


@_SETTINGS
@given(json_values)
def test_reject_refuses_exactly_when_redact_changes_something(value: Any) -> None:
    changed = guard_data(value, "redact") != value
    try:
        guard_data(value, "reject")
    except SecretPolicyError:
        assert changed
    else:
        assert not changed


@_SETTINGS
@given(json_values)
def test_clean_values_come_back_equal(value: Any) -> None:
    if all(detect_secrets(s).clean for s in _strings(value)):
        pairs = [(k, v) for k, v in _dict_entries(value) if isinstance(v, str) and sensitive_key(k)]
        if not pairs:
            assert guard_data(value, "redact") == value


def _dict_entries(value: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield k, v
            yield from _dict_entries(v)
    elif isinstance(value, list):
        for v in value:
            yield from _dict_entries(v)


def _outcome(value: Any, policy: str) -> Any:
    try:
        return ("ok", guard_data(value, policy))
    except SecretPolicyError as exc:
        return ("refused", str(exc), exc.rules, exc.fields)


@_SETTINGS
@given(json_values, st.sampled_from(["redact", "reject"]))
def test_the_fast_path_gives_the_reference_result(value: Any, policy: str) -> None:
    fast = _outcome(value, policy)
    with _reference_scan():
        assert _outcome(value, policy) == fast


_payloads = st.dictionaries(_keys, st.one_of(texts, st.lists(texts, max_size=3)), max_size=5)


@_SETTINGS
@given(_payloads)
def test_a_payload_guard_item_stores_is_the_one_guard_data_returns(payload: dict[str, Any]) -> None:
    # guard_item also refuses what only the serialized payload shows (a match across entries); guard_data does
    # not serialize, so the two agree wherever guard_item returns an item.
    try:
        expected = guard_item(SubstrateItem(kind="text", payload=payload), "redact").payload
    except SecretPolicyError:
        return
    assert guard_data(payload, "redact", field="payload") == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, max_size=6))
def test_the_joined_anchor_search_misses_no_text(strings: list[str]) -> None:
    if any(triggered(s) for s in strings):
        assert triggered_in_any(strings)


@settings(max_examples=300, deadline=None)
@given(st.lists(_keys, max_size=6))
def test_the_joined_key_search_misses_no_sensitive_key(keys: list[str]) -> None:
    if any(sensitive_key(k) for k in keys):
        assert sensitive_key_in_any(keys)


def test_the_join_character_is_only_used_where_no_anchor_can_look_past_a_text() -> None:
    assert _JOIN == "\x00"
    for edge in (r"^x", r"x$", r"\Ax", r"x\Z", r"(?m)^x"):
        assert not _joinable(edge)
    for unbending in (r"a[^b]*+c", r"a\S++", r"(?>a.)", r"(?<![^a])b", r"a(?!\W)"):
        assert not _joinable(unbending)
    for fine in (r"a[^b]*c", r"\bkey\b", r"(?<![A-Za-z])pass", r"a[^b\x00]*+c", r"x(?=[^a])"):
        assert _joinable(fine)
    assert re.search("x", _JOIN) is None
