"""A token made by `kbes token add` connects Claude Code (from npm, pinned, with a home of its
own and no traffic beyond loopback) to `kbes serve --http --tokens`, as the README says to:
`claude mcp list` says Connected; after `kbes token remove`, the running server refuses it. The
secret reaches neither Claude Code's configuration (it keeps `${KBES_TOKEN}`) nor the server's
log."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mcp_harness import http_server, run_kbes, seed
from npm_cache import npm_bin

from kbes.server.tokens_file import token_digest

pytestmark = pytest.mark.slow

CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.332"


def claude(program: Path, home: Path, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Claude Code in a throwaway home, telemetry off, with the token in KBES_TOKEN."""
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "KBES_TOKEN": token,
    }
    work = home / "project"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [str(program), *args],
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_token_from_kbes_token_add_connects_claude_code(tmp_path: Path) -> None:
    program = npm_bin(CLAUDE_CODE, "claude")
    data = seed(tmp_path / "kbes.sqlite")
    tokens = tmp_path / "tokens.txt"
    made = run_kbes(
        "token",
        "add",
        "claude-code",
        "--grant",
        data.kb,
        "--tokens",
        str(tokens),
        "--db",
        str(data.db),
    )
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    home = tmp_path / "home"
    home.mkdir()
    serve = ("--grant", data.kb, "--tokens", str(tokens), "--log-level", "debug")
    with http_server(data.db, *serve) as server:
        # The README's command: the header names the variable, Claude Code expands it.
        added = claude(
            program,
            home,
            token,
            *("mcp", "add", "--scope", "user", "--transport", "http", "kbes", server.url),
            *("--header", "Authorization: Bearer ${KBES_TOKEN}"),
        )
        assert added.returncode == 0, added.stderr
        listed = claude(program, home, token, "mcp", "list")
        assert f"kbes: {server.url} (HTTP) - ✔ Connected" in listed.stdout, listed.stdout

        removed = run_kbes("token", "remove", "claude-code", "--tokens", str(tokens))
        assert removed.returncode == 0, removed.stderr
        refused = claude(program, home, token, "mcp", "list")
        assert f"kbes: {server.url} (HTTP) - ✘ Failed to connect" in refused.stdout
        assert "401" in refused.stdout

    configuration = (home / ".claude.json").read_text()
    assert "Bearer ${KBES_TOKEN}" in configuration and token not in configuration
    log = server.log()
    assert '"POST /mcp HTTP/1.1" 200' in log and '"POST /mcp HTTP/1.1" 401' in log
    assert token not in log and token[-12:] not in log and token_digest(token) not in log
    listing = run_kbes("token", "list", "--tokens", str(tokens))
    assert token not in listing.stdout + listing.stderr
