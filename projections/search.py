"""The search index: FTS5 over the title and content of published articles, ranked by bm25
with the title weighted above the content. Queries are plain text: every word is quoted, so
FTS5 syntax (`"`, `*`, `-`, `NEAR`, `AND`, parentheses) is searched for, never interpreted.

Upkeep. Each catch-up that changes the index is one FTS5 transaction, so one new b-tree
(segment); a save also leaves the article's old terms behind, marked deleted, until a merge
reaches the segment that holds them. FTS5's own automerge keeps the number of segments
logarithmic, but the old terms of the big first segment stay, and every search reads past them:
2,000 articles after 20,000 single saves searched ~1.3x slower than after an `optimize`. So
`upkeep` counts the documents written since the last `optimize` and runs one, in the catch-up's
own transaction, once they reach the number of documents in the index (at least
`OPTIMIZE_MIN_WRITES`): its cost, proportional to the index, is spread over as many writes (an
`optimize` of 100,000 articles takes ~1 s, once per 100,000 saves). A replay ends with one too.
Between optimizes, small segments still pile up until FTS5's automerge takes them (it works in
steps of 64 pages written): searches then run up to ~1.5x the optimized time. Settings that
bound them (crisismerge 4, automerge 2 with crisismerge 2, a 'merge' per transaction) cost
25-50% more per catch-up, so they are not used; a negative 'merge' corrupts the index on
SQLite 3.40.1."""

from __future__ import annotations

import re
from typing import Any

SCHEMA = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_index USING fts5("
    "title, content, tokenize='porter unicode61 remove_diacritics 2')"
)

UPKEEP_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS view_search_upkeep ("
    "id INTEGER PRIMARY KEY CHECK (id = 1), "
    "written INTEGER NOT NULL, "
    "due INTEGER NOT NULL, "
    "optimizes INTEGER NOT NULL)",
)
"""One row: documents written to the index (added, changed or removed) since its last
`optimize`; how many are due before the next; `optimize` runs since the index was built or
rebuilt. Written only inside the catch-up's write transaction (opening a store writes nothing,
so processes opening one file at once do not contend for its write lock)."""

OPTIMIZE_MIN_WRITES = 1000
"""No `optimize` sooner than this many writes after the last, however small the index."""
REBUILD_AFTER_OPTIMIZES = 200
"""Older SQLite (3.40.1 here) adds levels to the index's structure record at each `optimize`
and reports the index corrupt past 2,000 of them (measured: after ~1,000 optimizes); a
`rebuild` resets them, so once 200 optimizes have run since the index was built or rebuilt,
the next upkeep rebuilds it first (a rebuild costs ~5 optimizes)."""

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


def upkeep(c: Any, written: int) -> None:
    """Count `written` documents written to the index in this transaction, and `optimize` the
    index when they add up to its size (see the module's docstring). Call once per transaction
    that changed the index, inside it, never per event."""
    if not written:
        return
    c.execute(
        "INSERT INTO view_search_upkeep VALUES (1, ?, ?, 0) "
        "ON CONFLICT (id) DO UPDATE SET written = written + excluded.written",
        (written, OPTIMIZE_MIN_WRITES),
    )
    c.execute("SELECT written, due, optimizes FROM view_search_upkeep WHERE id = 1")
    total, due, optimizes = c.fetchone()
    if total >= due:
        optimize(c, rebuild=optimizes >= REBUILD_AFTER_OPTIMIZES)


def optimize(c: Any, *, rebuild: bool = False) -> None:
    """Merge the whole index into one b-tree (after a `rebuild` of it, if asked), and reset
    the upkeep counts."""
    if rebuild:
        c.execute("INSERT INTO search_index(search_index) VALUES ('rebuild')")
    c.execute("INSERT INTO search_index(search_index) VALUES ('optimize')")
    optimizes = 1
    if not rebuild:
        c.execute("SELECT optimizes FROM view_search_upkeep WHERE id = 1")
        row = c.fetchone()
        optimizes += row[0] if row else 0
    c.execute("SELECT count(*) FROM search_index")
    due = max(OPTIMIZE_MIN_WRITES, c.fetchone()[0])
    _set_upkeep(c, due, optimizes)


def reset_upkeep(c: Any) -> None:
    """The index was dropped and created again: nothing written, no `optimize` yet."""
    _set_upkeep(c, OPTIMIZE_MIN_WRITES, 0)


def _set_upkeep(c: Any, due: int, optimizes: int) -> None:
    c.execute("INSERT OR REPLACE INTO view_search_upkeep VALUES (1, 0, ?, ?)", (due, optimizes))
