"""The generic rule: a credential-named key assigned a literal (key = value, key: value, KEY=value)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from service.guard.rules import core
from service.guard.rules.core import Rule
from service.guard.rules.messaging import slack_check
from service.guard.rules.names import (
    CRED_KEY,
    KEY_SUFFIX,
    KEYWORD,
    KEYWORD_TAILS,
    NOT_SECRET_KEY,
    PASSWORD_KEY,
    assignment_value_ok,
    keyword_pattern,
    loose_credential,
)
from service.guard.rules.shapes import DNS_LABEL, UUID, Span, is_placeholder

__all__ = ["RULES", "find_assignments"]


def _assignment_check(m: re.Match[str], secret: str) -> bool:
    text, kw_start, sep = m.string, m.start("kw"), m.group("sep")
    key_start, floor = kw_start, max(0, kw_start - 64)
    while key_start > floor and (text[key_start - 1].isalnum() or text[key_start - 1] in "_.-"):
        key_start -= 1
    key = text[key_start : m.end("kw")]
    spaced = bool(m.group("w1") or m.group("w2"))
    if len(m.group("w1")) > 8 and m.group("s_uq") is not None:
        return False  # a column aligned that far holds a quoted value; "token          = 1*tchar" is a grammar
    if NOT_SECRET_KEY.search(key):
        return False
    named = text[key_start : m.start("sep")].strip(" \t'\"").lower()
    if secret.lower() in (key.lower(), m.group("kw").lower(), named):
        return False  # apiKey = "apiKey", passphrase=passphrase, oauth2 = "oauth2": a name repeated, not a value
    if text[max(0, key_start - 2) : key_start] == "::":
        return False  # "AWS::IAM::AccessKey": "72c2...", a namespaced type's name (a schema hash map), not a key
    if text[max(0, key_start - 9) : key_start].lower() == "checksum/":
        return False  # Helm's checksum/secret: <sha256> annotation: a digest of the rendered Secret, not its content
    if _SEALED.fullmatch(secret) and ("encryptedData" in text or "SealedSecret" in text):
        return False  # a SealedSecret's encryptedData: ciphertext only the cluster's controller can open
    if "aws4_request" in secret:
        return False  # Credential=AKID/20220524/us-east-1/s3/aws4_request: SigV4's credential scope, no secret
    if key.lower() == "pass" and secret.isalpha() and secret.islower():
        return False  # 'pass': 'bandpass' -- a filter mode or a label under a bare "pass" key
    if sep == ":" and not spaced and text[key_start - 1 : key_start] == ":":
        return False  # one component of an ARN / URN (arn:aws:secretsmanager:...:secret:name), not an assignment
    if sep == ":" and not spaced and "." in key and key.islower() and _MAVEN_ARTIFACT.fullmatch(secret):
        return False  # a Maven coordinate (io.jsonwebtoken:jjwt-jackson:0.11.2), not an assignment
    if m.group("s_uq") is not None and text.startswith(("...", "\u2026"), m.end()):
        return False  # elided in the docs (TOKEN=ops_eyJzaW...), not the credential
    if _SLACK_PREFIX.match(secret) is not None and not slack_check(m, secret):
        return False  # a Slack token shape its own rule turned down (xoxp-1234567890): a sample, not a token
    if CRED_KEY.search(key) is not None and loose_credential(secret):
        return False  # credentials: include (fetch), creds: aws.json -- a mode or a file, not the credential
    if m.group("s_yb") is not None:
        return _block_scalar_ok(m, key, secret, sep, spaced)
    quoted = m.group("s_uq") is None
    password = PASSWORD_KEY.search(key) is not None
    if not quoted and key.lower().endswith("secret") and DNS_LABEL.fullmatch(secret) and not UUID.fullmatch(secret):
        return False  # existingSecret: db-credentials -- a Kubernetes Secret's name, not its content
    if not quoted and sep == ":" and _yaml_literal(key, key_start, secret, text, m.end()):
        return assignment_value_ok(secret, quoted=True, sep=sep, spaced=spaced, password=password, key=key)
    if not quoted and sep == ":" and not password and _setting_like(key, secret):
        return False  # auth: oauth2, token: sha256, secret: v1beta1 -- a setting's name, not a credential
    return assignment_value_ok(secret, quoted=quoted, sep=sep, spaced=spaced, password=password, key=key)


# groupId:artifactId[:version]: the artifact id, then a version (-0.11.2) or the rest of the coordinate (:1.0).
_MAVEN_ARTIFACT = re.compile(
    r"[a-z][a-z0-9]{0,64}(?:[-_.][a-z0-9]{1,64}){0,16}(?:-v?[0-9]{1,8}(?:\.[\w]{1,16}){1,8}|:[\w.\-]{1,64})"
)


_SLACK_PREFIX = re.compile(r"xox[a-z]-|xapp-")


# Bitnami kubeseal's ciphertext: the encrypted session key's two-byte length (0x02..) opens it, then hundreds of
# base64 characters.
_SEALED = re.compile(r"Ag[A-Za-z0-9+/]{300,8192}={0,2}")


def _block_scalar_ok(m: re.Match[str], key: str, secret: str, sep: str, spaced: bool) -> bool:
    """``token: |`` then the value alone on the next, indented line: a string literal, unless the block goes on
    (a script or a document under the key, not one credential)."""
    text, end = m.string, m.end()
    if sep != ":":
        return False
    line_end = _LINE_END.match(text, end)
    if line_end is None:
        return False
    next_line = text[line_end.end() : line_end.end() + 1100].partition("\n")[0]
    if next_line.startswith(m.group("ind")) and next_line.strip():
        return False  # a second line in the block
    password = PASSWORD_KEY.search(key) is not None
    if not password and _setting_like(key, secret):
        return False
    return assignment_value_ok(secret, quoted=True, sep=sep, spaced=spaced, password=password, key=key)


def _setting_like(key: str, value: str) -> bool:
    """A short value (under 12 characters, not mixing upper case, lower case and digits) that reads as a setting:
    any such value of an ``auth`` scheme key (auth: kerberos5), else a bare word, a version or an algorithm name
    (token: sha256, secret: v1beta1). A short word with digits under a secret or token key stays a credential
    (secret: hunter2)."""
    classes = any(c.isupper() for c in value) + any(c.islower() for c in value) + any(c.isdigit() for c in value)
    if len(value) >= 12 or classes == 3:
        return False
    return _AUTH_KEY.search(key) is not None or _SETTING_WORD.fullmatch(value) is not None


_AUTH_KEY = re.compile(r"(?:\A|[_.\-])auth\Z", re.IGNORECASE)


_SETTING_WORD = re.compile(
    r"[A-Za-z]+|v\d+(?:(?:alpha|beta|rc)\d*)?|(?:sha|md|aes|rsa|ecdsa|ed|hmac|oauth|http|tls|ssl|utf|crc|base|x)"
    r"[-_]?\d+",
    re.IGNORECASE,
)


_COMPOUND_KEY = re.compile(r"[_.\-]|[a-z][A-Z]")


_LINE_END = re.compile(r"[ \t]{0,64}+(?:#[^\r\n]{0,1024}+)?+(?:\r?\n|\Z)")


_NESTED = re.compile(r"(?:^|\n)(?:[ \t]{1,64}+(?:- )?+|- )\Z")


def _yaml_literal(key: str, key_start: int, value: str, text: str, end: int) -> bool:
    """``db_password: supersecret`` in YAML: one lowercase word ending its line, after a compound or nested (indented)
    password key, is a string literal. A top-level ``Password: required`` stays prose, and camelCase or snake_case
    words stay variables."""
    if not (len(value) >= 8 and value.isalpha() and value.islower() and _LINE_END.match(text, end) is not None):
        return False
    if PASSWORD_KEY.search(key) is None:
        return False
    return _COMPOUND_KEY.search(key) is not None or _NESTED.search(text, max(0, key_start - 66), key_start) is not None


_ASSIGNMENT = (
    r"(?P<kw>" + KEYWORD + r")(?P<sfx>" + KEY_SUFFIX + r"{1,2})?(?![\w\-]|\.(?!=))\\?[\"']?\]?"
    r"(?P<type>[ \t]{1,8}+string(?=[ \t]{0,8}+=))?(?P<w1>[ \t]{0,32}+)"
    r"(?P<sep>:::=|::=|:=|=>|[.?+]=|=|:)(?P<w2>[ \t]{0,8}+)"
    # a Python bytes / raw / unicode literal's prefix (secret_key = b'...')
    r"(?:(?:[bB][rR]?|[rR][bB]?|[uU])(?=[\"']))?"
    r"(?:\\\"(?P<s_eq>[^\"\\\r\n]{1,1024}+)"
    r"|\"(?P<s_dq>(?:[^\"\\\r\n]|\\.){1,1024}+)"
    r"|'(?P<s_sq>(?:[^'\\\r\n]|\\.){1,1024}+)"
    r"|`(?P<s_bq>[^`\r\n]{1,1024}+)"
    # A YAML block scalar (token: |, token: >-) whose one line holds the value.
    r"|[|>][+\-]?[1-9]?[+\-]?[ \t]{0,8}+\r?\n(?P<ind>[ \t]{1,32}+)(?P<s_yb>[^\s'\"`]{1,1024}+)"
    # Unquoted: never ends on closing punctuation, so "(password = x)" or "pwd=x." keeps its ')' or '.' out.
    r"|(?P<s_uq>[^\s'\"`,;]{0,511}[^\s'\"`,;)\]}.:!?]))"
)


_ASSIGNMENT_RX = re.compile(_ASSIGNMENT, re.IGNORECASE)


_VALUE_GROUPS = ("s_eq", "s_dq", "s_sq", "s_bq", "s_yb", "s_uq")


_QUERY_END = re.compile(r"[&#]")


# Where assignments can start. Every _ASSIGNMENT match holds a keyword tail and its glue, which the rule's keyword
# pattern finds in the reversed text (a search that stops only at ':' and '='); its keyword starts at most
# _KEYWORD_LEAD characters before that tail (encryption_key: 11 before "key"). Matching at those few positions
# finds the same matches as searching the whole text, where the case-insensitive keyword alternation is tried at
# every character (~0.2 ms per KB).
_TAIL_GLUE_REVERSED = re.compile(keyword_pattern(KEYWORD_TAILS, reverse=True))


_KEYWORD_LEAD = 16


def find_assignments(text: str) -> Iterator[Span]:
    """``key = value`` spans; in a URL query (``?api_key=v&page=2``) an unquoted value ends at the next parameter.
    The matches are those of ``_ASSIGNMENT_RX.search(text, pos)``, each search resuming after the last value."""
    if not core.fast_finds:
        pos = 0
        while (m := _ASSIGNMENT_RX.search(text, pos)) is not None:
            (v_start, v_end), pos = _assignment_value(m, text)
            if _assignment_ok(m, text, v_start, v_end):
                yield v_start, v_end
        return
    n = len(text)
    tails = sorted(n - m.end() for m in _TAIL_GLUE_REVERSED.finditer(text[::-1]))
    pos = tried = 0  # no match starts in [pos, tried)
    for tail in tails:
        start = max(pos, tried, tail - _KEYWORD_LEAD)
        while start <= tail:
            m = _ASSIGNMENT_RX.match(text, start)
            if m is None:
                start += 1
                continue
            (v_start, v_end), pos = _assignment_value(m, text)
            start = tried = pos
            if _assignment_ok(m, text, v_start, v_end):
                yield v_start, v_end
        tried = max(tried, tail + 1)


def _assignment_value(m: re.Match[str], text: str) -> tuple[Span, int]:
    """The value's span, and where the search for the next assignment resumes."""
    group = next(g for g in _VALUE_GROUPS if m.start(g) >= 0)
    start, end = m.span(group)
    if group == "s_uq" and _query_key(text, m.start("kw")):
        cut = _QUERY_END.search(text, start, end)
        if cut is not None:
            end = cut.start()
    return (start, end), max(end, m.start() + 1)


def _assignment_ok(m: re.Match[str], text: str, start: int, end: int) -> bool:
    secret = text[start:end]
    return end > start and not is_placeholder(secret) and _assignment_check(m, secret)


def _query_key(text: str, kw_start: int) -> bool:
    """Whether the key ending in the keyword at ``kw_start`` is a URL query parameter (after '?' or '&')."""
    i, floor = kw_start, max(0, kw_start - 64)
    while i > floor and (text[i - 1].isalnum() or text[i - 1] in "_.-"):
        i -= 1
    return i > 0 and text[i - 1] in "?&"


RULES: tuple[Rule, ...] = (
    Rule(
        "sensitive_assignment",
        find_assignments,
        keywords=KEYWORD_TAILS,
    ),
)
