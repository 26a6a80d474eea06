"""The queries the views answer: one article, the knowledge bases, an article list and
an article's versions, as rows. They read the views as they stand: the caller catches them up
first (kbes.store.application)."""

from __future__ import annotations

from typing import Any

from kbes.projections.database import ViewsDatabase

ARTICLE_SQL = (
    "SELECT article_id, knowledge_base_id, title, content, status, version, "
    "updated_at FROM view_articles WHERE article_id = ?"
)


class Queries:
    """Reads of the view tables."""

    def __init__(self, database: ViewsDatabase) -> None:
        self.database = database

    def article(self, article_id: str) -> Any:
        rows = self._query(ARTICLE_SQL, (article_id,))
        if rows is not None:
            return rows[0] if rows else None
        with self.database.read() as c:
            c.execute(ARTICLE_SQL, (article_id,))
            return c.fetchone()

    def _query(self, statement: str, params: tuple[Any, ...]) -> list[Any] | None:
        """A read tool's one statement without a transaction around it (a lone SELECT is its
        own snapshot); None where the datastore must use a transaction (kbes.store.sqlite)."""
        return self.database.select.query(statement, params, named=True)

    def knowledge_base(self, knowledge_base_id: str) -> Any:
        with self.database.read() as c:
            c.execute(
                "SELECT knowledge_base_id, name, created_at FROM view_knowledge_bases "
                "WHERE knowledge_base_id = ?",
                (knowledge_base_id,),
            )
            return c.fetchone()

    def knowledge_bases(self) -> list[Any]:
        with self.database.read() as c:
            c.execute(
                "SELECT k.knowledge_base_id, k.name, k.created_at, "
                "(SELECT COUNT(*) FROM view_articles a "
                " WHERE a.knowledge_base_id = k.knowledge_base_id) AS articles, "
                "(SELECT COUNT(*) FROM view_articles a "
                " WHERE a.knowledge_base_id = k.knowledge_base_id AND a.status = 'published')"
                " AS published "
                "FROM view_knowledge_bases k ORDER BY k.created_at, k.knowledge_base_id"
            )
            return c.fetchall()

    def articles(self, knowledge_base_id: str) -> list[Any]:
        with self.database.read() as c:
            c.execute(
                "SELECT article_id, title, status, version, updated_at FROM view_articles "
                "WHERE knowledge_base_id = ? ORDER BY title, article_id",
                (knowledge_base_id,),
            )
            return c.fetchall()

    def versions(self, article_id: str) -> list[Any]:
        with self.database.read() as c:
            c.execute(
                "SELECT version, updated_at, type, notification_id FROM view_article_versions "
                "WHERE article_id = ? ORDER BY version",
                (article_id,),
            )
            return c.fetchall()


__all__ = ["Queries"]
