"""Reading article text from `--content TEXT` or `--file PATH`, exactly one of them. A file is
read the way `kbes import` reads one, so the two never disagree about the same file: its first
`# ` heading is the title and is not part of the content."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import click

from kbes.cli.options import F
from kbes.log.importer import split_heading


class Text(NamedTuple):
    content: str | None
    heading: str | None
    """The file's `# ` heading, when the text came from a file that has one."""


def _file_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    if value is None:
        return None
    if value == "-":
        raise click.BadParameter(
            "standard input is not read; give a file path or the text with --content",
            ctx=ctx,
            param=param,
        )
    path = Path(value)
    if not path.is_file():
        raise click.BadParameter(f"no file at {value}", ctx=ctx, param=param)
    return path


def content_options(func: F) -> F:
    func = click.option(
        "--file",
        "file",
        metavar="PATH",
        callback=_file_path,
        help="Read the content from this UTF-8 file, as `kbes import` does: a first `# ` "
        "heading is the title (unless --title is given) and is not part of the content.",
    )(func)
    return click.option("--content", "content", help="The content, as text.")(func)


def read_content(content: str | None, file: Path | None, *, required: bool) -> Text:
    if content is not None and file is not None:
        raise click.UsageError("give either --content or --file, not both")
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            message = f"{file} is not UTF-8 text: {e}"
            raise click.BadParameter(message, param_hint="--file") from None
        heading, body = split_heading(text)
        return Text(body, heading)
    if content is None and required:
        raise click.UsageError("give the article text with --content TEXT or --file PATH")
    return Text(content, None)
