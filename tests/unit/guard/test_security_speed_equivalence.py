"""The secret guard's fast path (anchor prefilter, one-pass masked copy) gives exactly the reference path's results."""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.domain.items import SubstrateItem
from service.guard import rules as secret_rules
from service.guard import secrets as security
from service.guard.rules import _KEY_TAIL, _NOT_SECRET_KEY, RULES, keyword_pattern, sensitive_key, triggered
from service.guard.secrets import (
    SecretPolicyError,
    _reference_scan,
    _serialized,
    detect_secrets,
    guard_item,
    redact_item,
    redact_secrets,
    scan_item,
)
from tests.unit.guard.test_security import (
    B62,
    B64,
    BASIC,
    DIGITS,
    FALSE_POSITIVES,
    GCP_PEM,
    HEX,
    TRUE_POSITIVES,
    UPPER_DIGITS,
    URLSAFE,
    _leaky_item,
    pem,
)

BY_NAME = {rule.name: rule for rule in RULES}
_RNG = random.Random(20261129)  # generated, so this file holds no secret-shaped literal either


def _r(n: int, alphabet: str = B62) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


# One more true positive for every alternative of every rule's pattern that TRUE_POSITIVES leaves out, so each
# alternative's anchor is exercised (the tests below cut, shorten and re-case all of them).
MORE_POSITIVES = [
    *[
        ("sensitive_assignment", f"{kw}{glue}{_r(12)}7")
        for kw, glue in [
            ("pwd", "="),
            ("passwd", ": "),
            ("passphrase", " := "),
            ("secret", " => "),
            ("token", "\t=\t"),
            ("apikey", "="),
            ("api-key", ":"),
            ("private.key", "="),
            ("master_key", "="),
            ("encryption_key", "="),
            ("signing_key", "="),
            ("client_key", "="),
            ("auth", "="),
            ("auth_key", "="),
        ]
    ],
    ("sensitive_assignment", '{\\"password\\": \\"' + _r(14) + '\\"}'),
    ("sensitive_assignment", "API\u212aEY=" + _r(14) + "1"),
    *[
        ("gitlab_token", f"gl{p}-{_r(22, URLSAFE)}")
        for p in ["pat", "ptt", "dt", "rt", "cbt", "oas", "ft", "imt", "soat"]
    ],
    *[("slack_token", f"xox{c}-{_r(12, DIGITS)}-{_r(24)}") for c in "baprse"],
    ("slack_token", "xapp-1-" + _r(11, UPPER_DIGITS) + "-" + _r(13, DIGITS) + "-" + _r(40, HEX)),
    *[
        ("cli_password", f"curl {flag}{sep}deploy:{_r(14)} https://x")
        for flag in ["-u", "--user", "--basic-auth"]
        for sep in [" ", "\t", "="]
    ],
    *[
        ("cli_password", f"mysql {flag}{sep}{_r(12)} db")
        for flag in ["--password", "--passwd", "--pass"]
        for sep in [" ", "="]
    ],
    *[("aws_access_key", f"{p}{_r(16, UPPER_DIGITS)}") for p in ["AKIA", "ASIA", "ABIA", "ACCA"]],
    *[("github_token", f"gh{c}_{_r(36)}") for c in "pousr"],
    *[("stripe_key", f"{a}k_{b}_{_r(24)}") for a in "sr" for b in ["live", "test"]],
    *[("shopify_token", f"shp{c}_{_r(32, HEX)}") for c in ["at", "ss", "ca", "pa"]],
    *[("newrelic_key", f"NR{c}-{_r(27, UPPER_DIGITS)}") for c in ["AK", "II"]],
    ("newrelic_key", f"NRJS-{_r(19, HEX)}"),
    ("newrelic_key", f"{_r(36, HEX)}NRAL"),
    ("newrelic_key", f"eu01xx{_r(30, HEX)}NRAL"),
    *[("bitbucket_app_password", f"bitbucket_{w}={_r(20)}") for w in ["password", "pass", "secret", "token"]],
    ("bitbucket_app_password", "BITBUCKET_APP_PASSWORD\t:\t" + _r(20)),
    ("azure_storage_key", "SharedAccessKey=" + _r(43, B64) + "="),
    ("azure_sas_token", "https://a.blob.core.windows.net/c?sig=" + _r(43) + "1"),
    ("azure_sas_token", "https://a.blob.core.windows.net/c?sv=1&SIG=" + _r(43) + "1"),
    ("aws_secret_key", "AWS_SECRET_KEY: " + _r(40, B64)),
    ("twilio_auth_token", "TWILIO_AUTH_TOKEN=" + _r(32, HEX)),
    ("datadog_app_key", "DD_APPLICATION_KEY=" + _r(40, HEX)),
    ("datadog_api_key", "datadog.api.key: " + _r(32, HEX)),
    ("basic_auth", '"authorization": "basic ' + BASIC + '"'),
    ("bearer_token", "authorization=bearer " + _r(40, URLSAFE) + "9"),
    ("bearer_token", "Bearer\t" + _r(40, URLSAFE) + "9"),
    ("telegram_bot_token", "bot" + _r(9, DIGITS) + ":AA" + _r(33, URLSAFE)),
    ("discord_webhook", "https://canary.discordapp.com/api/v10/webhooks/" + _r(18, DIGITS) + "/" + _r(68, URLSAFE)),
    ("paypal_braintree_token", "access_token$sandbox$" + _r(16, "abcdefghij0123456789") + "$" + _r(32, HEX)),
    ("openai_key", "sk-svcacct-" + _r(60, URLSAFE) + "A1"),
    ("openai_key", "sk-admin-" + _r(60, URLSAFE) + "A1"),
    ("square_access_token", "EAAA" + _r(60, URLSAFE)),
    ("private_key_block", pem("EC PRIVATE KEY", newline="\\n")),
    ("private_key_block", "-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + _r(64, B64)),
    ("url_credentials", "amqp+ssl://guest:" + _r(14) + "@rabbit:5671/vhost"),
    ("gcp_service_account_key", '"private_key" : "' + GCP_PEM + '"'),
]
EXAMPLES = (
    [text for _, text, _ in TRUE_POSITIVES] + [text for _, text in MORE_POSITIVES] + [t for _, t in FALSE_POSITIVES]
)
POSITIVES = [(rule, text) for rule, text, _ in TRUE_POSITIVES] + MORE_POSITIVES
# Characters that (?i) matching equates with ASCII letters (İ ı ~ i, K ~ k, ſ ~ s), and the glue around assignments.
ODD = ["\u0130", "\u0131", "\u212a", "\u017f", ":", "=", '"', "'", "\\", " ", "\t", "\n", "-", "_", ".", "/", "@", "$"]
WORDS = [
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "auth",
    "api_key",
    "Authorization: ",
    "Bearer ",
    "Basic ",
    "://",
    "sk-",
    "ghp_",
    "xoxb-",
    "AKIA",
    "-----BEGIN ",
    "eyJ",
    "key-",
    "--user ",
    "-u ",
    "--password=",
    "AccountKey",
    "sig=",
    "bot",
    "12345678:",
    "SG.",
    "hf_",
    "npm_",
    "NRAK-",
    "NRJS-",
    "NRAL",
    "shpat_",
    "ATATT3",
    "EAAA",
    "sq0atp-",
    "access_token$",
]


@st.composite
def _piece(draw: st.DrawFn) -> str:
    """A slice of a real example (possibly cutting an anchor in half), case-flipped or not."""
    text = draw(st.sampled_from(EXAMPLES))
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    piece = draw(st.sampled_from([text, text[start:end], text[start:]]))
    flips: list[Callable[[str], str]] = [str, str, str, str.upper, str.lower, str.swapcase]
    return draw(st.sampled_from(flips))(piece)


texts = st.lists(
    st.one_of(_piece(), st.sampled_from(ODD), st.sampled_from(WORDS), st.text(max_size=12)), max_size=8
).map("".join)


def _outcome(fn: Callable[..., Any], *args: Any, **kw: Any) -> tuple[Any, ...]:
    try:
        result = fn(*args, **kw)
    except SecretPolicyError as exc:
        return ("refused", str(exc), exc.rules, exc.fields)
    if isinstance(result, tuple):  # redact_item: (item, count)
        return ("ok", type(result[0]), result[0].to_json(), result[1])
    if isinstance(result, SubstrateItem):
        return ("ok", type(result), result.to_json())
    return ("ok", result)


def _reference_detect(text: str) -> dict[str, Any]:
    with _reference_scan():
        return detect_secrets(text).as_dict()


def _both(fn: Callable[..., Any], *args: Any, **kw: Any) -> tuple[Any, ...]:
    fast = _outcome(fn, *args, **kw)
    with _reference_scan():
        reference = _outcome(fn, *args, **kw)
    assert fast == reference
    return fast


@pytest.mark.parametrize(("rule", "text"), POSITIVES, ids=[r for r, _ in POSITIVES])
def test_every_true_positive_holds_one_of_its_rules_anchors(rule: str, text: str) -> None:
    assert any(True for _ in BY_NAME[rule].find(text))  # the example is real
    assert BY_NAME[rule].anchored(text)
    assert rule in {r.name for _, r in triggered(text)}
    assert detect_secrets(text).as_dict() == _reference_detect(text)


def test_every_rule_declares_anchors_and_the_reference_flag_is_restored() -> None:
    assert all(rule.anchors or rule.keywords for rule in RULES)
    with _reference_scan():
        assert security._reference
    assert not security._reference


def test_prose_triggers_no_rule() -> None:
    prose = (
        "Alterations of the architecture of cerebral white matter in the developing human brain can affect "
        "cortical development and result in functional disabilities (P < 0.05; n = 42, 95% CI 1.2-3.4)."
    )
    assert triggered(prose) == []


def _variants(text: str) -> set[str]:
    cut = {text[:i] for i in range(len(text))} | {text[i:] for i in range(len(text))}
    dropped = {text[:i] + text[i + 1 :] for i in range(len(text))}
    return cut | dropped | {text.upper(), text.lower(), text.swapcase()}


@pytest.mark.parametrize(("rule", "text"), POSITIVES, ids=[r for r, _ in POSITIVES])
def test_no_cut_of_a_true_positive_matches_its_rule_without_an_anchor(rule: str, text: str) -> None:
    # Every prefix, suffix, one-character deletion and case change: the rule may stop matching, but never while
    # its anchors are gone.
    found = anchored = 0
    for variant in _variants(text):
        if any(True for _ in BY_NAME[rule].find(variant)):
            found += 1
            anchored += BY_NAME[rule].anchored(variant)
    assert found and anchored == found


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_a_rule_that_matches_a_text_finds_its_anchor_in_it(text: str) -> None:
    chosen = {rule.name for _, rule in triggered(text)}
    for rule in RULES:
        if any(True for _ in rule.find(text)):
            assert rule.anchored(text), rule.name
            assert rule.name in chosen, rule.name


@settings(max_examples=300, deadline=None)
@given(texts)
def test_keywords_match_the_same_texts_reversed_as_forward(text: str) -> None:
    for rule in RULES:
        if rule.keywords:
            forward = re.search(keyword_pattern(rule.keywords), text) is not None
            assert forward == (re.search(keyword_pattern(rule.keywords, reverse=True), text[::-1]) is not None)


@settings(max_examples=300, deadline=None)
@given(st.one_of(texts, st.sampled_from(["db_password", "next_token", "PAGE_TOKEN", "api\u212aey", "x-auth"])))
def test_sensitive_key_keeps_its_reference_answer(key: str) -> None:
    assert sensitive_key(key) == (_KEY_TAIL.search(key) is not None and _NOT_SECRET_KEY.search(key) is None)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.integers(0, 12), st.sampled_from(["[REDACTED:{rule}]", "###", "k9{rule}k9", "<{rule}>"]))
def test_detect_and_redact_secrets_match_the_reference(text: str, keep: int, mask: str) -> None:
    fast = detect_secrets(text).as_dict()
    with _reference_scan():
        assert detect_secrets(text).as_dict() == fast
    _both(redact_secrets, text)
    _both(redact_secrets, text, mask=mask, keep_prefix=keep)


_keys = st.one_of(
    st.sampled_from(["password", "api_key", "token", "DB_PASSWORD", "next_token", "aws_secret_access_key", "source"]),
    texts,
)
_leaves = st.one_of(texts, st.integers(), st.none(), st.booleans(), st.floats(allow_nan=False))
_payloads = st.dictionaries(
    _keys,
    st.recursive(
        _leaves,
        lambda kids: st.one_of(
            st.lists(kids, max_size=3), st.tuples(kids, kids), st.dictionaries(_keys, kids, max_size=3)
        ),
        max_leaves=10,
    ),
    max_size=4,
)
items = st.builds(
    lambda text, payload, tags: SubstrateItem(kind="record", text=text, payload=payload, tags=tags),
    texts,
    _payloads,
    st.lists(texts, max_size=3),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(items)
def test_item_scan_redact_and_reject_match_the_reference(item: SubstrateItem) -> None:
    before = item.to_json()
    _both(lambda i: scan_item(i).as_dict(), item)
    _both(redact_item, item)
    _both(guard_item, item, "redact")
    _both(guard_item, item, "reject")
    assert item.to_json() == before


@settings(max_examples=100, deadline=None)
@given(_payloads)
def test_the_prebuilt_encoders_serialize_as_json_dumps(payload: dict[str, Any]) -> None:
    assert _serialized(payload) == json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)


def test_the_leaky_item_gives_the_reference_results() -> None:
    item = _leaky_item()
    assert _both(guard_item, item, "reject")[0] == "refused"
    assert _both(redact_item, item)[-1] == 7


class _Opaque:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def __str__(self) -> str:
        return "opaque"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Opaque) and other.seen == self.seen

    __hash__ = None  # type: ignore[assignment]


class _Item(SubstrateItem):
    """A subclass: guarded the reference way (its own copy, then the walk)."""


def test_the_guarded_copy_is_as_independent_as_a_deep_copy() -> None:
    shared, leaf = ["a", {"b": 1}], _Opaque()
    item = SubstrateItem(
        kind="record",
        text="clean text",
        payload={"x": shared, "y": leaf, "z": (1, "2"), "s": {3}},
        provenance={"src": shared, "leaf": leaf},
        tags=["t"],
        links=["l1"],
    )
    for out in (guard_item(item, "redact"), guard_item(item, "reject"), redact_item(item)[0]):
        reference = copy.deepcopy(item)
        assert type(out) is SubstrateItem and out is not item
        assert out.to_json() == item.to_json() == reference.to_json()
        assert list(vars(out)) == list(vars(reference))
        assert out.payload is not item.payload and out.provenance is not item.provenance
        assert out.tags is not item.tags and out.links is not item.links and out.derived_from is not item.derived_from
        assert out.payload["y"] is not leaf and isinstance(out.payload["y"], _Opaque)
        # One memo, as copy.deepcopy keeps it: the leaf shared by payload and provenance stays shared in the copy.
        assert out.payload["y"] is out.provenance["leaf"]
        assert out.provenance["src"] is not shared and out.provenance["src"][1] is not shared[1]
    sub = _Item(kind="text", text="x", payload={"y": leaf})
    assert type(guard_item(sub, "redact")) is _Item and guard_item(sub, "redact").payload["y"] is not leaf


def _stored(fn: Callable[..., Any], item: SubstrateItem, policy: str) -> Any:
    try:
        return ("stored", fn(item, policy).to_json())
    except SecretPolicyError as exc:
        return ("refused", str(exc), exc.rules, exc.fields)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(items, st.sampled_from(["redact", "reject"]))
def test_the_store_guard_view_stores_what_guard_item_stores(item: SubstrateItem, policy: str) -> None:
    before = item.to_json()
    assert _stored(security.guard_view, item, policy) == _stored(guard_item, item, policy)
    assert item.to_json() == before


def test_guard_view_returns_the_item_itself_only_when_clean() -> None:
    clean = SubstrateItem(kind="text", text="nothing to hide here")
    assert security.guard_view(clean, "redact") is clean
    leaky = _leaky_item()
    assert security.guard_view(leaky, "redact") is not leaky
    with pytest.raises(SecretPolicyError):
        security.guard_view(leaky, "reject")
    with pytest.raises(ValueError):
        security.guard_view(clean, "ignore")


def _searched_assignments(text: str) -> list[tuple[int, int]]:
    """sensitive_assignment as a plain search of the whole text (the reference path): what the fast find equals."""
    with _reference_scan():
        return list(secret_rules._find_assignments(text))


ASSIGNMENT_BITS = [
    *WORDS[:7],
    "encryption_key",
    "postgrespass",
    "sshpass",
    "passphrase",
    "apikey",
    "creds",
    "credentials",
    "client-key",
    "_2",
    "_value",
    "-b64",
    " string",
    "var ",
    "=>",
    ":=",
    "::=",
    ":::=",
    "?=",
    "+=",
    ".=",
    "]",
    "?api_key=",
    "&",
    "|\n  ",
]
assignment_texts = st.lists(
    st.one_of(_piece(), st.sampled_from(ODD), st.sampled_from(ASSIGNMENT_BITS), st.text(max_size=12)), max_size=12
).map("".join)


@pytest.mark.parametrize("text", EXAMPLES)
def test_assignments_found_near_keyword_tails_are_those_of_a_full_search_on_the_examples(text: str) -> None:
    for variant in (text, text.upper(), text.lower(), text + " " + text, text[::2]):
        assert list(secret_rules._find_assignments(variant)) == _searched_assignments(variant)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(assignment_texts)
def test_assignments_found_near_keyword_tails_are_those_of_a_full_search(text: str) -> None:
    assert list(secret_rules._find_assignments(text)) == _searched_assignments(text)


def _triggered_by_search(text: str) -> list[int]:
    return [i for i, rule in enumerate(RULES) if rule.anchored(text)]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(texts, assignment_texts, st.lists(texts, min_size=2, max_size=6).map("\n".join)))
def test_triggered_finds_the_rules_each_rule_s_own_anchor_search_finds(text: str) -> None:
    assert [i for i, _ in triggered(text)] == _triggered_by_search(text)


@pytest.mark.parametrize("copies", [1, 3, 9, 20])
def test_triggered_is_exact_with_few_and_with_many_anchor_positions(copies: int) -> None:
    # Past secret_rules._SPOTS places where some anchor matches, every rule searches the text itself.
    for text in EXAMPLES:
        many = " ".join([text] * copies)
        assert [i for i, _ in triggered(many)] == _triggered_by_search(many)
