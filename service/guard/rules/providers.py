"""Keys named only by their service (COHERE=..., algolia: ...), and a random token's shape."""

from __future__ import annotations

import re
from collections.abc import Iterator

from service.guard.rules.core import Rule
from service.guard.rules.names import NOT_SECRET_KEY, sample_uuid, sensitive_key
from service.guard.rules.prose_values import SNAKE_OR_KEBAB
from service.guard.rules.shapes import (
    DIGEST,
    DOTTED,
    PASSWORD_HASH,
    UUID,
    Span,
    ascending_run,
    cased,
    is_placeholder,
    low_entropy,
)

__all__ = ["KEY_WORDS", "PROVIDER_START", "RULES", "provider_key", "token_shaped"]

# Services whose keys and tokens carry no prefix of their own: named only by the setting that holds them (COHERE=,
# algolia_admin: ..., cohere.Client("...")). Only whole-word-start matches count (a segment of the key opening so).
_PROVIDERS = (
    "adafruit airtable algolia alibaba amplitude anthropic artifactory asana assemblyai atlassian auth0 beamer "
    "bitbucket bittrex braintree browserstack bugsnag buildkite circleci clickhouse cloudflare codecov cohere "
    "coinbase confluent contentful databricks datadog deepgram deepl deepseek digitalocean discord docusign "
    "droneci dropbox dynatrace elevenlabs etsy facebook fastly figma finicity finnhub fireworks flickr freshbooks "
    "gitguardian gitter gocardless groq heroku honeycomb hubspot huggingface intercom jfrog jira klaviyo kraken "
    "kucoin launchdarkly linkedin logdna loggly mailchimp mailgun mailjet mandrill mapbox mattermost meraki "
    "messagebird mistral mixpanel netlify newrelic nexmo ngrok nytimes okta openai openrouter pagerduty papertrail "
    "perplexity pinecone plaid plivo postmark privateai pusher rapidapi replicate rollbar saucelabs sendbird "
    "sendgrid sendinblue sentry shopify slack snyk sonar sparkpost squarespace stripe sumologic supabase telegram "
    "telnyx togetherai travis trello twilio twitch twitter typeform vercel vonage voyage wandb weaviate yandex "
    "zendesk zapier kaggle snowflake salesforce hotjar fullstory onesignal revenuecat paddle chargebee recurly "
    "lemonsqueezy bigcommerce contentstack storyblok datocms hygraph cloudinary imgix uploadcare giphy unsplash "
    "openweather weatherapi mapquest tomtom opencage ipinfo ipstack clearbit hubstaff harvest toggl bandwidth sinch "
    "smartsheet airbrake raygun launchpad scaleway linode vultr hetzner backblaze wasabi"
).split()


PROVIDER_START = re.compile(r"(?:" + "|".join(_PROVIDERS) + r")")


# A key's last word naming something public or not a credential (an id, an address, a place, a name, a count).
_PROVIDER_KEY_NOT = frozenset(
    "id ids sid uid url uri urls host hostname domain region zone endpoint env environment site user username "
    "email org organization project account name version channel app plan price product customer phone number "
    "sender bucket index dataset team workspace base table list audience model publishable public pub path file "
    "dir port timeout level mode enabled tag release dsn callback redirect scope issuer tenant cluster server "
    "service type format location folder queue topic prefix suffix size limit count retries interval client".split()
)


KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


_TOKEN_ALPHABET = re.compile(r"[A-Za-z0-9_\-+/=.~]{16,256}")


# Object ids payment APIs print everywhere (Stripe's price_, cus_, ...): names, not secrets.
_OBJECT_ID = re.compile(
    r"(?:prod|price|cus|sub|pi|ch|acct|evt|in|txn|seti|pm|src|tok|re|po|tr|ba|card|plan|ii|il|si|cs|ic|py|prc|"
    r"app|tbl|fld|viw|rec|usr|sel|att)_[A-Za-z0-9]{6,64}"
)


def token_shaped(value: str, *, uuid_ok: bool = False) -> bool:
    """A credential's random body as a setting holds it: 16+ characters of a token's alphabet with letters and two
    digits or more, no filler, no word list (parts all letters or all digits), no id, name, path or address."""
    if _TOKEN_ALPHABET.fullmatch(value) is None or is_placeholder(value) or low_entropy(value):
        return False
    if sum(c.isdigit() for c in value) < 2 or sum(c.isalpha() for c in value) < 2:
        return False
    if len(value) < 32 and re.fullmatch(r"[0-9a-f]+|[0-9A-F]+", value):
        return False  # a short hex string is an id or a hash's prefix; hex API keys run 32 digits or more
    if UUID.fullmatch(value):
        return uuid_ok and not sample_uuid(value)
    if _OBJECT_ID.fullmatch(value) or DIGEST.fullmatch(value) or PASSWORD_HASH.fullmatch(value):
        return False
    if DOTTED.fullmatch(value) or SNAKE_OR_KEBAB.fullmatch(value):
        return False  # web.page_views.count2024, page_views_2024a: a metric's or a field's name
    parts = [p for p in re.split(r"[_\-./+=~]", value) if p]
    if all(p.isalpha() or p.isdigit() for p in parts):
        return False  # release-2024-03-01, eu-west-1, checkout_service_v2: words and numbers, an id
    if "." in value and re.search(r"\.[a-z]{2,}(?:/|$)", value):
        return False  # a host name (acme.datadoghq.eu)
    return ascending_run(value) < 7


def provider_key(key: str, *, call: bool = False) -> str | None:
    """The provider a setting's key names (COHERE, algoliaAdmin, mailgun.private), unless the key's last word says
    it holds something public (ALGOLIA_APP_ID, datadog_site) -- or None. A ``call``'s name (cohere.Client) ends on
    its function's, which says nothing of the value."""
    words = [w.lower() for w in KEY_WORDS.findall(key)]
    if not words or (not call and words[-1] in _PROVIDER_KEY_NOT):
        return None
    for w in words:
        m = PROVIDER_START.match(w)
        if m is not None:
            return m.group()
    return None


# The glue before a provider's value (= : := => and the like, then maybe a quote) and the value itself; the key is
# read back from the glue. Anchored on the glue: a value of sixteen token characters right after it.
_PROVIDER_GLUE = re.compile(
    r"(?P<glue>[\"']?[ \t]{0,8}+(?::=|::=|=>|[?+]=|[=:>])[ \t]{0,8}+)(?P<q>[\"'`]?)"
    r"(?P<s>[A-Za-z0-9_\-+=.~][A-Za-z0-9_\-+/=.~]{15,255}+)(?P=q)(?![A-Za-z0-9_\-+/=.~])"
)


_PROVIDER_CALL = re.compile(
    r"\([ \t]{0,4}+(?:(?P<kw>[A-Za-z_]{1,20}+)[ \t]{0,4}+=[ \t]{0,4}+)?(?:(?P<q1>[\"'])[^\"'\n]{1,64}+(?P=q1)"
    r"[ \t]{0,4}+,[ \t]{0,4}+)?(?P<q>[\"'])(?P<s>[A-Za-z0-9_\-+=.~][A-Za-z0-9_\-+/=.~]{15,255}+)(?P=q)"
)


# (one anchor per glue character: the combined anchor search factors anchors by their first literal character)
# A value of sixteen token characters or more holding a digit (the value needs two), not opening on '/' (a URL's
# "://"): most code's glue is followed by a name, most prose's parenthesis by words.
_PROVIDER_VALUE = r"(?=[A-Za-z0-9_\-+=.~][A-Za-z0-9_\-+/=.~]{15})[A-Za-z0-9_\-+/=.~]{0,255}?[0-9]"


_PROVIDER_SPOTS = (
    *(c + r"[ \t]{0,8}[\"'`]?" + _PROVIDER_VALUE for c in "=:>"),
    r"\([ \t]{0,4}(?:[A-Za-z_]{1,20}[ \t]{0,4}=[ \t]{0,4})?[\"'](?:[^\"'\n]{1,64}[\"'][ \t]{0,4},[ \t]{0,4}[\"'])?"
    + _PROVIDER_VALUE,
)


_PROVIDER_SPOT = re.compile("|".join(_PROVIDER_SPOTS))


_IDENT_REVERSED = re.compile(r"[\w$.\-]{1,64}")


_UUID_PROVIDERS = frozenset("heroku snyk squarespace sendbird kucoin codecov pinecone messagebird".split())


_CREDENTIAL_WORDS = frozenset("secret secrets token password passwd pwd apikey credential credentials".split())


def _credential_inside(key: str) -> bool:
    """Whether a credential word is one of ``key``'s words (not its last: then it is the assignment rule's), and
    the last says nothing public (secret_name, token_url)."""
    words = [w.lower() for w in KEY_WORDS.findall(key)]
    pairs = {a + b for a, b in zip(words, words[1:])}
    return (
        len(words) >= 2
        and words[-1] not in _PROVIDER_KEY_NOT
        and (bool(_CREDENTIAL_WORDS.intersection(words[:-1])) or "apikey" in pairs)
    )


def _key_before(text: str, end: int) -> str:
    """The identifier (maybe quoted, maybe a dotted path) ending at ``end``: matched on the reversed text, so the
    cost is the key's length, not a search."""
    head = text[max(0, end - 64) : end].rstrip("\"'")
    m = _IDENT_REVERSED.match(head[::-1])
    if m is None:
        return ""
    key = m.group()[::-1]
    return key[len(key) - len(key.lstrip("0123456789.-")) :] if key[:1] in "0123456789.-" else key


def _find_provider_credentials(text: str) -> Iterator[Span]:
    """A provider-named setting's value (COHERE=..., "algolia": "...") and a provider client handed its key
    (cohere.Client("..."), wandb.login(key="...")): a random token's value only. The key is read back first, so
    most spots (a key naming nothing) cost no match."""
    pos = 0
    while (spot := _PROVIDER_SPOT.search(text, pos)) is not None:
        pos = spot.start() + 1
        inside = False
        if text[spot.start()] == "(":
            call = _key_before(text, spot.start())
            provider = provider_key(call, call=True) if call else None
            m = _PROVIDER_CALL.match(text, spot.start())
            if m is None:
                continue
            kw = m.group("kw")
            if provider is None and kw is not None:
                provider = provider_key(kw)
            if provider is None or (kw is not None and kw.lower() in _PROVIDER_KEY_NOT):
                continue
        else:
            glue_start = spot.start()
            while glue_start > 0 and text[glue_start - 1] in " \t\"'":
                glue_start -= 1
            key = _key_before(text, glue_start)
            if not key or sensitive_key(key):
                continue  # a credential-named key is the assignment rule's
            provider = provider_key(key)
            inside = provider is None and _credential_inside(key)
            if (provider is None and not inside) or NOT_SECRET_KEY.search(key):
                continue
            if text[max(0, glue_start - len(key) - 3) : glue_start - len(key)].rstrip("\"'").endswith("::"):
                continue  # "AWS::Chatbot::SlackChannelConfiguration": "<hash>": a type's name, not a setting
            m = _PROVIDER_GLUE.match(text, glue_start)
            if m is None:
                continue
        value = m.group("s")
        # A credential word inside the key (todo_secret_do_not_commit, apiKeyProd): a random mix only.
        if (not inside or cased(value)) and token_shaped(value, uuid_ok=provider in _UUID_PROVIDERS):
            pos = max(pos, m.end("s"))
            yield m.span("s")


RULES: tuple[Rule, ...] = (
    # A key named only by its service: COHERE=<key>, "algolia": "<key>", cohere.Client("<key>").
    Rule("provider_credential", _find_provider_credentials, anchors=_PROVIDER_SPOTS),
)
