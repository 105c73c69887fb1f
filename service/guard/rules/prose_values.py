"""What a credential looks like when prose tells it, and the words prose names a password with."""

from __future__ import annotations

import re

from service.guard.rules.names import MESSAGE_WORDS
from service.guard.rules.shapes import (
    DOTTED,
    ENV_NAME,
    NAMED_VALUE,
    PASSWORD_HASH,
    PATH,
    TYPE_NAME,
    URL,
    UUID,
    is_placeholder,
    low_entropy,
)

__all__ = [
    "PASSWORD_WORD",
    "PROSE_KEY_TAIL",
    "PROSE_SETTING_VERB",
    "PROSE_VERB",
    "PW_ANCHORS",
    "SNAKE_OR_KEBAB",
    "prose_key_value",
    "prose_password_value",
    "prose_token",
    "prose_value",
    "strong_password",
    "value_before_noun",
]

# Written as prose writes it (password, Password, PASSWORD), so that the rule's anchors cover every casing it takes.
# (pw and pwd only before a space, a full stop or a comma: the anchors' forms)
PASSWORD_WORD = r"\b(?:[Pp]ass(?:word|wd|code|phrase)|[Pp]?ASS(?:WORD|WD|CODE|PHRASE)|(?:pwd?|PWD?)(?=[ .,]))\b"


PW_ANCHORS = tuple(w + " " for w in ("pw", "pwd", "PW", "PWD")) + tuple(
    re.escape(c) + "(?<=" + w + re.escape(c) + ")" for w in ("[pP][wW]", "[pP][wW][dD]") for c in ".,"
)


# "is", "was", "is now", ... then maybe a colon: how prose hands a value to the password it names. A bare colon
# counts only after what the password is for ("password for the db: ..."); "password: value" is an assignment.
PROSE_VERB = r"[ \t]{1,4}+(?i:is|was|is now|is still|will be|changed to|set to|reset to)(?=[ \t:]):?"


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
PROSE_KEY_TAIL = r"(?i:key|token|secret|password|passwd|pwd|pat|credentials?)"


PROSE_SETTING_VERB = (
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
        or PASSWORD_HASH.search(value) is not None
        or URL.match(value)
        or PATH.match(value)
        or DOTTED.fullmatch(value)
        or ENV_NAME.fullmatch(value)
        or _VERSION.fullmatch(value)
        or ("@" in value and "." in value.partition("@")[2])
    )


def value_before_noun(secret: str) -> bool:
    """A password told before its noun ("Maple@5765 is the root pw"): a digit, and both cases or a symbol -- the
    subject of "... is the password policy" is a word."""
    digits = sum(c.isdigit() for c in secret)
    cased = any(c.isupper() for c in secret) and any(c.islower() for c in secret)
    return (
        prose_password_value(secret)
        and digits >= 1
        and (any(not c.isalnum() for c in secret) or (cased and digits >= 2))
    )


def prose_token(secret: str) -> bool:
    """A key as prose gives it: letters with two digits or more (the pattern takes sixteen characters or more)."""
    return not _prose_describes(secret) and any(c.isalpha() for c in secret) and sum(c.isdigit() for c in secret) >= 2


def prose_value(secret: str) -> bool:
    """A password as prose gives it: letters with digits, or (eight characters or more) both cases with a symbol."""
    if _prose_describes(secret):
        return False
    if any(c.isalpha() for c in secret) and any(c.isdigit() for c in secret):
        return True
    symbol = any(not c.isalnum() for c in secret)
    return len(secret) >= 8 and symbol and any(c.isupper() for c in secret) and any(c.islower() for c in secret)


# An identifier's words (order_id_2024_v2, billing-api-prod): no part a random run of twelve or more.
SNAKE_OR_KEBAB = re.compile(r"[a-z][a-z0-9]{0,11}(?:[_\-][a-z0-9]{1,11})+")


_KEY_CHARS = re.compile(r"[A-Za-z0-9+/=_\-.~]+")


def prose_key_value(value: str) -> bool:
    """A key or token as prose gives it: 16+ characters of a token's alphabet with two digits or more (hex
    included), or 30+ of base64 in both cases; no word, UUID, path, URL, version or placeholder."""
    if not 16 <= len(value) <= 256 or _KEY_CHARS.fullmatch(value) is None or value.isalpha():
        return False
    if _prose_describes(value) or UUID.fullmatch(value):
        return False
    if value.startswith(("pk_live_", "pk_test_")):
        return False  # a Stripe publishable key: meant for the browser
    if TYPE_NAME.fullmatch(value) or _EPOCH_VERSION.match(value):
        return False  # PKCS12PrivateKeyTypes, 1:4.13+dfsg1-1: a type's or a package version's name
    if SNAKE_OR_KEBAB.fullmatch(value) or NAMED_VALUE.match(value):
        return False  # billing-api-prod, prompt_tokens=12431: a name, a log's key=value
    digits = sum(c.isdigit() for c in value)
    if digits >= 2 and any(c.isalpha() for c in value):
        return True
    return len(value) >= 30 and any(c.isupper() for c in value) and any(c.islower() for c in value)


def prose_password_value(value: str) -> bool:
    """A password as prose gives it (6+ characters): letters with digits, or 8+ with a symbol and both cases."""
    return (
        6 <= len(value) <= 128
        and _CJK.search(value) is None  # パスワードは12文字以上: the sentence goes on, glued to the noun
        and value.lower() not in MESSAGE_WORDS
        and _EPOCH_VERSION.match(value) is None
        and prose_value(value)
    )


_CJK = re.compile("[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]")  # CJK punctuation, kana, ideographs, Hangul, full width


# A package version as Debian and RPM write it: epoch:upstream (1:4.13+dfsg1-1), or a dotted number first.
_EPOCH_VERSION = re.compile(r"\d{1,9}(?::\d|\.\d)")


def strong_password(value: str) -> bool:
    """A word no prose or code makes: ten characters or more holding upper and lower case, a digit and a symbol."""
    return (
        10 <= len(value) <= 128
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
        and any(not c.isalnum() for c in value)
        and _STRONG_NOT.search(value) is None
        and prose_password_value(value)
    )


# What makes such a word a name, a path, an address or markup rather than a password.
_STRONG_NOT = re.compile(r"://|^[/~.]|@[\w\-]+\.[a-z]{2,}|[<>{}]|^\$|\.(?:com|org|io|net|py|js|md|json|yaml|yml)\b")
