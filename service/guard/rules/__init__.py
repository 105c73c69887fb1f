"""The secret-detection rule table: each rule's stable name, its shape, and the checks that keep placeholders out."""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import json
import re
import re._constants as _sre_constants
import re._parser as _sre_parser
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

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

Span = tuple[int, int]
Check = Callable[[re.Match[str], str], bool]

# Every quantifier below is bounded and, where a run is followed by something it cannot contain, possessive:
# the scanner runs on every write, so one pathological input must cost linear time, not exponential.
_MAX_VALUE = 1024
_L = r"(?<![A-Za-z0-9_])"
_R = r"(?![A-Za-z0-9_])"
_RD = r"(?![A-Za-z0-9_\-])"
# "key" / "key": / KEY= / key => / key := -- the assignment glue shared by every context-anchored rule.
# (up to 32 spaces before the operator: columns aligned by hand, as in Puppet, Ruby and PHP)
_SEP = r"""\\?["']?[ \t]{0,32}+(?::=|=>|[:=])[ \t]{0,8}+\\?["']?"""

# Placeholder words count only as whole segments in one case: lowercase or Capitalized, bounded by the string's
# edge, a non-letter or a lower->upper case change ("fake-token", "myFakeToken", "..._example"), or ALL CAPS anywhere
# (an all-caps run has no visible word boundary: AKIAIOSFODNN7EXAMPLE, ...CYEXAMPLEKEY). A case-insensitive
# substring would drop real random tokens that happen to spell one ("...1lFaKe").
_PLACEHOLDER_WORDS_RX = (
    ("example",),
    ("dummy",),
    ("sample",),
    ("placeholder",),
    ("change", "me"),
    ("change", "it"),
    ("replace", "me"),
    ("redacted",),
    ("masked",),
    ("fake",),
)
# A lowercase placeholder word may run on into a credential word: examplekey, dummypassword, fakesecret.
_LOWER_COMPOUND = r"(?:key|token|secret|pass|pwd|here|value|api|user|id)"


def _placeholder_word(parts: tuple[str, ...]) -> str:
    sep = r"[_\-]?"
    lower = sep.join(parts)
    camel = parts[0] + sep + sep.join(p.capitalize() for p in parts[1:]) if len(parts) > 1 else None
    title = sep.join(p.capitalize() for p in parts)
    upper = sep.join(p.upper() for p in parts)
    forms = [
        r"(?<![A-Za-z])" + lower + r"(?:(?![a-z])|(?=" + _LOWER_COMPOUND + "))",
        r"(?<![A-Z])" + title + r"(?![a-z])",
        upper,
    ]
    if camel is not None:
        forms.insert(1, r"(?<![A-Za-z])" + camel + r"(?![a-z])")
    return "|".join(forms)


_PLACEHOLDER = re.compile(
    "|".join(_placeholder_word(w) for w in _PLACEHOLDER_WORDS_RX)
    + r"|(?<![A-Za-z])(?:your|Your)(?:[_\-]|(?=[A-Z]))|YOUR[_\-]|(?i:^your)"
    + r"|(?i:x{4})|\*{4}|#{4}"
    + r"|\.\.\.|…|•{3}|<[^<>]{0,64}>|\$\{|\$\(|\{\{|\}\}|%\([^)]{0,64}\)s|^\$|^\{[\w.]{1,64}\}?$"
    + r"|^%[A-Za-z_][\w.\-]{0,64}%$|^@[A-Za-z_][\w.\-]{0,64}@$"
    + r"|^[*xX•.#_\-]+$"
    + r"|^\[[A-Z][A-Z_ ]{2,20}\]$"  # [FILTERED], [HIDDEN]: a log filter's marker
    + r"|(?i:[_\- ]here)$"  # password_here, put your unique phrase here: a template's blank
    # Docs end a made-up key with the word (AWS: ...0uexample, ...EXAMPLEKEY); at the very end it is never chance.
    + r"|(?i:example|sample|dummy)(?:key)?$"
)
_STOPWORDS = frozenset(
    "none null nil true false undefined empty required optional string str bytes int integer bool boolean number "
    "float text object any unset default".split()
)
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DIGEST = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[:=\-$]?[0-9a-fA-F]{16,128}", re.IGNORECASE)
_PATH = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\)")
# Stored password verifiers, not passwords: PostgreSQL SCRAM and md5, MySQL native, Django pbkdf2/bcrypt/argon2,
# crypt(3) ($1$/$5$/$6$/$2b$/$y$).
_PASSWORD_HASH = re.compile(
    r"SCRAM-SHA-256\$\d{1,10}:[A-Za-z0-9+/=]{1,256}\$[A-Za-z0-9+/=]{1,256}:[A-Za-z0-9+/=]{1,256}"
    r"|md5[0-9a-f]{32}|\*[0-9A-F]{40}"
    r"|(?:pbkdf2_sha(?:1|256)|bcrypt(?:_sha256)?|argon2|scrypt)\$[A-Za-z0-9+/=.$,\-]{8,512}"
    r"|\$(?:1|2[abxy]?|5|6|y|argon2(?:id|i|d))\$[A-Za-z0-9+/=.$,\-]{8,512}"
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}://")
_NUMBER = re.compile(r"[-+]?\d{1,64}(?:\.\d{1,64})?")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]{0,64}(?:\.[A-Za-z_$][\w$]{0,64}){1,16}")
_IDENT = re.compile(r"[A-Za-z_]{1,256}")
_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,255}")
_COLOR = re.compile(r"#[0-9a-fA-F]{3,8}")
_SECRET_MANAGER_NAME = re.compile(r"projects/[\w\-]{1,64}/secrets/[\w\-]{1,255}(?:/versions/[\w\-]{1,64})?")
# An e-mail address, URL-encoded or not, maybe followed by a scope path (a signed URL's X-Goog-Credential).
_ACCOUNT = re.compile(
    r"[\w.+\-]{1,64}(?:@|%40)[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,8}(?:(?:/|%2F)[\w.\-]{1,64}){0,8}"
)
# A lowercase key's name and '=' (client_id=...): a value that opens so is the next pair of a log line.
_NAMESPACED = re.compile(r"[A-Za-z][A-Za-z_.\-]{0,64}:[A-Za-z][A-Za-z_.\-]{0,64}")
_ID_AND_PATH = re.compile(r"[\w.\-]{1,64}:(?:/|~/|\./)")
_CMDLET = re.compile(r"(?:Get|Set|New|Read|Import|Export|Invoke|ConvertTo|ConvertFrom|Add|Remove)-[A-Z][A-Za-z]{1,48}")
_NAMED_VALUE = re.compile(r"[a-z]{2,32}(?:_[a-z]{1,32}){0,4}=(?=[^=])")
_DOTTED_NUMBER = re.compile(r"\d{1,32}(?:\.\d{1,32}){1,32}")
# A value naming a credential field or variable rather than holding one (AWS_ACCESS_KEY_ID, AWSAccessKeyId).
_KEY_NAME = re.compile(r"(?:access|secret|api|private|auth)[_\-]?key(?:[_\-]?id)?\Z|key[_\-]?id\Z", re.IGNORECASE)
# Lowercase words, maybe joined (upgrades, bearer, testcontainers-localstack): a setting or a name.
_PLAIN_WORDS = re.compile(r"[a-z]{1,64}(?:[_\-][a-z]{1,64}){0,8}")
# Words in CamelCase, maybe a dotted path of them (NextMarker, nextMarker, DistributionList.NextMarker): a field's
# name. Random letters rarely alternate so (each capital followed by small letters): tokens carry digits anyway.
_CAMEL_WORDS = re.compile(
    r"(?:[a-z]{1,32}|[A-Z][a-z]{1,32})(?:[A-Z][a-z]{1,32}){0,12}(?:\.(?:[A-Z][a-z]{1,32}){1,12}){0,4}"
)
_CAPS_WORD = re.compile(r"[A-Z]{2,16}")
_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+")
_SHORT_WORDS = frozenset({"id", "of", "to", "by", "at", "in", "on", "is", "or", "an"})


def _field_name(value: str) -> bool:
    """CamelCase words (NextMarker, DistributionList.NextMarker) whose every part reads as a word: three letters or
    more with a vowel, or a short word like Id. A random letter token (keySivqgvvApNeEfv) fails the vowels."""
    if _CAMEL_WORDS.fullmatch(value) is None:
        return False
    parts = _CAMEL_PART.findall(value)
    return all(p.lower() in _SHORT_WORDS or (len(p) >= 3 and any(c in "aeiouy" for c in p.lower())) for p in parts)


# A type's name as an unquoted annotation (private_key: PKCS7PrivateKeyTypes, token: Optional[AuthToken]).
_TYPE_NAME = re.compile(
    r"(?:Optional\[|Union\[)?[A-Z][A-Za-z0-9_]{0,64}(?:Type|Types|Class|Protocol|Enum|Dict|List|Str|Bytes|Info)\]?,?"
    r"|(?:Optional|Union|Literal|Annotated)\[[^\]\s]{1,128}\],?"
)
# A parameter's type and default (key: Type = None), as an unquoted value.
_ANNOTATED_DEFAULT = re.compile(r"[A-Z][\w.\[\], |]{0,128}=(?:None|True|False|null|-?\d{1,32}|\(\)|\[\]|\{\})[,)]?")
# What docs write where a password goes ("https://user:password@host"): a word, not a credential.
_PLACEHOLDER_WORDS = frozenset({"password", "passwd", "pass", "pwd", "pw", "secret", "mypassword", "value", "token"})
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]{0,64}(?:_[A-Z0-9]{1,64}){1,16}")
# A bare "pass" ends many words (bypass, compass, bandpass); glued to a letter it counts only after a service's
# name, as env files write it (SSHPASS=, SMTPPASS=, REDISPASS=).
_PASS_PREFIX = (
    r"(?:ssh|sftp|ftp|smtp|imap|mail|db|sql|mysql|pg|postgres|redis|mongo|ldap|vnc|rdp|proxy|admin|root|wifi|wpa)"
)
_KEYWORD = (
    r"(?:pass(?:word|wd|phrase)|(?<![A-Za-z])(?i:" + _PASS_PREFIX + r")?pass|pwd|secret|token|auth|apikey"
    r"|cred(?:ential)?s|credential"
    # A personal access token, after the platform that issues it (AZURE_DEVOPS_PAT, github_pat): alone, PAT is
    # code's short name for a pattern (HEX_PAT = "[0-9A-F]").
    r"|(?<![A-Za-z])(?:github|gh|gitlab|gl|devops|ado|azdo|azure|vsts|tfs|bitbucket|bb|docker|dockerhub|hub|hf"
    r"|huggingface|figma|airtable|atlassian|jira|confluence|git|personal)[_.\-]?pat"
    r"|(?:api|app|access|secret|private|auth|master|encryption|signing|client|storage|account|subscription)[_.\-]?key"
    # a password's short names: DB_PW, adminPw are a word's tail; psk the Wi-Fi passphrase (wpa_supplicant, hostapd)
    r"|(?<![A-Za-z])pw|(?<![A-Za-z])(?:wpa_)?psk)"
)
# What a key may add after its credential word and still name the credential itself (api_token_2, secret_value,
# password_b64) -- a closed list: token_type, secret_name or password_file name something else.
_KEY_SUFFIX = r"(?:[_.\-]?(?:[0-9]{1,8}|value|val|string|str|b64|base64|hex|raw|plain|plaintext|bytes|literal|base))"
_KEY_SUFFIX_REVERSED = (
    r"(?:(?:[0-9]{1,8}|eulav|lav|gnirts|rts|46b|46esab|xeh|war|nialp|txetnialp|setyb|laretil|esab)[_.\-]?)"
)
_KEY_TAIL = re.compile(_KEYWORD + r"\Z", re.IGNORECASE)
# How every _KEYWORD match ends (pass-word/-wd/-phrase, p-wd, secret, token, auth, ...key): a key that does not end
# so cannot match _KEY_TAIL, and the reversed key tells that with one anchored match.
_KEYWORD_TAILS = (
    "word",
    "wd",
    "phrase",
    "pass",
    "secret",
    "token",
    "auth",
    "key",
    "creds",
    "credentials",
    "credential",
    "pat",
    "pw",
    "psk",
)
_KEY_TAIL_REVERSED = re.compile("(?i:" + "|".join(t[::-1] for t in _KEYWORD_TAILS) + ")")
_DNS_LABEL = re.compile(r"[a-z][a-z0-9]{0,62}(?:-[a-z0-9]{1,63}){1,8}")
_NOT_SECRET_KEY = re.compile(
    r"(?:page|next|continuation|pagination|sync|resume|input|csrf|xsrf|csrfmiddleware|authenticity|verification"
    r"|public(?:[_.\-]?key)?)[_.\-]?token\Z",
    re.IGNORECASE,
)


# A period of at most four characters repeated over twelve (aaaa..., 123123..., abab...), or of five to ten
# repeated three times (1234567890 1234567890 1234567890).
_REPEATED = re.compile(r"(.)\1{11}|(..)\2{5}|(...)\3{3}|(....)\4{2}|(.{5,10})\5{2}", re.DOTALL)


def low_entropy(value: str) -> bool:
    """Whether ``value`` holds a filler no random token has: a short period repeated over twelve characters
    (aaaaaaaaaaaa, 123123123123), or a period of up to ten repeated three times (1234567890 three times).

    A run of consecutive characters (abcdefg, 1234567) is not one: sample and test credentials are made of such
    runs (api_key=abcdefghijklmnop), and they are credentials in shape, so they count."""
    return _REPEATED.search(value) is not None


def sequential(value: str) -> bool:
    """Whether ``value`` holds seven consecutive code points (abcdefg, 1234567): typed, never a word or a name."""
    return _ascending_run(value) >= 7


def _ascending_run(value: str) -> int:
    longest = run = 1 if value else 0
    for a, b in zip(value, value[1:]):
        run = run + 1 if ord(b) - ord(a) == 1 else 1
        longest = max(longest, run)
    return longest


def is_placeholder(value: str) -> bool:
    """Whether ``value`` is a documented placeholder, a template variable, or an already-applied mask."""
    return _PLACEHOLDER.search(value) is not None


def assignment_value_ok(
    value: str, *, quoted: bool, sep: str = "=", spaced: bool = False, password: bool = False, key: str = ""
) -> bool:
    """Whether the value of a ``key = value`` assignment to a sensitive key is plausibly a real secret. Under a
    ``password`` key a weak value (12345678, abcdefgh) is still a leaked password; a token or key is not a count.
    A UUID is an id, except under a ``key`` naming a credential (``uuid_credential_key``)."""
    v = value.strip()
    if len(v) < 6 or v.lower() in _STOPWORDS or v.rstrip(":").lower() in _PLACEHOLDER_WORDS or is_placeholder(v):
        return False
    if len(set(v)) <= 3:
        return False  # ******, xxxxxx, aaaaaa: a mask or a filler
    if v[0] in "-." and v[1:].replace("-", "").replace("_", "").isalpha():
        return False  # share_token += "-principals": a suffix being appended, not a value
    if not quoted and (_ANNOTATED_DEFAULT.fullmatch(v) or _TYPE_NAME.fullmatch(v)):
        return False  # startToken:Token=None, private_key: PKCS7PrivateKeyTypes -- a type annotation, not a value
    if v.startswith("--"):
        return False  # creds = " --username=" + auth: a command-line flag being assembled
    if v.startswith("pk.eyJ"):
        return False  # a Mapbox public token: meant for the browser (its secret tokens open sk.)
    if v.endswith("(") or "?." in v:
        return False  # System.fetch_env!(, session?.access_token: a call or a property read, not a literal
    if v.startswith("@Microsoft.KeyVault(") or _SECRET_MANAGER_NAME.fullmatch(v):
        return False  # a reference the platform resolves at run time (Key Vault, GCP Secret Manager): no value
    if v.startswith("arn:"):
        return False  # "IAMUserChangePassword": "arn:aws:iam::aws:policy/...": an AWS resource name, not a secret
    if _ID_AND_PATH.match(v) or _CMDLET.fullmatch(v):
        return False  # LoadCredential=db-password:/etc/credstore/...: a file; ConvertTo-SecureString: a cmdlet
    if not password and _NAMESPACED.fullmatch(v):
        return False  # _SAR_APP_KEY = "serverlessrepo:applicationId": a namespaced name, no key has only words
    if not password and _ACCOUNT.fullmatch(v):
        return False  # credential=signer@x.iam.gserviceaccount.com(/scope): an account, who signs, not a secret
    if v.endswith(".apps.googleusercontent.com"):
        return False  # a Google OAuth client id: public, sent in every sign-in redirect
    if not quoted and _NAMED_VALUE.match(v):
        return False  # oauth: client_id=...: a log line's next key=value pair, not this key's value
    if not password and len(v) >= 16 and low_entropy(v):
        return False  # 123123123123..., a filler
    if quoted and password and _passphrase(v):
        return True  # "correct horse battery staple": a passphrase, a few plain words
    if any(c.isspace() for c in v):
        return False  # prose or a validation message ("password": "must be at least 8 characters")
    if _UUID.fullmatch(v):
        return uuid_credential_key(key) and not _sample_uuid(v)  # HEROKU_API_KEY=<uuid>: services issue UUID keys
    if _PATH.match(v) and len(v) >= 40 and _cased(v) and "." not in v:
        return True  # secret_key_base: "/tEHy...": base64 that happens to open on '/', no path
    if _DIGEST.fullmatch(v) or _PATH.match(v) or _URL.match(v) or _DOTTED_NUMBER.fullmatch(v):
        return False  # an id, a digest, a path, a URL, or a version / IP / OID
    if _PASSWORD_HASH.fullmatch(v):
        return False  # a password hash (what a database stores), not the password
    if _COLOR.fullmatch(v):
        return False  # a style sheet's colour (Token: "#ddd0c0")
    if _NAME.fullmatch(v) and _KEY_TAIL.search(v) and not (v.isalpha() and v.islower()):
        return False  # names another credential field ("input_token": "next_token"), not a value
    if _NAME.fullmatch(v) and _KEY_NAME.search(v):
        return False  # ACCESS_KEY = 'AWS_ACCESS_KEY_ID' / 'AWSAccessKeyId': the name of a field, not its value
    if not password and (_PLAIN_WORDS.fullmatch(v) or _field_name(v) or _CAPS_WORD.fullmatch(v)) and not sequential(v):
        return False  # "upgrades", "output_token": "NextMarker", "DistributionList.NextMarker", "DISABLED": words
    if v[0] == ":" or v[-1] == ":" or (("%s" in v or "%d" in v) and not _cased(v.replace("%s", "").replace("%d", ""))):
        return False  # :py:class:, 'username:' + ..., '%s_upgrades': markup, a label or a template
    if quoted and _ENV_NAME.fullmatch(v) and not any(c.isdigit() for c in v):
        return False  # TOKEN = "REVISION_SCRIPT_FILENAME": the name of a setting, not its value
    if quoted:
        return True
    if sep == ":" and v[0] in "!&*":
        return False  # a YAML tag, anchor or alias (password: !vault |, password: *db_password)
    if v[0] in "([{<":
        return False  # an expression, a structure or a placeholder cut at a space: token = (a if b), <insert key here>
    if password and _DOTTED.fullmatch(v) and _password_dots(v):
        return True  # Password=ny.VrSzXXX2T.mM; in a connection string: no attribute path has such parts
    if _NUMBER.fullmatch(v) or _DOTTED.fullmatch(v) or _ENV_NAME.fullmatch(v) or re.search(r"[\w\])][(\[]", v):
        return False  # a number, an attribute access, an env-var name, or a call/subscript: code, not a literal
    # A bare word after ':' or a spaced '=' is a variable (password = pw) or prose (Password: required), and
    # a snake_case one is a variable even unspaced (f(token=token_value)); only KEY=word (an env file) is a literal.
    return sequential(v) or not (_IDENT.fullmatch(v) and (sep != "=" or spaced or "_" in v))


# Words of messages and labels a password field is given ("must be at least 8 characters", "enter your new
# password"): a value holding one is prose, not a passphrase.
_MESSAGE_WORDS = frozenset(
    "a an the is are be been was were must should at least most your you yours my our enter please required invalid "
    "not no do does did match matches confirm new old current reset forgot show hide change update characters "
    "character chars min max length long short of to for and or with in on by this that it if than as from here "
    "click type choose use set".split()
)


# Keys whose UUID values are ids or one-time request markers, not credentials (AWS's ClientToken is an
# idempotency token, its LifecycleActionToken names one hook's run; a lock or lease token names a holder).
_UUID_ID_KEY = re.compile(
    r"(?:client|idempoten(?:cy|t)|request|correlation|cancel(?:lation)?|lock|lease|trace|transaction|operation|job"
    r"|task|batch|change|state|update|action|execution|version|revision|sequence|commit)[_.\-]?(?:token|key)\Z",
    re.IGNORECASE,
)


# The UUIDs documentation and RFC 4122 print as examples.
_SAMPLE_UUIDS = (
    "123e4567-e89b-12d3-a456-",
    "550e8400-e29b-41d4-a716-",
    "f47ac10b-58cc-4372-a567-",
    "6ba7b81",
    "a8098c1a-f86e-11da-bd1a-",
)


def _sample_uuid(value: str) -> bool:
    """A documented example UUID, a filler (0000-0000), or one typed in sequence (12345678-abcd-...)."""
    digits = value.lower().replace("-", "")
    return value.lower().startswith(_SAMPLE_UUIDS) or low_entropy(digits) or _ascending_run(digits) >= 6


def _password_dots(value: str) -> bool:
    """A dotted value a password could be: a digit, both cases, and no part a lowercase word (self, settings)."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and not any(len(part) >= 3 and part.isalpha() and part.islower() for part in value.split("."))
    )


def uuid_credential_key(key: str) -> bool:
    """Whether a UUID assigned to ``key`` is a credential: the key names one (api_key, hubspotToken, password)
    and is not an id-like token (client_token, idempotency_key)."""
    return bool(key) and sensitive_key(key) and _UUID_ID_KEY.search(key) is None


def _passphrase(value: str) -> bool:
    """Three to eight lowercase words, single-spaced, none a message word or a placeholder, 15+ characters."""
    words = value.split(" ")
    return (
        3 <= len(words) <= 8
        and len(value) >= 15
        and all(w and w.isascii() and w.isalnum() and w == w.lower() for w in words)
        and sum(w.isalpha() for w in words) >= 3
        and not any(w in _MESSAGE_WORDS or w in _PLACEHOLDER_WORDS for w in words)
    )


def sensitive_key(key: str) -> bool:
    """Whether a mapping key (or the identifier before '=') names a credential, e.g. ``db_password``."""
    if _KEY_TAIL_REVERSED.match(key[::-1]) is None:
        return False
    return _KEY_TAIL.search(key) is not None and _NOT_SECRET_KEY.search(key) is None


# A credential word's tail right after a key's end, in the reversed keys joined: the search stops only at NUL.
_ANY_KEY_TAIL_REVERSED = re.compile("\x00(?i:" + "|".join(t[::-1] for t in _KEYWORD_TAILS) + ")")


def sensitive_key_in_any(keys: list[str]) -> bool:
    """Whether any of ``keys`` may be a sensitive_key (never False when one is), with one search: does some key end
    as a credential word ends? The keys are joined, each followed by NUL, and the whole reversed."""
    return bool(keys) and _ANY_KEY_TAIL_REVERSED.search(("\x00".join(keys) + "\x00")[::-1]) is not None


def sensitive_pair(key: str, value: str) -> bool:
    """Whether payload entry ``key: value`` is a credential, judged on its serialized (JSON-escaped) form."""
    if not sensitive_key(key) or (_CRED_KEY.search(key) is not None and _loose_credential(value)):
        return False
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    return assignment_value_ok(
        escaped[:_MAX_VALUE],
        quoted=True,
        sep=":",
        spaced=True,
        password=_PASSWORD_KEY.search(key) is not None,
        key=key,
    )


# Every rule declares what each of its matches necessarily contains, so a text holding none of it skips the rule:
# ``anchors`` are case-sensitive regexes; ``keywords`` are words (matched in any case) directly followed by the
# assignment glue of _SEP ('key = ', '"key": ', 'KEY='). Anchors start with a literal character prose seldom has
# (punctuation, a capital) and check what precedes it with a lookbehind, so the one combined search over all of
# them only stops at such characters. Keywords are searched in the reversed text, where the glue comes first and
# the search only stops at ':' and '='. Anchors are a superset filter: they must never be stricter than the rule.
# The glue also covers what the generic rule accepts between a keyword and its value: a key suffix (token_2 =),
# a Go type (var token string =) and the longer operators (Makefile ::= :::= ?= +=, PHP .=).
_GLUE = r"""(?i:""" + _KEY_SUFFIX + r"""){0,2}\\?["']?\]?(?:[ \t]{1,8}(?i:string))?[ \t]{0,32}[:.?+]{0,3}[:=]"""
# Possessive: a space, quote or backslash given back could only be matched by a keyword letter, which none is.
_GLUE_REVERSED = (
    r"""[:=][:.?+]{0,3}+[ \t]{0,32}+(?:(?i:gnirts)[ \t]{1,8}+)?\]?+["']?+\\?+(?i:""" + _KEY_SUFFIX_REVERSED + r"){0,2}"
)


def keyword_pattern(keywords: tuple[str, ...], *, reverse: bool = False) -> str:
    """The regex for "one of ``keywords`` (any case), then assignment glue"; ``reverse`` gives it for reversed text."""
    if reverse:
        return _GLUE_REVERSED + "(?i:" + "|".join(k[::-1] for k in keywords) + ")"
    return "(?i:" + "|".join(keywords) + ")" + _GLUE


# A plain lowercase word as an anchor (Databricks' "dapi") would stop the combined search at every such letter of
# prose; a substring test finds it at C speed instead.
_LITERAL_ANCHOR = re.compile(r"[a-z][a-z0-9_ ]{2,31}")


@dataclass(frozen=True)
class Rule:
    """One secret shape: ``find(text)`` yields the (start, end) span of each secret itself -- what gets masked."""

    name: str
    find: Callable[[str], Iterator[Span]]
    anchors: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    _anchor_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _keyword_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    # The anchors that are plain lowercase text (found by a substring test), and the others as one regex.
    _literals: frozenset[str] = field(init=False, repr=False, compare=False)
    _pattern_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not (self.anchors or self.keywords):
            raise ValueError(f"rule {self.name} declares no anchor: it could never be skipped")
        if not all(k.isascii() and k.isalpha() for k in self.keywords):
            raise ValueError(f"rule {self.name}: keywords are plain words (the reversed search reverses them)")
        anchor_rx = re.compile("|".join(self.anchors)) if self.anchors else None
        keyword_rx = re.compile(keyword_pattern(self.keywords, reverse=True)) if self.keywords else None
        object.__setattr__(self, "_anchor_rx", anchor_rx)
        object.__setattr__(self, "_keyword_rx", keyword_rx)
        literals = frozenset(a for a in self.anchors if _LITERAL_ANCHOR.fullmatch(a))
        patterns = [a for a in self.anchors if a not in literals]
        object.__setattr__(self, "_literals", literals)
        object.__setattr__(self, "_pattern_rx", re.compile("|".join(patterns)) if patterns else None)

    def anchored(self, text: str) -> bool:
        """Whether ``text`` holds one of this rule's anchors or keywords -- necessary for any match."""
        return self._present(text, text[::-1])

    def _present(self, text: str | None, reversed_text: str | None) -> bool:
        # None stands for a text already known to hold no anchor (or no keyword) of any rule.
        if text is not None and self._anchor_rx is not None and self._anchor_rx.search(text) is not None:
            return True
        if reversed_text is not None and self._keyword_rx is not None:
            return self._keyword_rx.search(reversed_text) is not None
        return False


# False within security._reference_scan(): every find scans the whole text (no required-literal test, and
# sensitive_assignment searches everywhere rather than next to the keyword spots), so the equivalence tests check
# those shortcuts too.
fast_finds = True


def _required_literal(pattern: str, flags: int) -> str | None:
    """The longest run of literal characters at the top level of ``pattern`` (every match holds it), if any: a text
    without it is skipped by a substring test instead of a regex scan (most patterns open on a lookbehind, which
    keeps ``re`` from using their literal prefix)."""
    if flags & re.IGNORECASE:
        return None
    best, run = "", ""
    for op, arg in _sre_parser.parse(pattern, flags):
        run = run + chr(arg) if op is _sre_constants.LITERAL else ""
        best = max(best, run, key=len)
    return best if len(best) >= 2 else None


def _regex(*patterns: str, flags: int = 0, check: Check | None = None) -> Callable[[str], Iterator[Span]]:
    compiled = [re.compile(p, flags) for p in patterns]
    secret_groups = [[g for g in rx.groupindex if g == "s" or g.startswith("s_")] for rx in compiled]
    literals = [_required_literal(p, flags) for p in patterns]

    def find(text: str) -> Iterator[Span]:
        for rx, groups, literal in zip(compiled, secret_groups, literals):
            if literal is not None and fast_finds and literal not in text:
                continue
            for m in rx.finditer(text):
                # The secret is the one named alternative that took part in the match (else the whole match).
                start, end = next((m.span(g) for g in groups if m.start(g) >= 0), m.span())
                secret = text[start:end]
                if is_placeholder(secret) or (check is not None and not check(m, secret)):
                    continue
                yield start, end

    return find


def _not_lowercase_word(_m: re.Match[str], secret: str) -> bool:
    # Real tokens are random base62; lowercase words joined by dashes (sk-learn-...) are a kebab-case identifier.
    # One unbroken run of lowercase letters after the prefix is token-shaped (sk-abcdefghijklmnopqrstuvwx).
    body = secret.partition(":")[2] or secret
    if any(c.isdigit() or c.isupper() for c in body):
        return True
    tail = body.split("-", 1)[1] if "-" in body else body.split("_", 1)[-1]
    return tail.isalpha() and len(tail) >= 20 and not low_entropy(tail)  # a filler (aaaa...) is a placeholder


def _mixed(_m: re.Match[str], secret: str) -> bool:
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)


def _aws_secret_shape(value: str) -> bool:
    """An AWS secret access key's 40 base64 characters: both cases, and a digit or '/' or '+' (a hex digest has
    one case; a run of words none of the others)."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() or c in "/+" for c in value)
        and not low_entropy(value)
        and not _field_name(value)
    )


def _cased(value: str) -> bool:
    """Upper case, lower case and at least two digits, not a word in CamelCase: a random token's mix."""
    return (
        sum(c.isdigit() for c in value) >= 2
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and not _field_name(value)
    )


def _random(_m: re.Match[str], secret: str) -> bool:
    return _mixed(_m, secret) and not low_entropy(secret)


def _slack_check(_m: re.Match[str], secret: str) -> bool:
    """A Slack token is xox?-/xapp- then numeric ids (a one-digit version, or 6+ digits each) and a random part with
    a digit: xoxb-12345-abcd234, xoxp-1234567890 and xoxp-1-SlackAppConfigurationAccessTokenHere are not."""
    body = secret.partition("-")[2]
    legacy = _SLACK_LEGACY.fullmatch(body) if secret.startswith(("xoxa-", "xoxr-")) else None
    if legacy is not None:  # legacy workspace access / refresh token: xoxa-2-<random>
        return _mixed(_m, legacy.group(1)) and not low_entropy(legacy.group(1))
    parts = [p for p in body.split("-") if p]
    rest = "".join(p for p in parts if not p.isdigit())
    if len(body) < 20 or not rest or not parts[0].isdigit() or low_entropy(rest):
        return False
    if any(len(p) < 6 and not (i == 0 and len(p) == 1) for i, p in enumerate(parts) if p.isdigit()):
        return False
    # The random part has a digit, or the token is the whole modern shape (xoxb-<id>-<id>-<24 characters>).
    return any(c.isdigit() for c in rest) or (len(parts) >= 3 and len(rest) >= 20)


def _twitter_bearer_check(_m: re.Match[str], secret: str) -> bool:
    tail = secret.lstrip("A")
    return len(set(tail)) >= 12 and _mixed(_m, tail) and not low_entropy(tail)


def _authorization_check(m: re.Match[str], secret: str) -> bool:
    # After a scheme (Token, Api-Token) any credential-shaped value; without one, only a token-like value.
    if secret.lower() in _PLACEHOLDER_WORDS or secret.lower() in _AUTH_SCHEMES or secret.startswith(("$", "%")):
        return False
    if m.group("scheme") is not None:
        return len(secret) >= 8 and _mixed(m, secret) and not low_entropy(secret)
    return _bearer_check(m, secret) and _mixed(m, secret) and not low_entropy(secret)


_AUTH_SCHEMES = frozenset(
    "basic bearer digest negotiate ntlm oauth token api-token ssws hoba mutual aws4-hmac-sha256".split()
)


_CLI_PLACEHOLDERS = _PLACEHOLDER_WORDS | {
    "test",
    "changeit",
    "changeme",
    "secret123",
    "username",
    "user",
    "option",
    "options",
    "flag",
    "flags",
    "argument",
    "arguments",
    "parameter",
    "parameters",  # prose about flags
}


def _cli_check(m: re.Match[str], secret: str) -> bool:
    # curl -u 'test:test', curl -u <user:password>, curl --user neo4j:[PASSWORD]: documentation, not a login.
    if m.groupdict().get("s_key") is not None and not (_mixed(m, secret) and not low_entropy(secret)):
        return False  # curl -u elastic: -- a user name alone (curl asks for the password), not a key
    return (
        secret.lower() not in _CLI_PLACEHOLDERS
        and secret[0] not in "<[{"
        and secret[-1] not in ">]}"
        and not _URL.match(secret)  # --passphrase file://path: where the value is, not the value
    )


def _sql_password_check(m: re.Match[str], secret: str) -> bool:
    if secret.lower() in _PLACEHOLDER_WORDS or _PASSWORD_HASH.fullmatch(secret):
        return False
    said = m.group(0)
    if said[:10].lower() != "identified" or said.startswith("IDENTIFIED"):
        return True
    # A lowercase "identified by 'x'" is SQL only inside a user statement ('app'@'%', CREATE USER, GRANT ... TO).
    before = m.string[max(0, m.start() - 160) : m.start()].lower()
    return "'@'" in before or "user " in before or " to " in before


# SQL rows: INSERT INTO t (id, username, password) VALUES (1, 'etl', 'v'), (...): the value under a credential's
# column; and a settings table's (name, value) row whose name is a credential's ('twilio_auth_token', 'v').
_SQL_INSERT = re.compile(
    r"(?i:insert[ \t]{1,8}+into)[ \t]{1,8}+(?P<table>[^\s(]{1,128}+)[ \t]{0,8}+\((?P<cols>[^()]{1,1024}+)\)[ \t\r\n]{0,64}+"
    r"(?i:values)[ \t\r\n]{0,64}+"
)
_SQL_TUPLE = re.compile(r"[ \t\r\n,]{0,64}+\((?P<vals>(?:'(?:[^'\\]|''|\\.){0,512}+'|\w{1,64}+\(\)|[^'()]){1,4096}+)\)")
_SQL_VALUE = re.compile(r"[ \t]{0,64}+(?:'(?P<q>(?:[^'\\]|''|\\.){0,512}+)'|(?P<u>[^,']{0,256}+))[ \t]{0,64}+(?:,|$)")
_SQL_MAX_ROWS = 100_000


def _sql_cells(vals: str, offset: int) -> list[tuple[str, int, int, bool]]:
    """A VALUES tuple's cells: (text, start, end, quoted)."""
    cells: list[tuple[str, int, int, bool]] = []
    pos = 0
    while pos <= len(vals):
        m = _SQL_VALUE.match(vals, pos)
        if m is None or m.end() == pos:
            break
        group = "q" if m.group("q") is not None else "u"
        a, b = m.span(group)
        cells.append((m.group(group), offset + a, offset + b, group == "q"))
        pos = m.end()
    return cells


def _find_sql_rows(text: str) -> Iterator[Span]:
    """Credentials in INSERT rows: under a credential's column, or beside a credential's name in (name, value)."""
    for m in _SQL_INSERT.finditer(text):
        cols = [c.strip().strip('`"[]').lower() for c in m.group("cols").split(",")]
        keyed = [i for i, c in enumerate(cols) if sensitive_key(c)]
        # A table of credentials (api_keys, tokens, secrets): its bare "key" or "value" column holds them.
        table = m.group("table").strip('`"[]').rpartition(".")[2].lower()
        noun = table[:-1] if table.endswith("s") else table
        if sensitive_key(noun):
            keyed += [i for i, c in enumerate(cols) if c in ("key", "value") and i not in keyed]
        names = [noun if c in ("key", "value") else c for c in cols]
        pair = next(
            ((cols.index(n), cols.index("value")) for n in ("name", "key") if n in cols and "value" in cols), None
        )
        if not keyed and pair is None:
            continue
        pos = m.end()
        for _ in range(_SQL_MAX_ROWS):
            t = _SQL_TUPLE.match(text, pos)
            if t is None:
                break
            pos = t.end()
            cells = _sql_cells(t.group("vals"), t.start("vals"))
            if len(cells) != len(cols):
                continue
            for i in keyed:
                value, a, b, quoted = cells[i]
                if quoted and _keyed_value(names[i], value):
                    yield a, b
            if pair is not None:
                key_cell, value_cell = cells[pair[0]], cells[pair[1]]
                if key_cell[3] and value_cell[3] and _keyed_value(key_cell[0], value_cell[0]):
                    yield value_cell[1], value_cell[2]


def _url_check(m: re.Match[str], secret: str) -> bool:
    # Judged on the password alone: a concrete password is a leak even on an example host or for a template user.
    # A password the same as its user (guest:guest, root:root) is a product's published default, not a secret.
    last = secret.rpartition(":")[2].lower()  # host:port,user:password (a multi-host URL): the password is last
    if m.group("user") and m.group("user").lower() == secret.lower():
        return False
    return not {secret.lower(), last} & (_PLACEHOLDER_WORDS | _METASYNTACTIC)


# 32 hex digits or more with letters and digits both: an API key as many services print it.
_HEX_TOKEN = re.compile(r"(?=[0-9a-f]{0,127}[a-f])(?=[a-f]{0,127}[0-9])[0-9a-f]{32,128}")


def _netrc_check(m: re.Match[str], secret: str) -> bool:
    # "default login anonymous password me@site": anonymous FTP asks for an e-mail address, not a secret.
    if m.group("login").lower() in ("anonymous", "ftp"):
        return False
    return _cli_check(m, secret) and assignment_value_ok(secret, quoted=True, password=True)


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


def _assignment_check(m: re.Match[str], secret: str) -> bool:
    text, kw_start, sep = m.string, m.start("kw"), m.group("sep")
    key_start, floor = kw_start, max(0, kw_start - 64)
    while key_start > floor and (text[key_start - 1].isalnum() or text[key_start - 1] in "_.-"):
        key_start -= 1
    key = text[key_start : m.end("kw")]
    spaced = bool(m.group("w1") or m.group("w2"))
    if len(m.group("w1")) > 8 and m.group("s_uq") is not None:
        return False  # a column aligned that far holds a quoted value; "token          = 1*tchar" is a grammar
    if _NOT_SECRET_KEY.search(key):
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
    if _SLACK_PREFIX.match(secret) is not None and not _slack_check(m, secret):
        return False  # a Slack token shape its own rule turned down (xoxp-1234567890): a sample, not a token
    if _CRED_KEY.search(key) is not None and _loose_credential(secret):
        return False  # credentials: include (fetch), creds: aws.json -- a mode or a file, not the credential
    if m.group("s_yb") is not None:
        return _block_scalar_ok(m, key, secret, sep, spaced)
    quoted = m.group("s_uq") is None
    password = _PASSWORD_KEY.search(key) is not None
    if not quoted and key.lower().endswith("secret") and _DNS_LABEL.fullmatch(secret) and not _UUID.fullmatch(secret):
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
_SLACK_LEGACY = re.compile(r"(?:[0-9]-)?([0-9A-Za-z]{8,48})")
_SLACK_PREFIX = re.compile(r"xox[a-z]-|xapp-")
_CRED_KEY = re.compile(r"cred(?:ential)?s?\Z", re.IGNORECASE)
# Bitnami kubeseal's ciphertext: the encrypted session key's two-byte length (0x02..) opens it, then hundreds of
# base64 characters.
_SEALED = re.compile(r"Ag[A-Za-z0-9+/]{300,8192}={0,2}")
_FILE_NAME = re.compile(r"[\w.\-]{1,200}\.[A-Za-z]{2,5}")


def _loose_credential(value: str) -> bool:
    """Under a ``credentials`` / ``creds`` key: words (include, same-origin, SameOrigin, INCLUDE) or a file name,
    not a credential; random letters (hmVJWvLewQzocEpt) are one."""
    v = value.strip()
    if _FILE_NAME.fullmatch(v) is not None:
        return True
    return all(c.isalpha() or c in "-_" for c in v) and (
        _PLAIN_WORDS.fullmatch(v.lower()) is not None and (v.islower() or v.isupper() or _field_name(v))
    )


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
    password = _PASSWORD_KEY.search(key) is not None
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
# Only a password is written as a plain word; a plain word under a secret/token/key name is usually the name of a
# stored secret (existingSecret: appsecret), and a "pass" key is too often something else (shadow_pass: deferred).
_PASSWORD_KEY = re.compile(r"(?:pass(?:word|wd|phrase)|pwd)\Z", re.IGNORECASE)
_LINE_END = re.compile(r"[ \t]{0,64}+(?:#[^\r\n]{0,1024}+)?+(?:\r?\n|\Z)")
_NESTED = re.compile(r"(?:^|\n)(?:[ \t]{1,64}+(?:- )?+|- )\Z")


def _yaml_literal(key: str, key_start: int, value: str, text: str, end: int) -> bool:
    """``db_password: supersecret`` in YAML: one lowercase word ending its line, after a compound or nested (indented)
    password key, is a string literal. A top-level ``Password: required`` stays prose, and camelCase or snake_case
    words stay variables."""
    if not (len(value) >= 8 and value.isalpha() and value.islower() and _LINE_END.match(text, end) is not None):
        return False
    if _PASSWORD_KEY.search(key) is None:
        return False
    return _COMPOUND_KEY.search(key) is not None or _NESTED.search(text, max(0, key_start - 66), key_start) is not None


_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_TAIL = re.compile(r"(?:[A-Za-z0-9+/=\r\n]|\\[nr]){0,16384}+")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/]{32}")
_PEM_SHORT = re.compile(r"[A-Za-z0-9+/]{6,}={0,2}")
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
        lines = re.sub(r"\\[nr]|[\r\n]", "", body).strip(" \t")
        body = re.sub(r"\s", "", lines)
        # Key material (a run of base64), or lines of nothing else however short (a sample key is still a key block);
        # not a template's expression ("+ key +"), prose ("key omitted") or an elision ("...").
        if (_PEM_BODY.search(body) is None and _PEM_SHORT.fullmatch(lines) is None) or is_placeholder(body):
            continue
        covered = stop
        yield m.start(), stop


# A Kubernetes Secret manifest: every value under its data: (base64) or stringData: (plain) is the secret itself.
_K8S_SECRET_KIND = re.compile(r"(?m)^[ \t]{0,16}+kind:[ \t]{0,8}+['\"]?(?i:secret)['\"]?[ \t]{0,8}+\r?$")
_K8S_DATA = re.compile(r"(?m)^(?P<ind>[ \t]{0,16}+)(?P<which>data|stringData):[ \t]{0,8}+\r?$")
_K8S_ENTRY = re.compile(
    r"(?m)(?P<ind>[ \t]{1,32}+)['\"]?[\w.\-]{1,253}+['\"]?:[ \t]{0,8}+(?:[|>][-+]?[ \t]{0,8}+\r?\n[ \t]{1,64}+)?"
    r"['\"]?(?P<s>[^\s'\"#][^\s'\"]{0,65535}+)['\"]?[ \t]{0,8}+\r?$"
)
_BASE64 = re.compile(r"[A-Za-z0-9+/]{4,65536}+={0,2}+")


def _find_k8s_secret_values(text: str) -> Iterator[Span]:
    if _K8S_SECRET_KIND.search(text) is None:
        return
    for block in _K8S_DATA.finditer(text):
        indent, base64_data = len(block.group("ind").expandtabs(4)), block.group("which") == "data"
        pos = block.end() + 1
        while pos < len(text):
            line_end = text.find("\n", pos)
            line_end = len(text) if line_end < 0 else line_end
            line = text[pos:line_end]
            body = line.lstrip(" \t")
            if body.strip() and not body.startswith("#"):
                if len(line[: len(line) - len(body)].expandtabs(4)) <= indent:
                    break  # the next key at the data: key's level: the block has ended
                entry = _K8S_ENTRY.match(text, pos)
                if entry is not None:
                    if _k8s_value(entry.group("s"), base64_data):
                        yield entry.start("s"), entry.end("s")
                    line_end = max(line_end, entry.end())
            pos = line_end + 1


def _k8s_value(value: str, base64_data: bool) -> bool:
    """A Secret's value: base64 of four characters or more (data:), or six characters or more (stringData:);
    not a filler, a placeholder, a template or a SOPS-encrypted value."""
    if low_entropy(value) or is_placeholder(value) or value.startswith(("ENC[", "{{", "${")):
        return False
    if not base64_data:
        return len(value) >= 6
    return _BASE64.fullmatch(value) is not None and len(_b64_text(value).strip()) >= 4


_URL_PASSWORD = (
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}+://(?P<user>[^\s:/@?#\[\]'\"<>]{0,128}+)"
    r":(?P<s>[^\s@/?#'\"<>]{1,256}+)@(?P<host>[A-Za-z0-9._\-\[\]:%]{1,253}+)"
)
_ASSIGNMENT = (
    r"(?P<kw>" + _KEYWORD + r")(?P<sfx>" + _KEY_SUFFIX + r"{1,2})?(?![\w\-]|\.(?!=))\\?[\"']?\]?"
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
# The glue of a provider-keyed rule: what _GLUE lets the prefilter find (= : := ::= ?= += .=, Go's "string"), plus
# => and a YAML block scalar's line break, then an optional opening quote.
_GLUE_VALUE = (
    r"""\\?["']?\]?(?:[ \t]{1,8}+(?i:string))?[ \t]{0,8}+(?:[:.?+]{0,3}[:=]|=>)[ \t]{0,8}+"""
    r"""(?:[|>][+\-]?[ \t]{0,8}+\r?\n[ \t]{1,32}+)?\\?["'`]?"""
)
_VALUE_GROUPS = ("s_eq", "s_dq", "s_sq", "s_bq", "s_yb", "s_uq")
_QUERY_END = re.compile(r"[&#]")


# Where assignments can start. Every _ASSIGNMENT match holds a keyword tail and its glue, which the rule's keyword
# pattern finds in the reversed text (a search that stops only at ':' and '='); its keyword starts at most
# _KEYWORD_LEAD characters before that tail (encryption_key: 11 before "key"). Matching at those few positions
# finds the same matches as searching the whole text, where the case-insensitive keyword alternation is tried at
# every character (~0.2 ms per KB).
_TAIL_GLUE_REVERSED = re.compile(keyword_pattern(_KEYWORD_TAILS, reverse=True))
_KEYWORD_LEAD = 16


def _find_assignments(text: str) -> Iterator[Span]:
    """``key = value`` spans; in a URL query (``?api_key=v&page=2``) an unquoted value ends at the next parameter.
    The matches are those of ``_ASSIGNMENT_RX.search(text, pos)``, each search resuming after the last value."""
    if not fast_finds:
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


# Written as prose writes it (password, Password, PASSWORD), so that the rule's anchors cover every casing it takes.
# (pw and pwd only before a space, a full stop or a comma: the anchors' forms)
_PASSWORD_WORD = r"\b(?:[Pp]ass(?:word|wd|code|phrase)|[Pp]?ASS(?:WORD|WD|CODE|PHRASE)|(?:pwd?|PWD?)(?=[ .,]))\b"
_PW_ANCHORS = tuple(w + " " for w in ("pw", "pwd", "PW", "PWD")) + tuple(
    re.escape(c) + "(?<=" + w + re.escape(c) + ")" for w in ("[pP][wW]", "[pP][wW][dD]") for c in ".,"
)
# "is", "was", "is now", ... then maybe a colon: how prose hands a value to the password it names. A bare colon
# counts only after what the password is for ("password for the db: ..."); "password: value" is an assignment.
_PROSE_VERB = r"[ \t]{1,4}+(?i:is|was|is now|is still|will be|changed to|set to|reset to)(?=[ \t:]):?"
# What a value in prose that merely describes a password holds: an algorithm or encoding (SHA256-hashed, md5,
# utf-8), or a word after a dash (2FA-protected).
_PROSE_DESCRIPTION = re.compile(
    r"(?i:sha-?\d|md5|bcrypt|argon2|pbkdf2|scrypt|base64|utf-?8|aes-?\d|rsa-?\d|x509|oauth|http|ssl|tls|2fa|mfa|"
    r"otp|(?<![A-Za-z])\d+(?:st|nd|rd|th|char|chars|characters|digits?|letters?|bytes?|bits?|days?|hours?|minutes?)\b)"
    r"|-[a-z]{4,}"
)


_VERSION = re.compile(r"[vV]?\d{1,32}(?:\.\d{1,32}){1,32}")
# A run of eight or more letters and digits, both, between separators: a random token's part, which no description
# (SHA256-hashed, 2FA-protected, utf-8) has; a token like that merely happens to hold "-cfnxf" or "tls".
_RANDOM_PART = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z]{0,63}\d)(?=\d{0,63}[A-Za-z])[A-Za-z0-9]{8,64}(?![A-Za-z0-9])")
# The credential words an identifier in prose ends with (SECRET_KEY, api_token, AZURE_DEVOPS_PAT), and the verbs
# that hand it a value ("was set to", "is now", "changed to").
_PROSE_KEY_TAIL = r"(?i:key|token|secret|password|passwd|pwd|pat|credentials?)"
_PROSE_SETTING_VERB = (
    r"(?i:(?:is|was|will be|has been)(?:[ \t]{1,4}+(?:now|still))?(?:[ \t]{1,4}+(?:set|changed|reset)[ \t]{1,4}+to)?"
    r"|(?:set|changed|reset)[ \t]{1,4}+to):?"
)


def _prose_describes(value: str) -> bool:
    """A value prose gives that is no credential: a placeholder, a filler, a description (SHA256-hashed), a URL,
    a path, an attribute or environment variable's name, a version, or an e-mail address."""
    return bool(
        is_placeholder(value)
        or low_entropy(value)
        or (_PROSE_DESCRIPTION.search(value) is not None and not _RANDOM_PART.search(value))
        or _PASSWORD_HASH.search(value) is not None
        or _URL.match(value)
        or _PATH.match(value)
        or _DOTTED.fullmatch(value)
        or _ENV_NAME.fullmatch(value)
        or _VERSION.fullmatch(value)
        or ("@" in value and "." in value.partition("@")[2])
    )


def _value_before_noun(secret: str) -> bool:
    """A password told before its noun ("Maple@5765 is the root pw"): a digit, and both cases or a symbol -- the
    subject of "... is the password policy" is a word."""
    digits = sum(c.isdigit() for c in secret)
    cased = any(c.isupper() for c in secret) and any(c.islower() for c in secret)
    return (
        _prose_password_value(secret)
        and digits >= 1
        and (any(not c.isalnum() for c in secret) or (cased and digits >= 2))
    )


def _prose_token(secret: str) -> bool:
    """A key as prose gives it: letters with two digits or more (the pattern takes sixteen characters or more)."""
    return not _prose_describes(secret) and any(c.isalpha() for c in secret) and sum(c.isdigit() for c in secret) >= 2


def _prose_value(secret: str) -> bool:
    """A password as prose gives it: letters with digits, or (eight characters or more) both cases with a symbol."""
    if _prose_describes(secret):
        return False
    if any(c.isalpha() for c in secret) and any(c.isdigit() for c in secret):
        return True
    symbol = any(not c.isalnum() for c in secret)
    return len(secret) >= 8 and symbol and any(c.isupper() for c in secret) and any(c.islower() for c in secret)


# Credentials named in prose, chat and wiki tables (a knowledge store's own texts): "AWS secret key for the qa
# account: <value>", "here's the Datadog API key: <value>", "reset the NAS password to <value>", "pw: <value>",
# a table whose Password column or whose row label names the credential. The noun is a whole word, lower case or
# Capitalized (the anchors); a bare "key" counts only after a word saying what it unlocks (API key, account key).
# The same nouns in the languages a team's notes are written in: passwords (mot de passe, Passwort, contraseña,
# senha, wachtwoord, hasło, пароль, パスワード, 密码, 비밀번호), access keys (Zugriffsschlüssel, clé secrète) and
# credential pairs (Zugangsdaten, identifiants, credenciales). Written in CJK scripts, a noun has no word boundary.
_PASSWORD_NOUNS_INTL = "[Mm]ot de passe|[Pp]asswort|[Kk]ennwort|[Cc]ontraseña|[Ss]enha|[Ww]achtwoord|[Hh]asło|[Пп]ароль"
_PASSWORD_NOUNS_CJK = "パスワード|暗証番号|密码|密碼|비밀번호"
_KEY_NOUNS_CJK = "시크릿 키|비밀 키|API 키|密钥|秘钥|秘密鍵|シークレットキー|APIキー"
_KEY_NOUNS_INTL = (
    "[Zz]ugriffsschlüssel|[Gg]eheimschlüssel|clé secrète|clé d'API|clé API|clave secreta|clave de API|[Kk]lucz|"
    "[Cc]have de API|[Cc]have secreta|[Cc]hiave API|[Cc]hiave segreta|API-sleutel|[Gg]eheime sleutel"
)
_PAIR_NOUNS_INTL = "[Zz]ugangsdaten|[Aa]nmeldedaten|[Ii]dentifiants|[Cc]redenciales|認証情報"
_PROSE_NOUN = re.compile(
    r"(?<![A-Za-z0-9.\-/$@:])(?P<n>[Pp]ass(?:word|wd|phrase)|pwd|pw(?=:)|[Ss]ecret|[Tt]oken|[Kk]ey|[Cc]reds"
    r"|[Cc]redentials?|[Ll]ogin)(?![\w\-@])"
)
# Searched only in a text holding one of their anchors (_INTL_ANCHOR), so English prose pays nothing for them.
_PROSE_NOUN_INTL = re.compile(
    r"(?P<n>(?<![A-Za-z0-9.\-/$@:])(?:"
    + _KEY_NOUNS_INTL
    + "|"
    + _PAIR_NOUNS_INTL
    + r")(?![\w\-@])"
    # compounds join the other languages' password nouns with a dash (VPN-wachtwoord, WLAN-Passwort)
    + r"|(?<![A-Za-z0-9./$@:])(?:"
    + _PASSWORD_NOUNS_INTL
    + r")(?![\w\-@])|"
    + _PASSWORD_NOUNS_CJK
    + "|"
    + _KEY_NOUNS_CJK
    + ")"
)
_PASSWORD_NOUN_RX = re.compile(
    r"pass(?:word|wd|phrase)|pwd?|login|" + _PASSWORD_NOUNS_INTL + "|" + _PASSWORD_NOUNS_CJK, re.IGNORECASE
)
_PAIR_NOUN_RX = re.compile(r"login|creds|credentials|" + _PAIR_NOUNS_INTL, re.IGNORECASE)
# The other languages' nouns (their search runs only where one of these occurs). A noun with a letter beyond ASCII
# is anchored on that letter (the combined search then stops at no ASCII letter of English prose).
_INTL_ANCHORS = (
    "de passe",
    "asswort",
    "ennwort",
    "ña(?<=seña)",
    "senha",
    "Senha",
    "achtwoord",
    "ło(?<=sło)",
    "ароль",
    "パスワード",
    "暗証番号",
    "密码",
    "密碼",
    "비밀번호",
    "üssel",
    "é(?<=clé)",
    "clave",
    "ugangsdaten",
    "nmeldedaten",
    "dentifiants",
    "redenciales",
    "認証情報",
    "lucz",
    "have secreta",
    "hiave segreta",
    "API(?<=have de API)",
    "API(?<=hiave API)",
    "API(?<=clave de API)",
    "API-",
    "sleutel",
    "시크릿",
    "비밀 키",
    " 키",
    "密钥",
    "秘钥",
    "秘密鍵",
    "キー",
)
# Lowercase tails every casing the noun pattern takes holds (a substring test each), and "Key" (one branch of the
# combined anchor search under "K"): prose writes the nouns lower case or Capitalized.
_PROSE_NOUN_ANCHORS = (
    "assword",
    "asswd",
    "assphrase",
    "pwd",
    "pw:",
    "ecret",
    "oken",
    "key",
    "Key",
    "reds",
    "redential",
    "ogin",
) + _INTL_ANCHORS
_INTL_ANCHOR = re.compile("|".join(_INTL_ANCHORS))
_KEY_QUALIFIERS = frozenset(
    "api access secret account signing app license ingest storage master private auth client encryption admin "
    "service rest webhook hmac bot deploy personal sas".split()
) | {"wifi", "wi-fi", "wlan", "wpa", "wpa2", "wireless", "network", "router"}
# Words before "key" that make it a password (the Wi-Fi key): a password's value, not a token's, is looked for.
_PASSWORD_KEY_QUALIFIERS = frozenset({"wifi", "wi-fi", "wlan", "wpa", "wpa2", "wireless", "network", "router"})
# Words before "token" naming something that is no credential: a form's, a page's or a model's token.
_TOKEN_NOT = frozenset("csrf xsrf page next pagination continuation sync cancellation max input output prompt".split())
_PROSE_CONNECTORS = frozenset(
    {":", "=", "->", "=>", "\u2192", "\u2014", "\u2013", "-", "is", "was", "now", "to", "|"}
    | {"：", "は", "est", "es", "ist", "lautet", "é", "è", "era", "är", "er", "jest", "это", "是", "为"}  # "is"
    | {"it's", "it\u2019s", "use", "try"}
)
_PROSE_STRIP = "`'\"()[]<>*«»“”„‘’「」"
_SENTENCE_END = ".,;!?"
_SENTENCE_STOP = (".", ";", "!", "?")
# Kinds of key that lock nothing: a table's, a cache's, a map's, a public one.
_KEY_NOT = frozenset(
    "primary foreign sort partition cache public composite unique idempotency ssh gpg pgp host lookup dictionary "
    "registry hash map object bucket row shard routing translation i18n music answer the a an publishable".split()
)
# An identifier's words (order_id_2024_v2, billing-api-prod): no part a random run of twelve or more.
_SNAKE_OR_KEBAB = re.compile(r"[a-z][a-z0-9]{0,11}(?:[_\-][a-z0-9]{1,11})+")
_KEY_CHARS = re.compile(r"[A-Za-z0-9+/=_\-.~]+")


def _password_noun(noun: str) -> bool:
    return _PASSWORD_NOUN_RX.fullmatch(noun) is not None


def _prose_key_value(value: str) -> bool:
    """A key or token as prose gives it: 16+ characters of a token's alphabet with two digits or more (hex
    included), or 30+ of base64 in both cases; no word, UUID, path, URL, version or placeholder."""
    if not 16 <= len(value) <= 256 or _KEY_CHARS.fullmatch(value) is None or value.isalpha():
        return False
    if _prose_describes(value) or _UUID.fullmatch(value):
        return False
    if value.startswith(("pk_live_", "pk_test_")):
        return False  # a Stripe publishable key: meant for the browser
    if _TYPE_NAME.fullmatch(value) or _EPOCH_VERSION.match(value):
        return False  # PKCS12PrivateKeyTypes, 1:4.13+dfsg1-1: a type's or a package version's name
    if _SNAKE_OR_KEBAB.fullmatch(value) or _NAMED_VALUE.match(value):
        return False  # billing-api-prod, prompt_tokens=12431: a name, a log's key=value
    digits = sum(c.isdigit() for c in value)
    if digits >= 2 and any(c.isalpha() for c in value):
        return True
    return len(value) >= 30 and any(c.isupper() for c in value) and any(c.islower() for c in value)


def _prose_password_value(value: str) -> bool:
    """A password as prose gives it (6+ characters): letters with digits, or 8+ with a symbol and both cases."""
    return (
        6 <= len(value) <= 128
        and _CJK.search(value) is None  # パスワードは12文字以上: the sentence goes on, glued to the noun
        and value.lower() not in _MESSAGE_WORDS
        and _EPOCH_VERSION.match(value) is None
        and _prose_value(value)
    )


_CJK = re.compile("[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]")  # CJK punctuation, kana, ideographs, Hangul, full width
# A package version as Debian and RPM write it: epoch:upstream (1:4.13+dfsg1-1), or a dotted number first.
_EPOCH_VERSION = re.compile(r"\d{1,9}(?::\d|\.\d)")


# Accounts prose names by role: the login pair "root/<password>" is a credential wherever it is told.
_ADMIN_ACCOUNTS = ("root", "admin", "administrator", "sysadmin", "postgres", "ubuntu", "guest")
# Found from the separator back ("root/", "admin :"), names of one length in one look-behind ("administrator" and
# "sysadmin" end in "admin"): the combined search stops at '/' and ':' only.
_ACCOUNT_ANCHORS = tuple(
    sep + "(?<=" + names + space + sep + ")"
    for names in ("root", "(?:admin|guest)", "ubuntu", "postgres")
    for space in ("", " ")
    for sep in "/:"
)
# How a Wi-Fi network is named, in the casings written (each is one of the rule's anchors).
_WIFI_WORDS = tuple(a + "i" + d + b + "i" for a in "wW" for d in ("", "-") for b in "fF") + (
    "WIFI",
    "WI-FI",
    "ssid",
    "SSID",
    "Ssid",
    "wlan",
    "WLAN",
    "Wlan",
)
# (lowercase "wifi", "ssid", "wlan" are substring tests; the other casings open on a capital or look behind)
_WIFI_ANCHORS = (
    "wifi",
    "ssid",
    "wlan",
    "-(?<=[wW]i-)[fF]i",
    "F(?<=[wW]iF)i",
    *(w for w in _WIFI_WORDS if w[0].isupper() and "-" not in w[1:3] or w in ("WI-FI",)),
)
_IMAGE_TAG = re.compile(r"[a-z0-9][a-z0-9._\-]{0,127}")
# Objects whose bare "key" leaf is a credential: a JWT's or a cipher's settings, an API's, a provider's.
_CREDENTIAL_PARENTS = frozenset(
    "jwt jwtsettings jwtoptions jwtconfig signing encryption hmac api apikey auth authentication token tokens secret "
    "secrets credentials oauth session cookie crypto cipher aes license security".split()
)


def _credential_parent(name: str) -> bool:
    words = [w.lower() for w in _KEY_WORDS.findall(name)]
    return bool(words) and (
        name.lower() in _CREDENTIAL_PARENTS or words[0] in _CREDENTIAL_PARENTS or _provider_key(name) is not None
    )


def _account_pair_check(m: re.Match[str], secret: str) -> bool:
    """A pair's password: a password's shape; after ':' (or bare) not an image's tag (ubuntu:jammy-20240111), and
    bare only as strong as a password told before its noun."""
    groups = m.groupdict()
    colon = ":" in (groups.get("sep"), groups.get("sep2")) or "s_bare" in m.re.groupindex
    return (
        _prose_password_value(secret)
        and not _URL.match(secret)
        and not (colon and _IMAGE_TAG.fullmatch(secret) is not None)
        and ("s_bare" not in m.re.groupindex or _value_before_noun(secret))
    )


_POSSESSIVES = frozenset("my your our his her their".split())


def _word_before(text: str, pos: int) -> str:
    """The word just before ``pos`` on its line, lower case, without the quotes and brackets around it."""
    line_start = text.rfind("\n", max(0, pos - 40), pos) + 1
    before = text[max(line_start, pos - 40) : pos].split()
    return before[-1].strip(_PROSE_STRIP).lower() if before else ""


def _noun_applies(text: str, m: re.Match[str]) -> bool:
    """Whether the credential noun at ``m`` names a credential here (a bare key or a form's token does not)."""
    noun = m.group("n").lower()
    if m.start() > 0 and text[m.start() - 1] == "_":  # an identifier's tail in prose: "api_key -> ..."
        head = m.start() - 1
        while head > 0 and (text[head - 1].isalnum() or text[head - 1] == "_"):
            head -= 1
        return sensitive_key(text[head : m.end()])
    line_start = text.rfind("\n", max(0, m.start() - 40), m.start()) + 1
    before = text[max(line_start, m.start() - 40) : m.start()].split()
    prev = before[-1].strip(_PROSE_STRIP).lower() if before else ""
    prev2 = before[-2].strip(_PROSE_STRIP).lower() if len(before) > 1 else ""
    if noun == "key":
        word = before[-1].strip(_PROSE_STRIP) if before else ""
        named = word[:1].isupper() and word.isalnum() and prev not in _KEY_NOT  # a provider's: the Datadog key
        provider = _PROVIDER_START.fullmatch(prev) is not None  # my cohere key
        mine = prev in _POSSESSIVES or (prev2 in _POSSESSIVES and (provider or prev in _KEY_QUALIFIERS))
        return (
            prev in _KEY_QUALIFIERS
            or named
            or provider
            or mine
            or (prev2 in _KEY_QUALIFIERS and prev in ("access", "key", "secret"))
        )
    if noun == "token":
        return prev not in _TOKEN_NOT
    return True


def _cell_spans(line: str, offset: int) -> list[tuple[str, int, int]]:
    """The cells (stripped text, start, end) of a Markdown table row."""
    cells: list[tuple[str, int, int]] = []
    pos = line.index("|") + 1
    while (bar := line.find("|", pos)) != -1:
        raw = line[pos:bar]
        inner = raw.strip()
        value = inner.strip("`")
        start = offset + pos + (raw.find(value) if value else 0)
        cells.append((value, start, start + len(value)))
        pos = bar + 1
    return cells


_TABLE_LINE = 512  # longer lines are no table's rows (and each is read once: see _find_prose_secrets)


def _line_start(text: str, pos: int) -> int | None:
    """Where the line holding ``pos`` starts, if within _TABLE_LINE characters."""
    start = text.rfind("\n", max(0, pos - _TABLE_LINE), pos) + 1
    return start if start > 0 or pos < _TABLE_LINE else None


def _line_end(text: str, pos: int) -> int | None:
    """Where the line holding ``pos`` ends (its newline, or the text's end), if within _TABLE_LINE characters."""
    end = text.find("\n", pos, pos + _TABLE_LINE)
    if end != -1:
        return end
    return len(text) if len(text) - pos < _TABLE_LINE else None


def _table_values(text: str, m: re.Match[str], password: bool) -> Iterator[Span]:
    """A noun inside a Markdown table: the column it heads (rows below), or the row it labels (cells after it)."""
    start = _line_start(text, m.start())
    end = _line_end(text, m.end())
    if start is None or end is None:
        return  # no table's row is that long
    line = text[start:end]
    if not line.lstrip().startswith("|"):
        return
    cells = _cell_spans(line, start)
    col = next((i for i, (_, a, b) in enumerate(cells) if a <= m.start() < max(b, a + 1)), None)
    if col is None:
        return
    nxt = _line_end(text, end + 1) if end < len(text) else None
    separator = text[end + 1 : nxt].strip() if nxt is not None else ""
    if nxt is not None and separator.startswith("|") and set(separator) <= set("|-: \t"):  # a header: its column
        row_start = nxt + 1
        for _ in range(_CSV_MAX_ROWS):
            if row_start > len(text):
                return
            row_end = _line_end(text, row_start)
            if row_end is None:
                return
            row = text[row_start:row_end]
            if not row.lstrip().startswith("|"):
                return
            row_cells = _cell_spans(row, row_start)
            if col < len(row_cells):
                value, a, b = row_cells[col]
                if value and (_prose_password_value(value) if password else _prose_key_value(value)):
                    yield a, b
            row_start = row_end + 1
        return
    for value, a, b in cells[col + 1 :]:  # a row labelled by the credential: the value in a later cell
        if value and (_prose_password_value(value) if password else _prose_key_value(value)):
            yield a, b
            return


def _find_prose_secrets(text: str) -> Iterator[Span]:
    """Credentials named in prose: the first value after the noun and a connector (or right after the noun)."""
    tables_read: set[int | None] = set()
    nouns: Iterable[re.Match[str]] = _PROSE_NOUN.finditer(text)
    if _INTL_ANCHOR.search(text) is not None:
        nouns = sorted([*nouns, *_PROSE_NOUN_INTL.finditer(text)], key=lambda n: n.start())
    for m in nouns:
        if text[m.end() : m.end() + 1] in ("(", "}", "=") or not _noun_applies(text, m):
            continue  # validate_password(...), ${DB_PASSWORD}, token=...: a call, a template, an assignment
        if text[m.start() - 1 : m.start()] == "_" and text[m.end() : m.end() + 8].lstrip(" \t")[:1] in _GLUE_FIRST:
            continue  # db_password=..., api_key: ..., db_password,v: an assignment's or a row's, not prose
        noun = m.group("n").lower()
        password = _password_noun(noun) or (noun == "key" and _word_before(text, m.start()) in _PASSWORD_KEY_QUALIFIERS)
        if "|" in text[max(0, m.start() - 200) : m.start()] and _PAIR_NOUN_RX.fullmatch(noun) is None:
            line = _line_start(text, m.start())
            if line not in tables_read:  # each table line once: a line of many nouns costs one read
                tables_read.add(line)
                found = list(_table_values(text, m, password))
                if found:
                    yield from found
                    continue
        end = text.find("\n", m.end(), m.end() + 200)  # bounded: a long line must not make the scan quadratic
        stop = m.end() + 200 if end == -1 else end
        rest = text[m.end() : end].strip() if end != -1 else ""
        if rest and " " not in rest and _connector(rest):  # "secret key:" and the value on the line below
            nxt = text.find("\n", end + 1, end + 201)
            stop = end + 201 if nxt == -1 else nxt
        window = text[m.end() : stop]
        tokens = [(t.start() + m.end(), t.group()) for t in itertools.islice(_WORDS.finditer(window), 12)]
        found_span = _pair_value(tokens) if _PAIR_NOUN_RX.fullmatch(noun) else _named_value(tokens, password)
        if found_span is None and _PAIR_NOUN_RX.fullmatch(noun):
            found_span = _named_value(tokens, True)  # "creds rotated, new one is <password>"
            if (
                found_span is not None
                and (
                    found_span[0] < tokens[0][0] + len(tokens[0][1])  # the very next word: no connector handed it over
                    or not _value_before_noun(text[found_span[0] : found_span[1]])
                )
            ):
                found_span = None  # credentials: _Credentials, url_credentials]@db2: a type's name, a mask's tail
        if found_span is None and end != -1:
            found_span = _next_line_value(text, end, password)
        if found_span is not None:
            yield found_span


_PROSE_VERB_WORDS = frozenset(
    "set reset changed updated rotated now still been being be has have had got will new one".split()
    + "nu jetzt nun ahora maintenant agora ora adesso teraz".split()  # the other languages' "now"
)
# Words, with a full-width colon (パスワード：値) and an element's closing tag (value</p>) words of their own.
_WORDS = re.compile(r"：|</[A-Za-z][\w\-]{0,16}>|(?:(?!：|</[A-Za-z])\S)+")
_GLUE_FIRST = ("=", ":", ",", '"', "'", "")


def _core(word: str) -> str:
    """A word without the quotes, brackets and closing punctuation around it."""
    core = word
    # A closing '!' or '?' stays: passwords end in them (Winter2024!) more often than a sentence does after one.
    while len(core) > 1 and (core[0] in _PROSE_STRIP + ",;" or core[-1] in _PROSE_STRIP + ".,;"):
        core = core[1:] if core[0] in _PROSE_STRIP + ",;" else core[:-1]
    return core


# A word of code or markup (getenv("DB_PASSWORD"), ${REDIS_PASSWORD}@redis, =KEY.encode(), &#x3C;<span): an opening
# bracket or quote past the word's first character, a brace, an angle bracket or an entity, or a leading '='.
_CODE_CHARS = re.compile(r"^=|(?<=.)[(\[\"']|[{}<>]|&#?\w+;")


def _code_word(word: str) -> bool:
    return _CODE_CHARS.search(word.strip("`'\"").rstrip(".,;:!?)]")) is not None


def _connector(word: str) -> bool:
    core = word.strip(_PROSE_STRIP)
    return core.lower() in _PROSE_CONNECTORS or (len(core) > 1 and core.endswith(":"))


def _named_value(tokens: list[tuple[int, str]], password: bool) -> Span | None:
    """The value after a credential's noun: right after it, or the first token after a connector."""
    connected = False
    for i, (at, word) in enumerate(tokens):
        if _connector(word):
            connected = True
            continue
        if word.lower() in _PROSE_VERB_WORDS:
            continue  # the rest of a verb phrase: "was set to", "has been reset to", "is now"
        if not (connected or i == 0):  # a word between the noun and its connector ("for the qa account:")
            if password and _strong_password(_core(word)) and not _code_word(word):
                a = at + word.find(_core(word))  # "password rotated this morning, new one <value>"
                return a, a + len(_core(word))
            if word.rstrip(_PROSE_STRIP).endswith(_SENTENCE_STOP):
                return None
            continue
        value = _core(word)
        if not value.strip(_SENTENCE_END + _PROSE_STRIP):
            continue  # a bare comma or dash, an opening « or 「
        if len(value) > 256 or _code_word(word) or is_placeholder(word):
            return None  # getenv("X"), [REDACTED:...], <your-key>: code, masked, or a blank to fill
        if _prose_password_value(value) if password else _prose_key_value(value):
            a = at + word.find(value)
            return a, a + len(value)
        if connected or word.rstrip(_PROSE_STRIP).endswith(_SENTENCE_STOP):
            return None  # what follows the connector is no credential, or the sentence ended
    return None


# A chat turn's speaker label ("B:", "user:", "> "), which may open the line that answers about a credential.
_SPEAKER = re.compile(r"[ \t]{0,8}+(?:>[ \t]{0,4}+|[A-Za-z][\w .\-]{0,24}+:[ \t]{1,4}+)?")
_NEXT_LINE_LEAD = frozenset({"try", "use", "it's", "it\u2019s", "its"})


def _next_line_value(text: str, end: int, password: bool) -> Span | None:
    """A credential named on one line and given on the next, as chat answers ("the password you gave me doesn't
    work" / "B: try <value>"): only after "try", "use" or "it's" opening that line."""
    start = end + 1
    stop = text.find("\n", start, start + 200)
    stop = min(len(text), start + 200) if stop == -1 else stop
    lead = _SPEAKER.match(text, start, stop)
    at = lead.end() if lead is not None else start
    window = text[at:stop]
    tokens = [(t.start() + at, t.group()) for t in itertools.islice(_WORDS.finditer(window), 8)]
    if not tokens or tokens[0][1].lower().rstrip(":") not in _NEXT_LINE_LEAD:
        return None
    return _named_value(tokens, password)


def _strong_password(value: str) -> bool:
    """A word no prose or code makes: ten characters or more holding upper and lower case, a digit and a symbol."""
    return (
        10 <= len(value) <= 128
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and any(not c.isalnum() for c in value)
        and _STRONG_NOT.search(value) is None
        and _prose_password_value(value)
    )


# What makes such a word a name, a path, an address or markup rather than a password.
_STRONG_NOT = re.compile(r"://|^[/~.]|@[\w\-]+\.[a-z]{2,}|[<>{}]|^\$|\.(?:com|org|io|net|py|js|md|json|yaml|yml)\b")


def _pair_value(tokens: list[tuple[int, str]]) -> Span | None:
    """The password of a user/password pair after "login", "creds" or "credentials": user:password, user/password,
    or user / password."""
    words = [(at, word, _core(word)) for at, word in tokens if not _connector(word) or word.strip() == "/"]
    # where a connector ("vpn:", ":", "is") hands over: the user of a "user password" pair opens there
    handed = {tokens[i + 1][0] for i in range(len(tokens) - 1) if _connector(tokens[i][1])}
    for j, (at, word, core) in enumerate(words[:10]):
        if len(core) > 256 or _code_word(word) or is_placeholder(word):
            return None
        user, sep, pw = core.partition(":") if ":" in core else core.partition("/")
        if not sep and j + 2 < len(words) and words[j + 1][2] == "/":
            at, word, pw = words[j + 2][0], words[j + 2][1], words[j + 2][2]
            user, sep = core, "/"
        if sep and user[:1].isalpha() and _prose_password_value(pw) and not _URL.match(core):
            a = at + word.rfind(pw)
            return a, a + len(pw)
        if (
            at in handed
            and j + 1 < len(words)
            and _ACCOUNT_NAME.fullmatch(core)
            and core not in _NOT_ACCOUNT | _MESSAGE_WORDS
        ):
            # "creds for the vpn: jsmith <password>": a user name, then the password as the next word
            n_at, n_word, n_core = words[j + 1]
            if len(n_core) >= 8 and _value_before_noun(n_core) and not _code_word(n_word) and "/" not in n_core:
                a = n_at + n_word.find(n_core)
                return a, a + len(n_core)
    return None


_ACCOUNT_NAME = re.compile(r"[a-z][a-z0-9._\-]{1,31}")
# Words prose puts where a pair's user name would be: verbs and pointers, not accounts.
_NOT_ACCOUNT = frozenset(
    "see ask check contact via stored saved kept rotated expired sent shared from under same unchanged unknown "
    "missing pending none tbd in at on is are was were be the a an my your our their his her its".split()
)


def _der_private_key(secret: str) -> bool:
    """Whether base64 ``secret`` opens like a DER private key: a SEQUENCE whose first element is the version
    INTEGER 0 followed by a modulus (PKCS#1) or an algorithm (PKCS#8), or version 1 and a key (SEC 1, EC).
    Certificates and public keys open with a SEQUENCE instead, so they are left alone."""
    try:
        der = base64.b64decode(secret[:24], validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(der) < 9 or der[0] != 0x30:
        return False
    at = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    head = der[at : at + 4]
    return head[:3] == b"\x02\x01\x00" and head[3:] in (b"\x02", b"\x30") or head == b"\x02\x01\x01\x04"


# Comma-separated rows as CSV writers write them, no space after a comma (code has one). A cell: quoted (no quote or
# line break inside) or bare (no comma or quote, neither opening nor closing with a space).
_CSV_CELL = re.compile(r'"(?P<q>[^"\r\n]{0,256}+)"|(?P<u>(?:[^,"\s][^,"\r\n]{0,254}+)?(?<![ \t]))')
_CSV_HEADER_CELL = re.compile(r"[A-Za-z][\w.\-/]{0,63}(?: [\w.\-/]{1,63}){0,3}")
_CSV_MAX_ROWS = 10_000


def _tail_behind(end: str, closers: tuple[str, ...]) -> str:
    """Lookbehinds for "a credential key's tail (_KEYWORD_TAILS), one of ``closers`` (a quote, a CR), then ``end``":
    one per width, as a lookbehind's alternatives must all have one width."""
    by_width: dict[int, list[str]] = {}
    last: set[str] = set()  # the character right before ``end``, checked first: most stops fail on it
    for tail in _KEYWORD_TAILS:
        for closer in closers:
            by_width.setdefault(len(tail) + len(closer), []).append(re.escape(tail + closer))
            c = (tail + closer)[-1]
            last.update({c.lower(), c.upper()})
    first = "(?<=[" + "".join(re.escape(c) for c in sorted(last)) + "]" + re.escape(end) + ")"
    return first + "(?:" + "|".join(f"(?<=(?i:{'|'.join(alts)}){re.escape(end)})" for alts in by_width.values()) + ")"


# The comma or line break closing a cell whose name ends like a credential key's (_KEYWORD_TAILS): the rule's
# anchors, and where its search stops (only at commas and line breaks).
_CSV_ENDS = (",(?:" + _tail_behind(",", ("", '"')) + ")", "\n(?:" + _tail_behind("\n", ("", '"', "\r", '"\r')) + ")")
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
    if not sensitive_key(key) or _CRED_KEY.search(key) is not None:
        return False
    if _PASSWORD_KEY.search(key) is not None:
        return assignment_value_ok(value, quoted=column, sep=":", password=True, key=key)
    return (
        len(value) >= 16
        and assignment_value_ok(value, quoted=False, sep=":", key=key)
        and (_prose_token(value) or _cased(value) or _UUID.fullmatch(value) is not None)
    )


# WordPress's authentication keys and salts (wp-config.php): LOGGED_IN_KEY and NONCE_SALT name no credential word.
_WP_SECRET = re.compile(r"(?:AUTH|SECURE_AUTH|LOGGED_IN|NONCE)_(?:KEY|SALT)")


def _keyed_value(key: str, value: str) -> bool:
    """Whether quoted ``value``, given to ``key`` by markup, a DSL setting or a call, is a credential: the test a
    quoted assignment's value gets (a word under a ``credentials`` key is a mode, not one)."""
    return (
        sensitive_key(key)
        and not (_CRED_KEY.search(key) is not None and _loose_credential(value))
        and not is_placeholder(value)
        and assignment_value_ok(value, quoted=True, password=_PASSWORD_KEY.search(key) is not None, key=key)
    )


# A credential-named key then one space and a quoted value, as Gradle, Groovy and Ruby DSLs write a setting
# (storePassword 'v', password "v"): the opening quote after the key's tail is the anchor and the search's only stop.
_DSL_SPOTS = ("'(?:" + _tail_behind("'", (" ", "\t")) + ")", '"(?:' + _tail_behind('"', (" ", "\t")) + ")")
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
        if key.lower() in _DSL_VERBS or _FILE_NAME.fullmatch(value) or _LOWER_PATH.fullmatch(value):
            continue  # only pass "py.exe", unexpected token 'EOF', secret "secret/data/db": prose, messages, paths
        if _keyed_value(key, value):
            yield value_m.span(2)


# A call handing a credential-named string its value: setenv("API_KEY", "v"), setProperty("db.password", "v"),
# headers.put("X-Api-Key", "v"), getenv("TOKEN", "fallback"). The comma after the key's closing quote is the
# anchor; the call and the key are matched back from it, the value on from it.
_CALL_SPOTS = (",(?:" + _tail_behind(",", ('"', "'")) + ")",)
_CALL_SPOT = re.compile(_CALL_SPOTS[0])
_CALL_HEAD = re.compile(
    r"(?<![\w$])[A-Za-z_$][\w.$]{0,64}+\([ \t]{0,4}+(?P<q>['\"])(?P<k>[A-Za-z_][\w.\-]{0,63}+)(?P=q)\Z"
)
_CALL_NAMES = re.compile(r"[A-Za-z_][A-Za-z_.\-]{0,255}")
_KEYWORD_ANYWHERE = re.compile(_KEYWORD, re.IGNORECASE)
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
        if _keyed_value(key, value):
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
            while columns and row_start < len(text) and rows < _CSV_MAX_ROWS:
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


_JWT = re.compile(r"eyJ[A-Za-z0-9_\-]{8,4096}+\.eyJ[A-Za-z0-9_\-]{8,8192}+\.[A-Za-z0-9_\-]{8,4096}+")


def _b64_text(secret: str) -> str:
    """``secret`` base64-decoded as ASCII text ('' when it is not base64 of text)."""
    try:
        return base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return ""


def _b64_jwt_header(secret: str) -> bool:
    """Base64 opening on a JWT's own header (eyJhbGciOi... = {"alg":...): a token encoded once more."""
    head = secret[: len(secret) - len(secret) % 4][:64]
    try:
        return base64.b64decode(head, validate=True).startswith(b"eyJhbGciOi")
    except (binascii.Error, ValueError):
        return False


def _pem_base64_check(_m: re.Match[str], secret: str) -> bool:
    head = secret[:120]
    head = head[: len(head) - len(head) % 4]
    try:
        decoded = base64.b64decode(head, validate=True).decode("ascii", errors="replace")
    except (binascii.Error, ValueError):
        return False
    return "PRIVATE KEY" in decoded.partition("\n")[0]


# Most specific first: when two rules claim the same span, the earlier rule names it.
def _mailgun_key(value: str) -> bool:
    """A newer Mailgun key's three parts are random hex: no filler (00000000) and no counter (0123...)."""
    return not sequential(value) and all(len(set(part)) > 3 for part in value.split("-"))


# The signature of jwt.io's sample token (John Doe, "your-256-bit-secret"): printed in every JWT tutorial.
_JWT_IO_SAMPLE = "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
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


# Services whose keys and tokens carry no prefix of their own: named only by the setting that holds them (COHERE=,
# algolia_admin: ..., cohere.Client("...")). Only whole-word-start matches count (a segment of the key opening so).
_PROVIDERS = (
    "adafruit airtable algolia alibaba amplitude anthropic artifactory asana assemblyai atlassian auth0 beamer "
    "bitbucket bittrex braintree browserstack bugsnag buildkite circleci clickhouse cloudflare codecov cohere "
    "coinbase confluent contentful databricks datadog deepgram deepl deepseek digitalocean discord docusign "
    "droneci dropbox dynatrace elevenlabs etsy facebook fastly figma finicity finnhub fireworks flickr freshbooks "
    "gitguardian gitter gocardless groq heroku honeycomb hubspot huggingface intercom jfrog jira klaviyo kraken "
    "kucoin launchdarkly linkedin logdna loggly mailchimp mailgun mailjet mandrill mapbox mattermost meraki "
    "messagebird mistral mixpanel netlify newrelic nexmo ngrok nytimes okta openai openrouter pagerduty papertrail "
    "perplexity pinecone plaid plivo postmark privateai pusher rapidapi replicate rollbar saucelabs sendbird "
    "sendgrid sendinblue sentry shopify slack snyk sonar sparkpost squarespace stripe sumologic supabase telegram "
    "telnyx togetherai travis trello twilio twitch twitter typeform vercel vonage voyage wandb weaviate yandex "
    "zendesk zapier kaggle snowflake salesforce hotjar fullstory onesignal revenuecat paddle chargebee recurly "
    "lemonsqueezy bigcommerce contentstack storyblok datocms hygraph cloudinary imgix uploadcare giphy unsplash "
    "openweather weatherapi mapquest tomtom opencage ipinfo ipstack clearbit hubstaff harvest toggl bandwidth sinch "
    "smartsheet airbrake raygun launchpad scaleway linode vultr hetzner backblaze wasabi"
).split()
_PROVIDER_START = re.compile(r"(?:" + "|".join(_PROVIDERS) + r")")
# A key's last word naming something public or not a credential (an id, an address, a place, a name, a count).
_PROVIDER_KEY_NOT = frozenset(
    "id ids sid uid url uri urls host hostname domain region zone endpoint env environment site user username "
    "email org organization project account name version channel app plan price product customer phone number "
    "sender bucket index dataset team workspace base table list audience model publishable public pub path file "
    "dir port timeout level mode enabled tag release dsn callback redirect scope issuer tenant cluster server "
    "service type format location folder queue topic prefix suffix size limit count retries interval client".split()
)
_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_TOKEN_ALPHABET = re.compile(r"[A-Za-z0-9_\-+/=.~]{16,256}")
# Object ids payment APIs print everywhere (Stripe's price_, cus_, ...): names, not secrets.
_OBJECT_ID = re.compile(
    r"(?:prod|price|cus|sub|pi|ch|acct|evt|in|txn|seti|pm|src|tok|re|po|tr|ba|card|plan|ii|il|si|cs|ic|py|prc|"
    r"app|tbl|fld|viw|rec|usr|sel|att)_[A-Za-z0-9]{6,64}"
)


def _token_shaped(value: str, *, uuid_ok: bool = False) -> bool:
    """A credential's random body as a setting holds it: 16+ characters of a token's alphabet with letters and two
    digits or more, no filler, no word list (parts all letters or all digits), no id, name, path or address."""
    if _TOKEN_ALPHABET.fullmatch(value) is None or is_placeholder(value) or low_entropy(value):
        return False
    if sum(c.isdigit() for c in value) < 2 or sum(c.isalpha() for c in value) < 2:
        return False
    if len(value) < 32 and re.fullmatch(r"[0-9a-f]+|[0-9A-F]+", value):
        return False  # a short hex string is an id or a hash's prefix; hex API keys run 32 digits or more
    if _UUID.fullmatch(value):
        return uuid_ok and not _sample_uuid(value)
    if _OBJECT_ID.fullmatch(value) or _DIGEST.fullmatch(value) or _PASSWORD_HASH.fullmatch(value):
        return False
    if _DOTTED.fullmatch(value) or _SNAKE_OR_KEBAB.fullmatch(value):
        return False  # web.page_views.count2024, page_views_2024a: a metric's or a field's name
    parts = [p for p in re.split(r"[_\-./+=~]", value) if p]
    if all(p.isalpha() or p.isdigit() for p in parts):
        return False  # release-2024-03-01, eu-west-1, checkout_service_v2: words and numbers, an id
    if "." in value and re.search(r"\.[a-z]{2,}(?:/|$)", value):
        return False  # a host name (acme.datadoghq.eu)
    return _ascending_run(value) < 7


def _provider_key(key: str, *, call: bool = False) -> str | None:
    """The provider a setting's key names (COHERE, algoliaAdmin, mailgun.private), unless the key's last word says
    it holds something public (ALGOLIA_APP_ID, datadog_site) -- or None. A ``call``'s name (cohere.Client) ends on
    its function's, which says nothing of the value."""
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    if not words or (not call and words[-1] in _PROVIDER_KEY_NOT):
        return None
    for w in words:
        m = _PROVIDER_START.match(w)
        if m is not None:
            return m.group()
    return None


# The glue before a provider's value (= : := => and the like, then maybe a quote) and the value itself; the key is
# read back from the glue. Anchored on the glue: a value of sixteen token characters right after it.
_PROVIDER_GLUE = re.compile(
    r"(?P<glue>[\"']?[ \t]{0,8}+(?::=|::=|=>|[?+]=|[=:>])[ \t]{0,8}+)(?P<q>[\"'`]?)"
    r"(?P<s>[A-Za-z0-9_\-+=.~][A-Za-z0-9_\-+/=.~]{15,255}+)(?P=q)(?![A-Za-z0-9_\-+/=.~])"
)
_PROVIDER_CALL = re.compile(
    r"\([ \t]{0,4}+(?:(?P<kw>[A-Za-z_]{1,20}+)[ \t]{0,4}+=[ \t]{0,4}+)?(?:(?P<q1>[\"'])[^\"'\n]{1,64}+(?P=q1)"
    r"[ \t]{0,4}+,[ \t]{0,4}+)?(?P<q>[\"'])(?P<s>[A-Za-z0-9_\-+=.~][A-Za-z0-9_\-+/=.~]{15,255}+)(?P=q)"
)
# (one anchor per glue character: the combined anchor search factors anchors by their first literal character)
# A value of sixteen token characters or more holding a digit (the value needs two), not opening on '/' (a URL's
# "://"): most code's glue is followed by a name, most prose's parenthesis by words.
_PROVIDER_VALUE = r"(?=[A-Za-z0-9_\-+=.~][A-Za-z0-9_\-+/=.~]{15})[A-Za-z0-9_\-+/=.~]{0,255}?[0-9]"
_PROVIDER_SPOTS = (
    *(c + r"[ \t]{0,8}[\"'`]?" + _PROVIDER_VALUE for c in "=:>"),
    r"\([ \t]{0,4}(?:[A-Za-z_]{1,20}[ \t]{0,4}=[ \t]{0,4})?[\"'](?:[^\"'\n]{1,64}[\"'][ \t]{0,4},[ \t]{0,4}[\"'])?"
    + _PROVIDER_VALUE,
)
_PROVIDER_SPOT = re.compile("|".join(_PROVIDER_SPOTS))
_IDENT_REVERSED = re.compile(r"[\w$.\-]{1,64}")
_UUID_PROVIDERS = frozenset("heroku snyk squarespace sendbird kucoin codecov pinecone messagebird".split())


_CREDENTIAL_WORDS = frozenset("secret secrets token password passwd pwd apikey credential credentials".split())


def _credential_inside(key: str) -> bool:
    """Whether a credential word is one of ``key``'s words (not its last: then it is the assignment rule's), and
    the last says nothing public (secret_name, token_url)."""
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    pairs = {a + b for a, b in zip(words, words[1:])}
    return (
        len(words) >= 2
        and words[-1] not in _PROVIDER_KEY_NOT
        and (bool(_CREDENTIAL_WORDS.intersection(words[:-1])) or "apikey" in pairs)
    )


def _key_before(text: str, end: int) -> str:
    """The identifier (maybe quoted, maybe a dotted path) ending at ``end``: matched on the reversed text, so the
    cost is the key's length, not a search."""
    head = text[max(0, end - 64) : end].rstrip("\"'")
    m = _IDENT_REVERSED.match(head[::-1])
    if m is None:
        return ""
    key = m.group()[::-1]
    return key[len(key) - len(key.lstrip("0123456789.-")) :] if key[:1] in "0123456789.-" else key


def _find_provider_credentials(text: str) -> Iterator[Span]:
    """A provider-named setting's value (COHERE=..., "algolia": "...") and a provider client handed its key
    (cohere.Client("..."), wandb.login(key="...")): a random token's value only. The key is read back first, so
    most spots (a key naming nothing) cost no match."""
    pos = 0
    while (spot := _PROVIDER_SPOT.search(text, pos)) is not None:
        pos = spot.start() + 1
        inside = False
        if text[spot.start()] == "(":
            call = _key_before(text, spot.start())
            provider = _provider_key(call, call=True) if call else None
            m = _PROVIDER_CALL.match(text, spot.start())
            if m is None:
                continue
            kw = m.group("kw")
            if provider is None and kw is not None:
                provider = _provider_key(kw)
            if provider is None or (kw is not None and kw.lower() in _PROVIDER_KEY_NOT):
                continue
        else:
            glue_start = spot.start()
            while glue_start > 0 and text[glue_start - 1] in " \t\"'":
                glue_start -= 1
            key = _key_before(text, glue_start)
            if not key or sensitive_key(key):
                continue  # a credential-named key is the assignment rule's
            provider = _provider_key(key)
            inside = provider is None and _credential_inside(key)
            if (provider is None and not inside) or _NOT_SECRET_KEY.search(key):
                continue
            if text[max(0, glue_start - len(key) - 3) : glue_start - len(key)].rstrip("\"'").endswith("::"):
                continue  # "AWS::Chatbot::SlackChannelConfiguration": "<hash>": a type's name, not a setting
            m = _PROVIDER_GLUE.match(text, glue_start)
            if m is None:
                continue
        value = m.group("s")
        # A credential word inside the key (todo_secret_do_not_commit, apiKeyProd): a random mix only.
        if (not inside or _cased(value)) and _token_shaped(value, uuid_ok=provider in _UUID_PROVIDERS):
            pos = max(pos, m.end("s"))
            yield m.span("s")


RULES: tuple[Rule, ...] = (
    Rule(
        "gcp_service_account_key",
        _regex(
            r"\"private_key\"[ \t]{0,8}+:[ \t]{0,8}+\"(?P<s>-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[^\"]{1,8000}+)\"",
            check=lambda m, s: "-----END" in s,
        ),
        anchors=(r'_(?<="private_)key"',),
    ),
    Rule("private_key_block", _find_private_keys, anchors=("-----BEGIN ",)),
    # A PuTTY .ppk key file: its Private-Lines are the key (the Public-Lines before them are not).
    Rule(
        "putty_private_key",
        _regex(
            r"PuTTY-User-Key-File-[23]:[^\n]{0,200}+\n(?:[^\n]{0,4096}+\n){0,64}?Private-Lines:[ \t]{0,4}+\d{1,3}"
            r"[ \t]{0,4}+\r?\n(?P<s>[A-Za-z0-9+/=]{4,128}+(?=\r?\n|\Z)(?:\r?\n[A-Za-z0-9+/=]{4,128}+(?=\r?\n|\Z)){0,127})",
            check=_random,
        ),
        anchors=("PuTTY-User-Key-File-",),
    ),
    Rule("kubernetes_secret", _find_k8s_secret_values, anchors=(r":(?<=kind:)",)),
    # A PEM private key base64-encoded once more (kubeconfig client-key-data, Kubernetes Secret tls.key).
    Rule(
        "private_key_base64",
        _regex(
            r"(?<![A-Za-z0-9+/])LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,65536}+={0,2}+",
            r"(?<![A-Za-z0-9+/])(?:MI[IGH]|MHc)[A-Za-z0-9+/]{100,65536}+={0,2}+(?![A-Za-z0-9+/=])",  # DER, no armour
            check=lambda m, s: _der_private_key(s) if s.startswith("M") else _pem_base64_check(m, s),
        ),
        anchors=("LS0tLS1CRUdJTi", "MI[IGH]", "MHc"),
    ),
    Rule(
        "aws_access_key",
        _regex(_L + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}+" + _R),
        anchors=("A(?:KIA|SIA|BIA|CCA)",),
    ),
    Rule(
        "aws_secret_key",
        _regex(
            r"(?i:(?:aws[_.\-]?)?secret[_.\-]?access[_.\-]?key|aws[_.\-]?secret[_.\-]?key)"
            + _SEP
            + r"(?P<s>[A-Za-z0-9/+]{40}+)(?![A-Za-z0-9/+=])",
            # The secret right after its key id, as in the console's credentials CSV ("AKIA...,secret").
            # Also with words between, on its line ("AKIA... / <secret> used by", "key AKIA... and secret <secret>").
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])[^\r\n]{1,48}?(?<![A-Za-z0-9/+=])"
            r"(?P<s_pair>[A-Za-z0-9/+]{40}+)(?![A-Za-z0-9/+=])",
            # An Erlang/Elixir tuple or a list of pairs: {aws_secret_access_key, "..."}
            r"(?i:secret[_.\-]?access[_.\-]?key)[\"']?[ \t]{0,8}+,[ \t]{0,8}+[\"']"
            r"(?P<s_tuple>[A-Za-z0-9/+]{40}+)(?![A-Za-z0-9/+=])",
            check=lambda m, secret: "s_pair" not in m.re.groupindex or _aws_secret_shape(secret),
        ),
        anchors=("A(?:KIA|SIA)", r",(?<=[Kk][Ee][Yy],)", r",(?<=[Kk][Ee][Yy]',)", r",(?<=[Kk][Ee][Yy]\",)"),
        keywords=("key",),
    ),
    Rule(
        "gcp_api_key",
        _regex(_L + r"AIza[0-9A-Za-z_\-]{35}+" + _RD, check=lambda _m, s: not low_entropy(s) and not sequential(s)),
        anchors=("AIza",),
    ),
    Rule(
        "azure_storage_key",
        _regex(r"(?<![A-Za-z0-9])(?i:(?:Account|SharedAccess)Key)" + _SEP + r"(?P<s>[A-Za-z0-9+/]{20,128}+={0,2}+)"),
        keywords=("accountkey", "sharedaccesskey"),
    ),
    Rule(
        "azure_sas_token",
        _regex(r"[?&](?i:sig)=(?P<s>[A-Za-z0-9%+/=]{20,256}+)", check=_mixed),
        anchors=(r"\?(?i:sig)=", r"&(?i:sig)="),
    ),
    # A signed URL's signature grants what the URL names until it expires, to whoever holds the link: S3 (SigV4's
    # X-Amz-Signature, SigV2's Signature with AWSAccessKeyId), GCS V4 (X-Goog-Signature), CloudFront (Signature
    # with Key-Pair-Id). The parameters around it (credential scope, dates, key-pair id) are not secret.
    Rule(
        "signed_url_signature",
        _regex(
            r"[?&](?:X-Amz-Signature|X-Goog-Signature)=(?P<s>[0-9a-f]{64,1024}+)(?![0-9A-Za-z])",
            r"[?&]Signature=(?P<s>[A-Za-z0-9%~_+/=\-]{27,4096}+)",
            check=_random,
        ),
        anchors=(r"=(?<=Signature=)",),
    ),
    Rule(
        "github_token",
        _regex(_L + r"gh[pousr]_[A-Za-z0-9]{36,255}+" + _R, _L + r"github_pat_[A-Za-z0-9_]{50,255}+" + _R),
        anchors=(r"_(?<=gh[pousr]_)", r"_(?<=github_)pat_"),
    ),
    Rule(
        "gitlab_token",
        _regex(
            _L + r"gl(?:pat|ptt|dt|rt|cbt|oas|ft|imt|soat|agent|ffct)-[A-Za-z0-9_\-]{20,64}+"
            r"(?:\.[A-Za-z0-9_\-]{1,64}+){0,3}+",
            _L + r"GR1348941[A-Za-z0-9_\-]{20,64}+",  # runner registration token
            r"(?<![\w\-])_gitlab_session=(?P<s>[0-9a-z]{32})" + _R,  # session cookie
            check=lambda _m, s: not low_entropy(s),
        ),
        anchors=(
            r"-(?<=gl(?:pat|ptt|cbt|oas|imt)-)",
            r"-(?<=gl(?:dt|rt|ft)-)",
            r"-(?<=glsoat-)",
            r"-(?<=glagent-)",
            r"-(?<=glffct-)",
            "GR1348941",
            r"=(?<=_gitlab_session=)",
        ),
    ),
    Rule(
        "bitbucket_app_password",
        _regex(
            r"(?i:bitbucket[\w.\-]{0,30}?(?:app[_.\-]?)?(?:password|pass|secret|token))"
            + _SEP
            + r"(?P<s>[A-Za-z0-9]{16,40}+)(?![A-Za-z0-9])",
            _L + r"ATBB[A-Za-z0-9_=.\-]{28,64}+",
            _L + r"BBDC-[A-Za-z0-9+/@_\-]{44}" + _RD,  # Bitbucket Data Center HTTP access token
        ),
        anchors=("ATBB", "BBDC-"),
        keywords=("password", "pass", "secret", "token"),
    ),
    Rule(
        "slack_webhook",
        _regex(
            r"(?:https?://)?(?<![\w.\-])hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"(?P<s>T[A-Za-z0-9_]{6,20}/[A-Za-z0-9_/\-]{10,200}+)"
        ),
        anchors=(r"\.(?<=hooks\.)slack\.com/",),
    ),
    Rule(
        "slack_token",
        _regex(_L + r"xox[baprseo]-[0-9A-Za-z\-]{10,250}+", _L + r"xapp-[0-9A-Za-z\-]{20,250}+", check=_slack_check),
        anchors=(r"-(?<=xox[baprseo]-)", r"-(?<=xapp-)"),
    ),
    Rule(
        "discord_webhook",
        _regex(
            r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api(?:/v\d{1,2})?/webhooks/\d{15,21}/"
            r"(?P<s>[A-Za-z0-9_\-]{40,100}+)"
        ),
        anchors=("/webhooks/",),
    ),
    # A Zapier catch hook: whoever has the URL can start the Zap. Ids typed in sequence (123456/abcdef) are samples.
    Rule(
        "zapier_webhook",
        _regex(
            r"(?:https?://)?(?<![\w.\-])hooks\.zapier\.com/hooks/catch/(?P<s>[0-9]{4,12}+/[A-Za-z0-9]{5,64}+)" + _R,
            check=lambda _m, s: all(_ascending_run(part) < 5 for part in s.split("/")),
        ),
        anchors=(r"\.(?<=hooks\.)zapier\.com/",),
    ),
    Rule(
        "discord_bot_token",
        _regex(_L + r"[MNO][A-Za-z0-9_\-]{23,27}+\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}+" + _RD),
        anchors=(r"\.[A-Za-z0-9_\-]{6}\.",),
    ),
    Rule(
        "telegram_bot_token",
        _regex(r"(?:(?<=bot)|(?<![A-Za-z0-9_:]))\d{8,10}+:[A-Za-z0-9_\-]{35}" + _RD, check=_not_lowercase_word),
        anchors=(r":(?<=\d{8}:)",),
    ),
    Rule(
        "stripe_key",
        _regex(_L + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,247}+" + _R),
        anchors=(r"_(?<=[sr]k_)(?:live|test)_",),
    ),
    Rule("stripe_webhook_secret", _regex(_L + r"whsec_[A-Za-z0-9]{32,64}+" + _R), anchors=(r"_(?<=whsec_)",)),
    Rule(
        "square_access_token",
        _regex(_L + r"sq0atp-[0-9A-Za-z_\-]{22,43}+" + _RD, _L + r"EAAA[0-9A-Za-z_\-+=]{56,100}+" + _RD),
        anchors=(r"-(?<=sq0atp-)", "EAAA"),
    ),
    Rule("square_oauth_secret", _regex(_L + r"sq0csp-[0-9A-Za-z_\-]{40,50}+" + _RD), anchors=(r"-(?<=sq0csp-)",)),
    Rule(
        "paypal_braintree_token",
        _regex(
            _L + r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}" + _R,
            _L + r"A21AA[A-Za-z0-9_\-]{60,120}+" + _RD,  # PayPal REST OAuth access token
        ),
        anchors=(r"\$(?<=access_token\$)", "A21AA"),
    ),
    Rule("anthropic_key", _regex(_L + r"sk-ant-[A-Za-z0-9_\-]{20,200}+" + _RD), anchors=(r"-(?<=sk-)ant-",)),
    Rule(
        "openai_key",
        _regex(_L + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,200}+" + _RD, check=_not_lowercase_word),
        anchors=(r"-(?<=sk-)",),
    ),
    Rule(
        "huggingface_token",
        _regex(
            _L + r"hf_[A-Za-z0-9]{30,40}+" + _R, _L + r"api_org_[A-Za-z0-9]{30,40}+" + _R, check=_not_lowercase_word
        ),
        anchors=(r"_(?<=hf_)", r"_(?<=api_)org_"),
    ),
    Rule("twilio_api_key", _regex(_L + r"SK[0-9a-fA-F]{32}" + _R, check=_mixed), anchors=(r"SK[0-9a-fA-F]{32}",)),
    Rule(
        "twilio_auth_token",
        _regex(
            _L + r"AC[0-9a-f]{32}\\?[\"']?[ \t]{0,8}+[,:/][ \t]{0,8}+\\?[\"']?(?P<s>[0-9a-f]{32})" + _R,
            r"(?i:twilio[\w.\-]{0,20}?auth[_.\-]?token)" + _SEP + r"(?P<s>[0-9a-f]{32})" + _R,
        ),
        anchors=(r"AC[0-9a-f]{32}",),
        keywords=("token",),
    ),
    Rule(
        "sendgrid_api_key", _regex(_L + r"SG\.[A-Za-z0-9_\-]{16,32}+\.[A-Za-z0-9_\-]{30,64}+" + _RD), anchors=(r"SG\.",)
    ),
    # Mailgun's private API keys: key-<32 hex>, and the newer <32 hex>-<8 hex>-<8 hex>.
    Rule(
        "mailgun_api_key",
        _regex(
            r"(?<![A-Za-z0-9_\-])key-[0-9a-f]{32}" + _R,
            r"(?<![A-Za-z0-9_\-])[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}" + _RD,
            check=lambda _m, s: s.startswith("key-") or _mailgun_key(s),
        ),
        anchors=(r"-(?<=key-)", r"-(?<=[0-9a-f]{32}-)[0-9a-f]{8}-"),
    ),
    Rule("npm_token", _regex(_L + r"npm_[A-Za-z0-9]{36}" + _R), anchors=(r"_(?<=npm_)",)),
    Rule("pypi_token", _regex(_L + r"pypi-AgE[A-Za-z0-9_\-]{50,1000}+"), anchors=(r"-(?<=pypi-)AgE",)),
    Rule(
        "datadog_api_key",
        _regex(r"(?<![A-Za-z0-9])(?i:(?:datadog|dd)[_.\-]?api[_.\-]?key)" + _SEP + r"(?P<s>[0-9a-f]{32})" + _R),
        keywords=("key",),
    ),
    Rule(
        "datadog_app_key",
        _regex(
            r"(?<![A-Za-z0-9])(?i:(?:datadog|dd)[_.\-]?app(?:lication)?[_.\-]?key)" + _SEP + r"(?P<s>[0-9a-f]{40})" + _R
        ),
        keywords=("key",),
    ),
    # User and insert keys (NRAK-, NRII-), browser keys (NRJS-), and ingest license keys: 36 hex digits (an EU
    # account's start with eu01xx), then NRAL.
    Rule(
        "newrelic_key",
        _regex(
            _L
            + r"(?:NR(?:AK|II)-[A-Za-z0-9_\-]{20,40}+|NRJS-[a-f0-9]{19}|(?:[a-f0-9]{36}|eu01xx[a-f0-9]{30})NRAL)"
            + _R,
            # The agents' older license key (newrelic.ini, newrelic.yml, NEW_RELIC_LICENSE_KEY): 40 hex digits.
            r"(?<![A-Za-z0-9])(?i:license[_.\-]?key)" + _SEP + r"(?P<s>[0-9a-f]{40})" + _R,
        ),
        anchors=(r"-(?<=NRAK-|NRII-|NRJS-)", "NRAL"),
        keywords=("key",),
    ),
    Rule(
        "shopify_token",
        _regex(_L + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _R),
        anchors=(r"_(?<=shpat_|shpss_|shpca_|shppa_)",),
    ),
    Rule("atlassian_api_token", _regex(_L + r"AT[AC]TT3[A-Za-z0-9_\-=]{50,400}+"), anchors=("ATATT3", "ATCTT3")),
    Rule("gcp_oauth_client_secret", _regex(_L + r"GOCSPX-[A-Za-z0-9_\-]{28}" + _RD), anchors=(r"-(?<=GOCSPX-)",)),
    Rule("digitalocean_token", _regex(_L + r"do[por]_v1_[a-f0-9]{64}" + _R), anchors=(r"_(?<=do[por]_)v1_",)),
    Rule(
        "grafana_token",
        _regex(
            _L + r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _R,
            _L + r"glc_[A-Za-z0-9+/]{32,400}+={0,2}+",
            _L + r"eyJrIjoi[A-Za-z0-9]{70,400}+={0,3}+",  # API key: base64 of {"k":"...
            check=lambda _m, s: not low_entropy(s),
        ),
        anchors=(r"_(?<=glsa_)", r"_(?<=glc_)", r"J(?<=eyJ)rIjoi"),
    ),
    Rule(
        "vault_token",
        _regex(
            _L + r"hv[sbr]\.[A-Za-z0-9_\-]{24,400}+" + _RD,
            # A legacy service token (s. and 24 characters) mixes cases and digits; an attribute name does not.
            r"(?<![\w.$])s\.[A-Za-z0-9]{24}(?![\w.(])",
            check=lambda m, s: _mixed(m, s) and (s[1] != "." or _cased(s[2:])),
        ),
        anchors=(r"\.(?<=hv[sbr]\.)", r"\.(?<=s\.)[A-Za-z0-9]{24}"),
    ),
    Rule(
        "terraform_cloud_token",
        _regex(_L + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,100}+"),
        anchors=(r"\.atlasv1\.",),
    ),
    Rule(
        "age_secret_key",
        _regex(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
        anchors=("AGE-SECRET-KEY-1",),
    ),
    Rule(
        "linear_api_key", _regex(_L + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + _R), anchors=(r"_(?<=lin_)(?:api|oauth)_",)
    ),
    Rule(
        "notion_token",
        _regex(_L + r"secret_[A-Za-z0-9]{43}" + _R, _L + r"ntn_[A-Za-z0-9]{40,60}+" + _R, check=_mixed),
        anchors=(r"_(?<=secret_)", r"_(?<=ntn_)"),
    ),
    Rule(
        "doppler_token",
        # dp.st.TOKEN, or with its environment's slug: dp.st.prd.TOKEN
        _regex(_L + r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{2,35}+\.)?[A-Za-z0-9]{40,44}" + _R),
        anchors=(r"\.(?<=dp\.)(?:pt|st|sa|ct|scim|audit)\.",),
    ),
    Rule("postman_api_key", _regex(_L + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _R), anchors=("PMAK-",)),
    Rule("pulumi_token", _regex(_L + r"pul-[a-f0-9]{40}" + _R), anchors=(r"-(?<=pul-)",)),
    Rule("dynatrace_token", _regex(_L + r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}" + _R), anchors=(r"\.(?<=dt0c01\.)",)),
    Rule(
        "mapbox_secret_token",
        _regex(_L + r"sk\.eyJ[A-Za-z0-9_\-]{20,400}+\.[A-Za-z0-9_\-]{20,100}+" + _RD),
        anchors=(r"\.(?<=sk\.)eyJ",),
    ),
    Rule(
        "okta_api_token",
        _regex(r"(?<![A-Za-z0-9])SSWS[ \t]{1,8}+(?P<s>[A-Za-z0-9_\-]{40,42})" + _RD, check=_mixed),
        anchors=(r"SSWS[ \t]",),
    ),
    Rule(
        "firebase_cloud_messaging_key",
        _regex(_L + r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,200}+"),
        anchors=(r":APA91b",),
    ),
    Rule("sentry_auth_token", _regex(_L + r"sntry[us]_[A-Za-z0-9+/=_]{40,400}+"), anchors=(r"_(?<=sntry[us]_)",)),
    Rule(
        "heroku_api_key",
        _regex(
            _L + r"HRKU-[A-Za-z0-9_\-]{60}" + _RD,
            r"(?i:heroku[\w.\-]{0,20}?(?:api[_.\-]?key|token|secret))" + _SEP + r"(?P<s>" + _UUID.pattern + r")" + _R,
        ),
        anchors=("HRKU-",),
        keywords=("key", "token", "secret"),
    ),
    # A UUID is an id anywhere else; assigned to a Snyk / Squarespace key or token it is the credential itself.
    Rule(
        "keyed_uuid_token",
        _regex(
            r"(?<![A-Za-z0-9])(?i:(?:snyk|squarespace)[\w.\-]{0,20}?(?:key|token|secret))"
            + _GLUE_VALUE
            + r"(?P<s>"
            + _UUID.pattern
            + r")"
            + _R,
            check=lambda _m, s: not low_entropy(s.replace("-", "")),
        ),
        keywords=("key", "token", "secret"),
    ),
    Rule(
        "sonar_token",
        _regex(
            r"(?:(?<=-D)|(?<![A-Za-z0-9]))(?i:sonar[_.\-]?(?:login|token))"
            + _GLUE_VALUE
            + r"(?P<s>(?:sq[pua]_)?[A-Za-z0-9]{40})"
            + _R,
            check=_random,
        ),
        keywords=("login", "token"),
    ),
    # Sidekiq Pro / Enterprise gem server credentials (user:password, both 8 hex digits).
    Rule(
        "sidekiq_secret",
        _regex(
            _L + r"BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM[\"']?[ \t]{0,8}+[:=][ \t]{0,8}+[\"']?"
            r"(?P<s>[a-f0-9]{8}:[a-f0-9]{8})" + _R,
            r"(?<![\w.\-])(?:gems|enterprise)\.contribsys\.com[ \t]{1,8}+[\"']?(?P<s_cfg>[a-f0-9]{8}:[a-f0-9]{8})" + _R,
            check=_random,
        ),
        anchors=("__CONTRIBSYS__COM", r"\.(?<=contribsys\.)com[ \t]"),
    ),
    Rule(
        "ai_provider_key",
        _regex(
            _L + r"gsk_[A-Za-z0-9]{48,56}" + _R,  # Groq
            _L + r"pplx-[A-Za-z0-9]{40,56}" + _R,  # Perplexity
            _L + r"xai-[A-Za-z0-9]{70,90}" + _R,  # xAI
            _L + r"r8_[A-Za-z0-9]{37}" + _R,  # Replicate
            check=_mixed,
        ),
        anchors=(r"_(?<=gsk_)", r"-(?<=pplx-)", r"-(?<=xai-)", r"_(?<=r8_)"),
    ),
    Rule(
        "google_oauth_token",
        _regex(_L + r"ya29\.[0-9A-Za-z_\-]{30,2048}+" + _RD, _L + r"1//0[0-9A-Za-z_\-]{40,512}+" + _RD, check=_mixed),
        anchors=(r"\.(?<=ya29\.)", r"/(?<=1/)/0"),
    ),
    Rule(
        "facebook_access_token",
        _regex(
            _L + r"EAA[A-Za-z0-9]{90,512}+" + _R,
            # An app access token: the app's id, '|' and its secret, after the word facebook.
            r"(?i:facebook)[\w.\-]{0,32}?[\s\"':=]{1,8}+(?P<s>\d{15,16}\|[A-Za-z0-9_\-]{27,40}+)" + _RD,
            check=_mixed,
        ),
        anchors=("EAA", r"\|(?<=\d\|)"),
    ),
    Rule(
        "azure_ad_client_secret",
        _regex(
            r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", check=_mixed
        ),
        anchors=(r"~(?<=\dQ~)",),
    ),
    Rule(
        "mailchimp_api_key",
        _regex(r"(?<![A-Za-z0-9_\-])[0-9a-f]{32}-us\d{1,2}" + _R),
        anchors=(r"-(?<=[0-9a-f]-)us[0-9]",),
    ),
    Rule(
        "airtable_token",
        _regex(_L + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + _R),
        anchors=(r"\.(?<=pat[A-Za-z0-9]{14}\.)",),
    ),
    # Developer platforms whose tokens carry a fixed prefix.
    Rule(
        "platform_token",
        _regex(
            _L + r"dckr_pat_[A-Za-z0-9_\-]{27,40}+" + _RD,  # Docker Hub
            _L + r"rubygems_[a-f0-9]{48}" + _R,  # RubyGems
            _L + r"sq[pua]_[a-f0-9]{40}" + _R,  # SonarQube
            _L + r"bkua_[a-f0-9]{40}" + _R,  # Buildkite
            _L + r"sbp_[a-f0-9]{40}" + _R,  # Supabase
            _L + r"sb_secret_[A-Za-z0-9_\-]{30,64}+" + _RD,  # Supabase secret keys
            _L + r"figd_[A-Za-z0-9_\-]{40,64}+" + _RD,  # Figma
            _L + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}+",  # PlanetScale
            _L + r"nfp_[A-Za-z0-9]{36}" + _R,  # Netlify
            _L + r"fo1_[A-Za-z0-9_\-]{43}" + _RD,  # Fly.io
            _L + r"fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,8192}+={0,3}+",  # Fly.io macaroon (after "FlyV1 ")
            _L + r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}" + _RD,  # 1Password
            r"(?i:https?://claude\.ai)/code/session_[A-Za-z0-9]{20,64}+" + _R,  # a Claude Code session link
            _L + r"s-s4t2(?:ud|af)-[a-f0-9]{64}" + _R,  # 42 Intra client secret
            _L + r"rnd_[A-Za-z0-9]{32}" + _R,  # Render
            _L + r"CFPAT-[A-Za-z0-9_\-]{43}" + _RD,  # Contentful
            _L + r"aio_[A-Za-z0-9]{28}" + _R,  # Adafruit IO
            _L + r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}" + _R,  # CircleCI
            _L + r"rdme_[a-z0-9]{70}" + _R,  # ReadMe
            _L + r"tfp_[A-Za-z0-9_\-.=]{44,59}+" + _RD,  # Typeform
            _L + r"shippo_(?:live|test)_[a-f0-9]{40}" + _R,  # Shippo
            _L + r"rzp_live_[A-Za-z0-9]{14}" + _R,  # Razorpay
            _L + r"FLWSECK(?:_TEST)?-[a-h0-9]{32}-X" + _R,  # Flutterwave secret key
            _L + r"FLWSECK(?:_TEST)?-[a-h0-9]{12}" + _R,  # Flutterwave encryption key
            _L + r"dapi[a-f0-9]{32}(?:-[0-9])?" + _R,  # Databricks
            _L + r"LTAI[A-Za-z0-9]{20}" + _R,  # Alibaba Cloud access key id
            _L + r"AKCp[A-Za-z0-9]{69}" + _R,  # Artifactory API key
            _L + r"ops_eyJ[A-Za-z0-9+/]{250,8192}+={0,3}+",  # 1Password service account
            _L + r"p8e-[A-Za-z0-9]{32}" + _R,  # Adobe client secret
            _L + r"CLOJARS_[a-z0-9]{60}" + _R,  # Clojars
            r"(?<![A-Za-z0-9+/])EZ[AT]K[A-Za-z0-9]{54}" + _R,  # EasyPost (live and test)
            _L + r"fio-u-[A-Za-z0-9_=\-]{64}" + _RD,  # Frame.io
            r"(?<![\w.\-/])ico-[A-Za-z0-9]{32}" + _R,  # Infracost
            _L + r"duffel_(?:test|live)_[A-Za-z0-9_=\-]{43}" + _RD,  # Duffel
            _L + r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}" + _R,  # Sourcegraph
            _L + r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}" + _R,  # Brevo (Sendinblue) API / SMTP key
            _L + r"pnu_[A-Za-z0-9]{36}" + _R,  # Prefect
            _L + r"tk-us-[A-Za-z0-9_\-]{48}" + _RD,  # Scalingo
            _L + r"sm_(?:pat|aat|sat)_[A-Za-z0-9]{16,64}+" + _R,  # SettleMint
            _L + r"sha256~[A-Za-z0-9_\-]{43}" + _RD,  # OpenShift user token
            _L + r"API-[A-Z0-9]{26}" + _R,  # Octopus Deploy
            _L + r"AQVN[A-Za-z0-9_\-]{35,38}" + _RD,  # Yandex Cloud API key
            _L + r"t1\.[A-Za-z0-9_\-]{8,200}+={0,2}+\.[A-Za-z0-9_\-]{86}={0,2}+",  # Yandex Cloud IAM token
            # Plaid access token: access-<environment>-<uuid>
            _L + r"access-(?:sandbox|development|production)-" + _UUID.pattern + _R,
            _L + r"tskey-(?:auth|client|api|webhook|scim)-[A-Za-z0-9]{6,32}+-[A-Za-z0-9]{16,64}+" + _R,  # Tailscale
            _L + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _R,  # LangSmith
            r"(?<![\w-])APP_KEY[ \t]{0,4}+=[ \t]{0,4}+['\"]?(?P<s>base64:[A-Za-z0-9+/]{43}=)",  # Laravel's app key
            r"(?<![\w.\-])v1\.0-[a-f0-9]{24}-[a-f0-9]{100,200}+" + _R,  # Cloudflare Origin CA key
            r"(?<![\w.])(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}" + _R,  # Harness
            _L + r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk" + _R,  # MaxMind license key
            _L + r"cmVmd[A-Za-z0-9]{59}" + _R,  # Artifactory reference token
            # Kaggle's kaggle.json: {"username": "...", "key": "<32 hex>"}
            r"\"username\"[ \t]{0,8}+:[ \t]{0,8}+\"[^\"\r\n]{1,64}+\"[ \t]{0,8}+,[ \t\r\n]{0,64}+\"key\"[ \t]{0,8}+:[ \t]{0,8}+"
            r"\"(?P<s>[0-9a-f]{32})\"",
            check=_random,
        ),
        anchors=(
            r"_(?<=dckr_)pat_",
            r"_(?<=rubygems_)",
            r"_(?<=sq[pua]_)",
            r"_(?<=bkua_)",
            r"_(?<=sbp_)",
            r"_(?<=sb_)secret_",
            r"_(?<=figd_)",
            r"_(?<=pscale_)",
            r"_(?<=nfp_)",
            r"_(?<=fo1_)",
            r"_(?<=fm1[ar]_)",
            r"_(?<=fm2_)",
            "A3-",
            "/code/session_",
            r"-(?<=s-)s4t2",
            r"_(?<=rnd_)",
            r"-(?<=CFPAT-)",
            r"_(?<=aio_)",
            r"_(?<=CCIPAT_)",
            r"_(?<=rdme_)",
            r"_(?<=tfp_)",
            r"_(?<=shippo_)(?:live|test)_",
            r"_(?<=rzp_)live_",
            "FLWSECK",
            "dapi",
            "LTAI",
            "AKCp",
            r"_(?<=ops_)eyJ",
            r"-(?<=p8e-)",
            "CLOJARS_",
            "EZ[AT]K",
            r"-(?<=fio-)u-",
            r"-(?<=ico-)",
            r"_(?<=duffel_)(?:test|live)_",
            r"_(?<=sgp_)",
            r"-(?<=xkeysib-)",
            r"-(?<=xsmtpsib-)",
            r"_(?<=pnu_)",
            r"-(?<=tk-)us-",
            r"_(?<=sm_)(?:pat|aat|sat)_",
            r"~(?<=sha256~)",
            "API-",
            "AQVN",
            r"\.(?<=t1\.)",
            r"-(?<=access-)(?:sandbox|development|production)-",
            r"-(?<=tskey-)",
            "APP_KEY",
            r"_(?<=lsv2_)",
            r"-(?<=v1\.0-)",
            r"\.(?<=pat\.)",
            r"\.(?<=sat\.)",
            "_mmk",
            "V(?<=cmV)md",
            '"key"',
        ),
    ),
    # SQL: CREATE/ALTER USER|ROLE ... PASSWORD 'value', MySQL's IDENTIFIED BY 'value'.
    Rule(
        "sql_password",
        _regex(
            r"(?i:(?<![A-Za-z0-9_])(?:identified[ \t]{1,8}+by"
            r"|(?:create|alter)[ \t]{1,8}+(?:user|role)[ \t]{1,8}+[^\s;']{1,128}+(?:[ \t]{1,8}+[a-z_]{1,32}+){0,6}?"
            r"[ \t]{1,8}+password))[ \t]{1,8}+'(?P<s>[^'\s]{4,256}+)'",
            # Oracle takes the password unquoted: CREATE USER x IDENTIFIED BY <password>
            r"(?<![A-Za-z0-9_])IDENTIFIED[ \t]{1,8}+BY[ \t]{1,8}+(?P<s_bare>[A-Za-z][A-Za-z0-9_#$]{5,127}+)(?![\w'\"])",
            check=lambda m, s: _prose_password_value(s) if m.groupdict().get("s_bare") else _sql_password_check(m, s),
        ),
        anchors=(r"'(?<=[Dd][ \t]')", r"'(?<=[Yy][ \t]')", "IDENTIFIED"),
    ),
    Rule("sql_row_credential", _find_sql_rows, anchors=("values", "VALUES", "Values")),
    Rule(
        "jwt",
        _regex(
            r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,4096}+\.eyJ[A-Za-z0-9_\-]{8,8192}+\.[A-Za-z0-9_\-]{8,4096}+" + _RD,
            r"(?<![A-Za-z0-9+/])ZXlK[A-Za-z0-9+/]{60,16384}+={0,2}+",  # a JWT base64-encoded once more
            check=lambda _m, s: (
                not s.endswith(_JWT_IO_SAMPLE)
                and (not s.startswith("ZXlK") or _JWT.match(_b64_text(s)) is not None or _b64_jwt_header(s))
            ),
        ),
        anchors=(r"\.eyJ", "ZXlK"),
    ),
    Rule(
        "basic_auth",
        _regex(
            r"(?i:authorization)"
            + _SEP
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
        _regex(
            r"(?:(?i:authorization)" + _SEP + r"(?i:bearer)|" + _L + r"Bearer)[ \t]{1,8}+"
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
        _regex(
            r"(?<![A-Za-z0-9_:])(?i:authorization)" + _SEP + r"(?:(?P<scheme>(?i:(?:api-)?token))[ \t]{1,8}+)?"
            r"(?P<s>[A-Za-z0-9_=~@.+/\-]{8,4096}+)(?![^\s'\"\\,;)])",
            check=_authorization_check,
        ),
        keywords=("authorization",),
    ),
    Rule(
        "twitter_bearer_token",
        _regex(r"(?<![A-Za-z0-9%])A{20}[A-Za-z0-9%]{80,120}+(?![A-Za-z0-9%])", check=_twitter_bearer_check),
        anchors=("AAAAAAAAAAAAAAAAAAAA",),
    ),
    Rule(
        "teams_webhook",
        _regex(
            r"https://[A-Za-z0-9\-]{1,63}+\.webhook\.office\.com/webhookb2/"
            r"(?P<s>[A-Za-z0-9\-]{36}@[A-Za-z0-9\-]{36}/IncomingWebhook/[A-Za-z0-9]{32}/[A-Za-z0-9\-]{36})",
        ),
        anchors=(r"\.(?<=webhook\.)office\.com/webhookb2/",),
    ),
    # The anchor is the scheme's '//' with the user-info after it (greedy: see _joinable), so a URL without a
    # password (most of them) runs nothing.
    Rule(
        "url_credentials",
        _regex(_URL_PASSWORD, check=_url_check),
        anchors=(r"/(?<=:/)/[^\s:/@?#\[\]'\"<>]{0,128}:[^\s@/?#'\"<>]{1,256}@",),
    ),
    # Credentials on a command line: curl/wget/httpie `-u user:pass`, `--user user:pass`, `--password value`.
    Rule(
        "cli_password",
        _regex(
            r"(?<![\w-])(?:-u|--user|--basic-auth)(?:[ \t]{1,4}+|=)['\"]?[^\s:'\"$]{0,64}+:['\"]?"
            r"(?P<s>[^\s'\"`$]{3,255}[^\s'\"`$,.;:)\]}])",
            # -u KEY: -- an API key as the user name, the password left empty (Stripe, Elasticsearch, Mailgun)
            r"(?<![\w-])(?:-u|--user)(?:[ \t]{1,4}+|=)['\"]?(?P<s_key>[A-Za-z0-9_\-!@#%^&*+=./]{8,128}+):['\"]?(?![^\s'\"])",
            r"(?<![\w-])--(?:password|passwd|pass)(?:[ \t]{1,4}+|=)['\"]?(?P<s>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # docker login [-u user] -p VALUE (podman, helm registry login, ...). A secret never ends on punctuation.
            r"(?<![\w-])(?:login|mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport)"
            r"(?:[ \t]{1,4}+[^\s|;&]{1,256}+){0,6}?[ \t]{1,4}+-p(?:[ \t]{1,4}+|=)['\"]?"
            r"(?P<s_p>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # sshpass -p VALUE, redis-cli -a VALUE, and mysql's attached -pVALUE
            r"(?<![\w-])(?:sshpass[ \t]{1,4}+-p|redis-cli(?:[ \t]{1,4}+[^\s|;&]{1,256}+){0,6}?[ \t]{1,4}+-a)"
            r"[ \t]{0,4}+['\"]?(?P<s_sp>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])mysql(?:dump|admin|import|check)?(?:[ \t]{1,4}+[^\s|;&]{1,256}+){0,8}?[ \t]{1,4}+-p['\"]?"
            r"(?P<s_my>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # SQL Server's sqlcmd / bcp / osql -P VALUE, and Windows' net use ... /user:NAME VALUE
            r"(?<![\w-])(?:sqlcmd|bcp|osql)(?:[ \t]{1,4}+[^\s|;&]{1,256}+){0,8}?[ \t]{1,4}+-P[ \t]{1,4}+['\"]?"
            r"(?P<s_sq>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])(?i:net[ \t]{1,4}+use)[^\r\n]{0,256}?[ \t]/user:[^\s]{1,128}+[ \t]{1,4}+"
            r"(?P<s_nu>[^\s'\"`$/*-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # PowerShell: ConvertTo-SecureString "VALUE" -AsPlainText -Force
            r"ConvertTo-SecureString[ \t]{1,8}+(?:-String[ \t]{1,8}+)?(?P<q>['\"])(?P<s_ps>[^'\"\r\n$]{1,256}+)(?P=q)"
            r"[ \t]{1,8}+-AsPlainText",
            # htpasswd -b[c] FILE USER VALUE, htpasswd -nb USER VALUE: the password on the command line
            r"(?<![\w-])htpasswd(?:[ \t]{1,4}+-[A-Za-z]{1,8}+)*?[ \t]{1,4}+-(?P<hf>[A-Za-z]{0,7}b[A-Za-z]{0,7})"
            r"(?:[ \t]{1,4}+-[A-Za-z]{1,8}+)*+(?:[ \t]{1,4}+(?P<ha>[^\s\-|;&][^\s|;&]{0,255}+)){1,2}?"
            r"[ \t]{1,4}+['\"]?(?P<s_ht>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])['\"]?(?=[ \t]*+(?:$|[\r\n|;&]))",
            # openssl -k VALUE; 7z/rar -pVALUE; zip/unzip -P VALUE; keytool -storepass/-keypass VALUE; gpg --passphrase
            r"(?<![\w-])openssl(?:[ \t][^\r\n|;&]{0,256}?)?[ \t]-k[ \t]{1,4}+['\"]?"
            r"(?P<s_ossl>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])(?:7z|7za|7zr|rar|unrar)(?:[ \t][^\r\n|;&]{0,256}?)?[ \t]-p['\"]?"
            r"(?P<s_7z>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])(?:zip|unzip|zipcloak)(?:[ \t][^\r\n|;&]{0,256}?)?[ \t]-P[ \t]{1,4}+['\"]?"
            r"(?P<s_zip>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass)[ \t]{1,4}+['\"]?"
            r"(?P<s_kt>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])--passphrase(?:[ \t]{1,4}+|=)['\"]?(?P<s_gpg>[^\s'\"`$-][^\s'\"`$]{2,254}[^\s'\"`$,.;:)\]}])",
            # echo VALUE | sudo -S ...: sudo reads the password from the pipe
            r"(?<![\w-])echo[ \t]{1,4}+(?P<q2>['\"]?)(?P<s_su>[^\s'\"`$|][^\s'\"`|]{2,254}+)(?P=q2)[ \t]{0,4}+\|[ \t]{0,4}+"
            r"sudo[ \t]{1,4}+(?:-[A-Za-z]{1,4}+[ \t]{1,4}+)*?-[A-Za-z]{0,3}S",
            check=_cli_check,
        ),
        anchors=(
            "htpasswd",
            r"\|[ \t]{0,4}sudo[ \t]",
            r"-k(?<=[ \t]-k)",
            r"-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass)",
            "--passphrase",
            r"-u[ \t=]",
            r"--user[ \t=]",
            r"--basic-auth[ \t=]",
            "--pass",
            r"-p(?<=[ \t]-p)",
            r"-a(?<=[ \t]-a)",
            r"-P(?<=[ \t]-P)",
            r":(?<=/user:)",
            "ConvertTo-SecureString",
        ),
    ),
    # An LDAP client's bind password as its config files write it: ldap.conf / nslcd.conf ``bindpw VALUE``,
    # slapd.conf ``rootpw VALUE``, sssd.conf ``ldap_default_authtok = VALUE``. A stored hash ({SSHA}...) is not one.
    Rule(
        "ldap_password",
        _regex(
            r"(?m)^[ \t]{0,16}+(?:bindpw|rootpw|ldap_default_authtok|ldap_bind_pw|bind_pw|BINDPW|ROOTPW|LDAP_DEFAULT_AUTHTOK|BIND_PW)(?:[ \t]{0,8}+[=:][ \t]{0,8}+|[ \t]{1,8}+)"
            r"(?P<q>['\"]?)(?P<s>[^\s'\"{][^\s'\"]{2,255}+)(?P=q)[ \t]{0,8}+\r?$",
            check=lambda _m, s: assignment_value_ok(s, quoted=True, password=True),
        ),
        anchors=("bindpw", "rootpw", "authtok", "bind_pw", "BINDPW", "ROOTPW", "AUTHTOK", "BIND_PW"),
    ),
    # A PostgreSQL password file (.pgpass) line, hostname:port:database:username:password: the rest of the line.
    Rule(
        "pgpass_password",
        _regex(
            r"(?m)^[ \t]{0,8}+(?P<host>\*|[A-Za-z0-9][A-Za-z0-9.\-]{0,252}+):(?:[0-9]{1,5}|\*):[\w.\-*]{1,63}+:"
            r"(?P<login>[\w.\-*@]{1,63}+):(?P<s>[^\s:][^\r\n]{0,254}[^\s])[ \t]{0,8}+\r?$",
            check=lambda m, secret: (
                (m.group("host") == "*" or any(c.isalpha() or c == "." for c in m.group("host")))
                and _prose_value(secret)
                and assignment_value_ok(secret, quoted=True, password=True)
            ),
        ),
        # The colons around the database name: a colon after a digit alone ("Document 5:", "12:30") is everywhere.
        anchors=(r":(?<=[0-9*]:)[\w.\-*]{1,63}+:",),
    ),
    # A session cookie in a Cookie / Set-Cookie header: whoever holds it is logged in. The header's casings are the
    # anchors' (Cookie, cookie, COOKIE).
    Rule(
        "session_cookie",
        _regex(
            r"(?<![\w-])(?:(?:[Ss]et|SET)-)?(?:[Cc]ookie|COOKIE)[ \t]{0,8}+:[^\r\n]{0,1024}?(?<![\w.\-])"
            r"[\w.\-]{0,32}(?i:sess(?:ion)?(?:[_\-]?id)?|sid)=(?P<s>[^;,\s\"']{16,1024}+)",
            check=_random,
        ),
        anchors=("ookie", "OOKIE"),
    ),
    # A .netrc / _netrc entry (curl, git, ftp): "machine HOST login USER password VALUE", on one line or several.
    Rule(
        "netrc_password",
        _regex(
            r"(?<![\w-])(?:machine[ \t]{1,8}+[^\s]{1,253}+|default)(?:\s{1,64}+(?:account|port)[ \t]{1,8}+[^\s]{1,256}+){0,2}?"
            r"\s{1,64}+login[ \t]{1,8}+(?P<login>[^\s]{1,256}+)(?:\s{1,64}+(?:account|port)[ \t]{1,8}+[^\s]{1,256}+){0,2}?"
            r"\s{1,64}+password[ \t]{1,8}+(?P<s>[^\s'\"`]{1,256}+)",
            check=_netrc_check,
        ),
        anchors=("machine", "default"),
    ),
    # A credential-named element or setting written as markup or a call, not as key = value: <password>v</password>,
    # <add key="ApiKey" value="v"/>, PHP's define('DB_PASSWORD', 'v').
    Rule(
        "sensitive_config_value",
        _regex(
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
                _keyed_value(m.group("k"), secret)
                or (_WP_SECRET.fullmatch(m.group("k")) is not None and assignment_value_ok(secret, quoted=True))
            ),
        ),
        anchors=(
            r"</[\w.\-]{0,64}(?i:word|wd|phrase|pass|secret|token|auth|key)>",
            r"\"[ \t]{1,8}value[ \t]{0,4}=",
            r"\((?<=define\()",
            ">(?:" + _tail_behind(">", ('"',)) + ")",
            r"\n[ \t]{0,64}value:",
            '"value"',
            '"Value"',
            "</key>",
            "</string>",
            r'"[ \t]{0,8}\{',
        ),
    ),
    Rule(
        "sensitive_assignment",
        _find_assignments,
        keywords=_KEYWORD_TAILS,
    ),
    Rule("dsl_credential", _find_dsl_values, anchors=_DSL_SPOTS),
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
        _regex(
            r"(?<![\w$])(?P<k>[A-Za-z_$][\w$]{0,63}+)[ \t]{0,4}+(?:\|\||\?\?|\?:)[ \t]{0,4}+(?P<q>['\"])"
            r"(?P<s>[^'\"\\\s]{1,256}+)(?P=q)",
            # Rust: env::var("API_KEY").unwrap_or("v"), .unwrap_or_else(|_| "v".into()); Python: getenv("X") or "v"
            r"\([ \t]{0,4}+\"(?P<k>[A-Za-z_][\w.\-]{0,63}+)\"[ \t]{0,4}+\)[ \t]{0,4}+(?:\.unwrap_or\([ \t]{0,4}+"
            r"|\.unwrap_or_else\([ \t]{0,4}+\|[^|]{0,8}+\|[ \t]{0,4}+)\"(?P<s>[^\"\\\s]{1,256}+)\"",
            r"\([ \t]{0,4}+(?P<q>['\"])(?P<k>[A-Za-z_][\w.\-]{0,63}+)(?P=q)[ \t]{0,4}+\)[ \t]{1,4}+or[ \t]{1,4}+"
            r"(?P<q2>['\"])(?P<s>[^'\"\\\s]{1,256}+)(?P=q2)",
            check=lambda m, s: _keyed_value(m.group("k"), s),
        ),
        anchors=(
            r"\|\|[ \t]{0,4}['\"]",
            r"\?\?[ \t]{0,4}['\"]",
            r"\?:[ \t]{0,4}['\"]",
            r"\.unwrap_or",
            r"\)[ \t]{1,4}or[ \t]{1,4}['\"]",
        ),
    ),
    Rule(
        "csv_credential",
        _find_csv_values,
        anchors=_CSV_ENDS,
    ),
    # A password told in prose, as tickets and chat transcripts tell it: "the password for the db is Xk9m...",
    # "set the password to '...'", "use password ...". Only a value no word reads as counts (_prose_value).
    Rule(
        "prose_password",
        _regex(
            _PASSWORD_WORD
            + r"(?:[ \t]{1,4}+(?i:for|of|on)(?:[ \t]{1,4}+[^\s:=]{1,64}+){1,3}?(?:[ \t]{0,4}+[:=]|"
            + _PROSE_VERB
            + r")|"
            + _PROSE_VERB
            + r")[ \t]{1,4}+['\"`]?(?P<s>[^\s'\"`]{5,127}[^\s'\"`.,;:?)\]}])",
            r"(?i:\b(?:set|change|changed|reset)[ \t]{1,4}+(?:(?:the|my|your|his|her|its|our|their)[ \t]{1,4}+)?)"
            + _PASSWORD_WORD
            + r"[ \t]{1,4}+(?i:to)[ \t]{1,4}+['\"`]?(?P<s>[^\s'\"`]{5,127}[^\s'\"`.,;:?)\]}])",
            r"(?i:\b(?:use|using|with|enter|type)[ \t]{1,4}+(?:the[ \t]{1,4}+)?)"
            + _PASSWORD_WORD
            + r"[ \t]{1,4}+['\"`]?(?P<s>[^\s'\"`]{5,127}[^\s'\"`.,;:?)\]}])",
            # The value first: "Maple@5765 is the root pw for staging", "use Xk9!... as the password"
            r"(?<![^\s(>'\"`])['\"`]?(?P<s_before>[^\s'\"`]{5,63}[^\s'\"`.,;:?)\]}])['\"`]?[ \t]{1,4}+(?i:is|was)"
            r"[ \t]{1,4}+(?:(?i:the|my|our|your|his|her|their|its)[ \t]{1,4}+)?(?:[\w\-]{1,20}+[ \t]{1,4}+){0,3}?"
            + _PASSWORD_WORD,
            r"(?i:\buse)[ \t]{1,4}+['\"`]?(?P<s_use>[^\s'\"`]{5,127}[^\s'\"`.,;:?)\]}])['\"`]?[ \t]{1,4}+(?i:as)"
            r"[ \t]{1,4}+(?:(?i:the|my|your|our|a|an|its)[ \t]{1,4}+)?(?:[\w\-]{1,20}+[ \t]{1,4}+){0,2}?"
            + _PASSWORD_WORD,
            # No noun but what it does: "Use <value> to unlock the laptop", "I've reset it to <value>", and a bare
            # "pass" ("the jenkins admin pass is <value>"): a value only a password looks like (_value_before_noun)
            r"(?i:\buse)[ \t]{1,4}+['\"`]?(?P<s_before>[^\s'\"`]{7,127}[^\s'\"`.,;:)\]}])['\"`]?[ \t]{1,4}+to "
            r"(?:unlock|log ?in|sign in)\b",
            r"(?i:\b(?:reset|set|changed|updated))[ \t]{1,4}+it to[ \t]{1,4}+['\"`]?"
            r"(?P<s_before>[^\s'\"`]{7,127}[^\s'\"`.,;:)\]}])",
            r"\b(?:pass|Pass|PASS) (?:is|was)[ \t]{1,4}+['\"`]?(?P<s_before>[^\s'\"`]{7,127}[^\s'\"`.,;:)\]}])",
            r"\b(?:pass|Pass|PASS) for(?:[ \t]{1,4}+[^\s:=]{1,64}+){1,3}?[ \t]{0,4}+[:=][ \t]{0,4}+['\"`]?"
            r"(?P<s_before>[^\s'\"`]{5,127}[^\s'\"`.,;:)\]}])",
            r"\b(?:[Ll]og|[Ll]ogging|[Ss]ign|[Ss]igning) in with[ \t]{1,4}+['\"`]?"
            r"(?P<s_before>[^\s'\"`]{7,127}[^\s'\"`.,;:)\]}])",
            # a passphrase of plain words, quoted: the passphrase is "violet anchor marble lamp"
            _PASSWORD_WORD + r"(?:" + _PROSE_VERB + r"|[ \t]{0,4}+:)[ \t]{1,4}+(?P<dq>[\"'“])"
            r"(?P<s_phrase>[a-z]{2,24}+(?: [a-z0-9]{1,24}+){2,7}+)[\"'”]",
            check=lambda m, s: (
                _passphrase(s)
                if "s_phrase" in m.re.groupindex
                else _prose_value(s)
                if "s_before" not in m.re.groupindex
                else _value_before_noun(s)
            ),
        ),
        anchors=(
            "assword",
            "asswd",
            "asscode",
            "assphrase",
            "ASSWORD",
            "ASSWD",
            "ASSCODE",
            "ASSPHRASE",
            *_PW_ANCHORS,
            *("to " + v for v in ("unlock", "log in", "login", "sign in")),
            "in with",
            "it to",
            "pass ",  # (then "is", "was" or "for": one substring test for the three)
            "Pass ",
            "PASS ",
        ),
    ),
    # An API key told in prose: "your API key is 3f8e...", "the API key for staging: ...". Only a long value mixing
    # letters and digits counts (_prose_token); the casings taken are the ones the anchors cover.
    Rule(
        "prose_api_key",
        _regex(
            r"\b(?:[Aa]pi key|API (?:key|Key|KEY))\b"
            + r"(?:[ \t]{1,4}+(?i:for|of|on)(?:[ \t]{1,4}+[^\s:=]{1,64}+){1,3}?(?:[ \t]{0,4}+:|"
            + _PROSE_VERB
            + r")|"
            + _PROSE_VERB
            + r")[ \t]{1,4}+['\"`]?(?P<s>[^\s'\"`]{15,255}[^\s'\"`.,;:?)\]}])",
            # the key first, named after it: "here you go: <key> (that's the prod API key)"
            r"(?<![^\s:(>'\"`])['\"`]?(?P<s>[^\s'\"`]{15,255}[^\s'\"`.,;:?)\]}])['\"`]?[ \t]{0,4}+[(,\-—–][ \t]{0,4}+"
            r"(?i:that's|that is|this is|it's|it is)[ \t]{1,4}+(?:(?i:the|my|our|your)[ \t]{1,4}+)?(?:[\w\-]{1,20}+[ \t]{1,4}+){0,3}?"
            r"\b(?:[Aa]pi key|API (?:key|Key|KEY))\b",
            check=lambda _m, s: _prose_token(s),
        ),
        anchors=("pi key", "PI key", "PI Key", "PI KEY"),
    ),
    Rule("prose_secret", _find_prose_secrets, anchors=_PROSE_NOUN_ANCHORS),
    # Redis: redis.conf's requirepass/masterauth, the AUTH command, a client's auth("password").
    Rule(
        "redis_password",
        _regex(
            r"(?<![\w-])(?:requirepass|masterauth)[ \t]{1,8}+(?P<q>['\"]?)(?P<s>[^\s'\"#]{4,256}+)(?P=q)(?=[ \t]*+(?:\r?\n|\Z))",
            r"(?<![\w-])AUTH[ \t]{1,8}+(?!(?:PLAIN|LOGIN|CRAM|XOAUTH|DIGEST|EXTERNAL|GSSAPI|NTLM|OAUTH|ANONYMOUS)\b)"
            r"(?:[\w\-]{1,64}+[ \t]{1,8}+)?(?P<s_cmd>[^\s'\";]{6,256}+)",
            r"[.:]auth\([ \t]{0,4}+(?P<q2>['\"])(?P<s_call>[^'\"\s]{4,256}+)(?P=q2)[ \t]{0,4}+\)",
            check=lambda m, s: (
                s != "foobared"  # redis.conf's own commented example
                and (
                    _prose_password_value(s)
                    if m.groupdict().get("s_cmd") is not None
                    else assignment_value_ok(s, quoted=True, password=True)
                )
            ),
        ),
        anchors=("requirepass", "masterauth", r"AUTH[ \t]", r"\((?<=[.:]auth\()"),
    ),
    # A token handed to a command-line tool: vercel --token, dotnet nuget push --api-key, gh --secret ...
    Rule(
        "cli_token",
        _regex(
            r"(?<![\w-])--(?:api-?key|apikey|token|auth-token|access-token|client-secret|secret-key|account-key|sas-token"
            r"|master-key|storage-key|app-key|admin-key|signing-key|webhook-secret|bot-token|access-key-secret)(?:[ \t]{1,4}+|=)"
            r"['\"]?(?P<s>[^\s'\"`$<{-][^\s'\"`$]{14,254}[^\s'\"`$,.;:)\]}])",
            # gh secret set NAME --body VALUE, wandb login VALUE, ngrok [config add-]authtoken VALUE
            r"(?<![\w-])gh[ \t]{1,4}+secret[ \t]{1,4}+set[ \t]{1,4}+[^\s|;&]{1,128}+(?:[ \t]{1,4}+-[^\s|;&]{1,64}+)*?"
            r"[ \t]{1,4}+(?:--body|-b)(?:[ \t]{1,4}+|=)['\"]?(?P<s_gh>[^\s'\"`$<{-][^\s'\"`$]{14,254}[^\s'\"`$,.;:)\]}])",
            r"(?<![\w-])(?:wandb[ \t]{1,4}+login(?:[ \t]{1,4}+--[a-z\-]{1,32}+)*+|ngrok[ \t]{1,4}+(?:config[ \t]{1,4}+add-)?authtoken)"
            r"[ \t]{1,4}+['\"]?(?P<s_cli>[^\s'\"`$<{-][^\s'\"`$]{14,254}[^\s'\"`$,.;:)\]}])",
            check=lambda _m, s: _prose_key_value(s),
        ),
        anchors=(
            r"-(?<=--)(?:api-?key|apikey|token|auth-token|access-token|client-secret|secret-key|account-key|sas-token"
            r"|master-key|storage-key|app-key|admin-key|signing-key|webhook-secret|bot-token|access-key-secret)",
            "secret set",
            "wandb",
            "authtoken",
        ),
    ),
    Rule(
        "pinecone_api_key",
        _regex(_L + r"pcsk_[A-Za-z0-9]{4,12}_[A-Za-z0-9]{30,120}+" + _R),
        anchors=(r"_(?<=pcsk_)",),
    ),
    # An Ethereum account's private key in a Hardhat/Truffle config: accounts: ["0x<64 hex>"]
    Rule(
        "ethereum_private_key",
        _regex(
            r"(?<![\w$])accounts[ \t]{0,4}+:[ \t]{0,4}+\[[ \t\r\n]{0,64}+['\"`](?P<s>(?:0x)?[0-9a-fA-F]{64})['\"`]",
            # pk: 0x<64 hex>, PRIVKEY=<64 hex>: a wallet's key under its short names
            r"(?<![\w$])(?:pk|PK|privkey|PRIVKEY|priv|PRIV)[\"']?[:=][ \t]{0,4}+['\"`]?(?P<s_pk>(?:0x)?[0-9a-fA-F]{64})(?![0-9A-Za-z])",
            check=_random,
        ),
        anchors=(
            "accounts",
            # (the glue after a name ending as pk, privkey or priv end, maybe quoted)
            *(
                g + "(?<=" + k + q + g + ")"
                for k in ("[pP][kK]", "[kK][eE][yY]", "[iI][vV]")
                for g in ":="
                for q in ("", "[\"']")
            ),
        ),
    ),
    # A credential's setting named in prose with its value, as incident notes and chat tell it: "found SECRET_KEY
    # was set to 06c3...", "`API_TOKEN` is now Gp9...". The name is an identifier with underscores naming a
    # credential; only a long value mixing letters and digits counts (_prose_token).
    Rule(
        "prose_credential",
        _regex(
            r"(?<![\w$])[`'\"]?(?P<k>[A-Za-z][A-Za-z0-9]{0,30}+(?:_[A-Za-z0-9]{1,30}+){0,6}?_" + _PROSE_KEY_TAIL + r")"
            r"[`'\"]?[ \t]{1,4}+" + _PROSE_SETTING_VERB + r"[ \t]{1,4}+['\"`]?"
            r"(?P<s>[^\s'\"`]{15,255}[^\s'\"`.,;:?)\]}])",
            check=lambda m, s: sensitive_key(m.group("k")) and _prose_token(s),
        ),
        anchors=("_" + _PROSE_KEY_TAIL + r"[`'\"]?[ \t]{1,4}(?i:is|was|set|changed|reset|will)[ \t]",),
    ),
    # An Azure DevOps personal access token: 52 characters of lowercase base32 (the classic form, with no prefix: it
    # holds the digits 2-7), or the newer 84 characters carrying JQQJ and the AZDO signature.
    Rule(
        "azure_devops_pat",
        _regex(
            r"(?<![A-Za-z0-9_\-])(?=[a-z2-7]{0,39}[2-7][a-z2-7]{12})[a-z2-7]{52}(?![A-Za-z0-9_\-])",
            _L + r"[A-Za-z0-9]{52}JQQJ[A-Za-z0-9]{20}AZDO[A-Za-z0-9]{4}" + _R,
            check=lambda _m, s: _random(_m, s) and sum(c.isdigit() for c in s) >= 3,
        ),
        anchors=(*(d + "[a-z2-7]{12}" for d in "234567"), "AZDO"),
    ),
    # A token as a URL's user name, no password after it: a Sentry DSN (https://<key>@o1.ingest.sentry.io/2), a git
    # remote (https://<token>@host/repo). Only a random token counts; a user name is a word.
    Rule(
        "url_token_user",
        _regex(
            r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,30}+://(?P<s>[A-Za-z0-9_\-]{20,128}+)@(?=[A-Za-z0-9\[])",
            check=lambda _m, s: _cased(s) or (_HEX_TOKEN.fullmatch(s) is not None and not low_entropy(s)),
        ),
        anchors=(r"/(?<=:/)/[A-Za-z0-9_\-]{20}",),
    ),
    # A key named only by its service: COHERE=<key>, "algolia": "<key>", cohere.Client("<key>").
    Rule("provider_credential", _find_provider_credentials, anchors=_PROVIDER_SPOTS),
    # A literal handed to an API as its signing key: .NET's SymmetricSecurityKey(Encoding.UTF8.GetBytes("...")),
    # Java's SecretKeySpec("...".getBytes(), ...) and jjwt's Keys.hmacShaKeyFor, java-jwt's Algorithm.HMAC256("..."),
    # jwt.sign(payload, "...") / jwt.encode(payload, "...") and Python's hmac.new(b"...").
    Rule(
        "signing_key_literal",
        _regex(
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
        _regex(
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
    # A login told as a pair without a credential's noun: "connect with root/<password>", "log in as admin:<password>",
    # and a Wi-Fi network's name and password ("Guest Wi-Fi: CoffeeShop_Guest / <password>").
    Rule(
        "prose_account_pair",
        _regex(
            r"(?i:\b(?:with|using|as|login|log[ \t]in[ \t]as|creds?|credentials|account))[ \t:]{1,4}+(?:(?i:user)[ \t]{1,4}+)?"
            r"(?:" + "|".join(_ADMIN_ACCOUNTS) + r") ?(?P<sep>[/:]) ?"
            r"(?P<s>[^\s'\"`/:]{5,63}[^\s'\"`/:.,;?)\]}])(?![^\s.,;?)\]}'\"`])",
            # any user after "log in as" / "sign in as": "log in as qa_user / <password>"
            r"(?:log|Log|logged|Logged|sign|Sign|signed|Signed)[ \t]?in as[ \t]{1,4}+[\w.@+\-]{1,64}+ ?"
            r"(?P<sep2>[/:]) ?(?P<s_as>[^\s'\"`/:]{5,63}[^\s'\"`/:.,;?)\]}])(?![^\s.,;?)\]}'\"`])",
            # a bare "admin:<password>" (no spaces), as a chat pastes a router's login
            r"(?<![\w/.:@\-])(?:" + "|".join(_ADMIN_ACCOUNTS) + r"):(?P<s_bare>[^\s'\"`/:@]{7,63}[^\s'\"`/:@.,;?)\]}])"
            r"(?![^\s.,;?)\]}'\"`])",
            r"\b(?:" + "|".join(_WIFI_WORDS) + r")[^\r\n:]{0,40}+:[ \t]{0,4}+[^\s/]{1,64}+[ \t]{0,4}+/[ \t]{0,4}+"
            r"(?P<s_wifi>[^\s'\"`]{5,63}[^\s'\"`.,;?)\]}])(?![^\s.,;?)\]}'\"`])",
            # after ':' a lowercase name with digits is an image's tag (ubuntu:jammy-20240111), not a password
            check=_account_pair_check,
        ),
        # (each account's name, a substring test: "administrator" and "sysadmin" hold "admin")
        anchors=_ACCOUNT_ANCHORS + ("in as",) + _WIFI_ANCHORS,
    ),
    # An account's recovery or backup codes ("your recovery code is VTM4-QK00-SKH4") and a BitLocker recovery key
    # (eight groups of six digits): each opens the account or the disk without its password.
    Rule(
        "recovery_code",
        _regex(
            r"\b(?:[Rr]ecovery|RECOVERY|[Bb]ackup|BACKUP) (?:codes?|keys?|CODES?|KEYS?)"
            r"(?:[ \t]{1,4}+(?:is|are|was))?[ \t:]{0,4}+"
            r"(?P<s>[A-Za-z0-9]{4,6}+(?:-[A-Za-z0-9]{4,6}+){1,7}+)(?![\w\-])",
            r"(?<![\w\-])(?P<s_bl>\d{6}(?:-\d{6}){7})(?![\w\-])",
            check=lambda m, s: m.groupdict().get("s_bl") is not None or (_mixed(m, s) and not low_entropy(s)),
        ),
        anchors=(
            *(w + " " + n for w in ("ecovery", "ackup") for n in ("code", "key")),
            *(w + " " + n for w in ("RECOVERY", "BACKUP") for n in ("CODE", "KEY")),
            r"-(?<=\d{6}-)\d{6}-",
        ),
    ),
    # A generic leaf under a credential's object: appsettings.json's "Jwt": { "Key": "..." }, YAML's jwt:\n  key: ...
    Rule(
        "nested_credential",
        _regex(
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
                _token_shaped(s)
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

# The union of every rule's anchors, and of every rule's keywords (searched in the reversed text).
_ANY_LITERAL = tuple(dict.fromkeys(a for rule in RULES for a in rule.anchors if _LITERAL_ANCHOR.fullmatch(a)))
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
