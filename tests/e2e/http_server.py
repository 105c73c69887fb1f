"""Start ``substrate serve`` as a real process on a free port, and issue tokens with the real CLI."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

CLI = [sys.executable, "-m", "service.cli"]
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SUBSTRATE_DATABASE_URL", None)  # the server must use --root, never a developer's database
    return env


def cli(*args: str, root: str) -> subprocess.CompletedProcess[str]:
    """Run ``substrate ARGS --root ROOT``; raises with its output when it fails."""
    done = subprocess.run(
        [*CLI, *args, "--root", root], capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=120
    )
    if done.returncode != 0:
        raise AssertionError(f"substrate {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}")
    return done


def create_token(root: str, principal: str) -> str:
    """``substrate token create --principal NAME``: the token is the last line of the output."""
    return cli("token", "create", "--principal", principal, root=root).stdout.strip().splitlines()[-1]


@dataclass
class Server:
    """A running ``substrate serve`` process."""

    root: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def start_server(root: str, log_dir: Path, *options: str) -> Server:
    """Serve the persistent store at ``root`` (with more ``options``); returns once /healthz answers 200 (60 s at
    most)."""
    port = free_port()
    log = log_dir / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [*CLI, "serve", "--root", root, "--port", str(port), "--log-level", "warning", *options],
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=_env(),
        )
    server = Server(root, f"http://127.0.0.1:{port}", proc, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"substrate serve exited {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    server.stop()
    raise AssertionError(f"substrate serve did not become healthy in 60 s: {log.read_text()[-3000:]}")
