"""The facade's write door: the one way into the log (``Substrate.append``) and its checks, in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from projections.beliefs import is_belief, with_trail
from service.domain import policy as rules
from service.domain.errors import AccessDeniedError, ConcurrencyError, ReadOnlyError
from service.domain.events import NewEvent, StoredEvent
from service.domain.retry import retries
from service.domain.validation import InvalidArgument, require_name
from service.guard.events import guard_event
from service.store import authority
from service.store.bulk_append import BulkAppender
from service.store.eventstore import EventStore
from service.store.trails import decided_trails

__all__ = ["OPERATOR_ENV", "SecretPolicy", "WriteDoor", "check_policy"]

OPERATOR_ENV = "SUBSTRATE_ADMIN"
SecretPolicy = Literal["redact", "reject"]
_POLICIES = ("redact", "reject")
_CLAIMS = frozenset({"ItemPut", "ItemUpdated"})  # the events that state a belief without deciding its evidence


def check_policy(policy: Any) -> str:
    """``policy`` when it is a secret policy ("redact" or "reject"); InvalidArgument naming it otherwise."""
    if policy not in _POLICIES:
        raise InvalidArgument(f"secret_policy must be one of {_POLICIES}, got {policy!r}")
    return str(policy)


class WriteDoor:
    """The write door of a Substrate (its base class): ``append`` and the checks every append passes."""

    # What the door needs of its store (set by Substrate.__init__).
    engine: Any
    events: EventStore
    principal: str
    secret_policy: str
    operator: str | None
    restricted: bool
    read_only: bool
    as_of_seq: int | None
    position: int

    def append(
        self,
        events: Sequence[NewEvent],
        *,
        by: str | None = None,
        secret_policy: SecretPolicy | None = None,
    ) -> list[StoredEvent]:
        """The one way into the log: every command builds its events and appends them here, atomically.

        In this order: refuse on a read-only view (ReadOnlyError); on a handle bound to a principal, authorize it for
        every scope the events touch (AccessDeniedError, GovernanceAuthorizationError; service.domain.policy); run
        the secret guard over every string of every event (service.guard.events) under ``secret_policy`` (default:
        the store's); then append. ``by`` records who acts (default: this handle's principal); a bound handle acts
        only as its own principal. Returns the stored events; this handle's ``position`` moves to the last.
        """
        for _ in retries():
            actor, admitted, pinned = self._admit(events, by, secret_policy)
            try:
                stored = self.events.append(admitted, actor)
            except ConcurrencyError as exc:
                if exc.stream in pinned:
                    continue  # an item the authorization looked at moved meanwhile: decide again
                raise
            if stored:
                self.position = stored[-1].seq
            return stored
        raise ConcurrencyError(events[0].stream, -1, "the items this append touches kept moving; gave up")

    def allows(self, mode: str, scope: str) -> bool:
        """Whether this handle's principal may ``mode`` ("read", "write", "administer", "approve") ``scope`` by the
        door's rules; a trusted (unbound) store allows everything, as the spec's store does."""
        if not self.restricted:
            return True
        return self.standing().may(mode, require_name(scope, "scope"))

    def standing(self) -> rules.Standing:
        """What the persisted grants give this handle's principal (for listing what it may see or administer)."""
        return authority.standing(self.engine, self.principal, operator=self.operator)

    def bulk_appender(
        self,
        on_written: Callable[[Sequence[StoredEvent], Any], None],
        *,
        secret_policy: SecretPolicy | None = None,
        on_refused: Callable[[int, Exception], None] | None = None,
    ) -> BulkAppender:
        """The door for batches: a BulkAppender (service.store.bulk_append) whose every submitted batch passes the
        same checks as ``append``. An event the secret guard refuses is left out and given to ``on_refused`` (its
        index in the batch, the error) when there is one; otherwise the error stops the batch."""
        self._writable()
        policy = self._policy(secret_policy)

        def check(events: Sequence[NewEvent]) -> list[NewEvent]:
            self._writable()
            self._authorize(events, self.principal)  # (no pins: a batch is appended blind, as put_many's are)
            out = []
            for n, e in enumerate(self._decided(events)[0]):
                try:
                    out.append(guard_event(e, policy))
                except ValueError as exc:  # SecretPolicyError, InvalidArgument
                    if on_refused is None:
                        raise
                    on_refused(n, exc)
            return out

        return BulkAppender(self.events, self.principal, on_written, check=check)

    def _admit(
        self, events: Sequence[NewEvent], by: str | None, secret_policy: str | None, *, restore: bool = False
    ) -> tuple[str, list[NewEvent], set[str]]:
        """The door's checks, in order: (who acts, the events as they may be appended, the streams whose versions
        the authorization or the evidence trails pinned). ``restore``: a load's puts keep the trails their file holds."""
        self._writable()
        actor = self._actor(by)
        policy = self._policy(secret_policy)
        pinned: set[str] = set()
        if self.restricted:
            events, pinned = self._authorize(events, actor)
        if not restore:
            events, trails_pinned = self._decided(events, pin=True)
            pinned |= trails_pinned
        return actor, [guard_event(e, policy) for e in events], pinned

    def _decided(self, events: Sequence[NewEvent], *, pin: bool = False) -> tuple[list[NewEvent], set[str]]:
        """``events`` with every belief that is put or updated carrying the evidence trail the evidence commands
        decided for it (none for a new one) and the credence it implies: a put cannot claim evidence or credence.
        ``pin``: each such event expects its stream's version as it was when its trail was read (unless it already
        expects one), so an evidence command committed meanwhile fails the append, which decides anew; the streams
        pinned come second."""
        claims = [n for n, e in enumerate(events) if e.event.type_name in _CLAIMS and is_belief(e.event.item)]  # type: ignore[attr-defined]
        if not claims:
            return list(events), set()
        decided = decided_trails(self.engine, [events[n].stream for n in claims])
        out, pinned = list(events), set()
        for n in claims:
            e = events[n]
            version, trail = decided.get(e.stream, (0, []))
            data = e.event.to_data()
            data["item"] = with_trail(data["item"], trail)
            expected = e.expected_version
            if pin and expected is None and e.stream not in pinned:
                expected = version
                pinned.add(e.stream)
            out[n] = NewEvent(e.stream, type(e.event).from_data(data), e.scope, expected, e.normalized)
        return out, pinned

    def _authorize(self, events: Sequence[NewEvent], actor: str) -> tuple[list[NewEvent], set[str]]:
        """On a bound handle, raise unless ``actor`` may append ``events``; the events with the version of each item
        stream the decision was about pinned (so that a concurrent move of it fails the append, which decides anew)."""
        if not self.restricted:
            return list(events), set()
        streams = [e.stream for e in events]
        now = authority.situation(self.engine, actor, streams, operator=self.operator)
        live = {stream: scope for stream, (scope, _v) in now.live.items()}
        rules.check(now.standing, rules.needs(events, actor, live, now.pending))
        out, pinned, seen = [], set(), set()
        for e in events:
            known = now.live.get(e.stream)
            if known is not None and e.stream not in seen and e.expected_version is None:
                e = NewEvent(e.stream, e.event, e.scope, known[1], e.normalized)
                pinned.add(e.stream)
            seen.add(e.stream)
            out.append(e)
        return out, pinned

    def _actor(self, by: str | None) -> str:
        if by is None or by == self.principal:
            return self.principal
        who = require_name(by, "by")
        if self.restricted:
            raise AccessDeniedError(
                who, None, None, f"a handle bound to {self.principal!r} acts only as itself, not {who!r}"
            )
        return who

    def _policy(self, secret_policy: str | None) -> str:
        return self.secret_policy if secret_policy is None else check_policy(secret_policy)

    def _writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"this view is read-only (as of seq {self.as_of_seq}); write to the live store")

    # ----------------------------------------------------------------- commands on items
