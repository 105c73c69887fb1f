"""Source hosts' tokens: GitHub, GitLab, Bitbucket."""

from __future__ import annotations

from service.guard.rules.core import Rule, regex_rule
from service.guard.rules.shapes import SEP, WORD_END, WORD_END_DASH, WORD_START, low_entropy

__all__ = ["RULES"]


RULES: tuple[Rule, ...] = (
    Rule(
        "github_token",
        regex_rule(
            WORD_START + r"gh[pousr]_[A-Za-z0-9]{36,255}+" + WORD_END,
            WORD_START + r"github_pat_[A-Za-z0-9_]{50,255}+" + WORD_END,
        ),
        anchors=(r"_(?<=gh[pousr]_)", r"_(?<=github_)pat_"),
    ),
    Rule(
        "gitlab_token",
        regex_rule(
            WORD_START + r"gl(?:pat|ptt|dt|rt|cbt|oas|ft|imt|soat|agent|ffct)-[A-Za-z0-9_\-]{20,64}+"
            r"(?:\.[A-Za-z0-9_\-]{1,64}+){0,3}+",
            WORD_START + r"GR1348941[A-Za-z0-9_\-]{20,64}+",  # runner registration token
            r"(?<![\w\-])_gitlab_session=(?P<s>[0-9a-z]{32})" + WORD_END,  # session cookie
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
        regex_rule(
            r"(?i:bitbucket[\w.\-]{0,30}?(?:app[_.\-]?)?(?:password|pass|secret|token))"
            + SEP
            + r"(?P<s>[A-Za-z0-9]{16,40}+)(?![A-Za-z0-9])",
            WORD_START + r"ATBB[A-Za-z0-9_=.\-]{28,64}+",
            WORD_START + r"BBDC-[A-Za-z0-9+/@_\-]{44}" + WORD_END_DASH,  # Bitbucket Data Center HTTP access token
        ),
        anchors=("ATBB", "BBDC-"),
        keywords=("password", "pass", "secret", "token"),
    ),
)
