"""Secret detection and redaction: find credentials in text and items, and mask them before anything is stored."""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from service.items import SubstrateItem
from service.secret_rules import RULES, sensitive_pair
from service.validation import InvalidArgument, require_count

__all__ = [
    "SecretFinding",
    "SecretPolicyError",
    "SecretScan",
    "detect_secrets",
    "redact_item",
    "redact_secrets",
    "safe_text",
    "scan_item",
    "scan_substrate",
]

DEFAULT_MASK = "[REDACTED:{rule}]"
SECRET_POLICIES = ("redact", "reject")
# Each pass masks at least one finding and the default mask is never itself a secret shape, so real text
# converges in one or two passes; the cap only turns a pathological (or self-matching custom) mask into an error.
_MAX_PASSES = 8
_PAIR_RULE = "sensitive_assignment"


class SecretPolicyError(ValueError):
    """A secret was found and could not be stored: policy "reject", or redaction did not reach a fixed point."""

    def __init__(self, message: str, *, rules: list[str] | None = None, fields: list[str] | None = None) -> None:
        super().__init__(message)
        self.rules = list(rules or [])
        self.fields = list(fields or [])


@dataclass(frozen=True)
class SecretFinding:
    """One detected secret: which rule matched, where, and a safe preview (the value stays masked)."""

    rule: str
    start: int
    end: int
    preview: str


@dataclass
class SecretScan:
    """The result of scanning a text: whether anything leaked and every finding (iterable like a list of them)."""

    findings: list[SecretFinding] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Whether the scan found no secrets."""
        return not self.findings

    def rules(self) -> list[str]:
        """Return the sorted names of triggered secret-detection rules."""
        return sorted({f.rule for f in self.findings})

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable scan summary."""
        return {
            "clean": self.clean,
            "n_findings": len(self.findings),
            "rules": self.rules(),
            "findings": [{"rule": f.rule, "start": f.start, "end": f.end, "preview": f.preview} for f in self.findings],
        }

    def __iter__(self) -> Iterator[SecretFinding]:
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def __getitem__(self, index: int) -> SecretFinding:
        return self.findings[index]


def _preview(secret: str) -> str:
    # At most a quarter of the secret (and never more than 4 chars) shows; the rest is starred.
    keep = min(4, len(secret) // 4)
    return secret[:keep] + "*" * min(max(len(secret) - keep, 1), 8)


def _require_text(text: Any) -> str:
    if not isinstance(text, str):
        raise InvalidArgument(f"text must be a str, got {type(text).__name__}")
    return text


_SHORTEST_SECRET = 8  # no rule matches fewer characters (the shortest is a generic `pwd=` + 6-char value)


def _findings(text: str) -> list[SecretFinding]:
    if len(text) < _SHORTEST_SECRET:
        return []
    candidates = [(start, end, order, rule.name) for order, rule in enumerate(RULES) for start, end in rule.find(text)]
    # Longest span wins; on a tie the more specific (earlier) rule names it. Accepted spans never overlap.
    candidates.sort(key=lambda c: (c[0] - c[1], c[2], c[0]))
    starts: list[int] = []
    ends: list[int] = []
    kept: list[SecretFinding] = []
    for start, end, _order, name in candidates:
        if end <= start:
            continue
        i = bisect.bisect_right(starts, start)
        if (i > 0 and ends[i - 1] > start) or (i < len(starts) and starts[i] < end):
            continue
        starts.insert(i, start)
        ends.insert(i, end)
        kept.append(SecretFinding(name, start, end, _preview(text[start:end])))
    kept.sort(key=lambda f: f.start)
    return kept


def detect_secrets(text: str) -> SecretScan:
    """Scan text for well-known secret shapes; return a SecretScan naming each (non-overlapping) finding."""
    return SecretScan(_findings(_require_text(text)))


def _mask(text: str, findings: list[SecretFinding], mask: str, keep_prefix: int) -> str:
    parts, pos = [], 0
    for f in findings:
        secret = text[f.start : f.end]
        # Never reveal more than half a secret, however large keep_prefix is: a reader may tell which it was, not use it.
        visible = min(keep_prefix, len(secret) // 2)
        parts += [text[pos : f.start], secret[:visible], mask.replace("{rule}", f.rule)]
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def _redact(text: str, mask: str, keep_prefix: int, first: list[SecretFinding] | None = None) -> tuple[str, int]:
    out, count = text, 0
    for n in range(_MAX_PASSES):
        findings = first if n == 0 and first is not None else _findings(out)
        if not findings:
            return out, count
        # Later passes mask fully: re-revealing the same prefix every pass could keep a finding alive forever.
        out = _mask(out, findings, mask, keep_prefix if n == 0 else 0)
        count += len(findings)
    rules = sorted({f.rule for f in _findings(out)})
    if rules:
        raise SecretPolicyError(
            f"redaction did not reach a fixed point after {_MAX_PASSES} passes (rules {', '.join(rules)}); "
            "refusing to return text that still carries a secret",
            rules=rules,
        )
    return out, count


def redact_secrets(text: str, *, mask: str = DEFAULT_MASK, keep_prefix: int = 0) -> str:
    """Return text with every detected secret masked, re-scanned to a fixed point (MXR-080-1882) or refused."""
    _require_text(text)
    if not isinstance(mask, str):
        raise InvalidArgument(f"mask must be a str, got {type(mask).__name__}")
    require_count(keep_prefix, "keep_prefix")
    return _redact(text, mask, keep_prefix)[0]


def safe_text(text: str) -> str:
    """Redact-before-store guard: mask any secrets so they are never indexed or served."""
    return redact_secrets(text)


def _serialized(payload: Any) -> str:
    # The same surface search serializes (sorted-key JSON); mixed-type keys cannot sort, so fall back to insertion order.
    try:
        return json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    except TypeError:
        return json.dumps(payload, ensure_ascii=False, default=str)


class _Walk:
    """One pass over an item's surface, collecting (field, finding) hits and building the masked copy."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, SecretFinding]] = []
        self.count = 0

    def text(self, value: str, where: str) -> str:
        found = _findings(value)
        if not found:
            return value
        self.hits += [(where, f) for f in found]
        out, count = _redact(value, DEFAULT_MASK, 0, found)
        self.count += count
        return out

    def value(self, value: Any, where: str) -> Any:
        if isinstance(value, str):
            return self.text(value, where)
        if isinstance(value, dict):
            return self.mapping(value, where)
        if isinstance(value, (list, tuple, set, frozenset)):
            items = [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return items if isinstance(value, list) else type(value)(items)
        return value

    def mapping(self, value: dict[Any, Any], where: str) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = self.text(k, f"{where}.{safe_text(k)} (key)") if isinstance(k, str) else k
            while key in out:  # two keys masked to the same text must not silently overwrite each other
                key = f"{key}#"
            child = f"{where}.{key}"
            if isinstance(k, str) and isinstance(v, str) and not _findings(v) and sensitive_pair(k, v):
                # {"password": <literal>}: neither string is a secret alone, but the serialized pair is.
                self.hits.append((child, SecretFinding(_PAIR_RULE, 0, len(v), _preview(v))))
                self.count += 1
                out[key] = DEFAULT_MASK.replace("{rule}", _PAIR_RULE)
            else:
                out[key] = self.value(v, child)
        return out


def _walk_item(item: Any) -> tuple[_Walk, str, Any, list[str], list[SecretFinding]]:
    walk = _Walk()
    text = walk.text(getattr(item, "text", None) or "", "text")
    payload = walk.value(getattr(item, "payload", None) or {}, "payload")
    tags = [
        walk.text(t, f"tags[{i}]") if isinstance(t, str) else t for i, t in enumerate(getattr(item, "tags", []) or [])
    ]
    # Anything the per-string walk cannot see (a str() of an opaque object) still shows on the serialized surface.
    residue = _findings(_serialized(payload)) if payload else []
    return walk, text, payload, tags, residue


def scan_item(item: Any) -> SecretScan:
    """Scan a substrate item's full indexed/serialized surface (text + payload + tags) for secrets."""
    walk, *_, residue = _walk_item(item)
    return SecretScan([f for _, f in walk.hits] + residue)


def _refuse(hits: list[tuple[str, SecretFinding]], why: str) -> SecretPolicyError:
    rules = sorted({f.rule for _, f in hits})
    fields = list(dict.fromkeys(where for where, _ in hits))
    return SecretPolicyError(
        f"{why}: secret(s) matching rule(s) {', '.join(rules)} in field(s) {', '.join(fields)}; nothing was stored",
        rules=rules,
        fields=fields,
    )


def redact_item(item: SubstrateItem) -> tuple[SubstrateItem, int]:
    """Return a deep copy of ``item`` with secrets in text, payload (keys and values) and tags masked, and how many."""
    out = item.copy()
    walk, out.text, out.payload, out.tags, residue = _walk_item(out)
    if residue:
        raise _refuse([("payload", f) for f in residue], "secret_policy='redact' could not mask the serialized payload")
    return out, walk.count


def guard_item(item: SubstrateItem, policy: str) -> SubstrateItem:
    """Return a copy of ``item`` safe to store under ``policy``: "redact" masks secrets, "reject" refuses them."""
    if policy not in SECRET_POLICIES:
        raise InvalidArgument(f"secret_policy must be 'redact' or 'reject', got {policy!r}")
    if policy == "redact":
        return redact_item(item)[0]
    walk, *_, residue = _walk_item(item)
    hits = walk.hits + [("payload", f) for f in residue]
    if hits:
        raise _refuse(hits, "secret_policy='reject'")
    return item.copy()


def scan_substrate(substrate: Any, *, scope: str | None = None) -> dict[str, Any]:
    """Sweep a substrate for leaked secrets: ``{n_items, n_dirty, dirty: [{item_id, rules}]}``."""
    n_items, dirty = 0, []
    for item in substrate.all(scope=scope):
        n_items += 1
        scan = scan_item(item)
        if not scan.clean:
            dirty.append({"item_id": item.id, "rules": scan.rules()})
    return {"n_items": n_items, "n_dirty": len(dirty), "dirty": dirty}
