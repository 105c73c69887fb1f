"""Credentials in HTTP: Authorization headers, JWTs, URLs with a password or a token, session cookies."""

from __future__ import annotations

import base64
import binascii
import re

from service.guard.rules.core import HEX_TOKEN, Rule, b64_text, regex_rule
from service.guard.rules.names import assignment_value_ok
from service.guard.rules.shapes import (
    PLACEHOLDER_WORDS,
    SEP,
    WORD_END_DASH,
    WORD_START,
    cased,
    is_placeholder,
    low_entropy,
    mixed,
    random_token,
)

__all__ = ["RULES"]


def _twitter_bearer_check(_m: re.Match[str], secret: str) -> bool:
    tail = secret.lstrip("A")
    return len(set(tail)) >= 12 and mixed(_m, tail) and not low_entropy(tail)


def _authorization_check(m: re.Match[str], secret: str) -> bool:
    # After a scheme (Token, Api-Token) any credential-shaped value; without one, only a token-like value.
    if secret.lower() in PLACEHOLDER_WORDS or secret.lower() in _AUTH_SCHEMES or secret.startswith(("$", "%")):
        return False
    if m.group("scheme") is not None:
        return len(secret) >= 8 and mixed(m, secret) and not low_entropy(secret)
    return _bearer_check(m, secret) and mixed(m, secret) and not low_entropy(secret)


_AUTH_SCHEMES = frozenset(
    "basic bearer digest negotiate ntlm oauth token api-token ssws hoba mutual aws4-hmac-sha256".split()
)


def _url_check(m: re.Match[str], secret: str) -> bool:
    # Judged on the password alone: a concrete password is a leak even on an example host or for a template user.
    # A password the same as its user (guest:guest, root:root) is a product's published default, not a secret.
    last = secret.rpartition(":")[2].lower()  # host:port,user:password (a multi-host URL): the password is last
    if m.group("user") and m.group("user").lower() == secret.lower():
        return False
    return not {secret.lower(), last} & (PLACEHOLDER_WORDS | _METASYNTACTIC)


# The names docs use for anything (https://foo:bar@host): never a real password on their own.
_METASYNTACTIC = frozenset({"foo", "bar", "baz", "qux", "quux", "tiger"})  # scott:tiger, the classic demo login


def _basic_check(m: re.Match[str], secret: str) -> bool:
    if m.groupdict().get("s_pw") is not None:  # a client's ("user", "password") pair: judged as a password
        return assignment_value_ok(secret, quoted=True, password=True)
    if m.groupdict().get("s_b64") is not None:  # no header name: only base64 of a printable user:password counts
        return _basic_pair(secret)
    if m.groupdict().get("s_plain") is not None:
        return _plain_pair(secret)
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return True  # not user:pass, but still an opaque credential after "Basic"
    return not is_placeholder(decoded.partition(":")[2] or decoded)


def _basic_pair(secret: str) -> bool:
    """Whether ``secret`` is base64 of ``user:password`` (printable, both parts present, no placeholder)."""
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    user, colon, password = decoded.partition(":")
    return bool(colon and user and password and decoded.isprintable()) and not is_placeholder(password)


def _plain_pair(secret: str) -> bool:
    """Whether ``secret`` is SASL PLAIN's base64 of ``authzid NUL user NUL password`` with a password."""
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    parts = decoded.split("\x00")
    return len(parts) == 3 and bool(parts[1] and parts[2]) and not is_placeholder(parts[2])


def _bearer_check(_m: re.Match[str], secret: str) -> bool:
    # A digit, mixed case, or one long run of lowercase letters (no word is 20 letters long): token-shaped.
    return len(secret) >= 16 and (
        any(c.isdigit() for c in secret)
        or (any(c.isupper() for c in secret) and any(c.islower() for c in secret))
        or (len(secret) >= 20 and secret.isalpha())
    )


_URL_PASSWORD = (
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}+://(?P<user>[^\s:/@?#\[\]'\"<>]{0,128}+)"
    r":(?P<s>[^\s@/?#'\"<>]{1,256}+)@(?P<host>[A-Za-z0-9._\-\[\]:%]{1,253}+)"
)


_JWT = re.compile(r"eyJ[A-Za-z0-9_\-]{8,4096}+\.eyJ[A-Za-z0-9_\-]{8,8192}+\.[A-Za-z0-9_\-]{8,4096}+")


def _b64_jwt_header(secret: str) -> bool:
    """Base64 opening on a JWT's own header (eyJhbGciOi... = {"alg":...): a token encoded once more."""
    head = secret[: len(secret) - len(secret) % 4][:64]
    try:
        return base64.b64decode(head, validate=True).startswith(b"eyJhbGciOi")
    except (binascii.Error, ValueError):
        return False


# The signature of jwt.io's sample token (John Doe, "your-256-bit-secret"): printed in every JWT tutorial.
_JWT_IO_SAMPLE = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"


RULES: tuple[Rule, ...] = (
    Rule(
        "jwt",
        regex_rule(
            r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,4096}+\.eyJ[A-Za-z0-9_\-]{8,8192}+\.[A-Za-z0-9_\-]{8,4096}+"
            + WORD_END_DASH,
            r"(?<![A-Za-z0-9+/])ZXlK[A-Za-z0-9+/]{60,16384}+={0,2}+",  # a JWT base64-encoded once more
            check=lambda _m, s: (
                not s.endswith(_JWT_IO_SAMPLE)
                and (not s.startswith("ZXlK") or _JWT.match(b64_text(s)) is not None or _b64_jwt_header(s))
            ),
        ),
        anchors=(r"\.eyJ", "ZXlK"),
    ),
    Rule(
        "basic_auth",
        regex_rule(
            r"(?i:authorization)"
            + SEP
            + r"(?i:basic)[ \t]{1,8}+(?P<s>[A-Za-z0-9+/]{8,2048}+={0,2}+)(?![A-Za-z0-9+/=])",
            # A client's basic-auth pair: requests' auth=("user", "pass"), HTTPBasicAuth("user", "pass")
            r"(?:(?<![\w.])auth[ \t]{0,4}+=[ \t]{0,4}+\(|(?<![\w])(?:HTTPBasicAuth|HTTPDigestAuth|BasicAuth|DigestAuth"
            r"|SetBasicAuth)\()"
            r"[ \t]{0,4}+(?P<uq>['\"])[^'\"\n]{1,128}+(?P=uq)[ \t]{0,4}+,[ \t]{0,4}+(?P<pq>['\"])"
            r"(?P<s_pw>[^'\"\n]{1,256}+)(?P=pq)",
            # reqwest's .basic_auth("user", Some("password"))
            r"\.basic_auth\([ \t]{0,4}+\"[^\"\n]{1,128}+\"[ \t]{0,4}+,[ \t]{0,4}+Some\([ \t]{0,4}+\"(?P<s_pw>[^\"\n]{1,256}+)\"",
            # .NET's AuthenticationHeaderValue("Basic", "<base64>")
            r"HeaderValue\([ \t]{0,4}+\"Basic\"[ \t]{0,4}+,[ \t]{0,4}+\"(?P<s>[A-Za-z0-9+/]{8,2048}+={0,2}+)\"",
            # A header value without its name: .header("Authorization", "Basic <base64>"), a proxy's captured
            # header ({Basic <base64>|agent}); only base64 of a printable user:password counts (_basic_pair)
            r"(?<![A-Za-z0-9_])Basic[ \t]{1,8}+(?P<s_b64>[A-Za-z0-9+/]{12,2048}+={0,2}+)(?![A-Za-z0-9+/=])",
            # SMTP's AUTH PLAIN: base64 of authzid NUL user NUL password
            r"(?<![A-Za-z0-9_])AUTH[ \t]{1,8}+PLAIN[ \t]{1,8}+(?P<s_plain>[A-Za-z0-9+/]{8,2048}+={0,2}+)(?![A-Za-z0-9+/=])",
            check=_basic_check,
        ),
        anchors=(r"=[ \t]{0,4}\(", r"Auth\(", r"HeaderValue\(", r"Basic[ \t]", r"PLAIN[ \t]", r"\((?<=basic_auth\()"),
        keywords=("authorization",),
    ),
    Rule(
        "bearer_token",
        regex_rule(
            r"(?:(?i:authorization)" + SEP + r"(?i:bearer)|" + WORD_START + r"Bearer)[ \t]{1,8}+"
            r"(?P<s>[A-Za-z0-9_\-~+/]{1,4096}+(?:\.[A-Za-z0-9_\-~+/]{1,4096}+){0,8}+={0,4}+)",
            # .NET's AuthenticationHeaderValue("Bearer", "<token>")
            r"HeaderValue\([ \t]{0,4}+\"Bearer\"[ \t]{0,4}+,[ \t]{0,4}+\""
            r"(?P<s>[A-Za-z0-9_\-~+/]{1,4096}+(?:\.[A-Za-z0-9_\-~+/]{1,4096}+){0,8}+={0,4}+)\"",
            check=_bearer_check,
        ),
        anchors=(r"Bearer[ \t]", r"HeaderValue\("),
        keywords=("authorization",),
    ),
    Rule(
        "authorization_token",
        regex_rule(
            r"(?<![A-Za-z0-9_:])(?i:authorization)" + SEP + r"(?:(?P<scheme>(?i:(?:api-)?token))[ \t]{1,8}+)?"
            r"(?P<s>[A-Za-z0-9_=~@.+/\-]{8,4096}+)(?![^\s'\"\\,;)])",
            check=_authorization_check,
        ),
        keywords=("authorization",),
    ),
    Rule(
        "twitter_bearer_token",
        regex_rule(r"(?<![A-Za-z0-9%])A{20}[A-Za-z0-9%]{80,120}+(?![A-Za-z0-9%])", check=_twitter_bearer_check),
        anchors=("AAAAAAAAAAAAAAAAAAAA",),
    ),
    # The anchor is the scheme's '//' with the user-info after it (greedy: see _joinable), so a URL without a
    # password (most of them) runs nothing.
    Rule(
        "url_credentials",
        regex_rule(_URL_PASSWORD, check=_url_check),
        anchors=(r"/(?<=:/)/[^\s:/@?#\[\]'\"<>]{0,128}:[^\s@/?#'\"<>]{1,256}@",),
    ),
    # A session cookie in a Cookie / Set-Cookie header: whoever holds it is logged in. The header's casings are the
    # anchors' (Cookie, cookie, COOKIE).
    Rule(
        "session_cookie",
        regex_rule(
            r"(?<![\w-])(?:(?:[Ss]et|SET)-)?(?:[Cc]ookie|COOKIE)[ \t]{0,8}+:[^\r\n]{0,1024}?(?<![\w.\-])"
            r"[\w.\-]{0,32}(?i:sess(?:ion)?(?:[_\-]?id)?|sid)=(?P<s>[^;,\s\"']{16,1024}+)",
            check=random_token,
        ),
        anchors=("ookie", "OOKIE"),
    ),
    # A token as a URL's user name, no password after it: a Sentry DSN (https://<key>@o1.ingest.sentry.io/2), a git
    # remote (https://<token>@host/repo). Only a random token counts; a user name is a word.
    Rule(
        "url_token_user",
        regex_rule(
            r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}+://(?P<s>[A-Za-z0-9_\-]{20,128}+)@(?=[A-Za-z0-9\[])",
            check=lambda _m, s: cased(s) or (HEX_TOKEN.fullmatch(s) is not None and not low_entropy(s)),
        ),
        anchors=(r"/(?<=:/)/[A-Za-z0-9_\-]{20}",),
    ),
)
