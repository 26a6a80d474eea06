"""`kbes bundle`: an MCP Bundle (`.mcpb`) that Claude Desktop installs by double-click, asking
in a form for the database, the knowledge bases granted and the edit mode.

The bundle is of the `binary` type: it runs `kbes serve` by the absolute path of the kbes
installed here (the console script beside the running interpreter, else the one on PATH).
Claude Desktop does not start servers with a shell's PATH, so a bare `kbes` would not be found
in a virtualenv; a `python` bundle would have to carry kbes's dependencies, whose compiled parts
(msgspec, pydantic-core) are built for one platform; the `uv` type is experimental and would
carry kbes's source. So the bundle is made on, and for, the machine it runs on: it holds only
its manifest, and must be made again after kbes moves. The manifest's tools are the server's
own (`kbes.tools`: names and descriptions, never copied by hand); the server's `tools/list`
stays the truth."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import stat
import sys
import zipfile
from pathlib import Path
from typing import Any

import click

from kbes.server.identity import SERVER_NAME, SERVER_TITLE, server_version
from kbes.tools import HISTORY_TOOLS, TOOLS, Tool

MANIFEST_VERSION = "0.3"
"""The newest manifest version `@anthropic-ai/mcpb` 2.1.2 calls its latest."""

PLATFORMS = {"darwin", "linux", "win32"}

DATABASE = "${user_config.database}"
KNOWLEDGE_BASES = "${user_config.knowledge_bases}"
EDITS = "${user_config.edits}"
"""Claude Desktop puts each setting in place of its `${user_config.KEY}` argument."""

USER_CONFIG: dict[str, dict[str, Any]] = {
    "database": {
        "type": "file",
        "title": "Database",
        "description": "The kbes database: the SQLite file made by `kbes kb create`.",
        "required": True,
    },
    "knowledge_bases": {
        "type": "string",
        "title": "Knowledge bases",
        "description": "The ids of the knowledge bases Claude may use, separated by commas "
        "(no spaces; `kbes kb list` shows them), or * for every one, including those made "
        "later.",
        "required": True,
        "default": "*",
    },
    "edits": {
        "type": "string",
        "title": "Edits",
        "description": "ask: Claude asks you before each edit (a client that cannot ask gets "
        "approval_required, and nothing is written); allow: edits without asking; deny: "
        "never edits.",
        "required": False,
        "default": "ask",
    },
}


def kbes_command() -> str:
    """The absolute path of the installed `kbes` console script."""
    name = "kbes.exe" if os.name == "nt" else "kbes"
    beside = Path(sys.executable).with_name(name)  # a virtualenv's bin/ (not resolved)
    if beside.is_file():
        return str(beside.absolute())
    found = shutil.which("kbes")
    if found is None:
        raise click.ClickException(
            "cannot find the kbes command (not beside this Python, not on PATH): install kbes "
            "with pip (pip install .) and run its `kbes bundle`"
        )
    return str(Path(found).absolute())


def manifest(command: str, tools: list[Tool], *, history_tools: bool) -> dict[str, Any]:
    """The bundle's manifest.json: start `command serve` over stdio with the user's settings."""
    args = ["serve", "--db", DATABASE, "--grant", KNOWLEDGE_BASES, "--edits", EDITS]
    if history_tools:
        args.append("--history-tools")
    document: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION,
        "name": SERVER_NAME,
        "display_name": SERVER_TITLE,
        "version": server_version(),
        "description": "Search, read and cite the articles of your kbes knowledge bases, "
        "and edit them with your approval.",
        "long_description": f"Starts `{command} serve` over stdio: the kbes installed on the "
        "computer that made this bundle. Make it again (`kbes bundle`) after moving or "
        "reinstalling kbes. Every citation carries the article's updated_at, so an answer "
        "can be checked later against what the knowledge base says now.",
        "author": {"name": "kbes"},
        "license": "MIT",
        "keywords": ["knowledge base", "citations", "event sourcing"],
        "server": {
            "type": "binary",
            "entry_point": command,
            "mcp_config": {"command": command, "args": args},
        },
        "tools": [{"name": tool.name, "description": tool.description} for tool in tools],
        "tools_generated": False,
        "user_config": USER_CONFIG,
    }
    if sys.platform in PLATFORMS:
        document["compatibility"] = {"platforms": [sys.platform]}
    return document


def write_bundle(path: Path, document: dict[str, Any]) -> None:
    """A `.mcpb` is a zip with manifest.json at its root; written the same, byte for byte,
    each time from the same manifest. Built in memory, then written to `path` as a regular
    file, never through a symbolic link (`BundlePathError` says why it could not be)."""
    entry = zipfile.ZipInfo("manifest.json", date_time=(1980, 1, 1, 0, 0, 0))
    entry.compress_type = zipfile.ZIP_DEFLATED
    entry.external_attr = 0o644 << 16
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr(entry, text, compresslevel=9)
    write_regular_file(path, buffer.getvalue())


class BundlePathError(click.BadParameter):
    def __init__(self, message: str) -> None:
        super().__init__(message, param_hint="'-o' / '--output'")


def write_regular_file(path: Path, data: bytes) -> None:
    """Write `data` to `path`, a regular file or none yet: a link, a device or a folder is
    refused, as is a folder that does not exist, in words naming the fix (issue 35: these were
    tracebacks, and a link was followed to wherever it pointed)."""
    try:
        mode: int | None = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as e:  # a name too long, a parent that is a file, ...
        raise BundlePathError(f"cannot write {path}: {e.strerror}") from None
    if mode is not None and stat.S_ISLNK(mode):
        raise BundlePathError(
            f"{path} is a symbolic link; kbes bundle does not write through links: remove it "
            "or pass the path it points to"
        )
    if mode is not None and not stat.S_ISREG(mode):
        raise BundlePathError(f"{path} is not a regular file; pass a path ending in .mcpb")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags, 0o644)
    except FileNotFoundError:
        raise BundlePathError(
            f"the folder {path.parent} does not exist; create it first or write elsewhere"
        ) from None
    except OSError as e:
        if e.errno == errno.ELOOP:  # made a link since the check above
            raise BundlePathError(
                f"{path} is a symbolic link; kbes bundle does not follow it"
            ) from None
        raise BundlePathError(f"cannot write {path}: {e.strerror}") from None
    with os.fdopen(descriptor, "wb") as f:
        f.write(data)


@click.command("bundle")
@click.option(
    "-o",
    "--output",
    type=click.Path(),
    default="kbes.mcpb",
    show_default=True,
    help="Where to write the bundle.",
)
@click.option(
    "--history-tools",
    is_flag=True,
    help="Also serve diff_knowledge_article, as `kbes serve --history-tools` does.",
)
def bundle(output: str, history_tools: bool) -> None:
    """Write an MCP Bundle for Claude Desktop that starts this kbes's `kbes serve`.

    Open the file with Claude Desktop (double-click it) and choose, in the form it shows, the
    database (make it with `kbes kb create` first), the knowledge bases (ids separated by
    commas, or * for all) and the edit mode (ask, allow or deny; ask by default). The bundle
    runs the kbes installed here, by its absolute path: make it again after moving kbes.
    """
    command = kbes_command()
    tools = [*TOOLS.values(), *(HISTORY_TOOLS if history_tools else [])]
    path = Path(output)
    write_bundle(path, manifest(command, tools, history_tools=history_tools))
    click.echo(
        f"wrote {path} ({path.stat().st_size} bytes): a Claude Desktop extension that starts "
        f"{command} serve. Open it with Claude Desktop and choose the database, the knowledge "
        "bases and the edit mode. It runs the kbes installed here: make it again "
        "(`kbes bundle`) after moving or reinstalling kbes.",
        err=True,
    )
