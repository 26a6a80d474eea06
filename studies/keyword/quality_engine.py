"""The keyword engine as built (kbes.projections.keyword_schema, branch keyword-wip) on the
man-page collection, beside kbes today's numbers from quality_keyword.py."""
import json, os, sys
from pathlib import Path
import tantivy
import qlib
from kbes.projections import keyword_schema as K
DATA = Path(os.environ.get("STUDY_DIR", "study")) / "data" / "man"
rows = [json.loads(l) for l in open(DATA / "docs.jsonl")]
qs = json.loads((DATA / "queries.json").read_text())
qrels = {q: {q: 1} for q in qs}
index = K.register(tantivy.Index(K.SCHEMA))
w = index.writer(100_000_000, 1)
for i, d in enumerate(rows):
    w.add_document(K.document(d["id"], d["title"], d["content"], "", i))
w.commit(); w.wait_merging_threads(); index.reload(); s = index.searcher()
for form in ("desc", "q"):
    run = {q: [h.article_id for h in K.search(s, v[form], 100)] for q, v in qs.items()}
    m = qlib.evaluate(run, qrels)
    print(f"{form}: keyword engine (keyword_schema) nDCG@10 {m['nDCG@10']:.3f} hit@10 {m['R@10']:.3f} MRR@10 {m['MRR@10']:.3f}")
    (Path(os.environ["STUDY_DIR"]) / "results" / f"engine_{form}.json").write_text(json.dumps(run))
