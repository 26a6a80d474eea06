"""`kbes tool`: call one agent tool from the shell and see exactly what the agent would get.

Every tool, the opt-in diff_knowledge_article too: `kbes serve --history-tools` opts agents in
to keep their default contract to four tools, but a person at a shell already reads every
version of the database (`kbes article history`, `show --at`, `kbes audit --diff`), so refusing
the diff here would protect nothing and would leave the one way to try it before serving it."""

from __future__ import annotations

import json
import sys
from typing import Any

import click
import msgspec

from kbes.cli.options import author_option, existing_db_option, store_at
from kbes.cli.search_option import search_option, search_settings
from kbes.domain.author import Author
from kbes.domain.limits import encodes
from kbes.tools import HISTORY_TOOLS, TOOLS, call_tool
from kbes.tools.codes import KbesError

NAMES = [*TOOLS, *(tool.name for tool in HISTORY_TOOLS)]
"""The four tools every server serves, then the opt-in ones."""


def parse_arguments(pairs: tuple[str, ...]) -> dict[str, Any]:
    """HTTPie's convention: `key=value` is a string, `key:=json` is raw JSON."""
    arguments: dict[str, Any] = {}
    for pair in pairs:
        raw_at = pair.find(":=")
        eq_at = pair.find("=")
        if raw_at != -1 and raw_at + 1 == eq_at:
            key, text = pair[:raw_at], pair[raw_at + 2 :]
            try:
                value = json.loads(text)
            except json.JSONDecodeError as e:
                raise click.BadParameter(
                    f"{pair!r}: the value after ':=' must be JSON ({e.msg}); "
                    "use key=value for a plain string",
                    param_hint="ARGUMENTS",
                ) from None
        elif eq_at > 0:
            key, value = pair[:eq_at], pair[eq_at + 1 :]
        else:
            raise click.BadParameter(
                f"{pair!r} is not key=value (a string) or key:=json (raw JSON)",
                param_hint="ARGUMENTS",
            )
        if not key:
            raise click.BadParameter(f"{pair!r} has no key", param_hint="ARGUMENTS")
        arguments[key] = value
    return arguments


@click.command("tool", context_settings={"ignore_unknown_options": True})
@click.argument("name", type=click.Choice(sorted(NAMES)), metavar="NAME")
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
@click.option("--indent", is_flag=True, help="Pretty-print the JSON.")
@author_option
@existing_db_option
@search_option
def tool(
    name: str,
    arguments: tuple[str, ...],
    indent: bool,
    author: Author,
    db: str,
    search: str | None,
) -> None:
    """Call the agent tool NAME with ARGUMENTS and print its JSON result.

    NAME is one of: search_knowledge_base, read_knowledge_article, edit_knowledge_article,
    poll_resource_events, and diff_knowledge_article (which agents get only from
    `kbes serve --history-tools`). ARGUMENTS follow HTTPie: key=value passes a string,
    key:=json passes raw JSON (numbers, so limit:=5), e.g.

    \b
        kbes tool search_knowledge_base knowledge_base_id=ID query='reset password' limit:=5

    A tool error prints the error JSON (with its code), as an MCP client receives it in the
    tool's error result, and exits with status 1. An edit made here is a person's: its events
    record --author (else KBES_AUTHOR, else the OS user), as `kbes article save` does.
    """
    args = parse_arguments(arguments)
    with store_at(db, checked=search_settings(db, search)) as store:
        try:
            result: Any = msgspec.to_builtins(call_tool(store, name, args, author=author))
            failed = False
        except KbesError as e:
            result, failed = e.to_dict(), True
    text = json.dumps(result, ensure_ascii=False, indent=2 if indent else None)
    if not text.isascii() and not encodes(text):
        # An argument's lone surrogate echoed in an error ("\ud800") cannot be UTF-8: escape.
        text = json.dumps(result, indent=2 if indent else None)
    click.echo(text)
    if failed:
        field = result.get("field")
        if isinstance(args.get(field), str) and "got `str`" in result.get("message", ""):
            # The JSON above is exactly the agent's; the shell-specific hint goes to stderr.
            click.echo(
                f"hint: {field}={args[field]} passes a string; pass JSON as {field}:={args[field]}",
                err=True,
            )
        sys.exit(1)
