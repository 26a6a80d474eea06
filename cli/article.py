"""`kbes article`: the people-side commands (add, save, publish, unpublish, list, show,
history, diff). Every write records its author (`--author`, else `KBES_AUTHOR`, else the OS
user), and save, publish and unpublish take the version the person read
(`--expected-version`): refused with the current version if the article moved since."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from kbes.cli.content import content_options, read_content
from kbes.cli.options import (
    author_option,
    author_text,
    json_option,
    print_json,
    print_table,
    with_store,
)
from kbes.cli.refusals import no_version, words
from kbes.domain.author import Author
from kbes.domain.clock import format_timestamp, parse_timestamp
from kbes.domain.errors import InvalidArgument, NotATime, VersionNotFound
from kbes.log.history import ArticleState, History, Version, unified_diff
from kbes.log.line_diff import DIFF_BUDGET
from kbes.store.application import KnowledgeBaseStore

F = TypeVar("F", bound=Callable[..., Any])

kb_option = click.option(
    "--kb", "kb", required=True, metavar="ID", help="The knowledge base (see `kbes kb list`)."
)


@click.group()
def article() -> None:
    """Add, save, publish, unpublish, list and show articles (as a person, not an agent)."""


OPTION_OF_FIELD = {"title": "--title (or --file's `# ` heading)", "content": "--content / --file"}
"""The option a person gives each field the domain checks (`kbes.domain.limits`)."""


def _expected_version(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_timestamp(value)
    except ValueError as e:
        fact = NotATime(value, str(e), "--expected-version")
        raise click.BadParameter(words(fact), ctx, param) from None


def expected_version_option(func: F) -> F:
    """`--expected-version UPDATED_AT`: the person's compare-and-swap, as an agent's edit has
    it. Parsed (and a bad time refused, naming the flag) before the store is opened."""
    return click.option(
        "--expected-version",
        "expected_version",
        metavar="UPDATED_AT",
        callback=_expected_version,
        help="Write only if the article is still at this version (the updated_at you read, "
        "from `kbes article show` or a citation); else refused with its current version, "
        "nothing written. Without it, last writer wins.",
    )(func)


@contextmanager
def as_options() -> Iterator[None]:
    """The domain's refusal of a title or content, named by the option that gave it."""
    try:
        yield
    except InvalidArgument as e:
        option = OPTION_OF_FIELD.get(e.field or "")
        if option is None:
            raise
        raise click.BadParameter(words(e), param_hint=option) from None


@article.command("add")
@kb_option
@click.option(
    "--title", help="The article's title (default: the `# ` heading of --file, if it has one)."
)
@content_options
@click.option("--publish", is_flag=True, help="Publish at once, so agents can see it.")
@author_option
@with_store
def add(
    store: KnowledgeBaseStore,
    kb: str,
    title: str | None,
    content: str | None,
    file: Path | None,
    publish: bool,
    author: Author,
) -> None:
    """Draft a new article (published with --publish) and print its id."""
    text = read_content(content, file, required=True)
    assert text.content is not None
    title = title if title is not None else text.heading
    if title is None:
        raise click.UsageError("give the title with --title, or a --file with a `# ` heading")
    with as_options():
        click.echo(str(store.add_article(kb, title, text.content, publish=publish, by=author)))


@article.command("save")
@kb_option
@click.argument("article_id")
@click.option("--title", help="A new title (the save becomes a retitle).")
@content_options
@expected_version_option
@author_option
@with_store
def save(
    store: KnowledgeBaseStore,
    kb: str,
    article_id: str,
    title: str | None,
    content: str | None,
    file: Path | None,
    expected_version: datetime | None,
    author: Author,
) -> None:
    """Replace ARTICLE_ID's content (and title); a person's save, last writer wins, or with
    --expected-version only if the article is still at the version you read.

    A save that would change neither the content nor the title writes nothing (every citation
    of the article stays current) and says so on stderr. Prints the article's version."""
    text = read_content(content, file, required=title is None)
    title = title if title is not None else text.heading
    with as_options():
        saved = store.save_article(
            kb,
            article_id,
            content=text.content,
            title=title,
            by=author,
            expected_version=expected_version,
        )
    if saved is None:
        click.echo("unchanged: the content and title are already these; nothing written", err=True)
    click.echo(format_timestamp(store.get_article(article_id).updated_at))


@article.command("publish")
@kb_option
@click.argument("article_id")
@expected_version_option
@author_option
@with_store
def publish(
    store: KnowledgeBaseStore,
    kb: str,
    article_id: str,
    expected_version: datetime | None,
    author: Author,
) -> None:
    """Publish (or republish) ARTICLE_ID so agents can find and cite it."""
    store.publish_article(kb, article_id, by=author, expected_version=expected_version)
    click.echo(format_timestamp(store.get_article(article_id).updated_at))


@article.command("unpublish")
@kb_option
@click.argument("article_id")
@expected_version_option
@author_option
@with_store
def unpublish(
    store: KnowledgeBaseStore,
    kb: str,
    article_id: str,
    expected_version: datetime | None,
    author: Author,
) -> None:
    """Unpublish ARTICLE_ID: agents' citations of it come back as `gone`."""
    store.unpublish_article(kb, article_id, by=author, expected_version=expected_version)
    click.echo(format_timestamp(store.get_article(article_id).updated_at))


@article.command("list")
@kb_option
@json_option
@with_store
def list_(store: KnowledgeBaseStore, kb: str, as_json: bool) -> None:
    """List the articles of a knowledge base, drafts and unpublished ones included."""
    kb_id = store.require_knowledge_base(kb)
    store.catch_up()
    rows = store.articles(kb_id)
    if as_json:
        print_json([row._asdict() for row in rows])
        return
    print_table(
        ["article_id", "status", "updated_at", "title"],
        [(r.article_id, r.status, r.updated_at, r.title) for r in rows],
    )


@article.command("show")
@kb_option
@click.argument("article_id")
@click.option(
    "--at",
    "at",
    metavar="UPDATED_AT",
    help="Show the article as it was at this version: a citation's updated_at, or one from "
    "`kbes article history`.",
)
@json_option
@with_store
def show(
    store: KnowledgeBaseStore, kb: str, article_id: str, at: str | None, as_json: bool
) -> None:
    """Print ARTICLE_ID as a person sees it, drafts and unpublished ones included: its title,
    status and version, then its content. With --at, as it was at that version."""
    store.article_for_person(kb, article_id)  # not_found if it is not in that knowledge base
    history = History.of(store)
    versions = history.versions(article_id)
    try:
        state = history.article_at(article_id, versions[-1].at if at is None else at)
    except VersionNotFound as e:
        raise click.BadParameter(no_version(article_id, e), param_hint="--at") from None
    except NotATime as e:
        raise click.BadParameter(words(e), param_hint="--at") from None
    shown = {
        "knowledge_base_id": state.knowledge_base_id,
        "article_id": state.article_id,
        "title": state.title,
        "status": _status(state, versions),
        "version": state.version,
        "updated_at": state.updated_at,
        "content": state.content,
    }
    if as_json:
        print_json(shown)
        return
    for key in ("title", "article_id", "status", "version", "updated_at"):
        click.echo(f"{key + ':':<12}{shown[key]}")
    click.echo()
    click.echo(state.content)


@article.command("history")
@kb_option
@click.argument("article_id")
@json_option
@with_store
def history_(store: KnowledgeBaseStore, kb: str, article_id: str, as_json: bool) -> None:
    """List every version of ARTICLE_ID, oldest first: the event that made it, its updated_at
    (what a citation of that version carries), its sequence in the log, and its author (who
    wrote it, of what kind, and how kbes knows: `(not recorded)` for an event written before
    kbes recorded authors)."""
    store.article_for_person(kb, article_id)
    versions = History.of(store).authored(article_id)
    if as_json:
        print_json(
            [
                {
                    "version": v.version,
                    "updated_at": v.updated_at,
                    "type": v.type,
                    "sequence": v.sequence,
                    "author": author,
                }
                for v, author in versions
            ]
        )
        return
    print_table(
        ["version", "updated_at", "type", "sequence", "author"],
        [(v.version, v.updated_at, v.type, v.sequence, author_text(a)) for v, a in versions],
    )


@article.command("diff")
@kb_option
@click.argument("article_id")
@click.argument("since", metavar="V1")
@click.argument("until", metavar="[V2]", required=False)
@with_store
def diff(
    store: KnowledgeBaseStore, kb: str, article_id: str, since: str, until: str | None
) -> None:
    """Print a unified diff of ARTICLE_ID (its title and content) from version V1 to version V2
    (default: the current one): each an updated_at from `kbes article history` or a citation.
    Bounded as the diff tool is: two versions too changed to diff are refused, not diffed."""
    store.article_for_person(kb, article_id)  # not_found if it is not in that knowledge base
    history = History.of(store)
    versions = history.versions(article_id)
    states = []
    for value, hint in ((since, "V1"), (until, "V2")):
        try:
            states.append(history.article_at(article_id, value or versions[-1].at))
        except VersionNotFound as e:
            raise click.BadParameter(no_version(article_id, e), param_hint=hint) from None
        except NotATime as e:
            fact = NotATime(e.value, e.reason, hint)
            raise click.BadParameter(words(fact), param_hint=hint) from None
    click.echo(unified_diff(states[0], states[1], budget=DIFF_BUDGET), nl=False)


def _status(state: ArticleState, versions: list[Version]) -> str:
    """draft, published or unpublished, as `kbes article list` says it, at that version."""
    if state.published:
        return "published"
    earlier = [v for v in versions if v.version <= state.version]
    return "unpublished" if any(v.type == "published" for v in earlier) else "draft"
