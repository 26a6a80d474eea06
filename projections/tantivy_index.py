"""The search index: a tantivy index of the published articles, a projection of the log.

Why tantivy: its top-k search skips the documents that cannot enter the top k, and the
knowledge base is a term filter, so a search costs what its own knowledge base holds, not the
whole database (docs/search-engine.md). The index lives beside the views (a directory next to
the views' SQLite file) and is caught up from the log like them.

The position the index reflects is a document of the index itself (`POSITION_KEY`), replaced
in the same commit as the articles it covers: index and position cannot disagree, whatever
kills the process. Every article is one document keyed by its id, replaced whole (a delete by
term and an add in one commit), so applying a range of the log twice changes nothing, and an
unpublished article is deleted in the commit that moves the position past its unpublishing.

Queries are built from terms, never parsed: every word of the query, analysed as the index
analyses the text, is a term query on the title (boosted) or the content; any word matches.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import tantivy

ARTICLE_ID = "article_id"
KNOWLEDGE_BASE_ID = "knowledge_base_id"
TITLE = "title"
CONTENT = "content"
UPDATED_AT = "updated_at"
POSITION = "position"
SEQ = "seq"
"""The article's draft order (the view's seq): ties in score go to the older article, as
FTS5's ranking did, whatever order the documents were written in."""
POSITION_KEY = "@position"
"""The article id of the document that holds the index's position (no UUID looks like it)."""
SOURCE = "source"
"""On the position document: the id of the views the index was built beside. An index left
beside a views file made anew (a deleted database, a cleared cache) holds another id, so its
position counts for nothing and it is built again whole."""

ANALYZER_NAME = "kbes_en"
TITLE_BOOST = 10.0
"""The title weighs ten times the content, as it did in FTS5's bm25 weights."""
MAX_TERMS = 32
SNIPPET_CHARS = 150
"""About FTS5's 24-token snippet of the content."""
ELLIPSIS = "…"

WRITER_HEAP = 15_000_000
"""tantivy's smallest writer arena: a catch-up of a few saves allocates no more than it needs."""
BULK_HEAP = 128_000_000


def analyzer() -> tantivy.TextAnalyzer:
    """tantivy's `en_stem` (simple tokenizer, long tokens dropped, lower case, English
    stemmer) plus ASCII folding, the near equivalent of FTS5's `porter unicode61
    remove_diacritics 2` that the index used before."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


ANALYZER = analyzer()


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field(ARTICLE_ID, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(KNOWLEDGE_BASE_ID, tokenizer_name="raw", index_option="basic")
    builder.add_text_field(TITLE, stored=True, tokenizer_name=ANALYZER_NAME)
    builder.add_text_field(CONTENT, stored=True, tokenizer_name=ANALYZER_NAME)
    builder.add_text_field(UPDATED_AT, stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field(POSITION, stored=True)
    builder.add_unsigned_field(SEQ, stored=True)
    builder.add_text_field(SOURCE, stored=True, tokenizer_name="raw", index_option="basic")
    return builder.build()


SCHEMA = schema()


def open_index(path: str | os.PathLike[str] | None) -> tantivy.Index:
    """The index in directory `path` (created if missing), or in memory for None. The reader
    reloads when asked only: a search reloads when it needs a newer position."""
    if path is None:
        index = tantivy.Index(SCHEMA)
    else:
        Path(path).mkdir(parents=True, exist_ok=True)
        try:
            index = tantivy.Index(SCHEMA, path=os.fspath(path), reuse=True)
        except ValueError as e:
            if "schema does not match" not in str(e):
                raise
            # An index of another kbes version: a projection, so rebuilt from the log.
            shutil.rmtree(path)
            Path(path).mkdir(parents=True)
            index = tantivy.Index(SCHEMA, path=os.fspath(path), reuse=True)
    index.register_tokenizer(ANALYZER_NAME, ANALYZER)
    index.config_reader(reload_policy="Manual")
    return index


def document(
    article_id: str, knowledge_base_id: str, title: str, content: str, updated_at: str, seq: int
) -> tantivy.Document:
    return tantivy.Document(
        seq=seq,
        article_id=article_id,
        knowledge_base_id=knowledge_base_id,
        title=title,
        content=content,
        updated_at=updated_at,
    )


def position_document(position: int, source: str) -> tantivy.Document:
    return tantivy.Document(article_id=POSITION_KEY, position=position, source=source)


def read_position(searcher: tantivy.Searcher, source: str) -> int:
    """The log position the searcher's commit reflects: 0 for an empty index, or one built
    beside other views than `source`."""
    query = tantivy.Query.term_query(SCHEMA, ARTICLE_ID, POSITION_KEY)
    hits = searcher.search(query, 1, count=False).hits
    if not hits:
        return 0
    doc = searcher.doc(hits[0][1])
    return int(doc[POSITION][0]) if doc[SOURCE] == [source] else 0


def terms(query: str) -> list[str]:
    """The distinct terms of a plain-text query, as the index analyses text (first 32)."""
    return list(dict.fromkeys(ANALYZER.analyze(query)))[:MAX_TERMS]


def build_query(knowledge_base_id: str, words: Sequence[str]) -> tantivy.Query:
    """Any of `words` in the title (boosted) or the content, within the knowledge base. The
    knowledge-base clause scores nothing, so it filters without reordering."""
    Occur, Query = tantivy.Occur, tantivy.Query
    should: list[tuple[Any, Query]] = []
    for word in words:
        title = Query.term_query(SCHEMA, TITLE, word, index_option="freq")
        should.append((Occur.Should, Query.boost_query(title, TITLE_BOOST)))
        should.append((Occur.Should, Query.term_query(SCHEMA, CONTENT, word, index_option="freq")))
    knowledge_base = Query.term_query(SCHEMA, KNOWLEDGE_BASE_ID, knowledge_base_id, "basic")
    return Query.boolean_query(
        [
            (Occur.Must, Query.const_score_query(knowledge_base, 0.0)),
            (Occur.Must, Query.boolean_query(should)),
        ]
    )


class Hit(NamedTuple):
    article_id: str
    title: str
    snippet: str
    updated_at: str


def query_index(index: tantivy.Index, knowledge_base_id: str, query: str, limit: int) -> list[Hit]:
    """The top `limit` published articles of the knowledge base for a plain-text query."""
    return search(index.searcher(), knowledge_base_id, query, limit)


def search(searcher: tantivy.Searcher, knowledge_base_id: str, query: str, limit: int) -> list[Hit]:
    words = terms(query)
    if not words or limit <= 0:
        return []
    built = build_query(knowledge_base_id, words)
    found = top(searcher, built, limit)
    if not found:
        return []
    snippets = tantivy.SnippetGenerator.create(searcher, built, SCHEMA, CONTENT)
    snippets.set_max_num_chars(SNIPPET_CHARS)
    hits = []
    for _, _, doc in found:
        content = doc[CONTENT][0]
        hits.append(
            Hit(
                doc[ARTICLE_ID][0],
                doc[TITLE][0],
                snippet(content, snippets.snippet_from_doc(doc)),
                doc[UPDATED_AT][0],
            )
        )
    return hits


def top(
    searcher: tantivy.Searcher, query: tantivy.Query, limit: int
) -> list[tuple[float, int, tantivy.Document]]:
    """The `limit` best documents by score, ties broken by draft order: asks for more while
    the score at the cut is tied with the next one, so the cut never splits a tie by chance."""
    wanted = limit
    while True:
        hits = searcher.search(query, wanted + 1, count=False).hits
        if len(hits) <= wanted or hits[-1][0] != hits[limit - 1][0]:
            break  # every match in hand, or every document tied with the cut
        wanted *= 2
    docs = [(-score, searcher.doc(address)) for score, address in hits]
    ranked = sorted((score, doc[SEQ][0], doc) for score, doc in docs)
    return ranked[:limit]


def snippet(content: str, found: tantivy.Snippet) -> str:
    """The content's best fragment, with an ellipsis where it cuts the text; the content's
    start when only the title matched."""
    text = found.fragment()
    if text:
        start = content.find(text)
        end = start + len(text) if start >= 0 else len(content)
    else:
        text = content[:SNIPPET_CHARS]
        if len(content) > SNIPPET_CHARS and " " in text:
            text = text[: text.rindex(" ")]
        start, end = 0, len(text)
    return f"{ELLIPSIS if start > 0 else ''}{text.strip()}{ELLIPSIS if end < len(content) else ''}"


Row = tuple[str, str, str, str, str, str, int]
"""(article id, knowledge base id, title, content, status, updated_at, seq) of the article
view."""


def write_rows(writer: tantivy.IndexWriter, rows: Iterable[Row], *, replace: bool) -> None:
    """Each article as the view has it: its document replaced if published, deleted if not."""
    for article_id, kb, title, content, status, updated_at, seq in rows:
        if replace:
            writer.delete_documents_by_term(ARTICLE_ID, article_id)
        if status == "published":
            writer.add_document(document(article_id, kb, title, content, updated_at, seq))


def set_position(writer: tantivy.IndexWriter, position: int, source: str) -> None:
    writer.delete_documents_by_term(ARTICLE_ID, POSITION_KEY)
    writer.add_document(position_document(position, source))
