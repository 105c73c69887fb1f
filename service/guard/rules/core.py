"""A rule of the secret guard: its name, how it finds spans, and the anchors that let a text skip it."""

from __future__ import annotations

import base64
import binascii
import re
import re._constants as _sre_constants
import re._parser as _sre_parser
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from service.guard.rules.names import KEYWORD_TAILS, keyword_pattern
from service.guard.rules.shapes import Check, Span, is_placeholder

__all__ = ["HEX_TOKEN", "LITERAL_ANCHOR", "Rule", "b64_text", "fast_finds", "regex_rule", "tail_behind"]

# A plain lowercase word as an anchor (Databricks' "dapi") would stop the combined search at every such letter of
# prose; a substring test finds it at C speed instead.
LITERAL_ANCHOR = re.compile(r"[a-z][a-z0-9_ ]{2,31}")


@dataclass(frozen=True)
class Rule:
    """One secret shape: ``find(text)`` yields the (start, end) span of each secret itself -- what gets masked."""

    name: str
    find: Callable[[str], Iterator[Span]]
    anchors: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    _anchor_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _keyword_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    # The anchors that are plain lowercase text (found by a substring test), and the others as one regex.
    _literals: frozenset[str] = field(init=False, repr=False, compare=False)
    _pattern_rx: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not (self.anchors or self.keywords):
            raise ValueError(f"rule {self.name} declares no anchor: it could never be skipped")
        if not all(k.isascii() and k.isalpha() for k in self.keywords):
            raise ValueError(f"rule {self.name}: keywords are plain words (the reversed search reverses them)")
        anchor_rx = re.compile("|".join(self.anchors)) if self.anchors else None
        keyword_rx = re.compile(keyword_pattern(self.keywords, reverse=True)) if self.keywords else None
        object.__setattr__(self, "_anchor_rx", anchor_rx)
        object.__setattr__(self, "_keyword_rx", keyword_rx)
        literals = frozenset(a for a in self.anchors if LITERAL_ANCHOR.fullmatch(a))
        patterns = [a for a in self.anchors if a not in literals]
        object.__setattr__(self, "_literals", literals)
        object.__setattr__(self, "_pattern_rx", re.compile("|".join(patterns)) if patterns else None)

    def anchored(self, text: str) -> bool:
        """Whether ``text`` holds one of this rule's anchors or keywords -- necessary for any match."""
        return self._present(text, text[::-1])

    def _present(self, text: str | None, reversed_text: str | None) -> bool:
        # None stands for a text already known to hold no anchor (or no keyword) of any rule.
        if text is not None and self._anchor_rx is not None and self._anchor_rx.search(text) is not None:
            return True
        if reversed_text is not None and self._keyword_rx is not None:
            return self._keyword_rx.search(reversed_text) is not None
        return False


# False within security._reference_scan(): every find scans the whole text (no required-literal test, and
# sensitive_assignment searches everywhere rather than next to the keyword spots), so the equivalence tests check
# those shortcuts too.
fast_finds = True


def _required_literal(pattern: str, flags: int) -> str | None:
    """The longest run of literal characters at the top level of ``pattern`` (every match holds it), if any: a text
    without it is skipped by a substring test instead of a regex scan (most patterns open on a lookbehind, which
    keeps ``re`` from using their literal prefix)."""
    if flags & re.IGNORECASE:
        return None
    best, run = "", ""
    for op, arg in _sre_parser.parse(pattern, flags):
        run = run + chr(arg) if op is _sre_constants.LITERAL else ""
        best = max(best, run, key=len)
    return best if len(best) >= 2 else None


def regex_rule(*patterns: str, flags: int = 0, check: Check | None = None) -> Callable[[str], Iterator[Span]]:
    compiled = [re.compile(p, flags) for p in patterns]
    secret_groups = [[g for g in rx.groupindex if g == "s" or g.startswith("s_")] for rx in compiled]
    literals = [_required_literal(p, flags) for p in patterns]

    def find(text: str) -> Iterator[Span]:
        for rx, groups, literal in zip(compiled, secret_groups, literals):
            if literal is not None and fast_finds and literal not in text:
                continue
            for m in rx.finditer(text):
                # The secret is the one named alternative that took part in the match (else the whole match).
                start, end = next((m.span(g) for g in groups if m.start(g) >= 0), m.span())
                secret = text[start:end]
                if is_placeholder(secret) or (check is not None and not check(m, secret)):
                    continue
                yield start, end

    return find


# 32 hex digits or more with letters and digits both: an API key as many services print it.
HEX_TOKEN = re.compile(r"(?=[0-9a-f]{0,127}[a-f])(?=[a-f]{0,127}[0-9])[0-9a-f]{32,128}")


def tail_behind(end: str, closers: tuple[str, ...]) -> str:
    """Lookbehinds for "a credential key's tail (_KEYWORD_TAILS), one of ``closers`` (a quote, a CR), then ``end``":
    one per width, as a lookbehind's alternatives must all have one width."""
    by_width: dict[int, list[str]] = {}
    last: set[str] = set()  # the character right before ``end``, checked first: most stops fail on it
    for tail in KEYWORD_TAILS:
        for closer in closers:
            by_width.setdefault(len(tail) + len(closer), []).append(re.escape(tail + closer))
            c = (tail + closer)[-1]
            last.update({c.lower(), c.upper()})
    first = "(?<=[" + "".join(re.escape(c) for c in sorted(last)) + "]" + re.escape(end) + ")"
    return first + "(?:" + "|".join(f"(?<=(?i:{'|'.join(alts)}){re.escape(end)})" for alts in by_width.values()) + ")"


def b64_text(secret: str) -> str:
    """``secret`` base64-decoded as ASCII text ('' when it is not base64 of text)."""
    try:
        return base64.b64decode(secret + "=" * (-len(secret) % 4), validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        return ""
