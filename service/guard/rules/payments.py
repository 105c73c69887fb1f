"""Payment providers' keys: Stripe, Square, PayPal / Braintree."""

from __future__ import annotations

from service.guard.rules.core import Rule, regex_rule
from service.guard.rules.shapes import WORD_END, WORD_END_DASH, WORD_START

__all__ = ["RULES"]


RULES: tuple[Rule, ...] = (
    Rule(
        "stripe_key",
        regex_rule(WORD_START + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,247}+" + WORD_END),
        anchors=(r"_(?<=[sr]k_)(?:live|test)_",),
    ),
    Rule(
        "stripe_webhook_secret",
        regex_rule(WORD_START + r"whsec_[A-Za-z0-9]{32,64}+" + WORD_END),
        anchors=(r"_(?<=whsec_)",),
    ),
    Rule(
        "square_access_token",
        regex_rule(
            WORD_START + r"sq0atp-[0-9A-Za-z_\-]{22,43}+" + WORD_END_DASH,
            WORD_START + r"EAAA[0-9A-Za-z_\-+=]{56,100}+" + WORD_END_DASH,
        ),
        anchors=(r"-(?<=sq0atp-)", "EAAA"),
    ),
    Rule(
        "square_oauth_secret",
        regex_rule(WORD_START + r"sq0csp-[0-9A-Za-z_\-]{40,50}+" + WORD_END_DASH),
        anchors=(r"-(?<=sq0csp-)",),
    ),
    Rule(
        "paypal_braintree_token",
        regex_rule(
            WORD_START + r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}" + WORD_END,
            WORD_START + r"A21AA[A-Za-z0-9_\-]{60,120}+" + WORD_END_DASH,  # PayPal REST OAuth access token
        ),
        anchors=(r"\$(?<=access_token\$)", "A21AA"),
    ),
)
