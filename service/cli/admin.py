"""Administration: ``substrate access grant|revoke|list`` and ``substrate approver grant|revoke|list``.

Each change is an event through the store's write door, made by a principal (``--as NAME``; default the operator,
``--admin NAME`` or $SUBSTRATE_ADMIN) and allowed only if that principal administers the scope: its owner, an admin
the operator made, or the operator, who administers every scope (``public`` and unowned ones included).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from service.cli.common import add_store_options, open_store, print_json

__all__ = ["register"]


def _acting(args: argparse.Namespace) -> tuple[Any, Any] | None:
    """(the store, a handle bound to the acting principal), or None (told on stderr) when nobody is named."""
    from service.substrate import OPERATOR_ENV

    operator = args.admin or os.environ.get(OPERATOR_ENV) or None
    actor = args.as_ or operator
    if actor is None:
        print(
            f"substrate {args.command}: error: name who acts: --as NAME, or the operator with --admin NAME "
            f"(or ${OPERATOR_ENV})",
            file=sys.stderr,
        )
        return None
    store = open_store(args, create=True, operator=operator)
    return store, store.with_principal(actor)


def _change(args: argparse.Namespace, act: Callable[[Any], Any], done: Callable[[Any], str], refused: str) -> int:
    """Run ``act`` on a handle bound to the acting principal; print ``done(result)``, or ``refused`` (exit 1) when
    the result is False (nothing to revoke)."""
    acting = _acting(args)
    if acting is None:
        return 2
    store, handle = acting
    try:
        result = act(handle)
    finally:
        store.close()
    if result is False:
        print(f"substrate {args.command} revoke: error: {refused}", file=sys.stderr)
        return 1
    print(done(result))
    return 0


def _listing(args: argparse.Namespace, fetch: Callable[[Any], list[dict[str, Any]]], line: Callable[[Any], str]) -> int:
    store = open_store(args)
    try:
        rows = fetch(store)
    finally:
        store.close()
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print(f"no {'grants' if args.command == 'access' else 'approvers'}")
    for row in rows:
        print(line(row))
    return 0


def _access_grant(args: argparse.Namespace) -> int:
    from service.teams.access import grant_access

    return _change(
        args,
        lambda h: grant_access(h, args.principal, args.scope, args.mode, by=h.principal),
        lambda seq: f"granted {args.mode} on {args.scope!r} to {args.principal!r} (seq {seq})",
        "",
    )


def _access_revoke(args: argparse.Namespace) -> int:
    from service.teams.access import revoke_access

    return _change(
        args,
        lambda h: revoke_access(h, args.principal, args.scope, by=h.principal),
        lambda _: f"revoked every grant of {args.principal!r} on {args.scope!r}",
        f"{args.principal!r} holds no grant on {args.scope!r}",
    )


def _access_list(args: argparse.Namespace) -> int:
    from service.teams.access import list_access

    return _listing(
        args,
        lambda store: list_access(store, scope=args.scope),
        lambda g: f"{g['scope']:<24} {g['principal']:<24} {g['mode']:<10} seq {g['seq']}",
    )


def _approver_grant(args: argparse.Namespace) -> int:
    from service.teams.approvers import grant_approver

    return _change(
        args,
        lambda h: grant_approver(h, args.who, args.scope, by=h.principal),
        lambda seq: f"{args.who!r} approves promotions into {args.scope!r} (seq {seq})",
        "",
    )


def _approver_revoke(args: argparse.Namespace) -> int:
    from service.teams.approvers import revoke_approver

    return _change(
        args,
        lambda h: revoke_approver(h, args.who, args.scope, by=h.principal),
        lambda _: f"{args.who!r} no longer approves promotions into {args.scope!r}",
        f"{args.who!r} does not approve into {args.scope!r}",
    )


def _approver_list(args: argparse.Namespace) -> int:
    from service.teams.approvers import list_approvers

    return _listing(
        args,
        lambda store: list_approvers(store, scope=args.scope),
        lambda a: f"{a['scope']:<24} {a['who']:<24} granted by {a['by']} (seq {a['since_seq']})",
    )


def _actor_options(p: argparse.ArgumentParser) -> None:
    add_store_options(p)
    p.add_argument("--as", dest="as_", metavar="NAME", help="the principal who acts (default: the operator)")
    p.add_argument("--admin", metavar="NAME", help="the operator principal (default $SUBSTRATE_ADMIN)")


def _list_options(p: argparse.ArgumentParser) -> None:
    add_store_options(p)
    p.add_argument("--scope", help="only this scope")
    p.add_argument("--json", action="store_true", help="print JSON")


def register(sub: Any) -> None:
    """Add ``access`` and ``approver``."""
    p = sub.add_parser(
        "access",
        help="grant, revoke and list access to scopes",
        description="Grant, revoke and list who may read, write or administer which scope. A change is made by "
        "--as NAME (default: the operator, --admin NAME or $SUBSTRATE_ADMIN), who must administer the scope.",
    )
    asub = p.add_subparsers(dest="access_command", metavar="ACCESS_COMMAND")
    asub.required = True
    g = asub.add_parser(
        "grant",
        help="grant PRINCIPAL read, write, readwrite or admin on SCOPE",
        description="Grant PRINCIPAL read, write, readwrite or admin on SCOPE.",
    )
    g.add_argument("principal")
    g.add_argument("scope")
    g.add_argument("--mode", choices=["read", "write", "readwrite", "admin"], default="readwrite")
    _actor_options(g)
    g.set_defaults(handler=_access_grant)
    r = asub.add_parser(
        "revoke",
        help="revoke every grant of PRINCIPAL on SCOPE (exit 1 if it held none)",
        description="Revoke every grant of PRINCIPAL on SCOPE (exit 1 if it held none).",
    )
    r.add_argument("principal")
    r.add_argument("scope")
    _actor_options(r)
    r.set_defaults(handler=_access_revoke)
    ls = asub.add_parser("list", help="list the grants", description="List the grants.")
    _list_options(ls)
    ls.set_defaults(handler=_access_list)

    p = sub.add_parser(
        "approver",
        help="grant, revoke and list who approves promotions into a scope",
        description="Grant, revoke and list the approvers of promotions into a scope. A change is made by --as NAME "
        "(default: the operator, --admin NAME or $SUBSTRATE_ADMIN), who must administer the scope.",
    )
    psub = p.add_subparsers(dest="approver_command", metavar="APPROVER_COMMAND")
    psub.required = True
    g = psub.add_parser(
        "grant",
        help="make WHO an approver of promotions into SCOPE",
        description="Make WHO an approver of promotions into SCOPE.",
    )
    g.add_argument("who")
    g.add_argument("scope")
    _actor_options(g)
    g.set_defaults(handler=_approver_grant)
    r = psub.add_parser(
        "revoke",
        help="WHO no longer approves into SCOPE (exit 1 if it did not)",
        description="WHO no longer approves into SCOPE (exit 1 if it did not).",
    )
    r.add_argument("who")
    r.add_argument("scope")
    _actor_options(r)
    r.set_defaults(handler=_approver_revoke)
    ls = psub.add_parser("list", help="list the live approvers", description="List the live approvers.")
    _list_options(ls)
    ls.set_defaults(handler=_approver_list)
