"""The search index: FTS5 over the title and content of published articles, ranked by bm25
with the title weighted above the content. Queries are plain text: every word is quoted, so
FTS5 syntax (`"`, `*`, `-`, `NEAR`, `AND`, parentheses) is searched for, never interpreted.
Text and queries are folded the same way (kbes.projections.folding): what folding adds to a
title or content is indexed in a column of its own, weighted as the title or the content.

One table holds every knowledge base, each in its own range of rowids: an entry's rowid is its
knowledge base's partition number shifted above the article row's `seq`. A search passes its
knowledge base's range to FTS5, which seeks each word's postings to it, so neither the scan,
nor bm25 per row, nor the snippets touch another knowledge base's rows. The ranking is the
one table's, bit for bit: bm25's statistics (rows, document lengths, how many rows hold a
word) still count the whole table, and reading them still walks each word's postings in every
knowledge base. A knowledge-base column would add a token to every document's length; a table
per knowledge base would give each its own statistics."""

from __future__ import annotations

from typing import Any

from kbes.projections import folding

COLUMNS = ("title", "content", "title_folded", "content_folded")
"""The title and content as written, and what folding adds to each (kbes.projections.folding).
An index with other columns is from before the folding: it is rebuilt (`outdated`)."""

SCHEMA = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_index USING fts5("
    f"{', '.join(COLUMNS)}, tokenize='porter unicode61 remove_diacritics 2')"
)

PARTITIONS = (
    "CREATE TABLE IF NOT EXISTS search_partitions ("
    "part INTEGER PRIMARY KEY, knowledge_base_id TEXT NOT NULL UNIQUE)"
)
"""The knowledge bases numbered from 1. The numbers outlive a drop of the index: they only
need to be stable while the index exists."""

TITLE_WEIGHT = 10.0
CONTENT_WEIGHT = 1.0
MAX_TERMS = 32
SNIPPET_TOKENS = 24
SEQ_BITS = 40
SEQ_MASK = (1 << SEQ_BITS) - 1

NON_ASCII = "*[^\x01-\x7f]*"
"""A GLOB pattern that matches text holding a character beyond ASCII."""


def match_expression(query: str) -> str | None:
    """FTS5 MATCH text for a free-text query: any of its words (folded as the text is, CJK
    cut into bigrams), each a quoted string. None when the query holds no word at all."""
    terms = folding.query_terms(query, MAX_TERMS)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


_PART = "(SELECT part FROM search_partitions WHERE knowledge_base_id = ?2)"
SEARCH_SQL = (
    "SELECT a.article_id, a.title, a.updated_at, "
    f"snippet(search_index, 1, '', '', '…', {SNIPPET_TOKENS}) AS snippet "
    f"FROM search_index JOIN view_articles a ON a.seq = search_index.rowid & {SEQ_MASK} "
    "WHERE search_index MATCH ?1 "
    f"AND search_index.rowid >= {_PART} << {SEQ_BITS} "
    f"AND search_index.rowid < ({_PART} + 1) << {SEQ_BITS} "
    "AND a.knowledge_base_id = ?2 "
    "ORDER BY bm25(search_index, "
    f"{TITLE_WEIGHT}, {CONTENT_WEIGHT}, {TITLE_WEIGHT}, {CONTENT_WEIGHT}), a.seq LIMIT ?3"
)
"""Parameters: the MATCH expression, the knowledge base id, the limit. The rowid range keeps
FTS5 inside the knowledge base; the `knowledge_base_id` test is a second guard."""


def fill(c: Any, suffix: str = "") -> None:
    """Fill the empty index `search_index{suffix}` from `view_articles{suffix}`: the published
    articles, as indexing batch by batch would have left them. In rowid order, since FTS5
    writes a segment whenever a rowid is not above the last one; only the keys are sorted, in
    a temporary table (sorting the rows would sort their content too)."""
    statements = (
        PARTITIONS,  # a views file repaired after a hand-dropped table may lack it
        "INSERT OR IGNORE INTO search_partitions (knowledge_base_id) "
        f"SELECT knowledge_base_id FROM view_knowledge_bases{suffix} "
        "ORDER BY created_at, knowledge_base_id",
        "DROP TABLE IF EXISTS temp.search_fill",
        "CREATE TEMP TABLE search_fill (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL)",
        f"INSERT INTO temp.search_fill SELECT (p.part << {SEQ_BITS}) | v.seq, v.seq "
        f"FROM view_articles{suffix} v "
        "JOIN search_partitions p ON p.knowledge_base_id = v.knowledge_base_id "
        "WHERE v.status = 'published'",
        # ASCII text has nothing to fold: filled in SQL. The rest below, through Python.
        f"INSERT INTO search_index{suffix} (rowid, {', '.join(COLUMNS)}) "
        "SELECT f.id, a.title, a.content, '', '' "
        f"FROM temp.search_fill f CROSS JOIN view_articles{suffix} a ON a.seq = f.seq "
        f"WHERE NOT (a.title GLOB '{NON_ASCII}' OR a.content GLOB '{NON_ASCII}') "
        "ORDER BY f.id",
    )
    for statement in statements:
        c.execute(statement)
    after = 0
    while True:
        c.execute(
            "SELECT f.id, a.title, a.content "
            f"FROM temp.search_fill f CROSS JOIN view_articles{suffix} a ON a.seq = f.seq "
            f"WHERE f.id > ? AND (a.title GLOB '{NON_ASCII}' OR a.content GLOB '{NON_ASCII}') "
            "ORDER BY f.id LIMIT 500",
            (after,),
        )
        rows = c.fetchall()
        if not rows:
            break
        c.executemany(
            f"INSERT INTO search_index{suffix} (rowid, {', '.join(COLUMNS)}) "
            "VALUES (?, ?, ?, ?, ?)",
            [(r[0], *_columns(r[1], r[2])) for r in rows],
        )
        after = rows[-1][0]
    c.execute("DROP TABLE temp.search_fill")


def _columns(title: str, content: str) -> tuple[str, str, str, str]:
    return title, content, folding.folded_terms(title), folding.folded_terms(content)


def rowid(c: Any, knowledge_base_id: str, seq: int) -> int:
    """The index rowid of the article row `seq`, numbering its knowledge base if new."""
    c.execute(
        "SELECT part FROM search_partitions WHERE knowledge_base_id = ?", (knowledge_base_id,)
    )
    row = c.fetchone()
    if row is None:
        c.execute(
            "INSERT INTO search_partitions (knowledge_base_id) VALUES (?)", (knowledge_base_id,)
        )
        part = c.lastrowid
    else:
        part = row[0]
    return (part << SEQ_BITS) | seq


def outdated(c: Any) -> bool:
    """Whether the index must be dropped and rebuilt from the views: it lacks the folded
    columns (written before the folding), or holds rows keyed by `seq` alone (written before
    the partitions)."""
    c.execute("PRAGMA table_info(search_index)")
    if tuple(row[1] for row in c.fetchall()) != COLUMNS:
        return True
    c.execute("SELECT 1 FROM search_index WHERE rowid < ? LIMIT 1", (1 << SEQ_BITS,))
    return c.fetchone() is not None


def index(c: Any, rowid: int, title: str, content: str) -> None:
    c.execute(
        f"INSERT INTO search_index(rowid, {', '.join(COLUMNS)}) VALUES (?, ?, ?, ?, ?)",
        (rowid, *_columns(title, content)),
    )


def reindex(c: Any, rowid: int, title: str, content: str) -> None:
    c.execute(
        "UPDATE search_index SET title = ?, content = ?, title_folded = ?, content_folded = ? "
        "WHERE rowid = ?",
        (*_columns(title, content), rowid),
    )


def unindex(c: Any, rowid: int) -> None:
    c.execute("DELETE FROM search_index WHERE rowid = ?", (rowid,))
