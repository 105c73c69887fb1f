"""Credentials handed to code: calls by position or by name, fallbacks, signing keys, browser-test logins."""

from __future__ import annotations

import re
from collections.abc import Iterator

from service.guard.rules.core import Rule, regex_rule, tail_behind
from service.guard.rules.names import KEYWORD, assignment_value_ok, keyed_value
from service.guard.rules.shapes import Span

__all__ = ["RULES"]

# A call handing a credential-named string its value: setenv("API_KEY", "v"), setProperty("db.password", "v"),
# headers.put("X-Api-Key", "v"), getenv("TOKEN", "fallback"). The comma after the key's closing quote is the
# anchor; the call and the key are matched back from it, the value on from it.
_CALL_SPOTS = (",(?:" + tail_behind(",", ('"', "'")) + ")",)


_CALL_SPOT = re.compile(_CALL_SPOTS[0])


_CALL_HEAD = re.compile(
    r"(?<![\w$])[A-Za-z_$][\w.$]{0,64}+\([ \t]{0,4}+(?P<q>['\"])(?P<k>[A-Za-z_][\w.\-]{0,63}+)(?P=q)\Z"
)


_CALL_NAMES = re.compile(r"[A-Za-z_][A-Za-z_.\-]{0,255}")


_KEYWORD_ANYWHERE = re.compile(KEYWORD, re.IGNORECASE)


_CALL_VALUE = re.compile(r"[ \t]{0,4}+(['\"])([^'\"\\\s]{1,256}+)\1[ \t]{0,4}+[,)]")


def _find_call_values(text: str) -> Iterator[Span]:
    """``f("KEY", "value")`` where ``KEY`` names a credential: the value."""
    for spot in _CALL_SPOT.finditer(text):
        c = spot.start()
        head = _CALL_HEAD.search(text, max(0, c - 140), c)
        value_m = _CALL_VALUE.match(text, c + 1)
        if head is None or value_m is None:
            continue
        key, value = head.group("k"), value_m.group(2)
        if _CALL_NAMES.fullmatch(value) and _KEYWORD_ANYWHERE.search(value):
            continue  # field_serializer('password', 'password_bytes'): a list of names, not a name and its value
        if keyed_value(key, value):
            yield value_m.span(2)


# A client or driver handed its credentials positionally: the call, its leading string arguments, and which of them
# is the secret (JDBC's getConnection(url, user, password), PHP's PDO and mysqli, .NET's NetworkCredential(user,
# password), Apache HttpClient's UsernamePasswordCredentials, AWS SDKs' static credentials (key id, secret),
# PayPal's environments (client id, secret), Azure's ClientSecretCredential(tenant, client id, secret)).
_POSITIONAL_CALLS = {
    "getConnection": 2,
    "connect": 2,  # Perl's DBI->connect(dsn, user, password), pymysql.connect(host, user, password)
    "PDO": 2,
    "mysqli_connect": 2,
    "mysqli": 2,
    "NetworkCredential": 1,
    "UsernamePasswordCredentials": 1,
    "PasswordAuthentication": 1,
    "BasicAWSCredentials": 1,
    "AwsBasicCredentials.create": 1,
    "LiveEnvironment": 1,
    "SandboxEnvironment": 1,
    "ClientSecretCredential": 2,
    "login": 1,  # smtplib / ftplib / imaplib: server.login(user, password)
}


_POSITIONAL_CALL = re.compile(
    r"(?<![\w$.])(?:[\w$]{1,64}\.){0,4}(?P<f>" + "|".join(re.escape(f) for f in _POSITIONAL_CALLS) + r")\("
)


_POSITIONAL_ARG = re.compile(
    r"\s{0,64}+(?:(?P<q>['\"])(?P<v>[^'\"\\\r\n]{1,512}+)(?P=q)|(?P<var>[$@%]?[A-Za-z_][\w.$>\-]{0,63}+))"
    r"\s{0,64}+(?:,|\)|\.toCharArray\(\))"
)


def _find_positional_credentials(text: str) -> Iterator[Span]:
    """The secret a connection or credentials call is handed as a string literal, by its position."""
    for call in _POSITIONAL_CALL.finditer(text):
        want, pos, index = _POSITIONAL_CALLS[call.group("f")], call.end(), 0
        while (arg := _POSITIONAL_ARG.match(text, pos)) is not None:
            if index == want:
                # the secret itself must be a literal; a variable may stand before it (connect($dsn, 'u', 'p'))
                if arg.group("v") is not None and assignment_value_ok(arg.group("v"), quoted=True, password=True):
                    yield arg.span("v")
                break
            if not text[arg.end() - 1 : arg.end()] == ",":
                break
            pos, index = arg.end(), index + 1


RULES: tuple[Rule, ...] = (
    Rule("credential_argument", _find_call_values, anchors=_CALL_SPOTS),
    Rule(
        "positional_credential",
        _find_positional_credentials,
        # "(" first: the combined anchor search stops at punctuation, not at every lowercase letter of prose
        anchors=tuple(sorted({r"\((?<=" + re.escape(f.split(".")[-1]) + r"\()" for f in _POSITIONAL_CALLS})),
    ),
    # A hardcoded fallback for a credential's setting: process.env.API_TOKEN || 'v', config.apiKey ?? "v" (JS, C#,
    # PHP), TOKEN ?: "v" (Kotlin, Groovy).
    Rule(
        "credential_fallback",
        regex_rule(
            r"(?<![\w$])(?P<k>[A-Za-z_$][\w$]{0,63}+)[ \t]{0,4}+(?:\|\||\?\?|\?:)[ \t]{0,4}+(?P<q>['\"])"
            r"(?P<s>[^'\"\\\s]{1,256}+)(?P=q)",
            # Rust: env::var("API_KEY").unwrap_or("v"), .unwrap_or_else(|_| "v".into()); Python: getenv("X") or "v"
            r"\([ \t]{0,4}+\"(?P<k>[A-Za-z_][\w.\-]{0,63}+)\"[ \t]{0,4}+\)[ \t]{0,4}+(?:\.unwrap_or\([ \t]{0,4}+"
            r"|\.unwrap_or_else\([ \t]{0,4}+\|[^|]{0,8}+\|[ \t]{0,4}+)\"(?P<s>[^\"\\\s]{1,256}+)\"",
            r"\([ \t]{0,4}+(?P<q>['\"])(?P<k>[A-Za-z_][\w.\-]{0,63}+)(?P=q)[ \t]{0,4}+\)[ \t]{1,4}+or[ \t]{1,4}+"
            r"(?P<q2>['\"])(?P<s>[^'\"\\\s]{1,256}+)(?P=q2)",
            check=lambda m, s: keyed_value(m.group("k"), s),
        ),
        anchors=(
            r"\|\|[ \t]{0,4}['\"]",
            r"\?\?[ \t]{0,4}['\"]",
            r"\?:[ \t]{0,4}['\"]",
            r"\.unwrap_or",
            r"\)[ \t]{1,4}or[ \t]{1,4}['\"]",
        ),
    ),
    # A literal handed to an API as its signing key: .NET's SymmetricSecurityKey(Encoding.UTF8.GetBytes("...")),
    # Java's SecretKeySpec("...".getBytes(), ...) and jjwt's Keys.hmacShaKeyFor, java-jwt's Algorithm.HMAC256("..."),
    # jwt.sign(payload, "...") / jwt.encode(payload, "...") and Python's hmac.new(b"...").
    Rule(
        "signing_key_literal",
        regex_rule(
            r"SymmetricSecurityKey\([ \t]{0,4}+(?:Encoding\.(?:UTF8|ASCII|Unicode|Default)\.GetBytes|Convert\.FromBase64String)"
            r"\([ \t]{0,4}+@?\"(?P<s>[^\"\\\r\n]{8,512}+)\"",
            r"(?:SecretKeySpec|hmacShaKeyFor)\([ \t]{0,4}+\"(?P<s>[^\"\\\r\n]{8,512}+)\"\.getBytes",
            r"Algorithm\.HMAC(?:256|384|512)\([ \t]{0,4}+\"(?P<s>[^\"\\\r\n]{8,512}+)\"",
            r"(?<![\w$])(?:jwt|jsonwebtoken|JWT)\.(?:sign|encode)\([^()\r\n]{1,200}?,[ \t]{0,4}+(?P<q>['\"])"
            r"(?P<s>[^'\"\\\r\n]{8,512}+)(?P=q)",
            r"(?<![\w$])hmac\.new\([ \t]{0,4}+b?(?P<q2>['\"])(?P<s>[^'\"\\\r\n]{8,512}+)(?P=q2)",
            check=lambda _m, s: assignment_value_ok(s, quoted=True),
        ),
        anchors=(
            "SymmetricSecurityKey",
            "SecretKeySpec",
            "S(?<=hmacS)haKeyFor",
            r"HMAC(?:256|384|512)\(",
            r"\((?<=\.sign\()",
            r"\((?<=\.encode\()",
            r"\((?<=hmac\.new\()",
        ),
    ),
    # A password typed into a login form by a browser test: Selenium's find_element(..."password").send_keys("v"),
    # Playwright's and Puppeteer's fill("#password", "v") / type(...), Cypress's cy.get("#password").type("v").
    Rule(
        "form_password_fill",
        regex_rule(
            r"(?i:pass(?:word|wd)?|pwd)[^()\r\n]{0,40}?\)[ \t]{0,4}+\.send_keys\([ \t]{0,4}+(?P<q>['\"])"
            r"(?P<s>[^'\"\\\r\n]{3,256}+)(?P=q)",
            r"\.(?:fill|type)\([ \t]{0,4}+(?P<q1>['\"])[^'\"\r\n]{0,80}?(?i:pass(?:word|wd)?|pwd)[^'\"\r\n]{0,80}?(?P=q1)"
            r"[ \t]{0,4}+,[ \t]{0,4}+(?P<q2>['\"])(?P<s>[^'\"\\\r\n]{3,256}+)(?P=q2)",
            r"cy\.get\([ \t]{0,4}+(?P<q1>['\"])[^'\"\r\n]{0,80}?(?i:pass(?:word|wd)?|pwd)[^'\"\r\n]{0,80}?(?P=q1)[ \t]{0,4}+\)"
            r"[ \t]{0,4}+\.type\([ \t]{0,4}+(?P<q2>['\"])(?P<s>[^'\"\\\r\n]{3,256}+)(?P=q2)",
            check=lambda _m, s: assignment_value_ok(s, quoted=True, password=True) and not s.startswith("{"),
        ),
        anchors=(r"\.send_keys\(", r"\.fill\(", r"\.type\("),
    ),
)
