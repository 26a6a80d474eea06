"""`--search keyword|hybrid` for the commands that search or embed (`kbes serve`, `kbes tool`,
`kbes import`), and the settings of such a command: its environment, `--db` and `--search`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kbes.cli.options import read_settings, require_database
from kbes.cli.refusals import semantic_missing
from kbes.projections.embedder import SemanticUnavailable, require
from kbes.store.settings import SEARCH_ENV, SEARCH_MODES, Settings

F = TypeVar("F", bound=Callable[..., Any])


def _check(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and value.lower() == "hybrid":
        try:
            require()
        except SemanticUnavailable as e:
            raise click.BadParameter(semantic_missing(e.missing), ctx, param) from None
    return value.lower() if value is not None else None


def search_option(func: F) -> F:
    """`--search` (or `KBES_SEARCH`): keyword (the default) or hybrid."""
    return click.option(
        "--search",
        "search",
        envvar=SEARCH_ENV,
        show_envvar=True,
        type=click.Choice(SEARCH_MODES, case_sensitive=False),
        default=None,
        callback=_check,
        help="How search ranks: keyword (words, the default) or hybrid (words and meaning "
        "fused; needs pip install 'kbes[semantic]').",
    )(func)


def search_settings(db: str, search: str | None) -> Settings:
    """The command's settings with `--search`, its database checked to be a kbes one."""
    settings = read_settings(db).but(search=search)
    require_database(db, settings=settings)
    return settings


__all__ = ["search_option", "search_settings"]
