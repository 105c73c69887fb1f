"""The secret-detection rule table: each rule's stable name, its shape, and the checks that keep placeholders out."""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["RULES", "Rule", "assignment_value_ok", "is_placeholder", "sensitive_key", "sensitive_pair"]

Span = tuple[int, int]
Check = Callable[[re.Match[str], str], bool]

# Every quantifier below is bounded and, where a run is followed by something it cannot contain, possessive:
# the scanner runs on every write, so one pathological input must cost linear time, not exponential.
_MAX_VALUE = 1024
_L = r"(?<![A-Za-z0-9_])"
_R = r"(?![A-Za-z0-9_])"
_RD = r"(?![A-Za-z0-9_\-])"
# "key" / "key": / KEY= / key => / key := -- the assignment glue shared by every context-anchored rule.
_SEP = r"""\\?["']?[ \t]{0,8}+(?::=|=>|[:=])[ \t]{0,8}+\\?["']?"""

_PLACEHOLDER = re.compile(
    r"example|dummy|sample|placeholder|change[_\-]?(?:me|it)|replace[_\-]?me|your[_\-]|^your|redacted|masked|fake"
    r"|x{4}|\*{4}|\.\.\.|…|•{3}|<[^<>]{0,64}>|\$\{|\$\(|\{\{|\}\}|%\([^)]{0,64}\)s|^\$|^\{[\w.]{1,64}\}?$|^[*xX•.#_\-]+$",
    re.IGNORECASE,
)
_STOPWORDS = frozenset(
    "none null nil true false undefined empty required optional string str bytes int integer bool boolean number "
    "float text object any unset default".split()
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DIGEST = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[:=\-$]?[0-9a-fA-F]{16,128}", re.IGNORECASE)
_PATH = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\)")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}://")
_NUMBER = re.compile(r"[-+]?\d{1,64}(?:\.\d{1,64})?")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]{0,64}(?:\.[A-Za-z_$][\w$]{0,64}){1,16}")
_IDENT = re.compile(r"[A-Za-z_]{1,256}")
_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,255}")
_COLOR = re.compile(r"#[0-9a-fA-F]{3,8}")
_DOTTED_NUMBER = re.compile(r"\d{1,32}(?:\.\d{1,32}){1,32}")
# What docs write where a password goes ("https://user:password@host"): a word, not a credential.
_PLACEHOLDER_WORDS = frozenset({"password", "passwd", "pass", "pwd", "pw", "secret", "mypassword"})
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]{0,64}(?:_[A-Z0-9]{1,64}){1,16}")
_KEYWORD = (
    r"(?:pass(?:word|wd|phrase)|pwd|secret|token|auth|apikey"
    r"|(?:api|access|secret|private|auth|master|encryption|signing|client)[_.\-]?key)"
)
_KEY_TAIL = re.compile(_KEYWORD + r"\Z", re.IGNORECASE)
_DNS_LABEL = re.compile(r"[a-z][a-z0-9]{0,62}(?:-[a-z0-9]{1,63}){1,8}")
_NOT_SECRET_KEY = re.compile(r"(?:page|next|continuation|pagination|sync|resume|input)[_.\-]?token\Z", re.IGNORECASE)


def is_placeholder(value: str) -> bool:
    """Whether ``value`` is a documented placeholder, a template variable, or an already-applied mask."""
    return _PLACEHOLDER.search(value) is not None


def assignment_value_ok(value: str, *, quoted: bool, sep: str = "=", spaced: bool = False) -> bool:
    """Whether the value of a ``key = value`` assignment to a sensitive key is plausibly a real secret."""
    v = value.strip()
    if len(v) < 6 or v.lower() in _STOPWORDS or is_placeholder(v) or len(set(v)) <= 3:
        return False
    if any(c.isspace() for c in v):
        return False  # prose or a validation message ("password": "must be at least 8 characters")
    if _UUID.fullmatch(v) or _DIGEST.fullmatch(v) or _PATH.match(v) or _URL.match(v) or _DOTTED_NUMBER.fullmatch(v):
        return False  # an id, a digest, a path, a URL, or a version / IP / OID
    if _COLOR.fullmatch(v):
        return False  # a style sheet's colour (Token: "#ddd0c0")
    if _NAME.fullmatch(v) and _KEY_TAIL.search(v):
        return False  # names another credential field ("input_token": "next_token"), not a value
    if quoted:
        return True
    if sep == ":" and v[0] in "!&*":
        return False  # a YAML tag, anchor or alias (password: !vault |, password: *db_password)
    if v[0] in "([{":
        return False  # an expression or a structure: token = (a if b else c)
    if _NUMBER.fullmatch(v) or _DOTTED.fullmatch(v) or _ENV_NAME.fullmatch(v) or re.search(r"[\w\])][(\[]", v):
        return False  # a number, an attribute access, an env-var name, or a call/subscript: code, not a literal
    # A bare word after ':' or a spaced '=' is a variable (password = pw) or prose (Password: required), and
    # a snake_case one is a variable even unspaced (f(token=token_value)); only KEY=word (an env file) is a literal.
    return not (_IDENT.fullmatch(v) and (sep != "=" or spaced or "_" in v))


def sensitive_key(key: str) -> bool:
    """Whether a mapping key (or the identifier before '=') names a credential, e.g. ``db_password``."""
    return _KEY_TAIL.search(key) is not None and _NOT_SECRET_KEY.search(key) is None


def sensitive_pair(key: str, value: str) -> bool:
    """Whether payload entry ``key: value`` is a credential, judged on its serialized (JSON-escaped) form."""
    if not sensitive_key(key):
        return False
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    return assignment_value_ok(escaped[:_MAX_VALUE], quoted=True, sep=":", spaced=True)


@dataclass(frozen=True)
class Rule:
    """One secret shape: ``find(text)`` yields the (start, end) span of each secret itself -- what gets masked."""

    name: str
    find: Callable[[str], Iterator[Span]]


def _regex(*patterns: str, flags: int = 0, check: Check | None = None) -> Callable[[str], Iterator[Span]]:
    compiled = [re.compile(p, flags) for p in patterns]
    secret_groups = [[g for g in rx.groupindex if g == "s" or g.startswith("s_")] for rx in compiled]

    def find(text: str) -> Iterator[Span]:
        for rx, groups in zip(compiled, secret_groups):
            for m in rx.finditer(text):
                # The secret is the one named alternative that took part in the match (else the whole match).
                start, end = next((m.span(g) for g in groups if m.start(g) >= 0), m.span())
                secret = text[start:end]
                if is_placeholder(secret) or (check is not None and not check(m, secret)):
                    continue
                yield start, end

    return find


def _not_lowercase_word(_m: re.Match[str], secret: str) -> bool:
    # Real tokens are random base62; only lowercase letters and dashes (sk-learn-...) is a kebab-case identifier.
    return any(c.isdigit() or c.isupper() for c in secret.partition(":")[2] or secret)


def _mixed(_m: re.Match[str], secret: str) -> bool:
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)


def _url_check(m: re.Match[str], secret: str) -> bool:
    if secret.lower() in _PLACEHOLDER_WORDS:
        return False
    return not (is_placeholder(m.group("user")) or is_placeholder(m.group("host")))


def _basic_check(_m: re.Match[str], secret: str) -> bool:
    try:
        decoded = base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return True  # not user:pass, but still an opaque credential after "Basic"
    return not is_placeholder(decoded.partition(":")[2] or decoded)


def _bearer_check(_m: re.Match[str], secret: str) -> bool:
    return len(secret) >= 16 and (
        any(c.isdigit() for c in secret) or (any(c.isupper() for c in secret) and any(c.islower() for c in secret))
    )


def _assignment_check(m: re.Match[str], secret: str) -> bool:
    text, kw_start, sep = m.string, m.start("kw"), m.group("sep")
    key_start, floor = kw_start, max(0, kw_start - 64)
    while key_start > floor and (text[key_start - 1].isalnum() or text[key_start - 1] in "_.-"):
        key_start -= 1
    key = text[key_start : m.end("kw")]
    spaced = bool(m.group("w1") or m.group("w2"))
    if _NOT_SECRET_KEY.search(key):
        return False
    if sep == ":" and not spaced and text[key_start - 1 : key_start] == ":":
        return False  # one component of an ARN / URN (arn:aws:secretsmanager:...:secret:name), not an assignment
    quoted = m.group("s_uq") is None
    if not quoted and key.lower().endswith("secret") and _DNS_LABEL.fullmatch(secret):
        return False  # existingSecret: db-credentials -- a Kubernetes Secret's name, not its content
    return assignment_value_ok(secret, quoted=quoted, sep=sep, spaced=spaced)


_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_TAIL = re.compile(r"(?:[A-Za-z0-9+/=\r\n]|\\[nr]){0,16384}+")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/]{32}")
_PEM_MAX = 32768


def _find_private_keys(text: str) -> Iterator[Span]:
    ends = [(m.start(), m.end()) for m in _PEM_END.finditer(text)]
    starts = [s for s, _ in ends]
    covered = 0
    for m in _PEM_BEGIN.finditer(text):
        if m.start() < covered:
            continue
        i = bisect.bisect_left(starts, m.end())
        if i < len(ends) and ends[i][0] - m.end() <= _PEM_MAX:
            stop, body = ends[i][1], text[m.end() : ends[i][0]]
        else:  # truncated (no END line): mask the header and the key material that follows it
            tail = _PEM_TAIL.match(text, m.end())
            stop = tail.end() if tail else m.end()
            body = text[m.end() : stop]
        body = re.sub(r"\\[nr]|\s", "", body)
        if _PEM_BODY.search(body) is None or is_placeholder(body):
            continue
        covered = stop
        yield m.start(), stop


_URL_PASSWORD = (
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}+://(?P<user>[^\s:/@?#\[\]'\"<>]{0,128}+)"
    r":(?P<s>[^\s@/?#'\"<>]{1,256}+)@(?P<host>[A-Za-z0-9._\-\[\]:%]{1,253}+)"
)
_ASSIGNMENT = (
    r"(?P<kw>" + _KEYWORD + r")(?![\w.\-])\\?[\"']?(?P<w1>[ \t]{0,8}+)(?P<sep>:=|=>|=|:)(?P<w2>[ \t]{0,8}+)"
    r"(?:\\\"(?P<s_eq>[^\"\\\r\n]{1,1024}+)"
    r"|\"(?P<s_dq>(?:[^\"\\\r\n]|\\.){1,1024}+)"
    r"|'(?P<s_sq>(?:[^'\\\r\n]|\\.){1,1024}+)"
    r"|`(?P<s_bq>[^`\r\n]{1,1024}+)"
    # Unquoted: never ends on closing punctuation, so "(password = x)" or "pwd=x." keeps its ')' or '.' out.
    r"|(?P<s_uq>[^\s'\"`,;]{0,511}[^\s'\"`,;)\]}.:!?]))"
)

# Most specific first: when two rules claim the same span, the earlier rule names it.
RULES: tuple[Rule, ...] = (
    Rule(
        "gcp_service_account_key",
        _regex(
            r"\"private_key\"[ \t]{0,8}+:[ \t]{0,8}+\"(?P<s>-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[^\"]{1,8000}+)\"",
            check=lambda m, s: "-----END" in s,
        ),
    ),
    Rule("private_key", _find_private_keys),
    Rule("aws_access_key_id", _regex(_L + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}+" + _R)),
    Rule(
        "aws_secret_key",
        _regex(
            r"(?i:(?:aws[_.\-]?)?secret[_.\-]?access[_.\-]?key|aws[_.\-]?secret[_.\-]?key)"
            + _SEP
            + r"(?P<s>[A-Za-z0-9/+]{40}+)(?![A-Za-z0-9/+=])"
        ),
    ),
    Rule("gcp_api_key", _regex(_L + r"AIza[0-9A-Za-z_\-]{35}+" + _RD)),
    Rule(
        "azure_storage_key",
        _regex(r"(?<![A-Za-z0-9])(?i:(?:Account|SharedAccess)Key)" + _SEP + r"(?P<s>[A-Za-z0-9+/]{20,128}+={0,2}+)"),
    ),
    Rule("azure_sas_token", _regex(r"[?&](?i:sig)=(?P<s>[A-Za-z0-9%+/=]{20,256}+)", check=_mixed)),
    Rule(
        "github_token",
        _regex(_L + r"gh[pousr]_[A-Za-z0-9]{36,255}+" + _R, _L + r"github_pat_[A-Za-z0-9_]{50,255}+" + _R),
    ),
    Rule(
        "gitlab_token",
        _regex(_L + r"gl(?:pat|ptt|dt|rt|cbt|oas|ft|imt|soat)-[A-Za-z0-9_\-]{20,64}+(?:\.[A-Za-z0-9_\-]{1,64}+){0,3}+"),
    ),
    Rule(
        "bitbucket_app_password",
        _regex(
            r"(?i:bitbucket[\w.\-]{0,30}?(?:app[_.\-]?)?(?:password|pass|secret|token))"
            + _SEP
            + r"(?P<s>[A-Za-z0-9]{16,40}+)(?![A-Za-z0-9])",
            _L + r"ATBB[A-Za-z0-9_=.\-]{28,64}+",
        ),
    ),
    Rule(
        "slack_webhook",
        _regex(
            r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>T[A-Za-z0-9_]{6,20}/[A-Za-z0-9_/\-]{10,200}+)"
        ),
    ),
    Rule(
        "slack_token",
        _regex(_L + r"xox[baprse]-[0-9A-Za-z\-]{10,250}+", _L + r"xapp-[0-9A-Za-z\-]{20,250}+", check=_mixed),
    ),
    Rule(
        "discord_webhook",
        _regex(
            r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api(?:/v\d{1,2})?/webhooks/\d{15,21}/"
            r"(?P<s>[A-Za-z0-9_\-]{40,100}+)"
        ),
    ),
    Rule(
        "discord_bot_token",
        _regex(_L + r"[MNO][A-Za-z0-9_\-]{23,27}+\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}+" + _RD),
    ),
    Rule(
        "telegram_bot_token",
        _regex(r"(?:(?<=bot)|(?<![A-Za-z0-9_:]))\d{8,10}+:[A-Za-z0-9_\-]{35}" + _RD, check=_not_lowercase_word),
    ),
    Rule("stripe_key", _regex(_L + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,247}+" + _R)),
    Rule("stripe_webhook_secret", _regex(_L + r"whsec_[A-Za-z0-9]{32,64}+" + _R)),
    Rule(
        "square_access_token",
        _regex(_L + r"sq0atp-[0-9A-Za-z_\-]{22,43}+" + _RD, _L + r"EAAA[0-9A-Za-z_\-+=]{56,100}+" + _RD),
    ),
    Rule("square_oauth_secret", _regex(_L + r"sq0csp-[0-9A-Za-z_\-]{40,50}+" + _RD)),
    Rule(
        "paypal_braintree_token",
        _regex(_L + r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}" + _R),
    ),
    Rule("anthropic_key", _regex(_L + r"sk-ant-[A-Za-z0-9_\-]{20,200}+" + _RD)),
    Rule(
        "openai_key",
        _regex(_L + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,200}+" + _RD, check=_not_lowercase_word),
    ),
    Rule("huggingface_token", _regex(_L + r"hf_[A-Za-z0-9]{30,40}+" + _R, check=_not_lowercase_word)),
    Rule("twilio_api_key", _regex(_L + r"SK[0-9a-fA-F]{32}" + _R, check=_mixed)),
    Rule(
        "twilio_auth_token",
        _regex(
            _L + r"AC[0-9a-f]{32}\\?[\"']?[ \t]{0,8}+[,:/][ \t]{0,8}+\\?[\"']?(?P<s>[0-9a-f]{32})" + _R,
            r"(?i:twilio[\w.\-]{0,20}?auth[_.\-]?token)" + _SEP + r"(?P<s>[0-9a-f]{32})" + _R,
        ),
    ),
    Rule("sendgrid_api_key", _regex(_L + r"SG\.[A-Za-z0-9_\-]{16,32}+\.[A-Za-z0-9_\-]{30,64}+" + _RD)),
    Rule("mailgun_api_key", _regex(r"(?<![A-Za-z0-9_\-])key-[0-9a-f]{32}" + _R)),
    Rule("npm_token", _regex(_L + r"npm_[A-Za-z0-9]{36}" + _R)),
    Rule("pypi_token", _regex(_L + r"pypi-AgE[A-Za-z0-9_\-]{50,1000}+")),
    Rule(
        "datadog_api_key",
        _regex(r"(?<![A-Za-z0-9])(?i:(?:datadog|dd)[_.\-]?api[_.\-]?key)" + _SEP + r"(?P<s>[0-9a-f]{32})" + _R),
    ),
    Rule(
        "datadog_app_key",
        _regex(
            r"(?<![A-Za-z0-9])(?i:(?:datadog|dd)[_.\-]?app(?:lication)?[_.\-]?key)" + _SEP + r"(?P<s>[0-9a-f]{40})" + _R
        ),
    ),
    Rule("newrelic_key", _regex(_L + r"NR(?:AK|II)-[A-Za-z0-9]{20,40}+" + _R)),
    Rule("shopify_token", _regex(_L + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _R)),
    Rule("atlassian_api_token", _regex(_L + r"ATATT3[A-Za-z0-9_\-=]{50,400}+")),
    Rule(
        "jwt",
        _regex(
            r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,4096}+\.eyJ[A-Za-z0-9_\-]{8,8192}+\.[A-Za-z0-9_\-]{8,4096}+" + _RD
        ),
    ),
    Rule(
        "basic_auth",
        _regex(
            r"(?i:authorization)"
            + _SEP
            + r"(?i:basic)[ \t]{1,8}+(?P<s>[A-Za-z0-9+/]{8,2048}+={0,2}+)(?![A-Za-z0-9+/=])",
            check=_basic_check,
        ),
    ),
    Rule(
        "bearer_token",
        _regex(
            r"(?:(?i:authorization)" + _SEP + r"(?i:bearer)|" + _L + r"Bearer)[ \t]{1,8}+"
            r"(?P<s>[A-Za-z0-9_\-~+/]{1,4096}+(?:\.[A-Za-z0-9_\-~+/]{1,4096}+){0,8}+={0,4}+)",
            check=_bearer_check,
        ),
    ),
    Rule("url_password", _regex(_URL_PASSWORD, check=_url_check)),
    # Credentials on a command line: curl/wget/httpie `-u user:pass`, `--user user:pass`, `--password value`.
    Rule(
        "cli_password",
        _regex(
            r"(?<![\w-])(?:-u|--user|--basic-auth)(?:[ \t]{1,4}+|=)['\"]?[^\s:'\"$]{1,64}+:(?P<s>[^\s'\"$]{4,256}+)",
            r"(?<![\w-])--(?:password|passwd|pass)(?:[ \t]{1,4}+|=)['\"]?(?P<s>[^\s'\"$-][^\s'\"$]{3,255}+)",
            check=lambda _m, secret: secret.lower() not in _PLACEHOLDER_WORDS,
        ),
    ),
    Rule("sensitive_assignment", _regex(_ASSIGNMENT, flags=re.IGNORECASE, check=_assignment_check)),
)
