"""`kbes bundle` writes an MCP Bundle that the official tool (`@anthropic-ai/mcpb`) validates,
whose command, with the settings put in place by mcpb's own `getMcpConfigForManifest` (the code
Claude Desktop uses), starts a server the official MCP client gets the four tools from, with the
descriptions the manifest shows and the grants and edit mode the settings chose."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters
from mcp_harness import KBES, Seed, body, current_version, error, seed
from npm_cache import npm_bin, npm_package

from kbes import open_store
from kbes.cli import main
from kbes.tools import HISTORY_TOOLS, TOOLS

MCPB = "@anthropic-ai/mcpb@2.1.2"


def make_bundle(folder: Path, *options: str) -> Path:
    path = folder / "kbes.mcpb"
    done = CliRunner().invoke(main, ["bundle", "-o", str(path), *options])
    assert done.exit_code == 0, done.output
    assert f"wrote {path} ({path.stat().st_size} bytes)" in done.stderr
    return path


def manifest_of(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as bundle:
        assert bundle.namelist() == ["manifest.json"]
        return json.loads(bundle.read("manifest.json"))


def test_the_manifest_starts_this_kbes_with_the_servers_own_tools(tmp_path: Path) -> None:
    document = manifest_of(make_bundle(tmp_path))
    server = document["server"]
    assert server["type"] == "binary"
    assert server["entry_point"] == server["mcp_config"]["command"] == KBES
    assert server["mcp_config"]["args"] == [
        "serve",
        *("--db", "${user_config.database}"),
        *("--grant", "${user_config.knowledge_bases}"),
        *("--edits", "${user_config.edits}"),
    ]
    # Generated from kbes.tools: what tools/list says, never copied by hand.
    assert document["tools"] == [
        {"name": tool.name, "description": tool.description} for tool in TOOLS.values()
    ]
    settings = document["user_config"]
    assert settings["database"]["type"] == "file" and settings["database"]["required"]
    assert settings["knowledge_bases"]["default"] == "*"
    assert settings["edits"]["default"] == "ask"
    assert document["compatibility"] == {"platforms": [sys.platform]}


def test_history_tools_are_in_the_bundle_when_asked_for(tmp_path: Path) -> None:
    document = manifest_of(make_bundle(tmp_path, "--history-tools"))
    assert document["server"]["mcp_config"]["args"][-1] == "--history-tools"
    assert [t["name"] for t in document["tools"]] == [*TOOLS, *(t.name for t in HISTORY_TOOLS)]


def test_the_same_install_writes_the_same_bytes(tmp_path: Path) -> None:
    first = make_bundle(tmp_path).read_bytes()
    assert make_bundle(tmp_path).read_bytes() == first


def test_a_path_it_cannot_write_is_one_clear_error(tmp_path: Path) -> None:
    """Issue 35: a missing folder, /dev/null or a name too long were tracebacks."""
    cases = {
        str(tmp_path / "missing" / "kbes.mcpb"): "does not exist; create it first",
        "/dev/null": "is not a regular file",
        str(tmp_path / ("a" * 300 + ".mcpb")): "File name too long",
        str(tmp_path): "is not a regular file",
    }
    for output, words in cases.items():
        done = CliRunner().invoke(main, ["bundle", "-o", output])
        assert done.exit_code == 2, (output, done.output)
        assert done.exception is None or isinstance(done.exception, SystemExit), output
        assert "Invalid value for '-o' / '--output'" in done.output
        assert words in done.output, (output, done.output)


def test_a_symbolic_link_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    link = tmp_path / "kbes.mcpb"
    link.symlink_to(target)
    done = CliRunner().invoke(main, ["bundle", "-o", str(link)])
    assert done.exit_code == 2, done.output
    assert "is a symbolic link; kbes bundle does not write through links" in done.output
    assert target.read_text() == "keep me\n"
    assert link.is_symlink()


# With the official tools ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def mcpb() -> Path:
    return npm_bin(MCPB, "mcpb")


@pytest.fixture
def unpacked(tmp_path: Path, mcpb: Path) -> Path:
    """The bundle as Claude Desktop installs it: unpacked by mcpb into a folder."""
    folder = tmp_path / "extension"
    done = subprocess.run(
        [mcpb, "unpack", str(make_bundle(tmp_path)), str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return folder


@pytest.mark.slow
def test_mcpb_validate_passes_on_the_bundle(unpacked: Path, mcpb: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [mcpb, "validate", str(unpacked / "manifest.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "Manifest schema validation passes!" in done.stdout
    # The validator is not a rubber stamp: a setting of a type mcpb lacks is refused.
    broken = json.loads((unpacked / "manifest.json").read_text())
    broken["user_config"]["edits"]["type"] = "enum"
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    refused = subprocess.run(
        [mcpb, "validate", str(tmp_path / "broken.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 1
    assert "user_config.edits.type" in refused.stdout + refused.stderr


SUBSTITUTE = """\
import { readFileSync } from "node:fs";
const [mcpb, manifestPath, extensionPath, userConfig] = process.argv.slice(2);
const { getMcpConfigForManifest } = await import(mcpb);
const config = await getMcpConfigForManifest({
  manifest: JSON.parse(readFileSync(manifestPath, "utf8")),
  extensionPath,
  systemDirs: { HOME: process.env.HOME },
  userConfig: JSON.parse(userConfig),
  pathSeparator: "/",
  logger: { log: console.error, warn: console.error, error: console.error },
});
console.log(JSON.stringify(config ?? null));
"""


def claude_desktop_config(extension: Path, settings: dict[str, str]) -> dict[str, Any] | None:
    """The command Claude Desktop would run for these settings, by mcpb's own code."""
    node = shutil.which("node")
    assert node, "npm is installed, so Node.js is"
    entry = npm_package(MCPB) / "node_modules" / "@anthropic-ai" / "mcpb" / "dist" / "index.js"
    script = extension.parent / "substitute.mjs"
    script.write_text(SUBSTITUTE)
    done = subprocess.run(
        [
            node,
            str(script),
            entry.as_uri(),
            str(extension / "manifest.json"),
            str(extension),
            json.dumps(settings),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def data(tmp_path: Path) -> tuple[Seed, str]:
    """The seeded database, and a third knowledge base to grant beside the first."""
    ids = seed(tmp_path / "kbes.sqlite")
    store = open_store(ids.db)
    try:
        third = str(store.create_knowledge_base("Third"))
    finally:
        store.close()
    return ids, third


def client_for(config: dict[str, Any], mode: str) -> Client:
    """The official client over stdio to the configured command, started as Claude Desktop
    starts it: with the configuration's environment and the SDK's default one, none of this
    test's (no KBES_DB, nothing from this virtualenv but the command's absolute path)."""
    params = StdioServerParameters(
        command=config["command"], args=config["args"], env=config.get("env") or None
    )
    return Client(params, mode=mode)


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_substituted_command_serves_what_the_settings_chose(
    unpacked: Path, data: tuple[Seed, str]
) -> None:
    ids, third = data
    document = json.loads((unpacked / "manifest.json").read_text())

    # Every knowledge base (the form's default), edits asked for (the default, left unset).
    every = claude_desktop_config(unpacked, {"database": str(ids.db), "knowledge_bases": "*"})
    assert every is not None
    assert every["command"] == KBES
    assert every["args"] == [
        *("serve", "--db", str(ids.db), "--grant", "*", "--edits", "ask"),
    ]
    # Two of the three, and no edits.
    chosen = f"{ids.kb},{third}"
    some = claude_desktop_config(
        unpacked, {"database": str(ids.db), "knowledge_bases": chosen, "edits": "deny"}
    )
    assert some is not None
    assert some["args"] == ["serve", "--db", str(ids.db), "--grant", chosen, "--edits", "deny"]
    # A required setting missing: Claude Desktop starts nothing.
    assert claude_desktop_config(unpacked, {"knowledge_bases": "*"}) is None

    manifest_tools = {t["name"]: t["description"] for t in document["tools"]}
    search = {"knowledge_base_id": ids.other_kb, "query": "password"}
    async with client_for(every, "legacy") as client:  # protocol 2025-11-25
        listed = (await client.list_tools()).tools
        assert {t.name: t.description for t in listed} == manifest_tools
        assert sorted(manifest_tools) == sorted(TOOLS)
        assert body(await client.call_tool("search_knowledge_base", search))["hits"]
    async with client_for(some, "auto") as client:  # protocol 2026-07-28
        listed = (await client.list_tools()).tools
        assert {t.name: t.description for t in listed} == manifest_tools
        assert error(await client.call_tool("search_knowledge_base", search))["code"] == (
            "not_found"
        )
        mine = {**search, "knowledge_base_id": ids.kb}
        assert body(await client.call_tool("search_knowledge_base", mine))["hits"]
        edit = {
            "knowledge_base_id": ids.kb,
            "article_id": ids.password,
            "content": "Open Settings.",
            "expected_version": current_version(ids.db, ids.kb, ids.password),
            "idempotency_key": "bundle-1",
        }
        refused = error(await client.call_tool("edit_knowledge_article", edit))
        assert refused["code"] == "edits_disabled"
