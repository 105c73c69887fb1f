"""Private keys: PEM and PuTTY blocks, service-account JSON, Kubernetes Secrets, wallet and age keys."""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Iterator

from service.guard.rules.core import Rule, b64_text, regex_rule
from service.guard.rules.shapes import Span, is_placeholder, low_entropy, random_token

__all__ = ["RULES"]

_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----")


_PEM_END = re.compile(r"-----END (?:[A-Z0-9]{1,16} ){0,4}PRIVATE KEY(?: BLOCK)?-----")


_PEM_TAIL = re.compile(r"(?:[A-Za-z0-9+/=\r\n]|\\[nr]){0,16384}+")


_PEM_BODY = re.compile(r"[A-Za-z0-9+/]{32}")


_PEM_SHORT = re.compile(r"[A-Za-z0-9+/]{6,}={0,2}")


_PEM_MAX = 32768


def _find_private_keys(text: str) -> Iterator[Span]:
    ends = [(m.start(), m.end()) for m in _PEM_END.finditer(text)]
    starts = [s for s, _ in ends]
    covered = 0
    for m in _PEM_BEGIN.finditer(text):
        if m.start() < covered:
            continue
        i = bisect.bisect_left(starts, m.end())
        if i < len(ends) and ends[i][0] - m.end() <= _PEM_MAX:
            stop, body = ends[i][1], text[m.end() : ends[i][0]]
        else:  # truncated (no END line): mask the header and the key material that follows it
            tail = _PEM_TAIL.match(text, m.end())
            stop = tail.end() if tail else m.end()
            body = text[m.end() : stop]
        lines = re.sub(r"\\[nr]|[\r\n]", "", body).strip(" \t")
        body = re.sub(r"\s", "", lines)
        # Key material (a run of base64), or lines of nothing else however short (a sample key is still a key block);
        # not a template's expression ("+ key +"), prose ("key omitted") or an elision ("...").
        if (_PEM_BODY.search(body) is None and _PEM_SHORT.fullmatch(lines) is None) or is_placeholder(body):
            continue
        covered = stop
        yield m.start(), stop


# A Kubernetes Secret manifest: every value under its data: (base64) or stringData: (plain) is the secret itself.
_K8S_SECRET_KIND = re.compile(r"(?m)^[ \t]{0,16}+kind:[ \t]{0,8}+['\"]?(?i:secret)['\"]?[ \t]{0,8}+\r?$")


_K8S_DATA = re.compile(r"(?m)^(?P<ind>[ \t]{0,16}+)(?P<which>data|stringData):[ \t]{0,8}+\r?$")


_K8S_ENTRY = re.compile(
    r"(?m)(?P<ind>[ \t]{1,32}+)['\"]?[\w.\-]{1,253}+['\"]?:[ \t]{0,8}+(?:[|>][-+]?[ \t]{0,8}+\r?\n[ \t]{1,64}+)?"
    r"['\"]?(?P<s>[^\s'\"#][^\s'\"]{0,65535}+)['\"]?[ \t]{0,8}+\r?$"
)


_BASE64 = re.compile(r"[A-Za-z0-9+/]{4,65536}+={0,2}+")


def _find_k8s_secret_values(text: str) -> Iterator[Span]:
    if _K8S_SECRET_KIND.search(text) is None:
        return
    for block in _K8S_DATA.finditer(text):
        indent, base64_data = len(block.group("ind").expandtabs(4)), block.group("which") == "data"
        pos = block.end() + 1
        while pos < len(text):
            line_end = text.find("\n", pos)
            line_end = len(text) if line_end < 0 else line_end
            line = text[pos:line_end]
            body = line.lstrip(" \t")
            if body.strip() and not body.startswith("#"):
                if len(line[: len(line) - len(body)].expandtabs(4)) <= indent:
                    break  # the next key at the data: key's level: the block has ended
                entry = _K8S_ENTRY.match(text, pos)
                if entry is not None:
                    if _k8s_value(entry.group("s"), base64_data):
                        yield entry.start("s"), entry.end("s")
                    line_end = max(line_end, entry.end())
            pos = line_end + 1


def _k8s_value(value: str, base64_data: bool) -> bool:
    """A Secret's value: base64 of four characters or more (data:), or six characters or more (stringData:);
    not a filler, a placeholder, a template or a SOPS-encrypted value."""
    if low_entropy(value) or is_placeholder(value) or value.startswith(("ENC[", "{{", "${")):
        return False
    if not base64_data:
        return len(value) >= 6
    return _BASE64.fullmatch(value) is not None and len(b64_text(value).strip()) >= 4


def _der_private_key(secret: str) -> bool:
    """Whether base64 ``secret`` opens like a DER private key: a SEQUENCE whose first element is the version
    INTEGER 0 followed by a modulus (PKCS#1) or an algorithm (PKCS#8), or version 1 and a key (SEC 1, EC).
    Certificates and public keys open with a SEQUENCE instead, so they are left alone."""
    try:
        der = base64.b64decode(secret[:24], validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(der) < 9 or der[0] != 0x30:
        return False
    at = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    head = der[at : at + 4]
    return head[:3] == b"\x02\x01\x00" and head[3:] in (b"\x02", b"\x30") or head == b"\x02\x01\x01\x04"


def _pem_base64_check(_m: re.Match[str], secret: str) -> bool:
    head = secret[:120]
    head = head[: len(head) - len(head) % 4]
    try:
        decoded = base64.b64decode(head, validate=True).decode("ascii", errors="replace")
    except (binascii.Error, ValueError):
        return False
    return "PRIVATE KEY" in decoded.partition("\n")[0]


RULES: tuple[Rule, ...] = (
    Rule(
        "gcp_service_account_key",
        regex_rule(
            r"\"private_key\"[ \t]{0,8}+:[ \t]{0,8}+\"(?P<s>-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[^\"]{1,8000}+)\"",
            check=lambda m, s: "-----END" in s,
        ),
        anchors=(r'_(?<="private_)key"',),
    ),
    Rule("private_key_block", _find_private_keys, anchors=("-----BEGIN ",)),
    # A PuTTY .ppk key file: its Private-Lines are the key (the Public-Lines before them are not).
    Rule(
        "putty_private_key",
        regex_rule(
            r"PuTTY-User-Key-File-[23]:[^\n]{0,200}+\n(?:[^\n]{0,4096}+\n){0,64}?Private-Lines:[ \t]{0,4}+\d{1,3}"
            r"[ \t]{0,4}+\r?\n(?P<s>[A-Za-z0-9+/=]{4,128}+(?=\r?\n|\Z)(?:\r?\n[A-Za-z0-9+/=]{4,128}+(?=\r?\n|\Z)){0,127})",
            check=random_token,
        ),
        anchors=("PuTTY-User-Key-File-",),
    ),
    Rule("kubernetes_secret", _find_k8s_secret_values, anchors=(r":(?<=kind:)",)),
    # A PEM private key base64-encoded once more (kubeconfig client-key-data, Kubernetes Secret tls.key).
    Rule(
        "private_key_base64",
        regex_rule(
            r"(?<![A-Za-z0-9+/])LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,65536}+={0,2}+",
            r"(?<![A-Za-z0-9+/])(?:MI[IGH]|MHc)[A-Za-z0-9+/]{100,65536}+={0,2}+(?![A-Za-z0-9+/=])",  # DER, no armour
            check=lambda m, s: _der_private_key(s) if s.startswith("M") else _pem_base64_check(m, s),
        ),
        anchors=("LS0tLS1CRUdJTi", "MI[IGH]", "MHc"),
    ),
    Rule(
        "age_secret_key",
        regex_rule(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
        anchors=("AGE-SECRET-KEY-1",),
    ),
    # An Ethereum account's private key in a Hardhat/Truffle config: accounts: ["0x<64 hex>"]
    Rule(
        "ethereum_private_key",
        regex_rule(
            r"(?<![\w$])accounts[ \t]{0,4}+:[ \t]{0,4}+\[[ \t\r\n]{0,64}+['\"`](?P<s>(?:0x)?[0-9a-fA-F]{64})['\"`]",
            # pk: 0x<64 hex>, PRIVKEY=<64 hex>: a wallet's key under its short names
            r"(?<![\w$])(?:pk|PK|privkey|PRIVKEY|priv|PRIV)[\"']?[:=][ \t]{0,4}+['\"`]?(?P<s_pk>(?:0x)?[0-9a-fA-F]{64})(?![0-9A-Za-z])",
            check=random_token,
        ),
        anchors=(
            "accounts",
            # (the glue after a name ending as pk, privkey or priv end, maybe quoted)
            *(
                g + "(?<=" + k + q + g + ")"
                for k in ("[pP][kK]", "[kK][eE][yY]", "[iI][vV]")
                for g in ":="
                for q in ("", "[\"']")
            ),
        ),
    ),
)
