import sys, time, json, os, shutil
from pathlib import Path
import tantivy
from scale_keyword import open_index, doc, DIR
from kbes.sims.bench.timing import percentile
size = int(sys.argv[1])
src = Path(os.environ["STUDY_DIR"]) / "kw" / f"shared-{size}"
path = Path(os.environ["STUDY_DIR"]) / "kw" / f"parts-{size}"
if path.exists(): shutil.rmtree(path)
shutil.copytree(src, path)
index = open_index(path)
rows = [json.loads(l) for _, l in zip(range(200), open(DIR / f"articles-{size}.jsonl"))]
w = index.writer(heap_size=15_000_000, num_threads=1)
k = 0
for mode in ("add only", "add + delete old", "add + delete old + position doc", "empty commit", "add only"):
    ts = []
    for i in range(30):
        a = rows[k]; k += 1
        t = time.perf_counter()
        if mode != "empty commit":
            if "delete" in mode: w.delete_documents_by_term("id", a["id"])
            if "position" in mode: w.delete_documents_by_term("id", "position")
            w.add_document(doc(a["id"], "kb", a["title"], a["content"]))
            if "position" in mode:
                w.add_document(tantivy.Document(id="position", kb="", text="", title="", content=str(i)))
        w.commit()
        ts.append((time.perf_counter() - t) * 1000)
    print(f"{mode}: p50 {percentile(ts,50):.1f} p90 {percentile(ts,90):.1f} ms", flush=True)
w.wait_merging_threads()
print("segments", index.searcher().num_segments if (index.reload() or True) else 0)
