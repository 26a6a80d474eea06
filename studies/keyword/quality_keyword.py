"""Keyword engines on the man-page collection (build_manpages.py): kbes today (FTS5, the tool
and the API at depth 100) against the tantivy designs the keyword engine could take.
nDCG@10 with a paired bootstrap interval against kbes's API run. Run: python quality_keyword.py"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import qlib
import tantivy
from systems import DEPTH, STOP, kbes_runs

QUESTION = {"which", "how", "what", "why", "where", "when", "who", "i", "do",
            "does", "can"}
DATA = Path(os.environ.get("STUDY_DIR", "study")) / "data" / "man"


def tantivy_runs(docs, queries):
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("n", stored=True, indexed=True, fast=True)
    sb.add_text_field("kb", stored=False, tokenizer_name="raw")
    for f in ("once", "twice"):
        sb.add_text_field(f, stored=False, tokenizer_name="en_stem")
    index = tantivy.Index(sb.build())
    w = index.writer(heap_size=50_000_000, num_threads=1)
    for i, (_, t, x) in enumerate(docs):
        w.add_document(tantivy.Document(n=i, kb="k", once=f"{t}\n{x}", twice=f"{t}\n{t}\n{x}"))
    w.commit()
    w.wait_merging_threads()
    index.reload()
    s = index.searcher()
    kbq = tantivy.Query.term_query(index.schema, "kb", "k")
    runs = {}
    for field in ("once", "twice"):
        for stop_name, stop in (("no stop list", set()), ("query stop list", STOP | QUESTION)):
            run = {}
            for q, text in queries.items():
                kept = [w for w in dict.fromkeys(re.findall(r"\w+", text.lower()))
                        if w not in stop][:32]
                if not kept:
                    run[q] = []
                    continue
                terms = index.parse_query(" ".join(kept), [field])
                query = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Must, kbq), (tantivy.Occur.Must, terms)])
                run[q] = [docs[s.doc(a)["n"][0]][0] for _, a in s.search(query, DEPTH).hits]
            runs[f"tantivy, one field, title {field}, {stop_name}, kb filter term"] = run
    return runs


def main():
    rows = [json.loads(line) for line in open(DATA / "docs.jsonl")]
    docs = [(d["id"], d["title"], d["content"]) for d in rows]
    qs = json.loads((DATA / "queries.json").read_text())
    qrels = {q: {q: 1} for q in qs}
    for form in ("desc", "q"):
        queries = {q: v[form] for q, v in qs.items()}
        tool_run, api_run = kbes_runs(docs, queries)
        runs = {"kbes today: search_knowledge_base tool (top 10)": tool_run,
                "kbes today: store.search (FTS5, depth 100)": api_run}
        runs.update(tantivy_runs(docs, queries))
        base = qlib.per_query_ndcg(api_run, qrels)
        print(f"\n## man pages ({len(docs)} articles, {len(queries)} queries) as '{form}' "
              f"(e.g. {queries[sorted(queries)[0]]!r})")
        print("| system | nDCG@10 | hit@10 | MRR@10 | ΔnDCG@10 vs kbes [95% CI] |")
        print("|---|---:|---:|---:|---|")
        for name, run in runs.items():
            m = qlib.evaluate(run, qrels)
            d, lo, hi = qlib.paired_bootstrap(qlib.per_query_ndcg(run, qrels), base)
            print(f"| {name} | {m['nDCG@10']:.3f} | {m['R@10']:.3f} | {m['MRR@10']:.3f} | "
                  f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}] |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
