"""Credentials in configuration markup and tables: XML and plist settings, DSLs, CSV rows, nested objects."""

from __future__ import annotations

import re
from collections.abc import Iterator

from service.guard.rules.core import Rule, regex_rule, tail_behind
from service.guard.rules.names import (
    CRED_KEY,
    FILE_NAME,
    PASSWORD_KEY,
    WP_SECRET,
    assignment_value_ok,
    keyed_value,
    sensitive_key,
)
from service.guard.rules.prose_values import prose_token
from service.guard.rules.providers import KEY_WORDS, provider_key, token_shaped
from service.guard.rules.shapes import UUID, Span, cased

__all__ = ["CSV_MAX_ROWS", "RULES"]

# Objects whose bare "key" leaf is a credential: a JWT's or a cipher's settings, an API's, a provider's.
_CREDENTIAL_PARENTS = frozenset(
    "jwt jwtsettings jwtoptions jwtconfig signing encryption hmac api apikey auth authentication token tokens secret "
    "secrets credentials oauth session cookie crypto cipher aes license security".split()
)


def _credential_parent(name: str) -> bool:
    words = [w.lower() for w in KEY_WORDS.findall(name)]
    return bool(words) and (
        name.lower() in _CREDENTIAL_PARENTS or words[0] in _CREDENTIAL_PARENTS or provider_key(name) is not None
    )


# Comma-separated rows as CSV writers write them, no space after a comma (code has one). A cell: quoted (no quote or
# line break inside) or bare (no comma or quote, neither opening nor closing with a space).
_CSV_CELL = re.compile(r'"(?P<q>[^"\r\n]{0,256}+)"|(?P<u>(?:[^,"\s][^,"\r\n]{0,254}+)?(?<![ \t]))')


_CSV_HEADER_CELL = re.compile(r"[A-Za-z][\w.\-/]{0,63}(?: [\w.\-/]{1,63}){0,3}")


CSV_MAX_ROWS = 10_000


# The comma or line break closing a cell whose name ends like a credential key's (_KEYWORD_TAILS): the rule's
# anchors, and where its search stops (only at commas and line breaks).
_CSV_ENDS = (",(?:" + tail_behind(",", ("", '"')) + ")", "\n(?:" + tail_behind("\n", ("", '"', "\r", '"\r')) + ")")


_CSV_KEY_CELL = re.compile("|".join(_CSV_ENDS))


def _csv_cells(text: str, start: int) -> tuple[list[tuple[str, int, int]], int] | None:
    """The cells (value, start, end) of the comma-separated line at ``start`` and where it ends; None when the line
    holds no comma or something no CSV row has (a quote inside a bare cell)."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    stop = end - 1 if end > start and text[end - 1] == "\r" else end
    cells, pos = [], start
    while True:
        m = _CSV_CELL.match(text, pos, stop)
        if m is None:
            return None
        v_start, v_end = m.span("q" if m.start("q") >= 0 else "u")
        cells.append((text[v_start:v_end], v_start, v_end))
        pos = m.end()
        if pos == stop:
            break
        if text[pos] != ",":
            return None
        pos += 1
    return (cells, end) if len(cells) >= 2 else None


def _csv_secret(key: str, value: str, *, column: bool = False) -> bool:
    """Whether ``value`` in a cell named ``key`` (by its row, or by its ``column``'s header) is a credential: a
    password (under a password column header, a plain word too), or a token of sixteen characters or more with a
    random token's mix; words, numbers, identifiers and placeholders are not."""
    key = key.replace(" ", "_")
    if not sensitive_key(key) or CRED_KEY.search(key) is not None:
        return False
    if PASSWORD_KEY.search(key) is not None:
        return assignment_value_ok(value, quoted=column, sep=":", password=True, key=key)
    return (
        len(value) >= 16
        and assignment_value_ok(value, quoted=False, sep=":", key=key)
        and (prose_token(value) or cased(value) or UUID.fullmatch(value) is not None)
    )


# A credential-named key then one space and a quoted value, as Gradle, Groovy and Ruby DSLs write a setting
# (storePassword 'v', password "v"): the opening quote after the key's tail is the anchor and the search's only stop.
_DSL_SPOTS = ("'(?:" + tail_behind("'", (" ", "\t")) + ")", '"(?:' + tail_behind('"', (" ", "\t")) + ")")


_DSL_SPOT = re.compile("|".join(_DSL_SPOTS))


_DSL_VALUE = re.compile(r"(['\"])([^'\"\\\r\n]{1,256}+)\1")


_DSL_VERBS = frozenset({"pass", "auth", "token"})


_DSL_KEY = re.compile(r"(?:^|(?<=[\s{;(]))[A-Za-z_][\w.\-]{0,63}\Z")


_LOWER_PATH = re.compile(r"[a-z0-9_.\-]{1,64}(?:/[a-z0-9_.\-]{1,64}){1,16}/?")


def _find_dsl_values(text: str) -> Iterator[Span]:
    """``key 'value'`` where ``key`` names a credential: the value (a password may be a plain word)."""
    for spot in _DSL_SPOT.finditer(text):
        q = spot.start()
        key_m = _DSL_KEY.search(text, max(0, q - 65), q - 1)
        value_m = _DSL_VALUE.match(text, q)
        if key_m is None or value_m is None:
            continue
        key, value = key_m.group(), value_m.group(2)
        if key.lower() in _DSL_VERBS or FILE_NAME.fullmatch(value) or _LOWER_PATH.fullmatch(value):
            continue  # only pass "py.exe", unexpected token 'EOF', secret "secret/data/db": prose, messages, paths
        if keyed_value(key, value):
            yield value_m.span(2)


def _find_csv_values(text: str) -> Iterator[Span]:
    """Credentials in comma-separated rows: a ``name,value`` row (``db_password,Xk9mP2vL8q,``), and the cells under
    a header naming a credential column (AWS's credentials.csv: ``User name,Password,Access key ID,...``)."""
    pos = 0
    while (m := _CSV_KEY_CELL.search(text, pos)) is not None:
        start = text.rfind("\n", 0, m.start()) + 1
        parsed = _csv_cells(text, start)
        if parsed is None:
            pos = m.end()
            continue
        cells, end = parsed
        pos = end + 1
        if all(_CSV_HEADER_CELL.fullmatch(v) for v, _, _ in cells):
            columns = [i for i, (v, _, _) in enumerate(cells) if sensitive_key(v.replace(" ", "_"))]
            row_start, rows = end + 1, 0
            while columns and row_start < len(text) and rows < CSV_MAX_ROWS:
                row = _csv_cells(text, row_start)
                if row is None or len(row[0]) != len(cells):
                    break
                for i in columns:
                    value, v_start, v_end = row[0][i]
                    if _csv_secret(cells[i][0], value, column=True):
                        yield v_start, v_end
                row_start, rows = row[1] + 1, rows + 1
            if rows:
                pos = row_start
                continue
        (key, _, _), (value, v_start, v_end) = cells[0], cells[1]
        if _CSV_HEADER_CELL.fullmatch(key) and _csv_secret(key, value):
            yield v_start, v_end


RULES: tuple[Rule, ...] = (
    # A credential-named element or setting written as markup or a call, not as key = value: <password>v</password>,
    # <add key="ApiKey" value="v"/>, PHP's define('DB_PASSWORD', 'v').
    Rule(
        "sensitive_config_value",
        regex_rule(
            r"<(?P<k>[A-Za-z_][\w.\-]{0,64}+)>[ \t\r\n]{0,64}+(?P<s>[^<>\s]{1,256}+)[ \t\r\n]{0,64}+</(?P=k)>",
            r"(?<![\w-])(?:key|name)[ \t]{0,4}+=[ \t]{0,4}+\"(?P<k>[^\"\s]{1,64}+)\"[ \t]{1,8}+value[ \t]{0,4}+=[ \t]{0,4}+"
            r"\"(?P<s>[^\"\s]{1,256}+)\"",
            # <entry key="db.password">v</entry> (Java's XML properties), <string name="api_key">v</string> (Android)
            r"<(?P<t>[\w.\-]{1,64}+)[ \t]{1,8}+(?:key|name)[ \t]{0,4}+=[ \t]{0,4}+\"(?P<k>[^\"\s]{1,64}+)\""
            r"(?:[ \t]{1,8}+[\w:.\-]{1,64}+[ \t]{0,4}+=[ \t]{0,4}+\"[^\"<>]{0,128}+\"){0,4}+[ \t]{0,8}+>"
            r"(?P<s>[^<>\s]{1,256}+)</(?P=t)>",
            # An Apple property list: <key>PartnerApiKey</key> <string>v</string>
            r"<key>(?P<k>[\w.\-]{1,64}+)</key>[ \t\r\n]{0,64}+<string>(?P<s>[^<>\s]{1,256}+)</string>",
            # (the value's own quote closes it: a WordPress salt holds the other kind, and escaped ones)
            r"(?<![\w$>])define\([ \t]{0,4}+['\"](?P<k>[\w.\-]{1,64}+)['\"][ \t]{0,4}+,[ \t]{0,32}+(?P<dq>['\"])"
            r"(?P<s>(?:(?!(?P=dq))[^\s\\]|\\.){1,256}+)(?P=dq)",
            # An environment entry as Kubernetes, Compose and ECS write it: name: DB_PASSWORD / value: ...
            r"(?<![\w-])name:[ \t]{0,8}+['\"]?(?P<k>[\w.\-]{1,64}+)['\"]?[ \t]{0,8}+\r?\n[ \t]{0,64}+value:[ \t]{0,8}+"
            r"(?P<q>['\"]?)(?P<s>[^'\"\s#][^'\"\s]{0,255}+)(?P=q)[ \t]{0,8}+(?=\r?\n|\Z)",
            # {"name": "DB_PASSWORD", "value": "..."} (ECS, Kubernetes JSON), {"key": "...", "value": ...} (Postman)
            r"\"(?:[Nn]ame|[Kk]ey)\"[ \t]{0,8}+:[ \t]{0,8}+\"(?P<k>[\w.\-]{1,64}+)\"[ \t]{0,8}+,[ \t\r\n]{0,64}+\"[Vv]alue\""
            r"[ \t]{0,8}+:[ \t]{0,8}+\"(?P<s>[^\"\s]{1,256}+)\"",
            # A Terraform variable's default: variable "db_password" { ... default = "..." }
            r"(?<![\w-])variable[ \t]{1,8}+\"(?P<k>[\w\-]{1,64}+)\"[ \t]{0,8}+\{(?:[^{}\"]|\"[^\"\r\n]{0,256}+\"){0,1024}?"
            r"(?<![\w-])default[ \t]{0,8}+=[ \t]{0,8}+\"(?P<s>[^\"\\\r\n]{1,256}+)\"",
            # A setting whose value is an object: Spring Boot actuator's /env ("db.password": {"value": "..."})
            r"\"(?P<k>[\w.\-]{1,64}+)\"[ \t]{0,8}+:[ \t\r\n]{0,64}+\{[ \t\r\n]{0,64}+\"[Vv]alue\"[ \t]{0,8}+:[ \t]{0,8}+"
            r"\"(?P<s>[^\"\s]{1,256}+)\"",
            check=lambda m, secret: (
                keyed_value(m.group("k"), secret)
                or (WP_SECRET.fullmatch(m.group("k")) is not None and assignment_value_ok(secret, quoted=True))
            ),
        ),
        anchors=(
            r"</[\w.\-]{0,64}(?i:word|wd|phrase|pass|secret|token|auth|key)>",
            r"\"[ \t]{1,8}value[ \t]{0,4}=",
            r"\((?<=define\()",
            ">(?:" + tail_behind(">", ('"',)) + ")",
            r"\n[ \t]{0,64}value:",
            '"value"',
            '"Value"',
            "</key>",
            "</string>",
            r'"[ \t]{0,8}\{',
        ),
    ),
    Rule("dsl_credential", _find_dsl_values, anchors=_DSL_SPOTS),
    Rule(
        "csv_credential",
        _find_csv_values,
        anchors=_CSV_ENDS,
    ),
    # A generic leaf under a credential's object: appsettings.json's "Jwt": { "Key": "..." }, YAML's jwt:\n  key: ...
    Rule(
        "nested_credential",
        regex_rule(
            r"\"(?P<p>[A-Za-z_][\w\-]{0,40}+)\"[ \t]{0,8}+:[ \t\r\n]{0,64}+\{(?:[^{}\"]|\"[^\"\r\n]{0,256}+\"){0,512}?"
            r"\"(?:Key|key|KEY)\"[ \t]{0,8}+:[ \t]{0,8}+\"(?P<s>[^\"\\\r\n]{8,256}+)\"",
            r"(?m)^(?P<ind>[ \t]{0,32}+)(?P<p>[A-Za-z_][\w\-]{0,40}+):[ \t]{0,8}+\r?\n"
            r"(?:(?P=ind)[ \t]{1,16}+[\w\-]{1,40}+:[^\r\n]{0,256}+\r?\n){0,16}?"
            r"(?P=ind)[ \t]{1,16}+(?:Key|key|KEY):[ \t]{1,8}+(?P<q>['\"]?)(?P<s>[^\s'\"#]{8,256}+)(?P=q)[ \t]*+(?=\r?\n|\Z)",
            # any leaf under secrets: / credentials: (a bag of them), when its value is a random token
            r"(?m)^(?P<ind2>[ \t]{0,32}+)(?:secrets|credentials|creds|Secrets|Credentials|SECRETS|CREDENTIALS):[ \t]{0,8}+\r?\n"
            r"(?:(?P=ind2)[ \t]{1,16}+[\w\-]{1,40}+:[^\r\n]{0,256}+\r?\n){0,16}?"
            r"(?P=ind2)[ \t]{1,16}+[\w\-]{1,40}+:[ \t]{1,8}+(?P<q2>['\"]?)(?P<s_bag>[^\s'\"#]{16,256}+)(?P=q2)[ \t]*+(?=\r?\n|\Z)",
            r"\"(?:secrets|credentials|Secrets|Credentials)\"[ \t]{0,8}+:[ \t\r\n]{0,64}+\{(?:[^{}\"]|\"[^\"\r\n]{0,256}+\"[ \t]{0,8}+:"
            r"[ \t]{0,8}+\"[^\"\r\n]{0,256}+\"){0,64}?\"[\w\-]{1,40}+\"[ \t]{0,8}+:[ \t]{0,8}+\"(?P<s_bag>[^\"\\\r\n]{16,256}+)\"",
            check=lambda m, s: (
                token_shaped(s)
                if "s_bag" in m.re.groupindex
                else _credential_parent(m.group("p")) and len(s) >= 12 and assignment_value_ok(s, quoted=True)
            ),
        ),
        anchors=(
            '"Key"',
            '"key"',
            '"KEY"',
            r"\n[ \t]{1,48}(?:Key|key|KEY):[ \t]",
            *(":(?<=" + w + ":)" for w in ("secrets", "credentials", "creds", "Secrets", "Credentials", "SECRETS")),
            ":(?<=CREDENTIALS:)",
            '"secrets"',
            '"credentials"',
            '"Secrets"',
            '"Credentials"',
        ),
    ),
)
