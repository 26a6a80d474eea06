"""Every row of the views, for tests that compare two builds of them (a rebuild, a replay, two
processes' views files)."""

from __future__ import annotations

from typing import Any

from kbes.projections import search
from kbes.projections.views import Views


def dump(views: Views) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every view, in a stable order: for comparing two builds of the views."""
    with views.read() as c:
        out: dict[str, list[tuple[Any, ...]]] = {}
        for table, order in (
            ("view_knowledge_bases", "knowledge_base_id"),
            ("view_articles", "article_id"),
            ("view_article_versions", "article_id, version"),
        ):
            c.execute(f"SELECT * FROM {table} ORDER BY {order}")
            rows = [tuple(row) for row in c.fetchall()]
            if table == "view_articles":
                rows = [row[1:] for row in rows]  # seq depends on insertion order only
            out[table] = rows
        c.execute(
            "SELECT a.article_id, s.title, s.content, s.title_folded, s.content_folded "
            "FROM search_index s "
            f"JOIN view_articles a ON a.seq = s.rowid & {search.SEQ_MASK} ORDER BY a.article_id"
        )
        out["search_index"] = [tuple(row) for row in c.fetchall()]
        return out
