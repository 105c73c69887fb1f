"""A bounded schemathesis run against the served OpenAPI document: no 500s, and responses match the document."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.http_server import create_token, start_server

ST = shutil.which("st") or shutil.which("schemathesis")
CHECKS = "all"


@pytest.mark.skipif(ST is None, reason="schemathesis is a dev dependency")
def test_fuzzing_the_openapi_document_finds_no_server_error(tmp_path: Path) -> None:
    server = start_server(str(tmp_path / "store"), tmp_path)
    try:
        token = create_token(server.root, "fuzzer")
        with server.client(token) as c:  # something to find, so item routes get past their 404s
            for n in range(3):
                c.post("/v1/items", json={"kind": "text", "text": f"fuzz seed item {n}", "tags": ["seed"]})
        run = subprocess.run(
            [
                ST,
                "run",
                f"{server.url}/openapi.json",
                "-H",
                f"Authorization: Bearer {token}",
                "--checks",
                CHECKS,
                "--max-examples",
                "15",
                "--seed",
                "80",
                "--request-timeout",
                "30",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=180,
        )
    finally:
        server.stop()
    assert run.returncode == 0, run.stdout[-6000:]
    assert "unhandled error" not in server.log.read_text(), server.log.read_text()[-4000:]
