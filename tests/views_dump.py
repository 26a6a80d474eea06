"""Every row of the views, for tests that compare two builds of them (a rebuild, a replay, two
processes' views files)."""

from __future__ import annotations

from typing import Any

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
        kbs = [row[0] for row in out["view_knowledge_bases"]]
        # The position the file has folded to, not this process's last look: a Views opened
        # only to be compared has looked at nothing yet.
        head = views.database.position(c)
    # Each knowledge base's keyword index, caught up to the views: what search can find.
    out["keyword_index"] = [(kb, *doc) for kb in kbs for doc in views.keyword.documents(kb, head)]
    return out
