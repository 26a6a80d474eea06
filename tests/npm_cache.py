"""npm packages the tests run (the official MCP Bundle tool, Claude Code), each installed once
into a folder of its own under a cache the tests manage, at a pinned version.

The cache is `KBES_TEST_NPM_CACHE` if set, else `$XDG_CACHE_HOME/kbes-tests/npm` (by default
`~/.cache/...`). A package is installed into a temporary folder and renamed into place when
complete, so a run stopped half-way leaves nothing that looks installed. A test that needs a
package skips, saying why, only when npm is missing or cannot reach its registry; any other
failure of `npm install` fails the test."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

UNREACHABLE = (
    "ENOTFOUND",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "getaddrinfo",
    "network request",
)
"""What npm says when it cannot reach its registry."""

INSTALL_TIMEOUT = 900


def cache() -> Path:
    if os.environ.get("KBES_TEST_NPM_CACHE"):
        return Path(os.environ["KBES_TEST_NPM_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kbes-tests" / "npm"


def npm_package(spec: str) -> Path:
    """The folder in which `npm install SPEC` has run (SPEC pins a version: `name@1.2.3`);
    its programs are in `node_modules/.bin`."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"needs {spec} from npm, and npm is not installed (Node.js ships it)")
    folder = cache() / spec.replace("/", "+")
    if (folder / "node_modules").is_dir():
        return folder
    partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    (partial / "package.json").write_text('{"private": true}\n')
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--loglevel", "error", spec],
        cwd=partial,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
    )
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        said = done.stderr + done.stdout
        if any(sign in said for sign in UNREACHABLE):
            reason = next(line for line in said.splitlines() if line.strip())
            pytest.skip(f"needs {spec}, and npm cannot reach its registry: {reason}")
        raise AssertionError(f"npm install {spec} failed:\n{said[-3000:]}")
    try:
        partial.rename(folder)
    except OSError:  # installed meanwhile by another run
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def npm_bin(spec: str, program: str) -> Path:
    """A program an npm package installs."""
    path = npm_package(spec) / "node_modules" / ".bin" / program
    assert path.exists(), f"{spec} installed no {program}"
    return path
