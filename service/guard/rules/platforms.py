"""Developer platforms whose tokens carry a fixed prefix, one alternative each (the long tail)."""

from __future__ import annotations

from service.guard.rules.core import Rule, regex_rule
from service.guard.rules.shapes import UUID, WORD_END, WORD_END_DASH, WORD_START, random_token

__all__ = ["RULES"]


RULES: tuple[Rule, ...] = (
    # Developer platforms whose tokens carry a fixed prefix.
    Rule(
        "platform_token",
        regex_rule(
            WORD_START + r"dckr_pat_[A-Za-z0-9_\-]{27,40}+" + WORD_END_DASH,  # Docker Hub
            WORD_START + r"rubygems_[a-f0-9]{48}" + WORD_END,  # RubyGems
            WORD_START + r"sq[pua]_[a-f0-9]{40}" + WORD_END,  # SonarQube
            WORD_START + r"bkua_[a-f0-9]{40}" + WORD_END,  # Buildkite
            WORD_START + r"sbp_[a-f0-9]{40}" + WORD_END,  # Supabase
            WORD_START + r"sb_secret_[A-Za-z0-9_\-]{30,64}+" + WORD_END_DASH,  # Supabase secret keys
            WORD_START + r"figd_[A-Za-z0-9_\-]{40,64}+" + WORD_END_DASH,  # Figma
            WORD_START + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}+",  # PlanetScale
            WORD_START + r"nfp_[A-Za-z0-9]{36}" + WORD_END,  # Netlify
            WORD_START + r"fo1_[A-Za-z0-9_\-]{43}" + WORD_END_DASH,  # Fly.io
            WORD_START + r"fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,8192}+={0,3}+",  # Fly.io macaroon (after "FlyV1 ")
            WORD_START
            + r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}"
            + WORD_END_DASH,  # 1Password
            r"(?i:https?://claude\.ai)/code/session_[A-Za-z0-9]{20,64}+" + WORD_END,  # a Claude Code session link
            WORD_START + r"s-s4t2(?:ud|af)-[a-f0-9]{64}" + WORD_END,  # 42 Intra client secret
            WORD_START + r"rnd_[A-Za-z0-9]{32}" + WORD_END,  # Render
            WORD_START + r"CFPAT-[A-Za-z0-9_\-]{43}" + WORD_END_DASH,  # Contentful
            WORD_START + r"aio_[A-Za-z0-9]{28}" + WORD_END,  # Adafruit IO
            WORD_START + r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}" + WORD_END,  # CircleCI
            WORD_START + r"rdme_[a-z0-9]{70}" + WORD_END,  # ReadMe
            WORD_START + r"tfp_[A-Za-z0-9_\-.=]{44,59}+" + WORD_END_DASH,  # Typeform
            WORD_START + r"shippo_(?:live|test)_[a-f0-9]{40}" + WORD_END,  # Shippo
            WORD_START + r"rzp_live_[A-Za-z0-9]{14}" + WORD_END,  # Razorpay
            WORD_START + r"FLWSECK(?:_TEST)?-[a-h0-9]{32}-X" + WORD_END,  # Flutterwave secret key
            WORD_START + r"FLWSECK(?:_TEST)?-[a-h0-9]{12}" + WORD_END,  # Flutterwave encryption key
            WORD_START + r"dapi[a-f0-9]{32}(?:-[0-9])?" + WORD_END,  # Databricks
            WORD_START + r"LTAI[A-Za-z0-9]{20}" + WORD_END,  # Alibaba Cloud access key id
            WORD_START + r"AKCp[A-Za-z0-9]{69}" + WORD_END,  # Artifactory API key
            WORD_START + r"ops_eyJ[A-Za-z0-9+/]{250,8192}+={0,3}+",  # 1Password service account
            WORD_START + r"p8e-[A-Za-z0-9]{32}" + WORD_END,  # Adobe client secret
            WORD_START + r"CLOJARS_[a-z0-9]{60}" + WORD_END,  # Clojars
            r"(?<![A-Za-z0-9+/])EZ[AT]K[A-Za-z0-9]{54}" + WORD_END,  # EasyPost (live and test)
            WORD_START + r"fio-u-[A-Za-z0-9_=\-]{64}" + WORD_END_DASH,  # Frame.io
            r"(?<![\w.\-/])ico-[A-Za-z0-9]{32}" + WORD_END,  # Infracost
            WORD_START + r"duffel_(?:test|live)_[A-Za-z0-9_=\-]{43}" + WORD_END_DASH,  # Duffel
            WORD_START + r"sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40}" + WORD_END,  # Sourcegraph
            WORD_START
            + r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"
            + WORD_END,  # Brevo (Sendinblue) API / SMTP key
            WORD_START + r"pnu_[A-Za-z0-9]{36}" + WORD_END,  # Prefect
            WORD_START + r"tk-us-[A-Za-z0-9_\-]{48}" + WORD_END_DASH,  # Scalingo
            WORD_START + r"sm_(?:pat|aat|sat)_[A-Za-z0-9]{16,64}+" + WORD_END,  # SettleMint
            WORD_START + r"sha256~[A-Za-z0-9_\-]{43}" + WORD_END_DASH,  # OpenShift user token
            WORD_START + r"API-[A-Z0-9]{26}" + WORD_END,  # Octopus Deploy
            WORD_START + r"AQVN[A-Za-z0-9_\-]{35,38}" + WORD_END_DASH,  # Yandex Cloud API key
            WORD_START + r"t1\.[A-Za-z0-9_\-]{8,200}+={0,2}+\.[A-Za-z0-9_\-]{86}={0,2}+",  # Yandex Cloud IAM token
            # Plaid access token: access-<environment>-<uuid>
            WORD_START + r"access-(?:sandbox|development|production)-" + UUID.pattern + WORD_END,
            WORD_START
            + r"tskey-(?:auth|client|api|webhook|scim)-[A-Za-z0-9]{6,32}+-[A-Za-z0-9]{16,64}+"
            + WORD_END,  # Tailscale
            WORD_START + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + WORD_END,  # LangSmith
            r"(?<![\w-])APP_KEY[ \t]{0,4}+=[ \t]{0,4}+['\"]?(?P<s>base64:[A-Za-z0-9+/]{43}=)",  # Laravel's app key
            r"(?<![\w.\-])v1\.0-[a-f0-9]{24}-[a-f0-9]{100,200}+" + WORD_END,  # Cloudflare Origin CA key
            r"(?<![\w.])(?:pat|sat)\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}" + WORD_END,  # Harness
            WORD_START + r"[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk" + WORD_END,  # MaxMind license key
            WORD_START + r"cmVmd[A-Za-z0-9]{59}" + WORD_END,  # Artifactory reference token
            # Kaggle's kaggle.json: {"username": "...", "key": "<32 hex>"}
            r"\"username\"[ \t]{0,8}+:[ \t]{0,8}+\"[^\"\r\n]{1,64}+\"[ \t]{0,8}+,[ \t\r\n]{0,64}+\"key\"[ \t]{0,8}+:[ \t]{0,8}+"
            r"\"(?P<s>[0-9a-f]{32})\"",
            check=random_token,
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
)
