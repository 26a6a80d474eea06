"""The keyword engine candidates at N articles in one knowledge base, on the study's articles
and query sets (scale_build.py), in turns with kbes today (the tool over FTS5):

- tantivy A: one shared index, one field (title written twice + content, folded as
  kbes.projections.folding folds), the knowledge base as a filter term, query stop list,
  top 10 with snippets, reload() before each search (as a projection must);
- tantivy B: the same, but an index per knowledge base (no filter term).

Also: catching one save up (delete by id + add + the position document + commit, on disk),
the index size, and isolation (1 knowledge base of 1,000 among 100, filter term vs alone).
Run: python scale_keyword.py 100000 [queries-per-set]"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import sys
import time
from pathlib import Path

import tantivy

from kbes import open_store
from kbes.projections import folding
from kbes.sims.bench.timing import latencies_in_turns, percentile
from kbes.tools import call_tool
from systems import STOP

DIR = Path(os.environ.get("STUDY_DIR", "study")) / "scale"
QUESTION = {"which", "how", "what", "why", "where", "when", "who", "i", "do",
            "does", "can"}


def analyzer():
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
            .filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.stemmer("english"))
            .build())


def schema():
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("kb", stored=False, tokenizer_name="raw")
    sb.add_text_field("text", stored=False, tokenizer_name="kbes")
    sb.add_text_field("content", stored=True, tokenizer_name="kbes")
    sb.add_text_field("title", stored=True, index_option="basic", tokenizer_name="raw")
    return sb.build()


def tokens(text: str) -> str:
    return " ".join(folding.words(folding.fold(text)))


def open_index(path: Path) -> tantivy.Index:
    index = tantivy.Index(schema(), path=str(path))
    index.register_tokenizer("kbes", analyzer())
    return index


def doc(aid, kb, title, content):
    t = tokens(title)
    return tantivy.Document(id=aid, kb=kb, text=f"{t} {t} {tokens(content)}", title=title,
                            content=content)


def build(path: Path, rows, heap=200_000_000) -> float:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    index = open_index(path)
    w = index.writer(heap_size=heap, num_threads=1)
    t = time.perf_counter()
    for aid, kb, title, content in rows:
        w.add_document(doc(aid, kb, title, content))
    w.add_document(tantivy.Document(id="position", kb="", text="", title="", content="0"))
    w.commit()
    w.wait_merging_threads()
    return time.perf_counter() - t


def searcher_for(index: tantivy.Index, kb: str | None):
    sch = index.schema
    kbq = tantivy.Query.term_query(sch, "kb", kb) if kb else None

    def call(q):
        kept = [w for w in dict.fromkeys(folding.query_terms(q, 64)) if w not in STOP | QUESTION]
        kept = kept[:32] or folding.query_terms(q, 32)
        if not kept:
            return []
        index.reload()
        s = index.searcher()
        terms = index.parse_query(" ".join(kept), ["text"])
        query = terms if kbq is None else tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, kbq), (tantivy.Occur.Must, terms)])
        hits = s.search(query, 10, count=False).hits
        gen = tantivy.SnippetGenerator.create(s, index.parse_query(" ".join(kept), ["content"]),
                                              sch, "content")
        out = []
        for _, addr in hits:
            d = s.doc(addr)
            out.append((d["id"][0], d["title"][0], gen.snippet_from_doc(d).fragment()))
        return out
    return call


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main(size: int, nq: int) -> None:
    meta = json.loads((DIR / f"meta-{size}.json").read_text())
    kb = meta["kb"]
    rows = [(a["id"], kb, a["title"], a["content"])
            for a in map(json.loads, open(DIR / f"articles-{size}.jsonl"))]
    work = Path(os.environ.get("STUDY_DIR", "study")) / "kw"
    shared = work / f"shared-{size}"
    took = build(shared, rows)
    print(f"built {size:,} in {took:.1f} s, {size_mb(shared):.0f} MB on disk", flush=True)
    index = open_index(shared)
    index.reload()
    store = open_store(str(DIR / f"kbes-{size}.sqlite"))
    store.catch_up()

    def kbes_tool(q):
        return call_tool(store, "search_knowledge_base", {"knowledge_base_id": kb, "query": q})

    variants = [("kbes today (tool, FTS5)", kbes_tool),
                ("tantivy, shared index + kb filter term", searcher_for(index, kb)),
                ("tantivy, index of its own (no filter)", searcher_for(index, None))]
    for qset in ("bench", "nl"):
        queries = meta["queries"][qset][:nq]
        lat = latencies_in_turns([(f, queries) for _, f in variants])
        print(f"\n## {size:,} articles, query set '{qset}' (e.g. {queries[0]!r})")
        print("| engine | p50 ms | p90 ms | p99 ms |\n|---|---:|---:|---:|")
        for (n, _), ls in zip(variants, lat, strict=True):
            print(f"| {n} | {percentile(ls, 50):.2f} | {percentile(ls, 90):.2f} | "
                  f"{percentile(ls, 99):.2f} |", flush=True)
    # today's catch-up of one save: the FTS5 views fold one published edit (the save itself,
    # to the log, is not counted)
    today = []
    for i in range(40):
        aid = store.add_article(kb, f"fresh {i}", f"zqtoday{i} text", publish=True)
        t0 = time.perf_counter()
        store.catch_up()
        today.append((time.perf_counter() - t0) * 1000)
        del aid
    print(f"\ntoday: catch-up of one save (FTS5 views, in the log's transaction order): p50 "
          f"{percentile(today, 50):.1f} ms, p90 {percentile(today, 90):.1f} ms")
    store.close()

    # catching one save up: delete the article's old entry, add the new one and the position
    # document, commit (fsync'd), as the projection would; a writer opened per catch-up
    commits, opened = [], []
    for i in range(40):
        t0 = time.perf_counter()
        w = index.writer(heap_size=15_000_000, num_threads=1)
        t1 = time.perf_counter()
        aid = rows[i][0]
        w.delete_documents_by_term("id", aid)
        w.delete_documents_by_term("id", "position")
        w.add_document(doc(aid, kb, rows[i][2], rows[i][3] + f" zqfresh{i}"))
        w.add_document(tantivy.Document(id="position", kb="", text="", title="",
                                        content=str(i + 1)))
        w.commit()
        t2 = time.perf_counter()
        del w
        opened.append((t1 - t0) * 1000)
        commits.append((t2 - t0) * 1000)
    print(f"\ncatch-up of one save (open writer + delete + add + position + commit): p50 "
          f"{percentile(commits, 50):.1f} ms, p90 {percentile(commits, 90):.1f} ms, "
          f"max {max(commits):.1f} ms (opening the writer: p50 {percentile(opened, 50):.1f} ms)")
    w = index.writer(heap_size=15_000_000, num_threads=1)
    kept = []
    for i in range(40):
        t0 = time.perf_counter()
        aid = rows[i][0]
        w.delete_documents_by_term("id", aid)
        w.delete_documents_by_term("id", "position")
        w.add_document(doc(aid, kb, rows[i][2], rows[i][3] + f" zqkept{i}"))
        w.add_document(tantivy.Document(id="position", kb="", text="", title="",
                                        content=str(i + 1)))
        w.commit()
        kept.append((time.perf_counter() - t0) * 1000)
    w.wait_merging_threads()
    del w
    print(f"catch-up of one save, one writer kept open: p50 {percentile(kept, 50):.1f} ms, "
          f"p90 {percentile(kept, 90):.1f} ms, max {max(kept):.1f} ms")
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f} MB")


def isolation(nq: int) -> None:
    """1 knowledge base of 1,000 among 100 (shared index, filter term) against alone."""
    rows = [(a["id"], a["title"], a["content"])
            for a in map(json.loads, open(DIR / "articles-100000.jsonl"))]
    meta = json.loads((DIR / "meta-100000.json").read_text())
    work = Path(os.environ.get("STUDY_DIR", "study")) / "kw"
    kbs = [f"kb-{k}" for k in range(100)]
    mixed = [(aid, kbs[i % 100], t, c) for i, (aid, t, c) in enumerate(rows)]
    build(work / "iso-100", mixed)
    alone = [r for r in mixed if r[1] == kbs[0]]
    build(work / "iso-1", alone)
    titles = [r[2] for r in alone]
    import random
    rng = random.Random(1)
    from kbes.sims.bench.dataset import Corpus
    corpus = Corpus(seed=1)
    queries = [corpus.query(rng.choice(titles)) for _ in range(nq)]
    a, b = open_index(work / "iso-1"), open_index(work / "iso-100")
    a.reload(), b.reload()
    lat = latencies_in_turns([(searcher_for(a, kbs[0]), queries),
                              (searcher_for(b, kbs[0]), queries)])
    p_alone, p_mixed = percentile(lat[0], 50), percentile(lat[1], 50)
    print(f"\nisolation: 1 kb of 1,000 alone p50 {p_alone:.3f} ms, among 100 p50 "
          f"{p_mixed:.3f} ms: {p_mixed / p_alone:.2f}x; p99 alone {percentile(lat[0], 99):.2f}"
          f" ms, among 100 {percentile(lat[1], 99):.2f} ms")
    del meta


if __name__ == "__main__":
    if sys.argv[1] == "isolation":
        isolation(int(sys.argv[2]) if len(sys.argv) > 2 else 500)
    else:
        main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 500)
