"""Chat, mail and SMS services' tokens and webhooks: Slack, Discord, Teams, Telegram, Twilio, mail APIs."""

from __future__ import annotations

import re

from service.guard.rules.core import Rule, regex_rule
from service.guard.rules.shapes import (
    SEP,
    WORD_END,
    WORD_END_DASH,
    WORD_START,
    ascending_run,
    low_entropy,
    mixed,
    not_lowercase_word,
    sequential,
)

__all__ = ["RULES", "slack_check"]


def slack_check(_m: re.Match[str], secret: str) -> bool:
    """A Slack token is xox?-/xapp- then numeric ids (a one-digit version, or 6+ digits each) and a random part with
    a digit: xoxb-12345-abcd234, xoxp-1234567890 and xoxp-1-SlackAppConfigurationAccessTokenHere are not."""
    body = secret.partition("-")[2]
    legacy = _SLACK_LEGACY.fullmatch(body) if secret.startswith(("xoxa-", "xoxr-")) else None
    if legacy is not None:  # legacy workspace access / refresh token: xoxa-2-<random>
        return mixed(_m, legacy.group(1)) and not low_entropy(legacy.group(1))
    parts = [p for p in body.split("-") if p]
    rest = "".join(p for p in parts if not p.isdigit())
    if len(body) < 20 or not rest or not parts[0].isdigit() or low_entropy(rest):
        return False
    if any(len(p) < 6 and not (i == 0 and len(p) == 1) for i, p in enumerate(parts) if p.isdigit()):
        return False
    # The random part has a digit, or the token is the whole modern shape (xoxb-<id>-<id>-<24 characters>).
    return any(c.isdigit() for c in rest) or (len(parts) >= 3 and len(rest) >= 20)


_SLACK_LEGACY = re.compile(r"(?:[0-9]-)?([0-9A-Za-z]{8,48})")


def _mailgun_key(value: str) -> bool:
    """A newer Mailgun key's three parts are random hex: no filler (00000000) and no counter (0123...)."""
    return not sequential(value) and all(len(set(part)) > 3 for part in value.split("-"))


RULES: tuple[Rule, ...] = (
    Rule(
        "slack_webhook",
        regex_rule(
            r"(?:https?://)?(?<![\w.\-])hooks\.slack\.com/(?:services|workflows|triggers)/"
            r"(?P<s>T[A-Za-z0-9_]{6,20}/[A-Za-z0-9_/\-]{10,200}+)"
        ),
        anchors=(r"\.(?<=hooks\.)slack\.com/",),
    ),
    Rule(
        "slack_token",
        regex_rule(
            WORD_START + r"xox[baprseo]-[0-9A-Za-z\-]{10,250}+",
            WORD_START + r"xapp-[0-9A-Za-z\-]{20,250}+",
            check=slack_check,
        ),
        anchors=(r"-(?<=xox[baprseo]-)", r"-(?<=xapp-)"),
    ),
    Rule(
        "discord_webhook",
        regex_rule(
            r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api(?:/v\d{1,2})?/webhooks/\d{15,21}/"
            r"(?P<s>[A-Za-z0-9_\-]{40,100}+)"
        ),
        anchors=("/webhooks/",),
    ),
    # A Zapier catch hook: whoever has the URL can start the Zap. Ids typed in sequence (123456/abcdef) are samples.
    Rule(
        "zapier_webhook",
        regex_rule(
            r"(?:https?://)?(?<![\w.\-])hooks\.zapier\.com/hooks/catch/(?P<s>[0-9]{4,12}+/[A-Za-z0-9]{5,64}+)"
            + WORD_END,
            check=lambda _m, s: all(ascending_run(part) < 5 for part in s.split("/")),
        ),
        anchors=(r"\.(?<=hooks\.)zapier\.com/",),
    ),
    Rule(
        "discord_bot_token",
        regex_rule(
            WORD_START + r"[MNO][A-Za-z0-9_\-]{23,27}+\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}+" + WORD_END_DASH
        ),
        anchors=(r"\.[A-Za-z0-9_\-]{6}\.",),
    ),
    Rule(
        "telegram_bot_token",
        regex_rule(
            r"(?:(?<=bot)|(?<![A-Za-z0-9_:]))\d{8,10}+:[A-Za-z0-9_\-]{35}" + WORD_END_DASH, check=not_lowercase_word
        ),
        anchors=(r":(?<=\d{8}:)",),
    ),
    Rule(
        "twilio_api_key",
        regex_rule(WORD_START + r"SK[0-9a-fA-F]{32}" + WORD_END, check=mixed),
        anchors=(r"SK[0-9a-fA-F]{32}",),
    ),
    Rule(
        "twilio_auth_token",
        regex_rule(
            WORD_START + r"AC[0-9a-f]{32}\\?[\"']?[ \t]{0,8}+[,:/][ \t]{0,8}+\\?[\"']?(?P<s>[0-9a-f]{32})" + WORD_END,
            r"(?i:twilio[\w.\-]{0,20}?auth[_.\-]?token)" + SEP + r"(?P<s>[0-9a-f]{32})" + WORD_END,
        ),
        anchors=(r"AC[0-9a-f]{32}",),
        keywords=("token",),
    ),
    Rule(
        "sendgrid_api_key",
        regex_rule(WORD_START + r"SG\.[A-Za-z0-9_\-]{16,32}+\.[A-Za-z0-9_\-]{30,64}+" + WORD_END_DASH),
        anchors=(r"SG\.",),
    ),
    # Mailgun's private API keys: key-<32 hex>, and the newer <32 hex>-<8 hex>-<8 hex>.
    Rule(
        "mailgun_api_key",
        regex_rule(
            r"(?<![A-Za-z0-9_\-])key-[0-9a-f]{32}" + WORD_END,
            r"(?<![A-Za-z0-9_\-])[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}" + WORD_END_DASH,
            check=lambda _m, s: s.startswith("key-") or _mailgun_key(s),
        ),
        anchors=(r"-(?<=key-)", r"-(?<=[0-9a-f]{32}-)[0-9a-f]{8}-"),
    ),
    Rule(
        "mailchimp_api_key",
        regex_rule(r"(?<![A-Za-z0-9_\-])[0-9a-f]{32}-us\d{1,2}" + WORD_END),
        anchors=(r"-(?<=[0-9a-f]-)us[0-9]",),
    ),
    Rule(
        "teams_webhook",
        regex_rule(
            r"https://[A-Za-z0-9\-]{1,63}+\.webhook\.office\.com/webhookb2/"
            r"(?P<s>[A-Za-z0-9\-]{36}@[A-Za-z0-9\-]{36}/IncomingWebhook/[A-Za-z0-9]{32}/[A-Za-z0-9\-]{36})",
        ),
        anchors=(r"\.(?<=webhook\.)office\.com/webhookb2/",),
    ),
)
