"""Commands: ``substrate serve`` (the HTTP API) and ``substrate token create|list|revoke`` (its credentials)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any

from service.cli.common import add_store_options, open_store, print_json
from service.store.replica import READ_URL_ENV

__all__ = ["register", "worker_app"]

_WORKER_ENV = "SUBSTRATE_SERVE_WORKER"  # the options each worker process opens the store with (JSON)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from service.http.app import create_app

    # uvicorn re-raises SIGTERM after its graceful shutdown; exit through SystemExit instead of dying from the
    # signal, so atexit handlers run (the embedded PostgreSQL is stopped when its last user exits).
    signal.signal(signal.SIGTERM, _exit_on_signal)
    read_url = args.read_url or os.environ.get(READ_URL_ENV)
    # Both reach every process (the workers too) through the environment the store and the app read them from.
    if args.admin is not None:
        os.environ["SUBSTRATE_ADMIN"] = args.admin
    if args.max_body is not None:
        os.environ["SUBSTRATE_MAX_BODY"] = str(args.max_body)
    # Never echo a URL: it may carry a password.
    where = "the --url/$SUBSTRATE_DATABASE_URL database" if args.url or _env_url() else (args.root or ".substrate")
    extra = (", reads on the --read-url replica" if read_url else "") + (
        f", {args.workers} processes" if args.workers > 1 else ""
    )
    print(f"substrate: serving {where}{extra} on http://{args.host}:{args.port} (docs at /docs)", file=sys.stderr)
    run: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "access_log": args.access_log,
    }
    if args.workers == 1:
        app = create_app(lambda: open_store(args, create=True, read_url=read_url), background=args.background_interval)
        uvicorn.run(app, **run)
        return 0
    # This process opens the store first: the embedded server is started, configured and migrated once, not by
    # workers racing each other, and stays up while uvicorn replaces a worker that died.
    store = open_store(args, create=True, read_url=read_url)
    try:
        os.environ[_WORKER_ENV] = json.dumps(
            {"url": args.url, "root": args.root, "read_url": read_url, "background": args.background_interval}
        )
        uvicorn.run("service.cli.serve:worker_app", factory=True, workers=args.workers, **run)
    finally:
        store.close()
    return 0


def worker_app() -> Any:
    """The app of one ``serve --workers N`` process (uvicorn imports it by name in each), from the parent's options."""
    from service.http.app import create_app

    options = json.loads(os.environ[_WORKER_ENV])
    args = argparse.Namespace(url=options["url"], root=options["root"])
    return create_app(
        lambda: open_store(args, create=True, read_url=options["read_url"]), background=options["background"]
    )


def _bytes(value: str) -> int:
    if not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number of bytes, got {value!r}")
    return int(value)


def _workers(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of processes: {value!r}") from None
    if not 1 <= n <= 64:
        raise argparse.ArgumentTypeError(f"must be 1 to 64 processes, got {n}")
    return n


def _interval(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not (seconds >= 0 and seconds < float("inf")):
        raise argparse.ArgumentTypeError(f"must be 0 (off) or a positive number of seconds, got {value!r}")
    return seconds


def _exit_on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def _env_url() -> str | None:
    return os.environ.get("SUBSTRATE_DATABASE_URL")


def _token_create(args: argparse.Namespace) -> int:
    from service.teams.tokens import create_token

    store = open_store(args, create=True)
    try:
        info, token = create_token(store, args.principal, label=args.label)
    finally:
        store.close()
    print(f"created token {info.id} for principal {info.principal!r}; it is shown once, store it now:")
    print(token)  # the LAST line: scripts take it with `| tail -n1`
    return 0


def _token_list(args: argparse.Namespace) -> int:
    from service.teams.tokens import list_tokens

    store = open_store(args)
    try:
        tokens = list_tokens(store, principal=args.principal, include_revoked=args.all)
    finally:
        store.close()
    if args.json:
        print_json([t.as_dict() for t in tokens])
        return 0
    if not tokens:
        print("no tokens")
        return 0
    rows = [
        (
            t.id,
            t.principal,
            t.created_at.isoformat(timespec="seconds") if t.created_at else "",
            f"revoked {t.revoked_at.isoformat(timespec='seconds')}" if t.revoked_at else "live",
            t.label or "",
        )
        for t in tokens
    ]
    header = ("ID", "PRINCIPAL", "CREATED", "STATE", "LABEL")
    widths = [max(len(r[n]) for r in (header, *rows)) for n in range(4)]
    for row in (header, *rows):
        print(("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4]).rstrip())
    return 0


def _token_revoke(args: argparse.Namespace) -> int:
    from service.teams.tokens import revoke_token

    store = open_store(args)
    try:
        revoked = revoke_token(store, args.id)
    finally:
        store.close()
    if not revoked:
        print(f"substrate token revoke: error: no live token with id {args.id!r}", file=sys.stderr)
        return 1
    print(f"revoked token {args.id}")
    return 0


def _port(value: str) -> int:
    port = int(value)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in 0..65535, got {value}")
    return port


def register(sub: Any) -> None:
    """Add ``serve`` and ``token``."""
    p = sub.add_parser(
        "serve",
        help="run the HTTP API (FastAPI + uvicorn)",
        description="Serve the HTTP API over the store (./.substrate on the embedded PostgreSQL by default, or "
        "$SUBSTRATE_DATABASE_URL). Every route except /healthz, /openapi.json and /docs needs "
        "'Authorization: Bearer <token>' (see `substrate token create`). When one machine is not enough: "
        "--workers N processes, on as many machines as needed, over one primary and --read-url replicas.",
    )
    add_store_options(p)
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="TCP port (default 8000)")
    p.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="uvicorn log level (default info)",
    )
    p.add_argument("--no-access-log", dest="access_log", action="store_false", help="do not log every request")
    p.add_argument(
        "--background-interval",
        type=_interval,
        default=2.0,
        metavar="SECONDS",
        help="how often a background thread brings the search postings and embedders up to date, so "
        "the first search after a burst of writes does not do it (default 2; 0 turns it off). With several "
        "processes, one at a time does it (a PostgreSQL advisory lock; another takes over if it dies)",
    )
    p.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N",
        help="serve from N processes sharing the port (default 1). They keep no state of their own: every "
        "process (on this machine or others) serves every request",
    )
    p.add_argument(
        "--read-url",
        metavar="URL",
        help="a PostgreSQL hot standby of the store's database: searches and item reads go there, writes to "
        "the primary, so a read may trail a write by the replica's lag (milliseconds; default: "
        "$SUBSTRATE_READ_URL)",
    )
    p.add_argument(
        "--admin",
        metavar="NAME",
        help="the operator principal: administers public and every scope nobody owns (grants access and "
        "approvers there, and may make others admins); default $SUBSTRATE_ADMIN, else nobody",
    )
    p.add_argument(
        "--max-body",
        type=_bytes,
        metavar="BYTES",
        help="the largest request body, and the longest line of an /v1/ingest upload, in bytes; a larger one is "
        "answered 413 (default $SUBSTRATE_MAX_BODY, else 8388608: 8 MiB)",
    )
    p.set_defaults(handler=_serve)

    p = sub.add_parser("token", help="HTTP bearer tokens", description="Create, list and revoke HTTP bearer tokens.")
    tsub = p.add_subparsers(dest="token_command", metavar="TOKEN_COMMAND")
    tsub.required = True
    c = tsub.add_parser(
        "create",
        help="issue a bearer token for a principal (printed once, on the last line)",
        description="Issue a new bearer token for PRINCIPAL; its home scope is its own name. Only the token's "
        "sha256 is stored, so the token is printed once, on the last line of the output.",
    )
    add_store_options(c)
    c.add_argument("--principal", required=True, help="who the token authenticates (its home scope)")
    c.add_argument("--label", default="", help="a note to recognize the token by in `token list`")
    c.set_defaults(handler=_token_create)
    ls = tsub.add_parser(
        "list",
        help="list tokens (ids, principals, dates; never the secrets)",
        description="List the live tokens (with --all also revoked ones): id, principal, created, state, label.",
    )
    add_store_options(ls)
    ls.add_argument("--principal", help="only this principal's tokens")
    ls.add_argument("--all", action="store_true", help="include revoked tokens")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(handler=_token_list)
    r = tsub.add_parser(
        "revoke",
        help="revoke a token by id (effective on the next request)",
        description="Revoke the token with id ID (as shown by `substrate token list`); exit 1 if none is live.",
    )
    add_store_options(r)
    r.add_argument("id", help="the token id (the part after sbt_, before the second underscore)")
    r.set_defaults(handler=_token_revoke)
