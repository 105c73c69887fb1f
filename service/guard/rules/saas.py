"""Tokens with their service's own prefix: AI providers, package registries, observability, infrastructure."""

from __future__ import annotations

from service.guard.rules.core import Rule, regex_rule
from service.guard.rules.shapes import (
    SEP,
    UUID,
    WORD_END,
    WORD_END_DASH,
    WORD_START,
    cased,
    low_entropy,
    mixed,
    not_lowercase_word,
    random_token,
)

__all__ = ["RULES"]

# The glue of a provider-keyed rule: what _GLUE lets the prefilter find (= : := ::= ?= += .=, Go's "string"), plus
# => and a YAML block scalar's line break, then an optional opening quote.
_GLUE_VALUE = (
    r"""\\?["']?\]?(?:[ \t]{1,8}+(?i:string))?[ \t]{0,8}+(?:[:.?+]{0,3}[:=]|=>)[ \t]{0,8}+"""
    r"""(?:[|>][+\-]?[ \t]{0,8}+\r?\n[ \t]{1,32}+)?\\?["'`]?"""
)


RULES: tuple[Rule, ...] = (
    Rule(
        "anthropic_key",
        regex_rule(WORD_START + r"sk-ant-[A-Za-z0-9_\-]{20,200}+" + WORD_END_DASH),
        anchors=(r"-(?<=sk-)ant-",),
    ),
    Rule(
        "openai_key",
        regex_rule(
            WORD_START + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,200}+" + WORD_END_DASH,
            check=not_lowercase_word,
        ),
        anchors=(r"-(?<=sk-)",),
    ),
    Rule(
        "huggingface_token",
        regex_rule(
            WORD_START + r"hf_[A-Za-z0-9]{30,40}+" + WORD_END,
            WORD_START + r"api_org_[A-Za-z0-9]{30,40}+" + WORD_END,
            check=not_lowercase_word,
        ),
        anchors=(r"_(?<=hf_)", r"_(?<=api_)org_"),
    ),
    Rule("npm_token", regex_rule(WORD_START + r"npm_[A-Za-z0-9]{36}" + WORD_END), anchors=(r"_(?<=npm_)",)),
    Rule("pypi_token", regex_rule(WORD_START + r"pypi-AgE[A-Za-z0-9_\-]{50,1000}+"), anchors=(r"-(?<=pypi-)AgE",)),
    Rule(
        "datadog_api_key",
        regex_rule(
            r"(?<![A-Za-z0-9])(?i:(?:datadog|dd)[_.\-]?api[_.\-]?key)" + SEP + r"(?P<s>[0-9a-f]{32})" + WORD_END
        ),
        keywords=("key",),
    ),
    Rule(
        "datadog_app_key",
        regex_rule(
            r"(?<![A-Za-z0-9])(?i:(?:datadog|dd)[_.\-]?app(?:lication)?[_.\-]?key)"
            + SEP
            + r"(?P<s>[0-9a-f]{40})"
            + WORD_END
        ),
        keywords=("key",),
    ),
    # User and insert keys (NRAK-, NRII-), browser keys (NRJS-), and ingest license keys: 36 hex digits (an EU
    # account's start with eu01xx), then NRAL.
    Rule(
        "newrelic_key",
        regex_rule(
            WORD_START
            + r"(?:NR(?:AK|II)-[A-Za-z0-9_\-]{20,40}+|NRJS-[a-f0-9]{19}|(?:[a-f0-9]{36}|eu01xx[a-f0-9]{30})NRAL)"
            + WORD_END,
            # The agents' older license key (newrelic.ini, newrelic.yml, NEW_RELIC_LICENSE_KEY): 40 hex digits.
            r"(?<![A-Za-z0-9])(?i:license[_.\-]?key)" + SEP + r"(?P<s>[0-9a-f]{40})" + WORD_END,
        ),
        anchors=(r"-(?<=NRAK-|NRII-|NRJS-)", "NRAL"),
        keywords=("key",),
    ),
    Rule(
        "shopify_token",
        regex_rule(WORD_START + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + WORD_END),
        anchors=(r"_(?<=shpat_|shpss_|shpca_|shppa_)",),
    ),
    Rule(
        "atlassian_api_token",
        regex_rule(WORD_START + r"AT[AC]TT3[A-Za-z0-9_\-=]{50,400}+"),
        anchors=("ATATT3", "ATCTT3"),
    ),
    Rule(
        "grafana_token",
        regex_rule(
            WORD_START + r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + WORD_END,
            WORD_START + r"glc_[A-Za-z0-9+/]{32,400}+={0,2}+",
            WORD_START + r"eyJrIjoi[A-Za-z0-9]{70,400}+={0,3}+",  # API key: base64 of {"k":"...
            check=lambda _m, s: not low_entropy(s),
        ),
        anchors=(r"_(?<=glsa_)", r"_(?<=glc_)", r"J(?<=eyJ)rIjoi"),
    ),
    Rule(
        "vault_token",
        regex_rule(
            WORD_START + r"hv[sbr]\.[A-Za-z0-9_\-]{24,400}+" + WORD_END_DASH,
            # A legacy service token (s. and 24 characters) mixes cases and digits; an attribute name does not.
            r"(?<![\w.$])s\.[A-Za-z0-9]{24}(?![\w.(])",
            check=lambda m, s: mixed(m, s) and (s[1] != "." or cased(s[2:])),
        ),
        anchors=(r"\.(?<=hv[sbr]\.)", r"\.(?<=s\.)[A-Za-z0-9]{24}"),
    ),
    Rule(
        "terraform_cloud_token",
        regex_rule(WORD_START + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,100}+"),
        anchors=(r"\.atlasv1\.",),
    ),
    Rule(
        "linear_api_key",
        regex_rule(WORD_START + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + WORD_END),
        anchors=(r"_(?<=lin_)(?:api|oauth)_",),
    ),
    Rule(
        "notion_token",
        regex_rule(
            WORD_START + r"secret_[A-Za-z0-9]{43}" + WORD_END,
            WORD_START + r"ntn_[A-Za-z0-9]{40,60}+" + WORD_END,
            check=mixed,
        ),
        anchors=(r"_(?<=secret_)", r"_(?<=ntn_)"),
    ),
    Rule(
        "doppler_token",
        # dp.st.TOKEN, or with its environment's slug: dp.st.prd.TOKEN
        regex_rule(
            WORD_START + r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{2,35}+\.)?[A-Za-z0-9]{40,44}" + WORD_END
        ),
        anchors=(r"\.(?<=dp\.)(?:pt|st|sa|ct|scim|audit)\.",),
    ),
    Rule("postman_api_key", regex_rule(WORD_START + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + WORD_END), anchors=("PMAK-",)),
    Rule("pulumi_token", regex_rule(WORD_START + r"pul-[a-f0-9]{40}" + WORD_END), anchors=(r"-(?<=pul-)",)),
    Rule(
        "dynatrace_token",
        regex_rule(WORD_START + r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}" + WORD_END),
        anchors=(r"\.(?<=dt0c01\.)",),
    ),
    Rule(
        "mapbox_secret_token",
        regex_rule(WORD_START + r"sk\.eyJ[A-Za-z0-9_\-]{20,400}+\.[A-Za-z0-9_\-]{20,100}+" + WORD_END_DASH),
        anchors=(r"\.(?<=sk\.)eyJ",),
    ),
    Rule(
        "okta_api_token",
        regex_rule(r"(?<![A-Za-z0-9])SSWS[ \t]{1,8}+(?P<s>[A-Za-z0-9_\-]{40,42})" + WORD_END_DASH, check=mixed),
        anchors=(r"SSWS[ \t]",),
    ),
    Rule(
        "sentry_auth_token",
        regex_rule(WORD_START + r"sntry[us]_[A-Za-z0-9+/=_]{40,400}+"),
        anchors=(r"_(?<=sntry[us]_)",),
    ),
    # A UUID is an id anywhere else; assigned to a Snyk / Squarespace key or token it is the credential itself.
    Rule(
        "keyed_uuid_token",
        regex_rule(
            r"(?<![A-Za-z0-9])(?i:(?:snyk|squarespace)[\w.\-]{0,20}?(?:key|token|secret))"
            + _GLUE_VALUE
            + r"(?P<s>"
            + UUID.pattern
            + r")"
            + WORD_END,
            check=lambda _m, s: not low_entropy(s.replace("-", "")),
        ),
        keywords=("key", "token", "secret"),
    ),
    Rule(
        "sonar_token",
        regex_rule(
            r"(?:(?<=-D)|(?<![A-Za-z0-9]))(?i:sonar[_.\-]?(?:login|token))"
            + _GLUE_VALUE
            + r"(?P<s>(?:sq[pua]_)?[A-Za-z0-9]{40})"
            + WORD_END,
            check=random_token,
        ),
        keywords=("login", "token"),
    ),
    # Sidekiq Pro / Enterprise gem server credentials (user:password, both 8 hex digits).
    Rule(
        "sidekiq_secret",
        regex_rule(
            WORD_START + r"BUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM[\"']?[ \t]{0,8}+[:=][ \t]{0,8}+[\"']?"
            r"(?P<s>[a-f0-9]{8}:[a-f0-9]{8})" + WORD_END,
            r"(?<![\w.\-])(?:gems|enterprise)\.contribsys\.com[ \t]{1,8}+[\"']?(?P<s_cfg>[a-f0-9]{8}:[a-f0-9]{8})"
            + WORD_END,
            check=random_token,
        ),
        anchors=("__CONTRIBSYS__COM", r"\.(?<=contribsys\.)com[ \t]"),
    ),
    Rule(
        "ai_provider_key",
        regex_rule(
            WORD_START + r"gsk_[A-Za-z0-9]{48,56}" + WORD_END,  # Groq
            WORD_START + r"pplx-[A-Za-z0-9]{40,56}" + WORD_END,  # Perplexity
            WORD_START + r"xai-[A-Za-z0-9]{70,90}" + WORD_END,  # xAI
            WORD_START + r"r8_[A-Za-z0-9]{37}" + WORD_END,  # Replicate
            check=mixed,
        ),
        anchors=(r"_(?<=gsk_)", r"-(?<=pplx-)", r"-(?<=xai-)", r"_(?<=r8_)"),
    ),
    Rule(
        "facebook_access_token",
        regex_rule(
            WORD_START + r"EAA[A-Za-z0-9]{90,512}+" + WORD_END,
            # An app access token: the app's id, '|' and its secret, after the word facebook.
            r"(?i:facebook)[\w.\-]{0,32}?[\s\"':=]{1,8}+(?P<s>\d{15,16}\|[A-Za-z0-9_\-]{27,40}+)" + WORD_END_DASH,
            check=mixed,
        ),
        anchors=("EAA", r"\|(?<=\d\|)"),
    ),
    Rule(
        "airtable_token",
        regex_rule(WORD_START + r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}" + WORD_END),
        anchors=(r"\.(?<=pat[A-Za-z0-9]{14}\.)",),
    ),
    Rule(
        "pinecone_api_key",
        regex_rule(WORD_START + r"pcsk_[A-Za-z0-9]{4,12}_[A-Za-z0-9]{30,120}+" + WORD_END),
        anchors=(r"_(?<=pcsk_)",),
    ),
)
