"""The secret-detection rule table, assembled in its order from one module per family of credential, and the
anchor prefilter over it: the rules a text's anchors and keywords call for, found with one combined search."""

from __future__ import annotations

import re
import re._constants as _sre_constants
import re._parser as _sre_parser
from typing import Any

from service.guard.rules import (
    assignments,
    cloud,
    code,
    commands,
    config,
    http,
    messaging,
    payments,
    platforms,
    private_keys,
    prose,
    providers,
    saas,
    vcs,
)
from service.guard.rules.assignments import find_assignments
from service.guard.rules.core import LITERAL_ANCHOR, Rule
from service.guard.rules.names import (
    KEY_TAIL,
    NOT_SECRET_KEY,
    assignment_value_ok,
    keyword_pattern,
    sensitive_key,
    sensitive_key_in_any,
    sensitive_pair,
)
from service.guard.rules.shapes import is_placeholder, low_entropy

__all__ = [
    "RULES",
    "Rule",
    "assignment_value_ok",
    "is_placeholder",
    "keyword_pattern",
    "low_entropy",
    "sensitive_key",
    "sensitive_key_in_any",
    "sensitive_pair",
    "triggered",
    "triggered_in_any",
]

# The order of the table: when two rules claim the same span, the earlier one names it (most specific first).
_ORDER = """
gcp_service_account_key private_key_block putty_private_key kubernetes_secret private_key_base64 aws_access_key
aws_secret_key gcp_api_key azure_storage_key azure_sas_token signed_url_signature github_token gitlab_token
bitbucket_app_password slack_webhook slack_token discord_webhook zapier_webhook discord_bot_token
telegram_bot_token stripe_key stripe_webhook_secret square_access_token square_oauth_secret
paypal_braintree_token anthropic_key openai_key huggingface_token twilio_api_key twilio_auth_token
sendgrid_api_key mailgun_api_key npm_token pypi_token datadog_api_key datadog_app_key newrelic_key shopify_token
atlassian_api_token gcp_oauth_client_secret digitalocean_token grafana_token vault_token terraform_cloud_token
age_secret_key linear_api_key notion_token doppler_token postman_api_key pulumi_token dynatrace_token
mapbox_secret_token okta_api_token firebase_cloud_messaging_key sentry_auth_token heroku_api_key
keyed_uuid_token sonar_token sidekiq_secret ai_provider_key google_oauth_token facebook_access_token
azure_ad_client_secret mailchimp_api_key airtable_token platform_token sql_password sql_row_credential jwt
basic_auth bearer_token authorization_token twitter_bearer_token teams_webhook url_credentials cli_password
ldap_password pgpass_password session_cookie netrc_password sensitive_config_value sensitive_assignment
dsl_credential credential_argument positional_credential credential_fallback csv_credential prose_password
prose_api_key prose_secret redis_password cli_token pinecone_api_key ethereum_private_key prose_credential
azure_devops_pat url_token_user provider_credential signing_key_literal form_password_fill prose_account_pair
recovery_code nested_credential
""".split()
_FAMILIES = (
    private_keys,
    cloud,
    vcs,
    messaging,
    payments,
    saas,
    platforms,
    http,
    commands,
    assignments,
    config,
    code,
    providers,
    prose,
)
_BY_NAME = {rule.name: rule for family in _FAMILIES for rule in family.RULES}
RULES: tuple[Rule, ...] = tuple(_BY_NAME[name] for name in _ORDER)
if len(RULES) != len(_BY_NAME) or len(set(_ORDER)) != len(_ORDER):
    raise RuntimeError("every family's rule must have exactly one place in _ORDER")

# The names the equivalence tests reach through this package.
_KEY_TAIL = KEY_TAIL
_NOT_SECRET_KEY = NOT_SECRET_KEY
_find_assignments = find_assignments


# The union of every rule's anchors, and of every rule's keywords (searched in the reversed text).
_ANY_LITERAL = tuple(dict.fromkeys(a for rule in RULES for a in rule.anchors if LITERAL_ANCHOR.fullmatch(a)))
# Enough to tell whether any literal anchor occurs: those holding no other one ("pi key" holds "key").
_LITERAL_PROBES = tuple(a for a in _ANY_LITERAL if not any(b != a and b in a for b in _ANY_LITERAL))


def _union(anchors: list[str]) -> str:
    """``a1|a2|...`` with the anchors that open on the same literal character factored (``A(?:IZa|KCp)``): the
    search then tries one branch per first character at each stop, not one per anchor. Same language."""
    groups: dict[str, list[str]] = {}
    rest: list[str] = []
    for a in dict.fromkeys(anchors):
        head = 2 if a.startswith("\\") else 1
        parsed = _sre_parser.parse(a)
        if len(parsed) > 1 and parsed[0][0] is _sre_constants.LITERAL and len(a) > head and a[head] not in "*+?{":
            groups.setdefault(a[:head], []).append(a[head:])
        else:
            rest.append(a)
    factored = [h + (t[0] if len(t) == 1 else "(?:" + "|".join(t) + ")") for h, t in groups.items()]
    return "|".join(factored + rest)


_ANY_ANCHOR = re.compile(_union([a for rule in RULES for a in rule.anchors if a not in _ANY_LITERAL]))
_ANY_KEYWORD = re.compile(
    keyword_pattern(tuple(dict.fromkeys(k for rule in RULES for k in rule.keywords)), reverse=True)
)


def _first_literal(anchor: str) -> str | None:
    """The character every match of ``anchor`` opens with, if it opens with one literal character."""
    parsed = _sre_parser.parse(anchor)
    return chr(parsed[0][1]) if len(parsed) and parsed[0][0] is _sre_constants.LITERAL else None


# Which rules an anchor position can concern: by the literal character their anchors open on, plus those with an
# anchor that opens otherwise (a class, a case-insensitive group), which are tried at every position.
_BY_FIRST: dict[str, list[int]] = {}
_ANY_FIRST: list[int] = []
_BY_LITERAL: dict[str, list[int]] = {}
_PATTERN_RX = {i: rule._pattern_rx for i, rule in enumerate(RULES) if rule._pattern_rx is not None}
_KEYWORD_RX = {i: rule._keyword_rx for i, rule in enumerate(RULES) if rule._keyword_rx is not None}
for _i, _rule in enumerate(RULES):
    for _a in _rule._literals:
        _BY_LITERAL.setdefault(_a, []).append(_i)
    _firsts = {_first_literal(_a) for _a in _rule.anchors if _a not in _rule._literals}
    if None in _firsts:
        _ANY_FIRST.append(_i)
    else:
        for _c in _firsts:
            _BY_FIRST.setdefault(_c or "", []).append(_i)
# Past this many places where the union of the anchors matches, each rule searches the text itself.
_SPOTS = 8


def _has_literal(text: str) -> bool:
    for a in _LITERAL_PROBES:  # a plain loop: a generator's frames cost as much as the substring tests
        if a in text:
            return True
    return False


def triggered(text: str) -> list[tuple[int, Rule]]:
    """The rules (with their position in RULES) whose anchors occur in ``text``: no other rule can match it."""
    first = _ANY_ANCHOR.search(text)
    literal = first is None and _has_literal(text)
    # Every keyword pattern starts with ':' or '=' in the reversed text, so without either there is nothing to reverse.
    reversed_text = text[::-1] if ":" in text or "=" in text else ""
    keyword = _ANY_KEYWORD.search(reversed_text) if reversed_text else None
    if first is None and not literal and keyword is None:
        return []
    hits: set[int] = set()
    if first is not None or literal:
        for a in _ANY_LITERAL:
            if a in text:
                hits.update(_BY_LITERAL[a])
    # The union matches at a position exactly where one of the anchors it joins does, so a rule's anchors need only
    # be tried at the union's matches (each found by a search resuming one character on).
    spots = _spots(_ANY_ANCHOR, text, first)
    if spots is None:
        hits.update(i for i, rx in _PATTERN_RX.items() if i not in hits and rx.search(text) is not None)
    for q in spots or ():
        for i in (*_BY_FIRST.get(text[q], ()), *_ANY_FIRST):
            if i not in hits and _PATTERN_RX[i].match(text, q) is not None:
                hits.add(i)
    reversed_spots = _spots(_ANY_KEYWORD, reversed_text, keyword)
    for i, rx in _KEYWORD_RX.items():
        if i in hits:
            continue
        if reversed_spots is None:
            if rx.search(reversed_text) is not None:
                hits.add(i)
        elif any(rx.match(reversed_text, q) is not None for q in reversed_spots):
            hits.add(i)
    return [(i, RULES[i]) for i in sorted(hits)]


# What joins texts for triggered_in_any: a character no anchor or keyword can match, so a match inside one text is
# also a match inside the joined text (see _joinable).
_JOIN = "\x00"


def _joinable(pattern: str) -> bool:
    """Whether every match of ``pattern`` inside a text is also one inside any longer text holding it between two
    _JOIN characters. A backtracking part may match _JOIN (it can still give it back); what cannot give back -- a
    possessive repeat, an atomic group, a negative lookaround -- must not, and nothing may test a text's edge (^ $
    \\A \\Z)."""
    c = _sre_constants

    def nul(op: Any, av: Any) -> bool:  # whether this one-character element matches _JOIN
        if op is c.ANY or op is c.NOT_LITERAL:
            return op is c.ANY or av != 0
        if op is c.LITERAL:
            return bool(av == 0)
        if op is not c.IN:
            return False
        hit = any(
            (o is c.LITERAL and a == 0) or (o is c.RANGE and a[0] == 0) or (o is c.CATEGORY and "NOT" in str(a))
            for o, a in av
        )
        return hit != any(o is c.NEGATE for o, _ in av)

    def ok(sub: Any, strict: bool) -> bool:
        for op, av in sub:
            if op is c.AT and av not in (c.AT_BOUNDARY, c.AT_NON_BOUNDARY):
                return False
            if strict and nul(op, av):
                return False
            if op in (c.MAX_REPEAT, c.MIN_REPEAT):
                parts, inner = [av[2]], strict
            elif op is c.POSSESSIVE_REPEAT:
                parts, inner = [av[2]], True
            elif op is c.SUBPATTERN:
                parts, inner = [av[3]], strict
            elif op is c.ATOMIC_GROUP:
                parts, inner = [av], True
            elif op is c.BRANCH:
                parts, inner = list(av[1]), strict
            elif op is c.ASSERT:
                parts, inner = [av[1]], strict
            elif op is c.ASSERT_NOT:
                parts, inner = [av[1]], True
            elif op is c.GROUPREF_EXISTS or op is c.GROUPREF:
                return False
            else:
                continue
            if not all(ok(p, inner) for p in parts):
                return False
        return True

    return ok(_sre_parser.parse(pattern), False)


# Checked once, at import: a future anchor that looks at a text's edge turns the joined search off, not wrong.
_JOINABLE = _joinable(_ANY_ANCHOR.pattern) and _joinable(_ANY_KEYWORD.pattern) and _JOIN not in "".join(_ANY_LITERAL)


def triggered_in_any(texts: list[str]) -> bool:
    """Whether any of ``texts`` holds an anchor or keyword of some rule (any(triggered(t) for t in texts)), tested
    with one search over them joined: a JSON value's many short strings cost one call, not one each. May answer
    True when none does (a match across two texts); never False when one does."""
    if not _JOINABLE:
        return any(_anchored(t) for t in texts)
    return _anchored(_JOIN.join(texts)) if texts else False


def _anchored(text: str) -> bool:
    """bool(triggered(text)), without naming the rules: the union of the anchors matches where one anchor does."""
    if _ANY_ANCHOR.search(text) is not None or _has_literal(text):
        return True
    return (":" in text or "=" in text) and _ANY_KEYWORD.search(text[::-1]) is not None


def _spots(union: re.Pattern[str], text: str, first: re.Match[str] | None) -> list[int] | None:
    """Every position where ``union`` matches ``text``, given its first match; None past _SPOTS of them."""
    out: list[int] = []
    m = first
    while m is not None:
        if len(out) == _SPOTS:
            return None
        out.append(m.start())
        m = union.search(text, m.start() + 1)
    return out
