"""The search engine choice, measured: `python -m kbes.sims.search_engines [--articles N]`.

Three engines answer the same plain-text queries (two title words, sometimes a common word) over
the same synthetic articles (`kbes.sims.perf.Corpus`), with the title weighted 10x the content,
a snippet per hit, and the top 10 kept:

- `fts5-shared`: today's FTS5 table shared by every knowledge base, filtered after MATCH;
- `fts5-partitioned`: one FTS5 table per knowledge base, ranked inside FTS5 (`ORDER BY rank`);
- `tantivy`: one tantivy index, the knowledge base a term filter.

Each engine is measured on: one knowledge base of `--articles` articles (p50, p99); one
knowledge base of 1,000 alone and among 100 others of 1,000 (the isolation ratio); and the
cost of bringing one saved article into the index (an upsert and its commit)."""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tantivy

from kbes.sims.perf import Corpus, latencies_ms, percentile


def connect(path: Path) -> sqlite3.Connection:
    """As kbes opens its views: WAL, synchronous=FULL, a 64 MiB page cache."""
    db = sqlite3.connect(path)
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "cache_size=-65536"):
        db.execute(f"PRAGMA {pragma}")
    return db


Docs = list[tuple[str, str, str, str]]
"""(article id, knowledge base id, title, content)"""


def corpus_docs(corpus: Corpus, kb: str, n: int, prefix: str) -> Docs:
    return [
        (f"{prefix}-{i}", kb, title, content) for i, (title, content) in enumerate(corpus.drafts(n))
    ]


class Fts5Shared:
    """Today's schema and query: one table, joined to the article rows, filtered after MATCH."""

    def __init__(self, path: Path) -> None:
        self.db = connect(path)
        self.db.execute(
            "CREATE VIRTUAL TABLE s USING fts5(title, content, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        self.db.execute("CREATE TABLE a (seq INTEGER PRIMARY KEY, id TEXT, kb TEXT)")

    def load(self, docs: Docs) -> None:
        with self.db:
            for article, kb, title, content in docs:
                seq = self.db.execute(
                    "INSERT INTO a (id, kb) VALUES (?, ?)", (article, kb)
                ).lastrowid
                self.db.execute(
                    "INSERT INTO s (rowid, title, content) VALUES (?, ?, ?)", (seq, title, content)
                )

    def search(self, kb: str, query: str) -> list[Any]:
        expression = " OR ".join(f'"{w}"' for w in dict.fromkeys(query.lower().split()))
        return self.db.execute(
            "SELECT a.id, snippet(s, 1, '', '', '…', 24) FROM s JOIN a ON a.seq = s.rowid "
            "WHERE s MATCH ? AND a.kb = ? ORDER BY bm25(s, 10.0, 1.0), a.seq LIMIT 10",
            (expression, kb),
        ).fetchall()

    def upsert(self, doc: tuple[str, str, str, str]) -> None:
        article, _, title, content = doc
        with self.db:
            (seq,) = self.db.execute("SELECT seq FROM a WHERE id = ?", (article,)).fetchone()
            self.db.execute(
                "UPDATE s SET title = ?, content = ? WHERE rowid = ?", (title, content, seq)
            )


class Fts5Partitioned:
    """One FTS5 table per knowledge base, its rank bm25(10, 1): FTS5 orders by rank itself,
    so snippets are made for the rows kept only."""

    def __init__(self, path: Path) -> None:
        self.db = connect(path)
        self.tables: dict[str, str] = {}

    def table(self, kb: str) -> str:
        if kb not in self.tables:
            name = f"s{len(self.tables)}"
            self.db.execute(
                f"CREATE VIRTUAL TABLE {name} USING fts5(id UNINDEXED, title, content, "
                "tokenize='porter unicode61 remove_diacritics 2')"
            )
            self.db.execute(
                f"INSERT INTO {name}({name}, rank) VALUES ('rank', 'bm25(0, 10.0, 1.0)')"
            )
            self.tables[kb] = name
        return self.tables[kb]

    def load(self, docs: Docs) -> None:
        with self.db:
            for article, kb, title, content in docs:
                self.db.execute(
                    f"INSERT INTO {self.table(kb)} (id, title, content) VALUES (?, ?, ?)",
                    (article, title, content),
                )

    def search(self, kb: str, query: str) -> list[Any]:
        name = self.tables[kb]
        expression = " OR ".join(f'"{w}"' for w in dict.fromkeys(query.lower().split()))
        return self.db.execute(
            f"SELECT id, snippet({name}, 2, '', '', '…', 24) FROM {name} "
            f"WHERE {name} MATCH ? ORDER BY rank LIMIT 10",
            (expression,),
        ).fetchall()

    def upsert(self, doc: tuple[str, str, str, str]) -> None:
        article, kb, title, content = doc
        name = self.tables[kb]
        with self.db:
            self.db.execute(
                f"UPDATE {name} SET title = ?, content = ? WHERE id = ?", (title, content, article)
            )


class Tantivy:
    """One tantivy index written directly, set up as kbes's index is (the English-stem
    analyzer with ASCII folding, term queries, the title boosted, the knowledge base a
    zero-scored term filter, snippets of the content)."""

    ANALYZER = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )

    def __init__(self, path: Path) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("kb", tokenizer_name="raw", index_option="basic")
        builder.add_text_field("title", stored=True, tokenizer_name="en")
        builder.add_text_field("content", stored=True, tokenizer_name="en")
        self.schema = builder.build()
        path.mkdir()
        self.index = tantivy.Index(self.schema, path=str(path))
        self.index.register_tokenizer("en", self.ANALYZER)

    def doc(self, article: str, kb: str, title: str, content: str) -> tantivy.Document:
        return tantivy.Document(id=article, kb=kb, title=title, content=content)

    def load(self, docs: Docs) -> None:
        writer = self.index.writer(128_000_000, 0)
        for doc in docs:
            writer.add_document(self.doc(*doc))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def search(self, kb: str, query: str) -> list[Any]:
        Q, Occur = tantivy.Query, tantivy.Occur
        should = []
        for word in dict.fromkeys(self.ANALYZER.analyze(query)):
            title = Q.term_query(self.schema, "title", word, index_option="freq")
            should.append((Occur.Should, Q.boost_query(title, 10.0)))
            content = Q.term_query(self.schema, "content", word, index_option="freq")
            should.append((Occur.Should, content))
        in_kb = Q.const_score_query(Q.term_query(self.schema, "kb", kb, "basic"), 0.0)
        query_ = Q.boolean_query([(Occur.Must, in_kb), (Occur.Must, Q.boolean_query(should))])
        searcher = self.index.searcher()
        hits = searcher.search(query_, 10, count=False).hits
        snippets = tantivy.SnippetGenerator.create(searcher, query_, self.schema, "content")
        out = []
        for _, address in hits:
            doc = searcher.doc(address)
            out.append((doc["id"][0], snippets.snippet_from_doc(doc).fragment()))
        return out

    def upsert(self, doc: tuple[str, str, str, str]) -> None:
        writer = self.index.writer(15_000_000, 1)
        writer.delete_documents_by_term("id", doc[0])
        writer.add_document(self.doc(*doc))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()


ENGINES: dict[str, Callable[[Path], Any]] = {
    "fts5-shared": Fts5Shared,
    "fts5-partitioned": Fts5Partitioned,
    "tantivy": Tantivy,
}


def measure(engine: str, workdir: Path, articles: int, samples: int) -> dict[str, float]:
    corpus = Corpus()
    out: dict[str, float] = {}
    rng = random.Random(articles)

    # One large knowledge base.
    big = corpus_docs(corpus, "big", articles, "b")
    store = ENGINES[engine](workdir / f"{engine}-big")
    started = time.perf_counter()
    store.load(big)
    out["build_s"] = time.perf_counter() - started
    queries = [corpus.query(big[rng.randrange(len(big))][2]) for _ in range(samples)]
    times = latencies_ms(lambda q: store.search("big", q), queries)
    out["p50_ms"] = percentile(times, 50)
    out["p99_ms"] = percentile(times, 99)
    saves = [
        (big[i][0], "big", big[i][2], corpus.content())
        for i in rng.sample(range(len(big)), min(50, len(big)))
    ]
    times = latencies_ms(store.upsert, saves)
    out["upsert_p50_ms"] = percentile(times, 50)

    # 1 knowledge base of 1,000 alone, then among 100 others.
    mine = corpus_docs(corpus, "mine", 1000, "m")
    queries = [corpus.query(mine[rng.randrange(1000)][2]) for _ in range(samples)]
    alone = ENGINES[engine](workdir / f"{engine}-alone")
    alone.load(mine)
    shared = ENGINES[engine](workdir / f"{engine}-shared")
    docs = list(mine)
    for k in range(100):
        docs += corpus_docs(corpus, f"kb{k}", 1000, f"o{k}")
    shared.load(docs)
    a = latencies_ms(lambda q: alone.search("mine", q), queries)
    s = latencies_ms(lambda q: shared.search("mine", q), queries)
    out["alone_p50_ms"] = percentile(a, 50)
    out["shared_p50_ms"] = percentile(s, 50)
    out["isolation_ratio"] = out["shared_p50_ms"] / out["alone_p50_ms"]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--engines", default=",".join(ENGINES))
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="kbes-engines-"))
    try:
        for engine in args.engines.split(","):
            (workdir / engine).mkdir()
            print(engine, "...", flush=True)
            figures = measure(engine, workdir / engine, args.articles, args.samples)
            print(engine, " ".join(f"{k}={v:.3g}" for k, v in figures.items()), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
