"""A handshake-era (2025-06-18) streamable HTTP client written out by hand with httpx, for the
tests that do what no polite client does: open sessions and never close them, subscribe
thousands of times, come from another address."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx2 as httpx

from kbes.server.resources import article_uri

PROTOCOL = "2025-06-18"
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def initialize(protocol: str = PROTOCOL, request_id: int = 0) -> dict[str, Any]:
    """An `initialize` request as a client without the SDK sends it."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": protocol,
            "capabilities": {},
            "clientInfo": {"name": "raw-http", "version": "0"},
        },
    }


def client(token: str | None = None, *, source: str | None = None) -> httpx.Client:
    """An httpx client, with a bearer token, from a given local address (`127.0.0.2`)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = httpx.HTTPTransport(local_address=source) if source else None
    return httpx.Client(headers=headers, transport=transport, timeout=30)


def answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, sent as JSON or as one SSE event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                return dict(json.loads(line[5:]))
        raise AssertionError(f"no data in {response.text!r}")
    return dict(response.json())


class Session:
    """One handshake-era session: `open`, then requests, then (or not) `close`."""

    def __init__(self, http: httpx.Client, url: str) -> None:
        self.http = http
        self.url = url
        self.id: str | None = None
        self._next = 1

    def open(self) -> httpx.Response:
        """Initialize; the response (a refusal is returned, not raised)."""
        response = self.http.post(
            self.url,
            headers=ACCEPT,
            json=initialize(),
        )
        if response.status_code == 200:
            self.id = response.headers["mcp-session-id"]
            done = self.http.post(
                self.url,
                headers=self._headers(),
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            )
            assert done.status_code == 202, done.text
        return response

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        response = self.http.post(
            self.url,
            headers=self._headers(),
            json={"jsonrpc": "2.0", "id": self._next, "method": method, "params": params},
        )
        assert response.status_code == 200, (response.status_code, response.text)
        return answer(response)

    def subscribe(self, uri: str) -> dict[str, Any]:
        return self.request("resources/subscribe", {"uri": uri})

    def close(self) -> int:
        """DELETE the session; the status."""
        return self.http.delete(self.url, headers=self._headers()).status_code

    def _headers(self) -> dict[str, str]:
        assert self.id is not None
        return {**ACCEPT, "mcp-session-id": self.id, "mcp-protocol-version": PROTOCOL}


def article_uris(knowledge_base_id: str, count: int) -> list[str]:
    """Current-article URIs in a granted knowledge base, each a different (random) article:
    acknowledged and watched like any other, as a URI that names nothing must be."""
    return [article_uri(knowledge_base_id, str(uuid.uuid4())) for _ in range(count)]
