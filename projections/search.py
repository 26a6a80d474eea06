"""The search index: FTS5 over the title and content of published articles, ranked by bm25
with the title weighted above the content. Queries are plain text: every word is quoted, so
FTS5 syntax (`"`, `*`, `-`, `NEAR`, `AND`, parentheses) is searched for, never interpreted."""

from __future__ import annotations

import re

SCHEMA = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_index USING fts5("
    "title, content, tokenize='porter unicode61 remove_diacritics 2')"
)

TITLE_WEIGHT = 10.0
CONTENT_WEIGHT = 1.0
MAX_TERMS = 32
SNIPPET_TOKENS = 24

_WORD = re.compile(r"\w+", re.UNICODE)


def match_expression(query: str) -> str | None:
    """FTS5 MATCH text for a free-text query: any of its words, each a quoted string.
    Returns None when the query holds no word at all (nothing can match)."""
    terms: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in terms:
            terms.append(word)
        if len(terms) == MAX_TERMS:
            break
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


SEARCH_SQL = (
    "SELECT a.article_id, a.title, a.updated_at, "
    f"snippet(search_index, 1, '', '', '…', {SNIPPET_TOKENS}) AS snippet "
    "FROM search_index JOIN view_articles a ON a.seq = search_index.rowid "
    "WHERE search_index MATCH ? AND a.knowledge_base_id = ? "
    f"ORDER BY bm25(search_index, {TITLE_WEIGHT}, {CONTENT_WEIGHT}), a.seq LIMIT ?"
)


def index(c: object, seq: int, title: str, content: str) -> None:
    c.execute(  # type: ignore[attr-defined]
        "INSERT INTO search_index(rowid, title, content) VALUES (?, ?, ?)", (seq, title, content)
    )


def reindex(c: object, seq: int, title: str, content: str) -> None:
    c.execute(  # type: ignore[attr-defined]
        "UPDATE search_index SET title = ?, content = ? WHERE rowid = ?", (title, content, seq)
    )


def unindex(c: object, seq: int) -> None:
    c.execute("DELETE FROM search_index WHERE rowid = ?", (seq,))  # type: ignore[attr-defined]
