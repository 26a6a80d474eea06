"""The HNSW graph of hybrid search (projections/vector_graph.py) on real SQLite files and real
usearch graphs, with the threshold set low and the bench's clustered synthetic embedder (the
graph's behaviour is the subject, not the model's): it answers as exact search does, a second
process reuses the saved graph and brings it forward, an unpublished article never comes back
even from a saved graph that still holds it, and a SIGKILL while saving leaves the old file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbes import KnowledgeBaseStore, open_store
from kbes.projections.embedder import DIMENSIONS, document_text
from kbes.projections.vector_graph import GraphFileError, VectorGraph
from kbes.sims.bench.hybrid_speed import SyntheticEmbedder
from kbes.store.settings import BadSetting, Settings

THRESHOLD = 50
ARTICLES = 200


def hybrid(db: Path, threshold: int = THRESHOLD) -> KnowledgeBaseStore:
    return open_store(
        db,
        search="hybrid",
        embedder=SyntheticEmbedder(),
        settings=Settings(hnsw_threshold=threshold),
    )


def filled(db: Path, articles: int = ARTICLES) -> tuple[str, list[tuple[str, str, str]]]:
    """A knowledge base of `articles` published articles: its id and (id, title, content)."""
    writer = open_store(db)
    kb = str(writer.create_knowledge_base("Notes"))
    rows = []
    for n in range(articles):
        title, content = f"Note {n}", f"Body of note {n} about topic {n % 17}."
        rows.append((str(writer.add_article(kb, title, content, publish=True)), title, content))
    writer.close()
    return kb, rows


def graph_file(db: Path) -> Path:
    [path] = (db.parent / f"{db.name}.vectors").glob("*.usearch")
    return path


def vector_half(store: Any, kb: str, text: str) -> tuple[list[str], list[str]]:
    """(graph, exact) article ids for `text`, after the search that brings both current."""
    store.search(kb, text, 10)
    embedder, index = store.hybrid._vectors()
    query = embedder.embed([text])[0]
    base = index.bases[kb]
    graph = store.hybrid._graphs.graphs[kb]
    return [a for a, _ in graph.search(query, 10, base)], [a for a, _ in base.search(query, 10)]


def test_the_graph_answers_as_exact_search_does(db_path: Path) -> None:
    kb, rows = filled(db_path)
    store = hybrid(db_path)
    assert store.embed_pending() == ARTICLES
    assert graph_file(db_path).stat().st_size > 0  # filled and saved by the embedding
    # The graph is approximate and int8: near neighbours it may order differently from exact
    # search, but an article's own text finds it near the top, and top hits mostly agree.
    agree = 0
    for article_id, title, content in rows[:40]:
        near, exact = vector_half(store, kb, document_text(title, content))
        assert exact[0] == article_id
        assert article_id in near[:3]
        agree += near[0] == article_id
    assert agree >= 36
    # The hybrid answer itself finds each article by its own text through the graph.
    article_id, title, content = rows[3]
    assert store.search(kb, document_text(title, content), 5)[0].article_id == article_id
    store.close()


def test_below_the_threshold_no_graph_is_made(db_path: Path) -> None:
    kb, rows = filled(db_path, 20)
    store = hybrid(db_path, threshold=1_000)
    store.embed_pending()
    article_id, title, content = rows[0]
    assert store.search(kb, document_text(title, content), 5)[0].article_id == article_id
    assert store.hybrid._graphs is not None and not store.hybrid._graphs.graphs
    assert not (db_path.parent / f"{db_path.name}.vectors").exists()
    store.close()


SECOND_PROCESS = """
import json, sys
from kbes import open_store
from kbes.projections.embedder import document_text
from kbes.sims.bench.hybrid_speed import SyntheticEmbedder
from kbes.store.settings import Settings

db, kb, title, content = sys.argv[1:]
store = open_store(db, search="hybrid", embedder=SyntheticEmbedder(),
                   settings=Settings(hnsw_threshold=50))
hit = store.search(kb, document_text(title, content), 5)[0]
graphs = store.hybrid._graphs
graph = graphs.graphs.get(kb)
print(json.dumps({
    "top": hit.article_id,
    "graph": graph is not None,
    "filling": kb in graphs.building,
    "size": None if graph is None else len(graph),
    "breadth": None if graph is None else graph.index.expansion_search,
}))
"""


def second_process(db: Path, kb: str, title: str, content: str) -> Any:
    """What SECOND_PROCESS reports of its first hybrid search for `title` and `content`."""
    run = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, str(db), kb, title, content],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(run.stdout)


@pytest.mark.slow
def test_a_second_process_reuses_the_saved_graph_and_brings_it_forward(
    db_path: Path,
) -> None:
    kb, _ = filled(db_path)
    hybrid(db_path).embed_pending()
    saved = graph_file(db_path).read_bytes()
    writer = open_store(db_path)  # saves after the graph was saved, as another process
    title, content = "Parrot cages", "A parrot needs seeds, fruit and a big cage."
    new = str(writer.add_article(kb, title, content, publish=True))
    writer.close()
    hybrid(db_path).embed_pending()  # embeds the new text, and saves the graph forward
    forward = graph_file(db_path).read_bytes()
    assert forward != saved
    # A graph at its first search means it was read from the file: filling one takes a thread.
    loaded = {"top": new, "graph": True, "filling": False, "size": ARTICLES + 1, "breadth": 256}
    assert second_process(db_path, kb, title, content) == loaded
    # Brought forward in the second process from a file that predates a save.
    graph_file(db_path).write_bytes(saved)
    assert second_process(db_path, kb, title, content) == loaded


def test_an_unpublished_article_never_comes_back(db_path: Path) -> None:
    kb, rows = filled(db_path)
    store = hybrid(db_path)
    store.embed_pending()  # the saved graph holds every article
    gone, title, content = rows[5]
    text = document_text(title, content)
    assert store.search(kb, text, 5)[0].article_id == gone
    writer = open_store(db_path)
    writer.unpublish_article(kb, gone)
    writer.close()
    assert gone not in [hit.article_id for hit in store.search(kb, text, 50)]
    near, exact = vector_half(store, kb, text)
    assert gone not in near and gone not in exact
    # A fresh process reads the saved graph, which still holds the article's vector.
    assert gone in VectorGraph.load(graph_file(db_path), SyntheticEmbedder.name, kb).keys
    fresh = hybrid(db_path)
    assert gone not in [hit.article_id for hit in fresh.search(kb, text, 50)]
    near, _ = vector_half(fresh, kb, text)
    assert gone not in near
    store.close()
    fresh.close()


SAVER = """
import sys
import numpy as np
from pathlib import Path
from kbes.projections.vector_graph import VectorGraph

path, count = Path(sys.argv[1]), int(sys.argv[2])
graph = VectorGraph.load(path, "m", "kb")
rng = np.random.default_rng(count)
extra = rng.standard_normal((count, graph.index.ndim)).astype(np.float32)
graph.index.add(np.arange(graph.next_key, graph.next_key + count, dtype=np.uint64), extra)
for n in range(count):
    key = graph.next_key + n
    graph.keys[f"x{key}"] = key
    graph.articles[key] = f"x{key}"
    graph.hashes[f"x{key}"] = bytes(32)
graph.next_key += count
print("saving", flush=True)
while True:
    graph.save(path)
"""


@pytest.mark.slow
def test_sigkill_while_saving_leaves_a_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "kb.m.usearch"
    graph = VectorGraph("m", "kb")
    rng = np.random.default_rng(1)
    count = 5_000
    graph.index.add(
        np.arange(count, dtype=np.uint64),
        rng.standard_normal((count, DIMENSIONS)).astype(np.float32),
    )
    for key in range(count):
        graph.keys[f"a{key}"] = key
        graph.articles[key] = f"a{key}"
        graph.hashes[f"a{key}"] = bytes(32)
    graph.next_key = count
    graph.save(path)
    sizes = {count}
    for attempt in range(4):
        saver = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(path), "2000"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert saver.stdout is not None and saver.stdout.readline() == "saving\n"
        time.sleep(0.05 + 0.1 * attempt)
        os.kill(saver.pid, signal.SIGKILL)
        saver.wait()
        loaded = VectorGraph.load(path, "m", "kb")
        assert len(loaded) == len(loaded.index) and len(loaded) in {*sizes, max(sizes) + 2000}
        sizes.add(len(loaded))
        query = rng.standard_normal(DIMENSIONS).astype(np.float32)
        assert len(loaded.index.search(query, 10).keys) == 10
    # A killed save leaves at most its temporary file, never a torn `path`.
    assert all(p.suffix == ".tmp" for p in tmp_path.iterdir() if p != path)


def test_a_damaged_file_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "kb.m.usearch"
    path.write_bytes(b"KBES-HNSW-1\n" + b"\x05" * 20)
    with pytest.raises(GraphFileError, match=str(path)):
        VectorGraph.load(path, "m", "kb")


def test_the_threshold_is_read_and_refused_clearly() -> None:
    assert Settings.read({"KBES_HNSW_THRESHOLD": "500"}).hnsw_threshold == 500
    assert Settings.read({}).hnsw_threshold == 20_000
    with pytest.raises(BadSetting, match="KBES_HNSW_THRESHOLD='none' must be a whole number"):
        Settings.read({"KBES_HNSW_THRESHOLD": "none"})
