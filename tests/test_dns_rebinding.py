"""DNS rebinding: a real `kbes serve --http` without tokens, on any loopback address, answers
only requests addressed to it; a web page's `Host: evil.example` (with its Origin) is refused
before anything is read (issue 35, defect 5)."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest
from mcp_harness import http_server, seed
from raw_http import ACCEPT, initialize

pytestmark = pytest.mark.slow

EVIL = {"Host": "evil.example", "Origin": "http://evil.example"}


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
def test_another_host_is_refused_on_every_loopback_address(tmp_path: Path, host: str) -> None:
    data = seed(tmp_path / "kbes.sqlite")
    with http_server(data.db, "--grant-all", host=host) as server, httpx.Client() as http:
        evil = http.post(server.url, headers={**ACCEPT, **EVIL}, json=initialize())
        assert evil.status_code == 421, evil.text
        origin = {"Origin": "http://evil.example"}
        foreign = http.post(server.url, headers={**ACCEPT, **origin}, json=initialize())
        assert foreign.status_code == 403, foreign.text
        own = http.post(server.url, headers=ACCEPT, json=initialize())
        assert own.status_code == 200, own.text
        address = server.url.removesuffix("/mcp")
        same = http.post(server.url, headers={**ACCEPT, "Origin": address}, json=initialize())
        assert same.status_code == 200, same.text
