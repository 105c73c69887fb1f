"""Credentials named in prose and chat: the noun, then the value that follows it (or the pair)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator

from service.guard.rules.names import MESSAGE_WORDS, sensitive_key
from service.guard.rules.prose_tables import line_start, table_values
from service.guard.rules.prose_values import prose_key_value, prose_password_value, strong_password, value_before_noun
from service.guard.rules.providers import PROVIDER_START
from service.guard.rules.shapes import URL, Span, is_placeholder

__all__ = ["PROSE_NOUN_ANCHORS", "find_prose_secrets"]

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
PROSE_NOUN_ANCHORS = (
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


def _password_noun(noun: str) -> bool:
    return _PASSWORD_NOUN_RX.fullmatch(noun) is not None


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
        provider = PROVIDER_START.fullmatch(prev) is not None  # my cohere key
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


def find_prose_secrets(text: str) -> Iterator[Span]:
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
            line = line_start(text, m.start())
            if line not in tables_read:  # each table line once: a line of many nouns costs one read
                tables_read.add(line)
                found = list(table_values(text, m, password))
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
                    or not value_before_noun(text[found_span[0] : found_span[1]])
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
            if password and strong_password(_core(word)) and not _code_word(word):
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
        if prose_password_value(value) if password else prose_key_value(value):
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
        if sep and user[:1].isalpha() and prose_password_value(pw) and not URL.match(core):
            a = at + word.rfind(pw)
            return a, a + len(pw)
        if (
            at in handed
            and j + 1 < len(words)
            and _ACCOUNT_NAME.fullmatch(core)
            and core not in _NOT_ACCOUNT | MESSAGE_WORDS
        ):
            # "creds for the vpn: jsmith <password>": a user name, then the password as the next word
            n_at, n_word, n_core = words[j + 1]
            if len(n_core) >= 8 and value_before_noun(n_core) and not _code_word(n_word) and "/" not in n_core:
                a = n_at + n_word.find(n_core)
                return a, a + len(n_core)
    return None


_ACCOUNT_NAME = re.compile(r"[a-z][a-z0-9._\-]{1,31}")


# Words prose puts where a pair's user name would be: verbs and pointers, not accounts.
_NOT_ACCOUNT = frozenset(
    "see ask check contact via stored saved kept rotated expired sent shared from under same unchanged unknown "
    "missing pending none tbd in at on is are was were be the a an my your our their his her its".split()
)
