"""Cloud providers' credentials: AWS, Google Cloud, Azure, DigitalOcean, Firebase, Heroku."""

from __future__ import annotations

from service.guard.rules.core import Rule, regex_rule
from service.guard.rules.shapes import (
    SEP,
    UUID,
    WORD_END,
    WORD_END_DASH,
    WORD_START,
    field_name,
    low_entropy,
    mixed,
    random_token,
    sequential,
)

__all__ = ["RULES"]


def _aws_secret_shape(value: str) -> bool:
    """An AWS secret access key's 40 base64 characters: both cases, and a digit or '/' or '+' (a hex digest has
    one case; a run of words none of the others)."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() or c in "/+" for c in value)
        and not low_entropy(value)
        and not field_name(value)
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "aws_access_key",
        regex_rule(WORD_START + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}+" + WORD_END),
        anchors=("A(?:KIA|SIA|BIA|CCA)",),
    ),
    Rule(
        "aws_secret_key",
        regex_rule(
            r"(?i:(?:aws[_.\-]?)?secret[_.\-]?access[_.\-]?key|aws[_.\-]?secret[_.\-]?key)"
            + SEP
            + r"(?P<s>[A-Za-z0-9/+]{40}+)(?![A-Za-z0-9/+=])",
            # The secret right after its key id, as in the console's credentials CSV ("AKIA...,secret").
            # Also with words between, on its line ("AKIA... / <secret> used by", "key AKIA... and secret <secret>").
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])[^\r\n]{1,48}?(?<![A-Za-z0-9/+=])"
            r"(?P<s_pair>[A-Za-z0-9/+]{40}+)(?![A-Za-z0-9/+=])",
            # An Erlang/Elixir tuple or a list of pairs: {aws_secret_access_key, "..."}
            r"(?i:secret[_.\-]?access[_.\-]?key)[\"']?[ \t]{0,8}+,[ \t]{0,8}+[\"']"
            r"(?P<s_tuple>[A-Za-z0-9/+]{40}+)(?![A-Za-z0-9/+=])",
            check=lambda m, secret: "s_pair" not in m.re.groupindex or _aws_secret_shape(secret),
        ),
        anchors=("A(?:KIA|SIA)", r",(?<=[Kk][Ee][Yy],)", r",(?<=[Kk][Ee][Yy]',)", r",(?<=[Kk][Ee][Yy]\",)"),
        keywords=("key",),
    ),
    Rule(
        "gcp_api_key",
        regex_rule(
            WORD_START + r"AIza[0-9A-Za-z_\-]{35}+" + WORD_END_DASH,
            check=lambda _m, s: not low_entropy(s) and not sequential(s),
        ),
        anchors=("AIza",),
    ),
    Rule(
        "azure_storage_key",
        regex_rule(r"(?<![A-Za-z0-9])(?i:(?:Account|SharedAccess)Key)" + SEP + r"(?P<s>[A-Za-z0-9+/]{20,128}+={0,2}+)"),
        keywords=("accountkey", "sharedaccesskey"),
    ),
    Rule(
        "azure_sas_token",
        regex_rule(r"[?&](?i:sig)=(?P<s>[A-Za-z0-9%+/=]{20,256}+)", check=mixed),
        anchors=(r"\?(?i:sig)=", r"&(?i:sig)="),
    ),
    # A signed URL's signature grants what the URL names until it expires, to whoever holds the link: S3 (SigV4's
    # X-Amz-Signature, SigV2's Signature with AWSAccessKeyId), GCS V4 (X-Goog-Signature), CloudFront (Signature
    # with Key-Pair-Id). The parameters around it (credential scope, dates, key-pair id) are not secret.
    Rule(
        "signed_url_signature",
        regex_rule(
            r"[?&](?:X-Amz-Signature|X-Goog-Signature)=(?P<s>[0-9a-f]{64,1024}+)(?![0-9A-Za-z])",
            r"[?&]Signature=(?P<s>[A-Za-z0-9%~_+/=\-]{27,4096}+)",
            check=random_token,
        ),
        anchors=(r"=(?<=Signature=)",),
    ),
    Rule(
        "gcp_oauth_client_secret",
        regex_rule(WORD_START + r"GOCSPX-[A-Za-z0-9_\-]{28}" + WORD_END_DASH),
        anchors=(r"-(?<=GOCSPX-)",),
    ),
    Rule(
        "digitalocean_token",
        regex_rule(WORD_START + r"do[por]_v1_[a-f0-9]{64}" + WORD_END),
        anchors=(r"_(?<=do[por]_)v1_",),
    ),
    Rule(
        "firebase_cloud_messaging_key",
        regex_rule(WORD_START + r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,200}+"),
        anchors=(r":APA91b",),
    ),
    Rule(
        "heroku_api_key",
        regex_rule(
            WORD_START + r"HRKU-[A-Za-z0-9_\-]{60}" + WORD_END_DASH,
            r"(?i:heroku[\w.\-]{0,20}?(?:api[_.\-]?key|token|secret))"
            + SEP
            + r"(?P<s>"
            + UUID.pattern
            + r")"
            + WORD_END,
        ),
        anchors=("HRKU-",),
        keywords=("key", "token", "secret"),
    ),
    Rule(
        "google_oauth_token",
        regex_rule(
            WORD_START + r"ya29\.[0-9A-Za-z_\-]{30,2048}+" + WORD_END_DASH,
            WORD_START + r"1//0[0-9A-Za-z_\-]{40,512}+" + WORD_END_DASH,
            check=mixed,
        ),
        anchors=(r"\.(?<=ya29\.)", r"/(?<=1/)/0"),
    ),
    Rule(
        "azure_ad_client_secret",
        regex_rule(
            r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])", check=mixed
        ),
        anchors=(r"~(?<=\dQ~)",),
    ),
    # An Azure DevOps personal access token: 52 characters of lowercase base32 (the classic form, with no prefix: it
    # holds the digits 2-7), or the newer 84 characters carrying JQQJ and the AZDO signature.
    Rule(
        "azure_devops_pat",
        regex_rule(
            r"(?<![A-Za-z0-9_\-])(?=[a-z2-7]{0,39}[2-7][a-z2-7]{12})[a-z2-7]{52}(?![A-Za-z0-9_\-])",
            WORD_START + r"[A-Za-z0-9]{52}JQQJ[A-Za-z0-9]{20}AZDO[A-Za-z0-9]{4}" + WORD_END,
            check=lambda _m, s: random_token(_m, s) and sum(c.isdigit() for c in s) >= 3,
        ),
        anchors=(*(d + "[a-z2-7]{12}" for d in "234567"), "AZDO"),
    ),
)
