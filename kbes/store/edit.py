"""The agents' edit: applied only if the article is still at the version the agent read, and
at most once per idempotency key, a retry answering the first result as a replay."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from eventsourcing.persistence import IntegrityError

from kbes.domain.article import Article
from kbes.domain.author import Author, person_running
from kbes.domain.clock import Clock, format_timestamp, next_timestamp
from kbes.domain.errors import (
    ArticleChanged,
    ArticleNotFound,
    ArticleUnpublished,
    Gone,
    KeyReused,
    NotFound,
)
from kbes.domain.ids import parse_id
from kbes.domain.limits import Limits, require_content, require_idempotency_key, require_title
from kbes.domain.receipt import EditReceipt, edit_fingerprint, receipt_id
from kbes.store.event_log import EventLog
from kbes.store.knowledge_bases import KnownKnowledgeBases
from kbes.store.results import CurrentArticle, Edited


class AgentEdit:
    """The one write an agent makes."""

    def __init__(
        self, log: EventLog, known: KnownKnowledgeBases, clock: Clock, limits: Limits
    ) -> None:
        self.log = log
        self.known = known
        self.clock = clock
        self.limits = limits

    def edit_article(
        self,
        knowledge_base_id: UUID,
        article_id: UUID | str,
        content: str,
        *,
        expected_version: datetime,
        idempotency_key: str,
        title: str | None = None,
        by: Author | None = None,
    ) -> Edited:
        """An agent's edit: applied only if the article is still at `expected_version`, and
        at most once per `idempotency_key` (a retry answers the first result, as a replay).
        The limits and the title rule are checked first, so a refused edit never depends on
        the article's state. `by`: the author its events record, which the door that took
        the call knows (a token's name, a declared client); a Python caller's default is the
        person running the process."""
        require_idempotency_key(idempotency_key, self.limits)
        require_content(content, self.limits)
        if title is not None:
            require_title(title, self.limits)
        kb = self.known.require(knowledge_base_id)
        parsed = parse_id(article_id)
        if parsed is None:
            raise ArticleNotFound(article_id)
        fingerprint = edit_fingerprint(parsed, content, title, expected_version)
        # The idempotency key is looked up only where it can matter: before any refusal, and
        # when the receipt's insert collides with an earlier one (a used key always collides:
        # its receipt has one id and one version). So an accepted edit costs one read, the
        # article's fast-forward, and one write; every answer is the one a lookup up front
        # would give.
        try:
            article = self._editable_article(kb, parsed, article_id)
        except (NotFound, Gone):
            replay = self._replay(kb, idempotency_key, fingerprint)
            if replay is not None:
                return replay
            raise
        if article.updated_at != expected_version:
            # A retry of an edit that was accepted (here or in another process) is a replay.
            replay = self._replay(kb, idempotency_key, fingerprint)
            if replay is not None:
                return replay
            raise _version_conflict(article, expected_version)
        # A save that changes nothing emits no article event (the article decides), so the
        # version stays; the receipt is recorded all the same, so a retry replays this answer
        # and the key stays bound to this request.
        by = by or person_running()
        if article.save(
            content,
            title,
            at=next_timestamp(self.clock, article.updated_at),
            limits=self.limits,
            by=by,
        ):
            at = article.updated_at
        else:
            at = next_timestamp(self.clock, None)
        receipt = EditReceipt.record(
            knowledge_base_id=kb,
            idempotency_key=idempotency_key,
            article_id=article.id,
            fingerprint=fingerprint,
            title=article.title,
            updated_at=article.updated_at,
            at=at,
            by=by,
        )
        try:
            self.log.save(article, receipt)
        except IntegrityError:
            # Another writer got there first: either the same key (a concurrent replay) or
            # another change to this article version.
            replay = self._replay(kb, idempotency_key, fingerprint)
            if replay is not None:
                return replay
            current = self._editable_article(kb, parsed, article_id)
            raise _version_conflict(current, expected_version) from None
        return Edited(kb, article.id, article.title, article.updated_at, replay=False)

    def _replay(self, kb: UUID, key: str, fingerprint: str) -> Edited | None:
        receipt = self.log.get(receipt_id(kb, key), EditReceipt)
        if receipt is None:
            return None
        if receipt.fingerprint != fingerprint:
            raise KeyReused(key, receipt.article_id)
        return Edited(kb, receipt.article_id, receipt.title, receipt.updated_at, replay=True)

    def article_to_edit(self, knowledge_base_id: UUID, article_id: UUID | str) -> CurrentArticle:
        """The published article an edit would replace, from its aggregate as the log has it
        now: the one the edit compares its version with, read without catching up the views.
        Refused as `edit_article` refuses it (`ArticleNotFound`, `ArticleUnpublished`)."""
        kb = self.known.require(knowledge_base_id)
        parsed = parse_id(article_id)
        if parsed is None:
            raise ArticleNotFound(article_id)
        article = self._editable_article(kb, parsed, article_id)
        stamp = format_timestamp(article.updated_at)
        return CurrentArticle(str(article.id), article.title, article.content, stamp)

    def _editable_article(self, kb: UUID, article_id: UUID, raw_id: UUID | str) -> Article:
        article = self.log.get(article_id, Article)
        if article is None or article.knowledge_base_id != kb or not article.ever_published:
            raise ArticleNotFound(raw_id)
        if not article.published:
            raise ArticleUnpublished(raw_id, format_timestamp(article.updated_at))
        return article


def _version_conflict(article: Article, expected: datetime) -> ArticleChanged:
    return ArticleChanged(
        article.id, format_timestamp(article.updated_at), format_timestamp(expected)
    )


__all__ = ["AgentEdit"]
