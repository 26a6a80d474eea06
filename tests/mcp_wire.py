"""An agent's side of a real `kbes serve`, spoken synchronously: MCP over stdio (JSON lines on
the server's stdin and stdout) or over streamable HTTP (handshake-era requests with httpx), for
the tests that kill the server under the client (tests/kill_loop.py) or race it against other
processes (tests/test_rebuild_race.py). A server that dies mid-call raises `ServerGone`, so the
caller knows which call was in flight."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
from mcp_harness import KBES
from raw_http import ACCEPT, PROTOCOL, answer, initialize


class ServerGone(Exception):
    """The server ended (or was killed) before it answered the call."""


class ToolAnswer:
    """A `tools/call` answer: the JSON a model reads, and whether it is a refusal."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.is_error = bool(result.get("isError"))
        self.body: dict[str, Any] = json.loads(result["content"][0]["text"])

    def __repr__(self) -> str:
        return f"ToolAnswer(is_error={self.is_error}, body={self.body!r})"


class Server:
    """`kbes serve --grant-all --edits allow ARGS...` in a process of its own, over stdio or
    HTTP, with a client speaking to it; `env` holds KBES_DB, KBES_VIEWS and KBES_SEARCH."""

    def __init__(self, env: dict[str, str], transport: str, log: Path, *args: str) -> None:
        self.transport = transport
        self.log = log
        self._next = 0
        command = [KBES, "serve", "--grant-all", "--edits", "allow", *args]
        if transport == "http":
            command += ["--http", "127.0.0.1:0"]
        with open(log, "ab") as stderr:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE if transport == "stdio" else subprocess.DEVNULL,
                stdout=subprocess.PIPE if transport == "stdio" else stderr,
                stderr=stderr,
                env={**os.environ, **env},
            )
        self.started = time.monotonic()
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._http: httpx.Client | None = None
        self._url = ""
        self._session = ""
        if transport == "stdio":
            threading.Thread(target=self._read, daemon=True).start()

    # Lifecycle ---------------------------------------------------------------------------------

    def open(self, timeout: float = 60) -> None:
        """Initialize the MCP session; ServerGone if the server dies first."""
        if self.transport == "stdio":
            self._request("initialize", initialize()["params"], timeout)
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            return
        offset = self.log.stat().st_size if self.log.exists() else 0
        deadline = time.monotonic() + timeout
        while not self._url:
            found = re.search(
                r"http://127\.0\.0\.1:\d+/mcp",
                self.log.read_bytes()[offset:].decode(errors="replace"),
            )
            if found:
                self._url = found.group(0)
            elif self.process.poll() is not None:
                raise ServerGone(f"exit {self.process.returncode}")
            elif time.monotonic() > deadline:
                raise AssertionError(f"kbes serve printed no URL in {timeout} s: {self.log}")
            else:
                time.sleep(0.02)
        self._http = httpx.Client(timeout=timeout)
        while True:
            try:
                response = self._http.post(self._url, headers=ACCEPT, json=initialize())
                break
            except httpx.TransportError:
                if self.process.poll() is not None:
                    raise ServerGone(f"exit {self.process.returncode}") from None
                time.sleep(0.02)
        assert response.status_code == 200, response.text
        self._session = response.headers["mcp-session-id"]
        done = self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202, done.text

    def kill(self) -> None:
        """SIGKILL, as a power-less crash would end it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def close(self) -> None:
        """Stop a server that is done: end of input (stdio) or SIGTERM (HTTP)."""
        if self._http is not None:
            self._http.close()
        if self.process.poll() is None:
            if self.transport == "stdio":
                assert self.process.stdin is not None
                self.process.stdin.close()
            else:
                self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)

    # Calls -------------------------------------------------------------------------------------

    def tool(self, name: str, arguments: dict[str, Any], timeout: float = 120) -> ToolAnswer:
        return ToolAnswer(
            self._request("tools/call", {"name": name, "arguments": arguments}, timeout)
        )

    def _request(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        if self.transport == "stdio":
            self._send(message)
            try:
                reply = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no answer to {method} in {timeout} s") from None
            if reply is None:
                raise ServerGone(f"exit {self.process.wait(timeout=30)}")
        else:
            try:
                response = self._post(message)
            except httpx.TransportError as e:
                raise ServerGone(repr(e)) from None
            assert response.status_code == 200, (response.status_code, response.text)
            reply = answer(response)
        assert reply.get("id") == self._next, reply
        assert "result" in reply, reply
        return dict(reply["result"])

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise ServerGone("its stdin is closed") from None

    def _post(self, message: dict[str, Any]) -> httpx.Response:
        assert self._http is not None
        headers = {**ACCEPT, "mcp-session-id": self._session, "mcp-protocol-version": PROTOCOL}
        return self._http.post(self._url, headers=headers, json=message)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if "method" not in message:  # answers; not the server's notifications
                self._lines.put(message)
        self._lines.put(None)
