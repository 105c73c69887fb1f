"""Shapes every rule reads a value by: placeholders, fillers, ids, paths, names, and a random token's mix."""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = [
    "ACCOUNT",
    "ANNOTATED_DEFAULT",
    "CAPS_WORD",
    "CMDLET",
    "COLOR",
    "Check",
    "DIGEST",
    "DNS_LABEL",
    "DOTTED",
    "DOTTED_NUMBER",
    "ENV_NAME",
    "IDENT",
    "ID_AND_PATH",
    "KEY_NAME",
    "MAX_VALUE",
    "NAME",
    "NAMED_VALUE",
    "NAMESPACED",
    "NUMBER",
    "PASSWORD_HASH",
    "PATH",
    "PLACEHOLDER_WORDS",
    "PLAIN_WORDS",
    "SECRET_MANAGER_NAME",
    "SEP",
    "STOPWORDS",
    "Span",
    "TYPE_NAME",
    "URL",
    "UUID",
    "WORD_END",
    "WORD_END_DASH",
    "WORD_START",
    "ascending_run",
    "cased",
    "field_name",
    "is_placeholder",
    "low_entropy",
    "mixed",
    "not_lowercase_word",
    "random_token",
    "sequential",
]

Span = tuple[int, int]


Check = Callable[[re.Match[str], str], bool]


# Every quantifier below is bounded and, where a run is followed by something it cannot contain, possessive:
# the scanner runs on every write, so one pathological input must cost linear time, not exponential.
MAX_VALUE = 1024


WORD_START = r"(?<![A-Za-z0-9_])"


WORD_END = r"(?![A-Za-z0-9_])"


WORD_END_DASH = r"(?![A-Za-z0-9_\-])"


# "key" / "key": / KEY= / key => / key := -- the assignment glue shared by every context-anchored rule.
# (up to 32 spaces before the operator: columns aligned by hand, as in Puppet, Ruby and PHP)
SEP = r"""\\?["']?[ \t]{0,32}+(?::=|=>|[:=])[ \t]{0,8}+\\?["']?"""


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


STOPWORDS = frozenset(
    "none null nil true false undefined empty required optional string str bytes int integer bool boolean number "
    "float text object any unset default".split()
)


UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


DIGEST = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)[:=\-$]?[0-9a-fA-F]{16,128}", re.IGNORECASE)


PATH = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\)")


# Stored password verifiers, not passwords: PostgreSQL SCRAM and md5, MySQL native, Django pbkdf2/bcrypt/argon2,
# crypt(3) ($1$/$5$/$6$/$2b$/$y$).
PASSWORD_HASH = re.compile(
    r"SCRAM-SHA-256\$\d{1,10}:[A-Za-z0-9+/=]{1,256}\$[A-Za-z0-9+/=]{1,256}:[A-Za-z0-9+/=]{1,256}"
    r"|md5[0-9a-f]{32}|\*[0-9A-F]{40}"
    r"|(?:pbkdf2_sha(?:1|256)|bcrypt(?:_sha256)?|argon2|scrypt)\$[A-Za-z0-9+/=.$,\-]{8,512}"
    r"|\$(?:1|2[abxy]?|5|6|y|argon2(?:id|i|d))\$[A-Za-z0-9+/=.$,\-]{8,512}"
)


URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}://")


NUMBER = re.compile(r"[-+]?\d{1,64}(?:\.\d{1,64})?")


DOTTED = re.compile(r"[A-Za-z_$][\w$]{0,64}(?:\.[A-Za-z_$][\w$]{0,64}){1,16}")


IDENT = re.compile(r"[A-Za-z_]{1,256}")


NAME = re.compile(r"[A-Za-z_][\w.\-]{0,255}")


COLOR = re.compile(r"#[0-9a-fA-F]{3,8}")


SECRET_MANAGER_NAME = re.compile(r"projects/[\w\-]{1,64}/secrets/[\w\-]{1,255}(?:/versions/[\w\-]{1,64})?")


# An e-mail address, URL-encoded or not, maybe followed by a scope path (a signed URL's X-Goog-Credential).
ACCOUNT = re.compile(
    r"[\w.+\-]{1,64}(?:@|%40)[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,8}(?:(?:/|%2F)[\w.\-]{1,64}){0,8}"
)


# A lowercase key's name and '=' (client_id=...): a value that opens so is the next pair of a log line.
NAMESPACED = re.compile(r"[A-Za-z][A-Za-z_.\-]{0,64}:[A-Za-z][A-Za-z_.\-]{0,64}")


ID_AND_PATH = re.compile(r"[\w.\-]{1,64}:(?:/|~/|\./)")


CMDLET = re.compile(r"(?:Get|Set|New|Read|Import|Export|Invoke|ConvertTo|ConvertFrom|Add|Remove)-[A-Z][A-Za-z]{1,48}")


NAMED_VALUE = re.compile(r"[a-z]{2,32}(?:_[a-z]{1,32}){0,4}=(?=[^=])")


DOTTED_NUMBER = re.compile(r"\d{1,32}(?:\.\d{1,32}){1,32}")


# A value naming a credential field or variable rather than holding one (AWS_ACCESS_KEY_ID, AWSAccessKeyId).
KEY_NAME = re.compile(r"(?:access|secret|api|private|auth)[_\-]?key(?:[_\-]?id)?\Z|key[_\-]?id\Z", re.IGNORECASE)


# Lowercase words, maybe joined (upgrades, bearer, testcontainers-localstack): a setting or a name.
PLAIN_WORDS = re.compile(r"[a-z]{1,64}(?:[_\-][a-z]{1,64}){0,8}")


# Words in CamelCase, maybe a dotted path of them (NextMarker, nextMarker, DistributionList.NextMarker): a field's
# name. Random letters rarely alternate so (each capital followed by small letters): tokens carry digits anyway.
_CAMEL_WORDS = re.compile(
    r"(?:[a-z]{1,32}|[A-Z][a-z]{1,32})(?:[A-Z][a-z]{1,32}){0,12}(?:\.(?:[A-Z][a-z]{1,32}){1,12}){0,4}"
)


CAPS_WORD = re.compile(r"[A-Z]{2,16}")


_CAMEL_PART = re.compile(r"[A-Z]?[a-z]+")


_SHORT_WORDS = frozenset({"id", "of", "to", "by", "at", "in", "on", "is", "or", "an"})


def field_name(value: str) -> bool:
    """CamelCase words (NextMarker, DistributionList.NextMarker) whose every part reads as a word: three letters or
    more with a vowel, or a short word like Id. A random letter token (keySivqgvvApNeEfv) fails the vowels."""
    if _CAMEL_WORDS.fullmatch(value) is None:
        return False
    parts = _CAMEL_PART.findall(value)
    return all(p.lower() in _SHORT_WORDS or (len(p) >= 3 and any(c in "aeiouy" for c in p.lower())) for p in parts)


# A type's name as an unquoted annotation (private_key: PKCS7PrivateKeyTypes, token: Optional[AuthToken]).
TYPE_NAME = re.compile(
    r"(?:Optional\[|Union\[)?[A-Z][A-Za-z0-9_]{0,64}(?:Type|Types|Class|Protocol|Enum|Dict|List|Str|Bytes|Info)\]?,?"
    r"|(?:Optional|Union|Literal|Annotated)\[[^\]\s]{1,128}\],?"
)


# A parameter's type and default (key: Type = None), as an unquoted value.
ANNOTATED_DEFAULT = re.compile(r"[A-Z][\w.\[\], |]{0,128}=(?:None|True|False|null|-?\d{1,32}|\(\)|\[\]|\{\})[,)]?")


# What docs write where a password goes ("https://user:password@host"): a word, not a credential.
PLACEHOLDER_WORDS = frozenset({"password", "passwd", "pass", "pwd", "pw", "secret", "mypassword", "value", "token"})


ENV_NAME = re.compile(r"[A-Z][A-Z0-9]{0,64}(?:_[A-Z0-9]{1,64}){1,16}")


DNS_LABEL = re.compile(r"[a-z][a-z0-9]{0,62}(?:-[a-z0-9]{1,63}){1,8}")


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
    return ascending_run(value) >= 7


def ascending_run(value: str) -> int:
    longest = run = 1 if value else 0
    for a, b in zip(value, value[1:]):
        run = run + 1 if ord(b) - ord(a) == 1 else 1
        longest = max(longest, run)
    return longest


def is_placeholder(value: str) -> bool:
    """Whether ``value`` is a documented placeholder, a template variable, or an already-applied mask."""
    return _PLACEHOLDER.search(value) is not None


def not_lowercase_word(_m: re.Match[str], secret: str) -> bool:
    # Real tokens are random base62; lowercase words joined by dashes (sk-learn-...) are a kebab-case identifier.
    # One unbroken run of lowercase letters after the prefix is token-shaped (sk-abcdefghijklmnopqrstuvwx).
    body = secret.partition(":")[2] or secret
    if any(c.isdigit() or c.isupper() for c in body):
        return True
    tail = body.split("-", 1)[1] if "-" in body else body.split("_", 1)[-1]
    return tail.isalpha() and len(tail) >= 20 and not low_entropy(tail)  # a filler (aaaa...) is a placeholder


def mixed(_m: re.Match[str], secret: str) -> bool:
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)


def cased(value: str) -> bool:
    """Upper case, lower case and at least two digits, not a word in CamelCase: a random token's mix."""
    return (
        sum(c.isdigit() for c in value) >= 2
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and not field_name(value)
    )


def random_token(_m: re.Match[str], secret: str) -> bool:
    return mixed(_m, secret) and not low_entropy(secret)
