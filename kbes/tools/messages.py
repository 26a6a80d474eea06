"""The words a model reads when a tool refuses: each says what to do next. The application
raises domain errors carrying the facts; the tools phrase them here."""

from __future__ import annotations

from kbes.errors import KnowledgeBaseNotFound, NotFound

GRANTS_HINT = "check the id against the citation or the list of granted knowledge bases"


def shown_id(value: object) -> str:
    """An id as the caller sent it; quoted, and said so, when blanks around it are why it names
    nothing (`" KB "` looks like a good id in a message otherwise)."""
    text = str(value)
    if text != text.strip():
        return f"{text!r} (it has blanks around it: pass the id exactly as the citation gives it)"
    return text


def no_knowledge_base(knowledge_base_id: object) -> str:
    return f"no knowledge base {shown_id(knowledge_base_id)} is available here; {GRANTS_HINT}"


def no_article(article_id: object) -> str:
    return (
        f"no published article {shown_id(article_id)} in this knowledge base; "
        "search the knowledge base for current articles"
    )


def no_longer_an_answer(article_id: object, unpublished_at: str) -> str:
    return (
        f"article {article_id} was unpublished at {unpublished_at}; it is no longer an answer. "
        "Search again for a current article."
    )


def not_found(e: NotFound, knowledge_base_id: object, article_id: object) -> NotFound:
    """The wire's `not_found` for a missing knowledge base or article, as the tools that take
    both ids (read, edit) word it alike: which of the two names nothing, and what to do."""
    if isinstance(e, KnowledgeBaseNotFound):
        return NotFound(no_knowledge_base(knowledge_base_id))
    return NotFound(no_article(article_id))
