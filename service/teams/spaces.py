"""Team spaces over a shared store: scoped views whose every read and write is decided by an AccessPolicy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from service.domain.events import ItemPut, NewEvent
from service.domain.items import SubstrateItem
from service.domain.validation import InvalidArgument, require_name
from service.teams.access import PUBLIC, AccessPolicy, require_principal
from service.teams.sharing import MergeStrategy, history, merge_versions, publish, revision, version_of

if TYPE_CHECKING:
    from service.substrate import Substrate

__all__ = ["MergeStrategy", "Space", "history", "merge_versions", "publish", "revision", "version_of"]


class _VisibleSearch:
    """The store's search restricted to a fixed set of scopes (one search per scope, merged by score)."""

    def __init__(self, substrate: Substrate, scopes: Sequence[str]) -> None:
        self._substrate = substrate
        self._scopes = list(scopes)

    def search(
        self, query: str, k: int = 5, *, kind: str | None = None, scope: str | None = None
    ) -> list[tuple[SubstrateItem, float]]:
        scopes = self._scopes if scope is None else [s for s in self._scopes if s == scope]
        hits = [h for s in scopes for h in self._substrate.search(query, k=k, kind=kind, scope=s)]
        hits.sort(key=lambda h: -h[1])  # stable: equal scores keep scope order
        return hits[:k]


class Space:
    """A team's scoped view over a shared store: its own items plus what the policy lets it see of ``shared``."""

    def __init__(
        self, substrate: Substrate, team: str, *, shared: Sequence[str] = (PUBLIC,), policy: AccessPolicy | None = None
    ) -> None:
        # The team is this Space's principal: an empty or missing one is refused like any unauthenticated caller.
        home = team if isinstance(team, str) else ""
        self.team = require_principal(team, home, "read", name="team", detail="a Space's team is its principal")
        if isinstance(shared, str):
            raise InvalidArgument("shared must be a sequence of scope names, not a single string")
        self.shared: tuple[str, ...] = tuple(require_name(s, "shared scope") for s in shared)
        if policy is not None and not isinstance(policy, AccessPolicy):
            raise InvalidArgument(f"policy must be an AccessPolicy, got {type(policy).__name__}")
        self.policy = policy if policy is not None else AccessPolicy()
        self.substrate = substrate
        # MXR-080-0264: the caller's tuple is a request, not a permission; every entry is checked now.
        for scope in self.shared:
            self.policy.require_read(self.team, scope)

    def __repr__(self) -> str:
        return f"Space(team={self.team!r}, shared={self.shared!r})"

    @property
    def scopes(self) -> set[str]:
        """Scopes actually visible to this team right now (own scope plus the currently authorized shared ones)."""
        return {self.team} | self.policy.readable(self.team, self.shared)

    def all(self, *, kind: str | None = None) -> list[SubstrateItem]:
        """Every visible item (optionally of one kind), in one SQL query over the visible scopes."""
        return list(self.substrate.iter_items(kind=kind, scopes=sorted(self.scopes)))

    def add(self, *, scope: str | None = None, **kw: Any) -> str:
        """Add an item to the team's own scope by default, or to any scope the team may write."""
        target = self.team if scope is None else require_name(scope, "scope")
        self.policy.require_write(self.team, target)
        if "id" in kw:
            # A chosen id would replace (and re-scope) whatever item holds it, in any scope: ids are minted here.
            raise ValueError("Space.add mints the item id; to change an existing item use Substrate.update")
        secret_policy = kw.pop("secret_policy", None)
        data = self.substrate.event_item(SubstrateItem(scope=target, **kw), fresh=True)
        event = NewEvent(data["id"], ItemPut(item=data), scope=target, normalized=True)
        return self.substrate.append([event], by=self.team, secret_policy=secret_policy)[0].stream

    def retrieve(self, query: str, *, k: int = 8, **kw: Any) -> Any:
        """Retrieve over exactly the team's visible set (own scope and authorized shared), with kind diversity."""
        from service.retrieval.retrieve import retrieve

        visible = sorted(self.scopes)
        scope = kw.get("scope")
        if scope is not None:
            self.policy.require_read(self.team, scope)
        return retrieve(_VisibleSearch(self.substrate, visible), query, k=k, **kw)

    def publish(self, ids: Sequence[str], *, to: str = PUBLIC, by: str | None = None) -> list[str]:
        """Share this team's own-scope items into ``to`` (audited); ``by`` must hold its own grants on the policy."""
        return publish(
            self.substrate, ids, to=to, by=self.team if by is None else by, from_scope=self.team, policy=self.policy
        )
