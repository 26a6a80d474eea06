"""People's commands: knowledge bases and articles created, published, unpublished and saved by
a person, last writer wins. No versions are compared here: that is the agents' edit
(kbes.store.edit)."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from kbes.domain.article import Article
from kbes.domain.clock import next_timestamp
from kbes.domain.errors import ArticleElsewhere, NothingToSave
from kbes.domain.knowledge_base import KnowledgeBase
from kbes.store.core import StoreCore


class PeopleCommands(StoreCore):
    """The commands the CLI, imports and simulations give on a person's behalf."""

    def create_knowledge_base(self, name: str) -> UUID:
        """A new knowledge base; its name follows the title rule (`BlankName`, `TooLong`,
        `TitleCharacter` naming `name` otherwise). Names need not be unique: ids tell
        knowledge bases apart (`knowledge_bases_named` finds those a name already has)."""
        kb = KnowledgeBase.create(name, at=self.clock.now())
        self.save(kb)
        self._known_knowledge_bases.add(kb.id)
        return kb.id

    def add_article(
        self, knowledge_base_id: UUID | str, title: str, content: str, *, publish: bool = False
    ) -> UUID:
        """Draft an article (and publish it at once if asked); returns its id."""
        kb = self._knowledge_base_uuid(knowledge_base_id)
        title = _require_title(title)
        article = Article.draft(
            kb, title, content, at=next_timestamp(self.clock, None), limits=self.limits
        )
        if publish:
            article.publish(at=next_timestamp(self.clock, article.updated_at))
        self.save(article)
        return article.id

    def add_articles(
        self, knowledge_base_id: UUID | str, drafts: Iterable[tuple[str, str]], *, publish: bool
    ) -> list[UUID]:
        """Draft many articles in one transaction (imports and simulations)."""
        kb = self._knowledge_base_uuid(knowledge_base_id)
        batch: list[Article] = []
        for title, content in drafts:
            article = Article.draft(
                kb,
                _require_title(title),
                content,
                at=next_timestamp(self.clock, None),
                limits=self.limits,
            )
            if publish:
                article.publish(at=next_timestamp(self.clock, article.updated_at))
            batch.append(article)
        self.save(*batch)
        return [article.id for article in batch]

    def publish_article(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> int:
        article = self.article_for_person(knowledge_base_id, article_id)
        article.publish(at=next_timestamp(self.clock, article.updated_at))
        return self._save_one(article)

    def unpublish_article(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> int:
        article = self.article_for_person(knowledge_base_id, article_id)
        article.unpublish(at=next_timestamp(self.clock, article.updated_at))
        return self._save_one(article)

    def save_article(
        self,
        knowledge_base_id: UUID | str,
        article_id: UUID | str,
        *,
        content: str | None = None,
        title: str | None = None,
    ) -> int | None:
        """A person's save, last writer wins: one `Saved` or `Retitled` event, and its
        sequence; None when the save would change nothing (the article decides), so nothing
        was written."""
        article = self.article_for_person(knowledge_base_id, article_id)
        if content is None and title is None:
            raise NothingToSave()
        if title is not None:
            title = _require_title(title)
        if not article.save(
            article.content if content is None else content,
            title,
            at=next_timestamp(self.clock, article.updated_at),
            limits=self.limits,
        ):
            return None
        return self._save_one(article)

    def article_for_person(self, knowledge_base_id: UUID | str, article_id: UUID | str) -> Article:
        """The article, drafts and unpublished ones included; `not_found` if it is not in
        that knowledge base."""
        kb = self._knowledge_base_uuid(knowledge_base_id)
        article = self.get_article(article_id)
        if article.knowledge_base_id != kb:
            raise ArticleElsewhere(article_id, kb)
        return article

    def _save_one(self, article: Article) -> int:
        recordings = self.save(article)
        return recordings[-1].notification.id


def _require_title(title: str) -> str:
    """A person's title without the spaces around it; the aggregate applies the title rule."""
    return title.strip()


__all__ = ["PeopleCommands"]
