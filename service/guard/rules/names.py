"""Which keys name a credential, and whether a value assigned to one is plausibly the secret itself."""

from __future__ import annotations

import json
import re

from service.guard.rules.shapes import (
    ACCOUNT,
    ANNOTATED_DEFAULT,
    CAPS_WORD,
    CMDLET,
    COLOR,
    DIGEST,
    DOTTED,
    DOTTED_NUMBER,
    ENV_NAME,
    ID_AND_PATH,
    IDENT,
    KEY_NAME,
    MAX_VALUE,
    NAME,
    NAMED_VALUE,
    NAMESPACED,
    NUMBER,
    PASSWORD_HASH,
    PATH,
    PLACEHOLDER_WORDS,
    PLAIN_WORDS,
    SECRET_MANAGER_NAME,
    STOPWORDS,
    TYPE_NAME,
    URL,
    UUID,
    ascending_run,
    cased,
    field_name,
    is_placeholder,
    low_entropy,
    sequential,
)

__all__ = [
    "CRED_KEY",
    "FILE_NAME",
    "KEYWORD",
    "KEYWORD_TAILS",
    "KEY_SUFFIX",
    "KEY_TAIL",
    "MESSAGE_WORDS",
    "NOT_SECRET_KEY",
    "PASSWORD_KEY",
    "WP_SECRET",
    "assignment_value_ok",
    "keyed_value",
    "keyword_pattern",
    "loose_credential",
    "passphrase",
    "sample_uuid",
    "sensitive_key",
    "sensitive_key_in_any",
    "sensitive_pair",
    "uuid_credential_key",
]

# A bare "pass" ends many words (bypass, compass, bandpass); glued to a letter it counts only after a service's
# name, as env files write it (SSHPASS=, SMTPPASS=, REDISPASS=).
_PASS_PREFIX = (
    r"(?:ssh|sftp|ftp|smtp|imap|mail|db|sql|mysql|pg|postgres|redis|mongo|ldap|vnc|rdp|proxy|admin|root|wifi|wpa)"
)


KEYWORD = (
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
KEY_SUFFIX = r"(?:[_.\-]?(?:[0-9]{1,8}|value|val|string|str|b64|base64|hex|raw|plain|plaintext|bytes|literal|base))"


_KEY_SUFFIX_REVERSED = (
    r"(?:(?:[0-9]{1,8}|eulav|lav|gnirts|rts|46b|46esab|xeh|war|nialp|txetnialp|setyb|laretil|esab)[_.\-]?)"
)


KEY_TAIL = re.compile(KEYWORD + r"\Z", re.IGNORECASE)


# How every _KEYWORD match ends (pass-word/-wd/-phrase, p-wd, secret, token, auth, ...key): a key that does not end
# so cannot match _KEY_TAIL, and the reversed key tells that with one anchored match.
KEYWORD_TAILS = (
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


_KEY_TAIL_REVERSED = re.compile("(?i:" + "|".join(t[::-1] for t in KEYWORD_TAILS) + ")")


NOT_SECRET_KEY = re.compile(
    r"(?:page|next|continuation|pagination|sync|resume|input|csrf|xsrf|csrfmiddleware|authenticity|verification"
    r"|public(?:[_.\-]?key)?)[_.\-]?token\Z",
    re.IGNORECASE,
)


def assignment_value_ok(
    value: str, *, quoted: bool, sep: str = "=", spaced: bool = False, password: bool = False, key: str = ""
) -> bool:
    """Whether the value of a ``key = value`` assignment to a sensitive key is plausibly a real secret. Under a
    ``password`` key a weak value (12345678, abcdefgh) is still a leaked password; a token or key is not a count.
    A UUID is an id, except under a ``key`` naming a credential (``uuid_credential_key``)."""
    v = value.strip()
    if len(v) < 6 or v.lower() in STOPWORDS or v.rstrip(":").lower() in PLACEHOLDER_WORDS or is_placeholder(v):
        return False
    if len(set(v)) <= 3:
        return False  # ******, xxxxxx, aaaaaa: a mask or a filler
    if v[0] in "-." and v[1:].replace("-", "").replace("_", "").isalpha():
        return False  # share_token += "-principals": a suffix being appended, not a value
    if not quoted and (ANNOTATED_DEFAULT.fullmatch(v) or TYPE_NAME.fullmatch(v)):
        return False  # startToken:Token=None, private_key: PKCS7PrivateKeyTypes -- a type annotation, not a value
    if v.startswith("--"):
        return False  # creds = " --username=" + auth: a command-line flag being assembled
    if v.startswith("pk.eyJ"):
        return False  # a Mapbox public token: meant for the browser (its secret tokens open sk.)
    if v.endswith("(") or "?." in v:
        return False  # System.fetch_env!(, session?.access_token: a call or a property read, not a literal
    if v.startswith("@Microsoft.KeyVault(") or SECRET_MANAGER_NAME.fullmatch(v):
        return False  # a reference the platform resolves at run time (Key Vault, GCP Secret Manager): no value
    if v.startswith("arn:"):
        return False  # "IAMUserChangePassword": "arn:aws:iam::aws:policy/...": an AWS resource name, not a secret
    if ID_AND_PATH.match(v) or CMDLET.fullmatch(v):
        return False  # LoadCredential=db-password:/etc/credstore/...: a file; ConvertTo-SecureString: a cmdlet
    if not password and NAMESPACED.fullmatch(v):
        return False  # _SAR_APP_KEY = "serverlessrepo:applicationId": a namespaced name, no key has only words
    if not password and ACCOUNT.fullmatch(v):
        return False  # credential=signer@x.iam.gserviceaccount.com(/scope): an account, who signs, not a secret
    if v.endswith(".apps.googleusercontent.com"):
        return False  # a Google OAuth client id: public, sent in every sign-in redirect
    if not quoted and NAMED_VALUE.match(v):
        return False  # oauth: client_id=...: a log line's next key=value pair, not this key's value
    if not password and len(v) >= 16 and low_entropy(v):
        return False  # 123123123123..., a filler
    if quoted and password and passphrase(v):
        return True  # "correct horse battery staple": a passphrase, a few plain words
    if any(c.isspace() for c in v):
        return False  # prose or a validation message ("password": "must be at least 8 characters")
    if UUID.fullmatch(v):
        return uuid_credential_key(key) and not sample_uuid(v)  # HEROKU_API_KEY=<uuid>: services issue UUID keys
    if PATH.match(v) and len(v) >= 40 and cased(v) and "." not in v:
        return True  # secret_key_base: "/tEHy...": base64 that happens to open on '/', no path
    if DIGEST.fullmatch(v) or PATH.match(v) or URL.match(v) or DOTTED_NUMBER.fullmatch(v):
        return False  # an id, a digest, a path, a URL, or a version / IP / OID
    if PASSWORD_HASH.fullmatch(v):
        return False  # a password hash (what a database stores), not the password
    if COLOR.fullmatch(v):
        return False  # a style sheet's colour (Token: "#ddd0c0")
    if NAME.fullmatch(v) and KEY_TAIL.search(v) and not (v.isalpha() and v.islower()):
        return False  # names another credential field ("input_token": "next_token"), not a value
    if NAME.fullmatch(v) and KEY_NAME.search(v):
        return False  # ACCESS_KEY = 'AWS_ACCESS_KEY_ID' / 'AWSAccessKeyId': the name of a field, not its value
    if not password and (PLAIN_WORDS.fullmatch(v) or field_name(v) or CAPS_WORD.fullmatch(v)) and not sequential(v):
        return False  # "upgrades", "output_token": "NextMarker", "DistributionList.NextMarker", "DISABLED": words
    if v[0] == ":" or v[-1] == ":" or (("%s" in v or "%d" in v) and not cased(v.replace("%s", "").replace("%d", ""))):
        return False  # :py:class:, 'username:' + ..., '%s_upgrades': markup, a label or a template
    if quoted and ENV_NAME.fullmatch(v) and not any(c.isdigit() for c in v):
        return False  # TOKEN = "REVISION_SCRIPT_FILENAME": the name of a setting, not its value
    if quoted:
        return True
    if sep == ":" and v[0] in "!&*":
        return False  # a YAML tag, anchor or alias (password: !vault |, password: *db_password)
    if v[0] in "([{<":
        return False  # an expression, a structure or a placeholder cut at a space: token = (a if b), <insert key here>
    if password and DOTTED.fullmatch(v) and _password_dots(v):
        return True  # Password=ny.VrSzXXX2T.mM; in a connection string: no attribute path has such parts
    if NUMBER.fullmatch(v) or DOTTED.fullmatch(v) or ENV_NAME.fullmatch(v) or re.search(r"[\w\])][(\[]", v):
        return False  # a number, an attribute access, an env-var name, or a call/subscript: code, not a literal
    # A bare word after ':' or a spaced '=' is a variable (password = pw) or prose (Password: required), and
    # a snake_case one is a variable even unspaced (f(token=token_value)); only KEY=word (an env file) is a literal.
    return sequential(v) or not (IDENT.fullmatch(v) and (sep != "=" or spaced or "_" in v))


# Words of messages and labels a password field is given ("must be at least 8 characters", "enter your new
# password"): a value holding one is prose, not a passphrase.
MESSAGE_WORDS = frozenset(
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


def sample_uuid(value: str) -> bool:
    """A documented example UUID, a filler (0000-0000), or one typed in sequence (12345678-abcd-...)."""
    digits = value.lower().replace("-", "")
    return value.lower().startswith(_SAMPLE_UUIDS) or low_entropy(digits) or ascending_run(digits) >= 6


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


def passphrase(value: str) -> bool:
    """Three to eight lowercase words, single-spaced, none a message word or a placeholder, 15+ characters."""
    words = value.split(" ")
    return (
        3 <= len(words) <= 8
        and len(value) >= 15
        and all(w and w.isascii() and w.isalnum() and w == w.lower() for w in words)
        and sum(w.isalpha() for w in words) >= 3
        and not any(w in MESSAGE_WORDS or w in PLACEHOLDER_WORDS for w in words)
    )


def sensitive_key(key: str) -> bool:
    """Whether a mapping key (or the identifier before '=') names a credential, e.g. ``db_password``."""
    if _KEY_TAIL_REVERSED.match(key[::-1]) is None:
        return False
    return KEY_TAIL.search(key) is not None and NOT_SECRET_KEY.search(key) is None


# A credential word's tail right after a key's end, in the reversed keys joined: the search stops only at NUL.
_ANY_KEY_TAIL_REVERSED = re.compile("\x00(?i:" + "|".join(t[::-1] for t in KEYWORD_TAILS) + ")")


def sensitive_key_in_any(keys: list[str]) -> bool:
    """Whether any of ``keys`` may be a sensitive_key (never False when one is), with one search: does some key end
    as a credential word ends? The keys are joined, each followed by NUL, and the whole reversed."""
    return bool(keys) and _ANY_KEY_TAIL_REVERSED.search(("\x00".join(keys) + "\x00")[::-1]) is not None


def sensitive_pair(key: str, value: str) -> bool:
    """Whether payload entry ``key: value`` is a credential, judged on its serialized (JSON-escaped) form."""
    if not sensitive_key(key) or (CRED_KEY.search(key) is not None and loose_credential(value)):
        return False
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    return assignment_value_ok(
        escaped[:MAX_VALUE],
        quoted=True,
        sep=":",
        spaced=True,
        password=PASSWORD_KEY.search(key) is not None,
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
_GLUE = r"""(?i:""" + KEY_SUFFIX + r"""){0,2}\\?["']?\]?(?:[ \t]{1,8}(?i:string))?[ \t]{0,32}[:.?+]{0,3}[:=]"""


# Possessive: a space, quote or backslash given back could only be matched by a keyword letter, which none is.
_GLUE_REVERSED = (
    r"""[:=][:.?+]{0,3}+[ \t]{0,32}+(?:(?i:gnirts)[ \t]{1,8}+)?\]?+["']?+\\?+(?i:""" + _KEY_SUFFIX_REVERSED + r"){0,2}"
)


def keyword_pattern(keywords: tuple[str, ...], *, reverse: bool = False) -> str:
    """The regex for "one of ``keywords`` (any case), then assignment glue"; ``reverse`` gives it for reversed text."""
    if reverse:
        return _GLUE_REVERSED + "(?i:" + "|".join(k[::-1] for k in keywords) + ")"
    return "(?i:" + "|".join(keywords) + ")" + _GLUE


CRED_KEY = re.compile(r"cred(?:ential)?s?\Z", re.IGNORECASE)


FILE_NAME = re.compile(r"[\w.\-]{1,200}\.[A-Za-z]{2,5}")


def loose_credential(value: str) -> bool:
    """Under a ``credentials`` / ``creds`` key: words (include, same-origin, SameOrigin, INCLUDE) or a file name,
    not a credential; random letters (hmVJWvLewQzocEpt) are one."""
    v = value.strip()
    if FILE_NAME.fullmatch(v) is not None:
        return True
    return all(c.isalpha() or c in "-_" for c in v) and (
        PLAIN_WORDS.fullmatch(v.lower()) is not None and (v.islower() or v.isupper() or field_name(v))
    )


# Only a password is written as a plain word; a plain word under a secret/token/key name is usually the name of a
# stored secret (existingSecret: appsecret), and a "pass" key is too often something else (shadow_pass: deferred).
PASSWORD_KEY = re.compile(r"(?:pass(?:word|wd|phrase)|pwd)\Z", re.IGNORECASE)


# WordPress's authentication keys and salts (wp-config.php): LOGGED_IN_KEY and NONCE_SALT name no credential word.
WP_SECRET = re.compile(r"(?:AUTH|SECURE_AUTH|LOGGED_IN|NONCE)_(?:KEY|SALT)")


def keyed_value(key: str, value: str) -> bool:
    """Whether quoted ``value``, given to ``key`` by markup, a DSL setting or a call, is a credential: the test a
    quoted assignment's value gets (a word under a ``credentials`` key is a mode, not one)."""
    return (
        sensitive_key(key)
        and not (CRED_KEY.search(key) is not None and loose_credential(value))
        and not is_placeholder(value)
        and assignment_value_ok(value, quoted=True, password=PASSWORD_KEY.search(key) is not None, key=key)
    )
