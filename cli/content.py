"""Reading article text from `--content TEXT` or `--file PATH`, exactly one of them."""

from __future__ import annotations

from pathlib import Path

import click


def content_options(func):  # type: ignore[no-untyped-def]
    func = click.option(
        "--file",
        "file",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Read the content from this file (UTF-8); '-' is not accepted.",
    )(func)
    return click.option("--content", "content", help="The content, as text.")(func)


def read_content(content: str | None, file: Path | None, *, required: bool) -> str | None:
    if content is not None and file is not None:
        raise click.UsageError("give either --content or --file, not both")
    if file is not None:
        try:
            return file.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            message = f"{file} is not UTF-8 text: {e}"
            raise click.BadParameter(message, param_hint="--file") from None
    if content is None and required:
        raise click.UsageError("give the article text with --content TEXT or --file PATH")
    return content
