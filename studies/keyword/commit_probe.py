import sys, time, json, os, shutil
from pathlib import Path
import tantivy
sys.path.insert(0, ".")
from scale_keyword import open_index, doc, DIR
from kbes.sims.bench.timing import percentile
size = int(sys.argv[1]); where = sys.argv[2]
src = Path(os.environ["STUDY_DIR"]) / "kw" / f"shared-{size}"
path = Path(where) / f"probe-{size}"
if path.exists(): shutil.rmtree(path)
shutil.copytree(src, path)
index = open_index(path)
rows = [json.loads(l) for _, l in zip(range(50), open(DIR / f"articles-{size}.jsonl"))]
def one(w, i):
    a = rows[i]
    w.delete_documents_by_term("id", a["id"]); w.delete_documents_by_term("id", "position")
    w.add_document(doc(a["id"], "kb", a["title"], a["content"] + f" zq{i}"))
    w.add_document(tantivy.Document(id="position", kb="", text="", title="", content=str(i)))
    w.commit()
for mode in ("persistent", "per-save"):
    ts = []
    w = index.writer(heap_size=15_000_000, num_threads=1) if mode == "persistent" else None
    for i in range(40):
        t = time.perf_counter()
        if mode == "per-save":
            w = index.writer(heap_size=15_000_000, num_threads=1)
        one(w, i)
        if mode == "per-save":
            w.wait_merging_threads(); del w; w = None
        ts.append((time.perf_counter() - t) * 1000)
    if w is not None:
        w.wait_merging_threads(); del w
    print(f"{where} {size} {mode}: p50 {percentile(ts,50):.1f} ms p90 {percentile(ts,90):.1f} max {max(ts):.1f}", flush=True)
shutil.rmtree(path)
