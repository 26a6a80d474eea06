"""`kbes kb`: create and list knowledge bases."""

from __future__ import annotations

import click

from kbes.cli.options import (
    author_option,
    json_option,
    print_json,
    print_table,
    with_new_store,
    with_store,
)
from kbes.cli.refusals import same_name, words
from kbes.domain.author import Author
from kbes.domain.limits import name_problem
from kbes.server.approval import escape
from kbes.store.application import KnowledgeBaseStore


@click.group()
def kb() -> None:
    """Create and list knowledge bases."""


def _name(ctx: click.Context, param: click.Parameter, value: str) -> str:
    # Checked before the database is opened, so a refused name creates no database either;
    # the store checks the same rule again (kbes.domain.limits.name_problem).
    fact = name_problem(value.strip())
    if fact is not None:
        raise click.BadParameter(words(fact), ctx=ctx, param=param)
    return value


@kb.command("create")
@click.argument("name", callback=_name)
@json_option
@author_option
@with_new_store
def create(store: KnowledgeBaseStore, name: str, as_json: bool, author: Author) -> None:
    """Create a knowledge base called NAME and print its id.

    Creates the database too if it does not exist yet (and says so on stderr): this is the one
    command that does, so a mistyped --db anywhere else is an error, not an empty store."""
    named = store.knowledge_bases_named(name)
    kb_id = store.create_knowledge_base(name, by=author)
    if named:
        click.echo(same_name(name.strip(), named, str(kb_id)), err=True)
    if as_json:
        print_json({"knowledge_base_id": str(kb_id), "name": name.strip()})
    else:
        click.echo(str(kb_id))


@kb.command("list")
@json_option
@with_store
def list_(store: KnowledgeBaseStore, as_json: bool) -> None:
    """List knowledge bases with their article counts."""
    store.catch_up()
    rows = store.knowledge_bases()
    if as_json:
        print_json([row._asdict() for row in rows])
        return
    print_table(
        ["knowledge_base_id", "name", "articles", "published", "created_at"],
        # A name from a log written before names had a rule may hold a newline or a bidi
        # override: escaped, as the approval prompt shows text, so no row can forge another.
        [
            (r.knowledge_base_id, escape(r.name), r.articles, r.published, r.created_at)
            for r in rows
        ],
    )
