"""Rules for credentials told in prose, tickets and chat transcripts."""

from __future__ import annotations

import re

from service.guard.rules.core import Rule, regex_rule
from service.guard.rules.names import passphrase, sensitive_key
from service.guard.rules.prose_nouns import PROSE_NOUN_ANCHORS, find_prose_secrets
from service.guard.rules.prose_values import (
    PASSWORD_WORD,
    PROSE_KEY_TAIL,
    PROSE_SETTING_VERB,
    PROSE_VERB,
    PW_ANCHORS,
    prose_password_value,
    prose_token,
    prose_value,
    value_before_noun,
)
from service.guard.rules.shapes import URL, low_entropy, mixed

__all__ = ["RULES"]

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


def _account_pair_check(m: re.Match[str], secret: str) -> bool:
    """A pair's password: a password's shape; after ':' (or bare) not an image's tag (ubuntu:jammy-20240111), and
    bare only as strong as a password told before its noun."""
    groups = m.groupdict()
    colon = ":" in (groups.get("sep"), groups.get("sep2")) or "s_bare" in m.re.groupindex
    return (
        prose_password_value(secret)
        and not URL.match(secret)
        and not (colon and _IMAGE_TAG.fullmatch(secret) is not None)
        and ("s_bare" not in m.re.groupindex or value_before_noun(secret))
    )


RULES: tuple[Rule, ...] = (
    # A password told in prose, as tickets and chat transcripts tell it: "the password for the db is Xk9m...",
    # "set the password to '...'", "use password ...". Only a value no word reads as counts (_prose_value).
    Rule(
        "prose_password",
        regex_rule(
            PASSWORD_WORD
            + r"(?:[ \t]{1,4}+(?i:for|of|on)(?:[ \t]{1,4}+[^\s:=]{1,64}+){1,3}?(?:[ \t]{0,4}+[:=]|"
            + PROSE_VERB
            + r")|"
            + PROSE_VERB
            + r")[ \t]{1,4}+['\"`]?(?P<s>[^\s'\"`]{5,127}[^\s'\"`.,;:?)\]}])",
            r"(?i:\b(?:set|change|changed|reset)[ \t]{1,4}+(?:(?:the|my|your|his|her|its|our|their)[ \t]{1,4}+)?)"
            + PASSWORD_WORD
            + r"[ \t]{1,4}+(?i:to)[ \t]{1,4}+['\"`]?(?P<s>[^\s'\"`]{5,127}[^\s'\"`.,;:?)\]}])",
            r"(?i:\b(?:use|using|with|enter|type)[ \t]{1,4}+(?:the[ \t]{1,4}+)?)"
            + PASSWORD_WORD
            + r"[ \t]{1,4}+['\"`]?(?P<s>[^\s'\"`]{5,127}[^\s'\"`.,;:?)\]}])",
            # The value first: "Maple@5765 is the root pw for staging", "use Xk9!... as the password"
            r"(?<![^\s(>'\"`])['\"`]?(?P<s_before>[^\s'\"`]{5,63}[^\s'\"`.,;:?)\]}])['\"`]?[ \t]{1,4}+(?i:is|was)"
            r"[ \t]{1,4}+(?:(?i:the|my|our|your|his|her|their|its)[ \t]{1,4}+)?(?:[\w\-]{1,20}+[ \t]{1,4}+){0,3}?"
            + PASSWORD_WORD,
            r"(?i:\buse)[ \t]{1,4}+['\"`]?(?P<s_use>[^\s'\"`]{5,127}[^\s'\"`.,;:?)\]}])['\"`]?[ \t]{1,4}+(?i:as)"
            r"[ \t]{1,4}+(?:(?i:the|my|your|our|a|an|its)[ \t]{1,4}+)?(?:[\w\-]{1,20}+[ \t]{1,4}+){0,2}?"
            + PASSWORD_WORD,
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
            PASSWORD_WORD + r"(?:" + PROSE_VERB + r"|[ \t]{0,4}+:)[ \t]{1,4}+(?P<dq>[\"'“])"
            r"(?P<s_phrase>[a-z]{2,24}+(?: [a-z0-9]{1,24}+){2,7}+)[\"'”]",
            check=lambda m, s: (
                passphrase(s)
                if "s_phrase" in m.re.groupindex
                else prose_value(s)
                if "s_before" not in m.re.groupindex
                else value_before_noun(s)
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
            *PW_ANCHORS,
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
        regex_rule(
            r"\b(?:[Aa]pi key|API (?:key|Key|KEY))\b"
            + r"(?:[ \t]{1,4}+(?i:for|of|on)(?:[ \t]{1,4}+[^\s:=]{1,64}+){1,3}?(?:[ \t]{0,4}+:|"
            + PROSE_VERB
            + r")|"
            + PROSE_VERB
            + r")[ \t]{1,4}+['\"`]?(?P<s>[^\s'\"`]{15,255}[^\s'\"`.,;:?)\]}])",
            # the key first, named after it: "here you go: <key> (that's the prod API key)"
            r"(?<![^\s:(>'\"`])['\"`]?(?P<s>[^\s'\"`]{15,255}[^\s'\"`.,;:?)\]}])['\"`]?[ \t]{0,4}+[(,\-—–][ \t]{0,4}+"
            r"(?i:that's|that is|this is|it's|it is)[ \t]{1,4}+(?:(?i:the|my|our|your)[ \t]{1,4}+)?(?:[\w\-]{1,20}+[ \t]{1,4}+){0,3}?"
            r"\b(?:[Aa]pi key|API (?:key|Key|KEY))\b",
            check=lambda _m, s: prose_token(s),
        ),
        anchors=("pi key", "PI key", "PI Key", "PI KEY"),
    ),
    Rule("prose_secret", find_prose_secrets, anchors=PROSE_NOUN_ANCHORS),
    # A credential's setting named in prose with its value, as incident notes and chat tell it: "found SECRET_KEY
    # was set to 06c3...", "`API_TOKEN` is now Gp9...". The name is an identifier with underscores naming a
    # credential; only a long value mixing letters and digits counts (_prose_token).
    Rule(
        "prose_credential",
        regex_rule(
            r"(?<![\w$])[`'\"]?(?P<k>[A-Za-z][A-Za-z0-9]{0,30}+(?:_[A-Za-z0-9]{1,30}+){0,6}?_" + PROSE_KEY_TAIL + r")"
            r"[`'\"]?[ \t]{1,4}+" + PROSE_SETTING_VERB + r"[ \t]{1,4}+['\"`]?"
            r"(?P<s>[^\s'\"`]{15,255}[^\s'\"`.,;:?)\]}])",
            check=lambda m, s: sensitive_key(m.group("k")) and prose_token(s),
        ),
        anchors=("_" + PROSE_KEY_TAIL + r"[`'\"]?[ \t]{1,4}(?i:is|was|set|changed|reset|will)[ \t]",),
    ),
    # A login told as a pair without a credential's noun: "connect with root/<password>", "log in as admin:<password>",
    # and a Wi-Fi network's name and password ("Guest Wi-Fi: CoffeeShop_Guest / <password>").
    Rule(
        "prose_account_pair",
        regex_rule(
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
        regex_rule(
            r"\b(?:[Rr]ecovery|RECOVERY|[Bb]ackup|BACKUP) (?:codes?|keys?|CODES?|KEYS?)"
            r"(?:[ \t]{1,4}+(?:is|are|was))?[ \t:]{0,4}+"
            r"(?P<s>[A-Za-z0-9]{4,6}+(?:-[A-Za-z0-9]{4,6}+){1,7}+)(?![\w\-])",
            r"(?<![\w\-])(?P<s_bl>\d{6}(?:-\d{6}){7})(?![\w\-])",
            check=lambda m, s: m.groupdict().get("s_bl") is not None or (mixed(m, s) and not low_entropy(s)),
        ),
        anchors=(
            *(w + " " + n for w in ("ecovery", "ackup") for n in ("code", "key")),
            *(w + " " + n for w in ("RECOVERY", "BACKUP") for n in ("CODE", "KEY")),
            r"-(?<=\d{6}-)\d{6}-",
        ),
    ),
)
