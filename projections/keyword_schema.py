r"""The keyword engine's documents and queries: a tantivy index of one knowledge base's published
articles (docs/decisions.md for the choice and its measurements, docs/performance.md for its costs).

One field ranks: the title written twice and the content, folded and cut as
kbes.projections.folding folds them, so BM25 weighs the article as one text, as FTS5's bm25 did
over its weighted columns. Python cuts the words (`\w+`, which is the whole of the folding for
ASCII text; other text is folded first: NFKC, case folding, CJK bigrams) and tantivy is handed
them one space apart, to lower-case and stem: its own regex tokenizer cut the same words at
twice the cost of a whitespace split (docs/performance.md). A query's words are
folded the same way; English and question words are left out of it (a stop list, kept in the
index), unless nothing else is left. The content is also
kept, analysed by tantivy, for snippets. The position the index reflects is a document of its
own commit (`POSITION_KEY`)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

import msgspec
import tantivy

from kbes.projections import folding

ARTICLE_ID, TEXT, CONTENT, STORED = ("article_id", "text", "content", "stored")
SEQ, POSITION, SOURCE = "seq", "position", "source"
POSITION_KEY = "@position"
"""The article id of the documents holding the log position of a commit (no UUID is it)."""
POSITIONS_KEPT = 64
POSITIONS_SHARE = 100
"""Each commit adds a position document and leaves the older ones, the newest holding the
position, until a commit finds `positions_allowed` held and deletes them all: deleting the last
commit's at every commit wrote and synced a deletions file in its segment, and the list of files
again, each time (docs/performance.md). BM25 counts the kept ones among the documents, so they
are at most one per POSITIONS_SHARE articles, and POSITIONS_KEPT: a knowledge base of fewer
than twice POSITIONS_SHARE articles deletes the last one at every commit."""
WORDS, SNIPPETS = "kbes_words", "kbes_snippets"
MAX_TERMS = 32
SNIPPET_CHARS = 150
ELLIPSIS = "…"
_GAPS = bytes(c for c in range(128) if not (chr(c).isalnum() or c == ord("_")))
_ASCII_GAPS = bytes.maketrans(_GAPS, b" " * len(_GAPS))
"""Every ASCII byte `\\w` does not match, to a space: what is left between spaces are the words."""

_STOP_WORDS = (
    "a about above after again against all am an and any are as at be because been before "
    "being below between both but by can could did do does doing down during each few for from "
    "further had has have having he her here hers herself him himself his how i if in into is "
    "it its itself just me more most my myself no nor not now of off on once only or other our "
    "ours ourselves out over own same she should so some such than that the their theirs them "
    "themselves then there these they this those through to too under until up very was we "
    "were what when where which while who whom why will with would you your yours yourself "
    "yourselves must may might shall also one two"
)
STOP = frozenset(_STOP_WORDS.split())
"""English and question words: a question's common words match nearly every article and cost
what the whole knowledge base costs, for no ranking gain (docs/decisions.md)."""


def _analyzers() -> tuple[tantivy.TextAnalyzer, tantivy.TextAnalyzer]:
    words = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )
    snippets = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )
    return words, snippets


WORDS_ANALYZER, SNIPPET_ANALYZER = _analyzers()


def schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_text_field(ARTICLE_ID, stored=True, tokenizer_name="raw", index_option="basic")
    b.add_text_field(TEXT, stored=False, tokenizer_name=WORDS, index_option="freq")
    # Never given a value: the snippet generator cuts fragments of a field's text, and the
    # content is handed to it at search time, from STORED. Indexing the content a second time
    # for snippets doubled the cost of a commit (docs/performance.md).
    b.add_text_field(CONTENT, stored=False, tokenizer_name=SNIPPETS, index_option="basic")
    # The title, content and updated_at, stored only: nothing searches them.
    b.add_bytes_field(STORED, stored=True, indexed=False)
    b.add_unsigned_field(SEQ, stored=True)
    b.add_unsigned_field(POSITION, stored=True, fast=True)
    b.add_text_field(SOURCE, stored=True, tokenizer_name="raw", index_option="basic")
    return b.build()


SCHEMA = schema()


def register(index: tantivy.Index) -> tantivy.Index:
    index.register_tokenizer(WORDS, WORDS_ANALYZER)
    index.register_tokenizer(SNIPPETS, SNIPPET_ANALYZER)
    return index


def _plain(word: str) -> str:
    """A folded word without its combining marks (tantivy's ASCII folding sees no marks)."""
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def ranked_text(text: str) -> str:
    """`text` as the ranking field is given it: its words, and spaces between."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_GAPS).decode("ascii")
    return " ".join(tokens(text))


def tokens(text: str) -> list[str]:
    """The words of `text` as the ranking field holds them: folded, CJK cut into bigrams."""
    out: list[str] = []
    for word in folding.words(folding.fold(text)):
        if word.isascii():
            out.append(word)
        else:
            out.extend(_plain(t) for t in folding.cjk_terms(word, unigrams=True))
    return out


def document(
    article_id: str, title: str, content: str, updated_at: str, seq: int
) -> tantivy.Document:
    heading = ranked_text(title)
    return tantivy.Document(
        article_id=article_id,
        text=f"{heading} {heading} {ranked_text(content)}",
        stored=_encode((title, content, updated_at)),
        seq=seq,
    )


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(tuple[str, str, str]).decode


def stored(doc: tantivy.Document) -> tuple[str, str, str]:
    """A document's title, content and updated_at."""
    return _decode(doc[STORED][0])


def position_document(position: int, source: str, mark: str = "") -> tantivy.Document:
    """The document holding a commit's position in the log, the id of the views it was built
    beside, and the `mark` of the log's event at that position (which log it followed)."""
    document = tantivy.Document(article_id=POSITION_KEY, source=f"{source} {mark}".rstrip())
    document.add_unsigned(POSITION, position)  # an int keyword would be signed: the field is not
    return document


_POSITIONS = tantivy.Query.term_query(SCHEMA, ARTICLE_ID, POSITION_KEY)


def read_position(searcher: tantivy.Searcher, source: str) -> tuple[int, str]:
    """The log position the searcher's commit reflects (its newest position document) and the
    mark of the log's event there ("" in an index from before marks); (0, "") for an empty
    index or one built beside other views than `source`."""
    hits = searcher.search(_POSITIONS, 1, count=False, order_by_field=POSITION).hits
    if not hits:
        return 0, ""
    doc = searcher.doc(hits[0][1])
    built_beside, _, mark = doc[SOURCE][0].partition(" ")
    return (int(doc[POSITION][0]), mark) if built_beside == source else (0, "")


def positions_held(searcher: tantivy.Searcher) -> int:
    """How many position documents the searcher's commit holds, up to `POSITIONS_KEPT`."""
    return len(searcher.search(_POSITIONS, POSITIONS_KEPT, count=False).hits)


def positions_allowed(articles: int) -> int:
    """How many position documents an index of this many articles may hold (`POSITIONS_KEPT`)."""
    return max(1, min(POSITIONS_KEPT, articles // POSITIONS_SHARE))


def query_words(query: str) -> list[str]:
    """The query's folded words, stop words left out unless nothing else is left."""
    found = [_plain(t) for t in folding.query_terms(query, 4 * MAX_TERMS)]
    kept = [t for t in found if t not in STOP] or found
    return kept[:MAX_TERMS]


class Hit(NamedTuple):
    article_id: str
    title: str
    snippet: str
    updated_at: str


class Asked(NamedTuple):
    """A plain-text query cut once: its folded words (for the snippets) and the terms of the
    ranking field it looks for, any of which matches."""

    words: list[str]
    terms: list[str]


def asked(query: str) -> Asked:
    words = query_words(query)
    return Asked(words, list(dict.fromkeys(t for w in words for t in WORDS_ANALYZER.analyze(w))))


def document_terms(title: str, content: str) -> frozenset[str]:
    """The terms of the ranking field the article's document holds."""
    return frozenset(WORDS_ANALYZER.analyze(ranked_text(f"{title} {content}")))


def holds_any(searcher: tantivy.Searcher, article_ids: Sequence[str], terms: Sequence[str]) -> bool:
    """Whether the searcher's document of any of these articles holds any of these terms."""
    Occur, Query = tantivy.Occur, tantivy.Query
    ids = Query.term_set_query(SCHEMA, ARTICLE_ID, list(article_ids))
    query = Query.boolean_query([(Occur.Must, ids), (Occur.Must, _any(TEXT, terms))])
    return bool(searcher.search(query, 1, count=False).hits)


def search(searcher: tantivy.Searcher, query: str | Asked, limit: int) -> list[Hit]:
    """The top `limit` published articles for a plain-text query: any word matches."""
    words, terms = asked(query) if isinstance(query, str) else query
    if not terms or limit <= 0:
        return []
    built = _any(TEXT, terms)
    found = _top(searcher, built, limit)
    if not found:
        return []
    shown = list(dict.fromkeys(t for w in words for t in SNIPPET_ANALYZER.analyze(w)))
    snippets = tantivy.SnippetGenerator.create(searcher, _any(CONTENT, shown), SCHEMA, CONTENT)
    snippets.set_max_num_chars(SNIPPET_CHARS)
    hits = []
    for _, _, doc in found:
        title, content, updated_at = stored(doc)
        fragment = snippets.snippet_from_doc(tantivy.Document(content=content))
        hits.append(Hit(doc[ARTICLE_ID][0], title, snippet(content, fragment), updated_at))
    return hits


def _any(field: str, terms: Sequence[str]) -> tantivy.Query:
    Occur, Query = tantivy.Occur, tantivy.Query
    return Query.boolean_query(
        [(Occur.Should, Query.term_query(SCHEMA, field, t, index_option="freq")) for t in terms]
    )


def _top(
    searcher: tantivy.Searcher, query: tantivy.Query, limit: int
) -> list[tuple[float, int, tantivy.Document]]:
    """The best `limit` by score, ties to the older article (draft order): asks for more while
    the score at the cut ties with the next, so a tie is never split by chance."""
    wanted = 2 * limit
    while True:
        hits = searcher.search(query, wanted + 1, count=False).hits
        if len(hits) <= wanted or hits[-1][0] != hits[limit - 1][0]:
            break
        wanted *= 4
    if len(hits) > limit:  # only the hits tied with the cut can still enter it
        cut = hits[limit - 1][0]
        hits = [(s, a) for n, (s, a) in enumerate(hits) if n < limit or s == cut]
    ranked = sorted(
        (-score, doc[SEQ][0], doc) for score, doc in ((s, searcher.doc(a)) for s, a in hits)
    )
    return ranked[:limit]


def snippet(content: str, found: tantivy.Snippet) -> str:
    """The content's best fragment, an ellipsis where it cuts the text; the content's start
    when no word of the content matched (the title, or CJK only)."""
    text = found.fragment()
    if text:
        start = content.find(text)
        end = start + len(text) if start >= 0 else len(content)
        while end < len(content) and not content[end].isspace() and not content[end].isalnum():
            end += 1  # the punctuation that ends the fragment's last word
        text = content[start:end] if start >= 0 else text
    else:
        text = content[:SNIPPET_CHARS]
        if len(content) > SNIPPET_CHARS and " " in text:
            text = text[: text.rindex(" ")]
        start, end = 0, len(text)
    more = end < len(content) and bool(content[end:].strip())
    return f"{ELLIPSIS if start > 0 else ''}{text.strip()}{ELLIPSIS if more else ''}"


__all__ = [
    "SCHEMA",
    "Asked",
    "Hit",
    "asked",
    "document",
    "document_terms",
    "holds_any",
    "position_document",
    "positions_allowed",
    "positions_held",
    "read_position",
    "search",
    "stored",
]
