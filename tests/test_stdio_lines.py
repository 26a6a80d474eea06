"""Every line a stdio client sends gets an answer or, for a notification, a log line: a real
`kbes serve` fed raw lines. The SDK's stdio transport once dropped every line it could not
parse (garbage, `{}`, batches, truncated JSON) with nothing sent and nothing logged, and a
request escaping a lone surrogate (`"\\ud800"`) left its client waiting for ever, and a line
nested 5,000 deep ended the server (RecursionError)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp_harness import KBES

from kbes import open_store

pytestmark = pytest.mark.slow

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip

CASES: list[tuple[bytes, int, Any]] = [
    (b"garbage", PARSE_ERROR, None),
    (b"{}", INVALID_REQUEST, None),
    (b"[]", INVALID_REQUEST, None),
    (b'[{"jsonrpc":"2.0","id":5,"method":"ping"}]', INVALID_REQUEST, None),
    (b'{"jsonrpc":"2.0","id":7,"method":"ping"', PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"_meta":{"x":"\\ud800"}}}',
     PARSE_ERROR, 8),
    (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_knowledge_article",'
     b'"arguments":{"knowledge_base_id":"k","article_id":"\\ud800"}}}', PARSE_ERROR, 9),
    (b'{"jsonrpc":"2.0","id":"a\\udc00","method":"ping"}', PARSE_ERROR, None),
    (b'{"jsonrpc":"1.0","id":10,"method":"ping"}', INVALID_REQUEST, 10),
    (b'{"jsonrpc":"2.0","id":"eleven","method":7}', INVALID_REQUEST, "eleven"),
    (b"\xff\xfe", PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":12,"method":"ping","params":NaN}', INVALID_REQUEST, 12),
    # Deeper than Python's JSON parser goes: it raised RecursionError and the server exited.
    (b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":' + b"[" * 5000 + b"]" * 5000
     + b"}", PARSE_ERROR, None),
    (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":' + b'{"a":' * 5000 + b"1"
     + b"}" * 5001, PARSE_ERROR, None),
]  # fmt: skip


class Wire:
    """A `kbes serve` subprocess spoken to in raw lines, its answers read by a thread."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen(
            [KBES, "serve", "--db", str(db), "--grant-all"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.answers.put(json.loads(line))

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 10) -> dict[str, Any]:
        try:
            return self.answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no answer: the client would wait for ever") from None

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        finally:
            self.process.kill()
        return self.process.stderr.read().decode()


@pytest.fixture
def wire(tmp_path: Path) -> Wire:
    db = tmp_path / "kbes.sqlite"
    open_store(db).close()
    wire = Wire(db)
    wire.send(json.dumps(INITIALIZE).encode())
    assert wire.answer()["id"] == 0
    wire.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    wire.send(b'{"jsonrpc":"2.0","id":"first","method":"ping"}')
    assert wire.answer() == {"jsonrpc": "2.0", "id": "first", "result": {}}
    return wire


def test_every_malformed_line_is_answered_and_logged(wire: Wire) -> None:
    for n, (line, code, request_id) in enumerate(CASES):
        wire.send(line)
        got = wire.answer()
        assert (got.get("id"), got.get("error", {}).get("code")) == (request_id, code), line
        assert got["error"]["message"], line
        wire.send(json.dumps({"jsonrpc": "2.0", "id": 1000 + n, "method": "ping"}).encode())
        assert wire.answer() == {"jsonrpc": "2.0", "id": 1000 + n, "result": {}}, line
    # A notification gets no answer (JSON-RPC), and a blank line none either.
    wire.send(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"y":"\\ud800"}}')
    wire.send(b"")
    wire.send(b'{"jsonrpc":"2.0","id":"last","method":"ping"}')
    assert wire.answer() == {"jsonrpc": "2.0", "id": "last", "result": {}}
    log = wire.close()
    refused = [line for line in log.splitlines() if "stdio: refused a line" in line]
    assert len(refused) == len(CASES) + 1, log
    assert "lone UTF-16 surrogate" in log
    assert "batches are not supported" in log
