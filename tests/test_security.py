"""What docs/security.md says kbes does NOT promise, held as tests too, so that a change which
closes (or widens) a gap also changes the page."""

from __future__ import annotations

from tool_calls import call

from kbes import KnowledgeBaseStore


def test_next_sequence_is_the_head_of_the_whole_log(store: KnowledgeBaseStore, kb: str) -> None:
    """An agent polling its own knowledge base sees the log head move with writes elsewhere
    (how much is written, not what, nor where)."""
    other = str(store.create_knowledge_base("Elsewhere"))
    poll = {"resource_type": "knowledge_base", "resource_id": kb}
    before = call(store, "poll_resource_events", **poll)["next_sequence"]
    store.add_article(other, "Not yours", "Written in another knowledge base.", publish=True)
    page = call(store, "poll_resource_events", **poll, after_sequence=before)
    assert page["events"] == []
    assert page["next_sequence"] > before
