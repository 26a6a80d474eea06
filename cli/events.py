"""`kbes events`: the agent-visible event feed of one knowledge base, as poll returns it."""

from __future__ import annotations

import time

import click
import msgspec

from kbes.cli.options import SEQUENCE, author_text, json_option, print_table, with_store
from kbes.store.application import KnowledgeBaseStore

POLL_LIMIT = 100
"""Events read per page: the poll tool's default page."""


@click.command("events")
@click.option("--kb", "kb", required=True, metavar="ID", help="The knowledge base.")
@click.option(
    "--after",
    default=0,
    show_default=True,
    type=SEQUENCE,
    help="Show events after this sequence.",
)
@click.option("--follow", "-f", is_flag=True, help="Keep waiting for new events (Ctrl-C stops).")
@click.option(
    "--interval",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0.05),
    help="Seconds between polls with --follow.",
)
@json_option
@with_store
def events(
    store: KnowledgeBaseStore, kb: str, after: int, follow: bool, interval: float, as_json: bool
) -> None:
    """Print the event feed of a knowledge base: what poll_resource_events shows agents
    (publishes, saves and retitles of published articles, unpublishes; never drafts), and,
    for people, who wrote each event (its author: `(not recorded)` for an event written
    before kbes recorded authors)."""
    knowledge_base_id = store.require_knowledge_base(kb)
    cursor = after
    header = not as_json
    while True:
        page = store.feed_page(knowledge_base_id, cursor, POLL_LIMIT)
        authors = store.feed_authors(knowledge_base_id, cursor, POLL_LIMIT)
        if cursor > page.head:
            raise click.BadParameter(
                f"{after} is past the end of the log (its last sequence is {page.head}); give a "
                "sequence this command printed, or 0",
                param_hint="--after",
            )
        if as_json:
            for event in page.events:
                line = {**event._asdict(), "author": authors.get(event.sequence)}
                click.echo(msgspec.json.encode(line).decode())
        elif page.events or header:
            rows = [(*event, author_text(authors.get(event.sequence))) for event in page.events]
            if header:
                print_table(["sequence", "type", "article_id", "updated_at", "author"], rows)
                header = False
            else:
                for row in rows:
                    click.echo("  ".join(str(v) for v in row))
        cursor = page.next_sequence
        if page.has_more:
            continue
        if not follow:
            break
        try:
            time.sleep(interval)
        except KeyboardInterrupt:
            break
