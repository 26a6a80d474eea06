"""SIGKILL during the embedding catch-up (`kbes import --search hybrid` in its own process):
what was committed stays, the next catch-up embeds only the rest, each text once, and an
article unpublished before the crash is never found by meaning."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from mcp_harness import KBES

from kbes import open_store
from kbes.projections.embedder import shared_model

pytestmark = pytest.mark.slow

ARTICLES = 96
WORDS = [f"w{n}" for n in range(400)]


def embedded(db: Path) -> int:
    with sqlite3.connect(db, timeout=30) as c:
        try:
            return int(c.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
        except sqlite3.OperationalError:  # not created yet
            return 0


def test_sigkill_during_embedding_resumes_without_embedding_twice(tmp_path: Path) -> None:
    db = tmp_path / "kbes.sqlite"
    store = open_store(db)
    kb = str(store.create_knowledge_base("Notes"))
    store.close()
    folder = tmp_path / "notes"
    folder.mkdir()
    rng = random.Random(7)
    for n in range(ARTICLES):
        text = " ".join(rng.choice(WORDS) for _ in range(180))
        (folder / f"{n:03}.md").write_text(f"# Note {n}\n\n{text}\n")
    # The bird article is embedded and found by meaning, then unpublished, before the crash.
    birds = tmp_path / "birds"
    birds.mkdir()
    (birds / "bird.md").write_text("# Parrots\n\nA parrot needs seeds, fruit and a big cage.\n")
    run = subprocess.run(
        [
            KBES,
            "import",
            str(birds),
            "--kb",
            kb,
            "--publish",
            "--db",
            str(db),
            "--search",
            "hybrid",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    writer = open_store(db, search="hybrid")
    [found] = writer.search(kb, "which bird eats seeds", 20)
    writer.unpublish_article(kb, found.article_id)
    assert writer.search(kb, "which bird eats seeds", 20) == []
    writer.close()
    bird = found.article_id
    run = subprocess.run(
        [KBES, "import", str(folder), "--kb", kb, "--publish", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr

    worker = subprocess.Popen(
        [KBES, "import", str(folder), "--kb", kb, "--db", str(db), "--search", "hybrid"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while embedded(db) <= 1:
        assert worker.poll() is None, "the import finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    before = embedded(db)
    assert 1 < before < ARTICLES + 1  # the bird's, and some of the notes'

    model = shared_model()
    calls = model.calls
    resumed = open_store(db, search="hybrid")
    assert resumed.embed_pending() == ARTICLES + 1 - before
    assert model.calls - calls == ARTICLES + 1 - before  # each text embedded once, in all
    with sqlite3.connect(db) as c:
        assert c.execute(
            "SELECT COUNT(*), COUNT(DISTINCT content_hash) FROM embeddings"
        ).fetchone() == (
            ARTICLES + 1,
            ARTICLES + 1,
        )
    assert bird not in [hit.article_id for hit in resumed.search(kb, "which bird eats seeds", 20)]
    assert resumed.embed_pending() == 0
