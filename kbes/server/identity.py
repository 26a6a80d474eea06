"""What the MCP server says about itself: its name, title and version in `serverInfo`, and the
instructions that tell a model how to cite and edit. Kept apart from `kbes.server.mcp_server`
so that `kbes serve` can work these out from the store without importing the MCP SDK."""

from __future__ import annotations

from collections.abc import Sequence

from kbes.store.application import KnowledgeBaseStore
from kbes.tools.grants import Grants

SERVER_NAME = "kbes"
SERVER_TITLE = "kbes knowledge bases"


def server_version() -> str:
    """The installed kbes version, as `serverInfo.version`."""
    try:
        from importlib.metadata import version

        return version("kbes")
    except Exception:
        return "0"


def describe_grants(store: KnowledgeBaseStore, grants: Grants) -> list[tuple[str, str]]:
    """(id, name) of the granted knowledge bases that exist now, for the model's instructions."""
    store.catch_up()
    if grants is None:
        return [(kb.knowledge_base_id, kb.name) for kb in store.knowledge_bases()]
    named = []
    for kb in sorted(grants):
        found = store.knowledge_base(kb)
        if found is not None:
            named.append((kb, found.name))
    return named


MAX_LISTED = 20
"""Knowledge bases the instructions name at most; past that they give the count and point to
`resources/list`, so `initialize` stays small however large the database grows."""
MAX_NAME_CHARS = 80
"""Characters of a knowledge base's name the instructions show (the rest as `...`)."""


def instructions_for(knowledge_bases: Sequence[tuple[str, str]] | None) -> str:
    """Server instructions for the model: how to cite and edit, and (when every caller sees the
    same grants) which knowledge bases to pass: up to `MAX_LISTED` by name and id, else their
    count and where to find them. Bounded whatever the database holds."""
    text = (
        "kbes serves knowledge bases whose citations are version stamps. Search or read, then "
        "cite {knowledge_base_id, article_id, updated_at}. To edit, pass the updated_at of a "
        "recent read as expected_version and a fresh idempotency_key; on version_conflict read "
        "again and re-apply. Keep poll_resource_events' next_sequence to learn later which "
        "citations changed."
    )
    if not knowledge_bases:
        return text
    if len(knowledge_bases) > MAX_LISTED:
        return text + (
            f" {len(knowledge_bases)} knowledge bases are available: resources/list lists "
            "them, each with its knowledge_base_id."
        )
    listed = "; ".join(
        f"{shortened(name)} (knowledge_base_id {kb})" for kb, name in knowledge_bases
    )
    return text + f" Knowledge bases available: {listed}."


def shortened(name: str) -> str:
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 3] + "..."
