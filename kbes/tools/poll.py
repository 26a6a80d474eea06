"""`poll_resource_events`: a knowledge base's feed after a cursor, so an agent learns which
cited articles moved without re-reading them."""

from __future__ import annotations

from uuid import UUID

from kbes.store.application import KnowledgeBaseStore
from kbes.tools.refusals import past_the_head, unsupported_resource_type
from kbes.tools.tool import READ_ONLY, Tool
from kbes.tools.wire import PollRequest, PollResult, ResourceEvent

SUPPORTED_RESOURCE_TYPES = ("knowledge_base",)


def resource(request: PollRequest) -> str:
    """The knowledge base polled: what `resource_id` names depends on `resource_type`, so an
    unsupported type is refused before the id is read."""
    if request.resource_type not in SUPPORTED_RESOURCE_TYPES:
        raise unsupported_resource_type(request.resource_type, SUPPORTED_RESOURCE_TYPES)
    return request.resource_id


def poll(store: KnowledgeBaseStore, request: PollRequest, kb: UUID) -> PollResult:
    store.require_knowledge_base(kb)
    page = store.feed_page(kb, request.after_sequence, request.limit)
    if request.after_sequence > page.head:
        # No sequence past the head was ever returned: a garbled or foreign cursor, which
        # echoed back would hide every event until the log grew that far.
        raise past_the_head(request.after_sequence, page.head)
    return PollResult(
        resource_type=request.resource_type,
        resource_id=str(kb),
        events=[
            ResourceEvent(sequence=sequence, type=kind, article_id=article, updated_at=stamp)
            for sequence, kind, article, stamp in page.events
        ],
        next_sequence=page.next_sequence,
        has_more=page.has_more,
    )


POLL_TOOL = Tool(
    name="poll_resource_events",
    title="Poll resource events",
    description=(
        "Resume the event feed of one granted knowledge base (resource_type "
        "'knowledge_base', resource_id its ID) after a sequence number. Returns up to "
        "`limit` events {sequence, type, article_id, updated_at} of type published, "
        "saved, retitled or unpublished, and next_sequence: keep that one integer and "
        "pass it as after_sequence next time, instead of re-reading every cited "
        "article. A citation whose article appears with a later updated_at has "
        "changed; 'unpublished' means it is gone. Start from 0, or from the sequence "
        "you stored with your citations."
    ),
    request=PollRequest,
    result=PollResult,
    annotations=READ_ONLY,
    answer=poll,
    scope=resource,
)
