"""Hybrid search in one process, on real SQLite files and the real model (the `semantic`
extra, which the `test` extra installs): meaning finds what words miss, only published
articles of the asked knowledge base, a save is found at the next search, `kbes rebuild`
embeds nothing again, and the choice of mode is read once and refused clearly."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbes import KnowledgeBaseStore, call_tool, open_store
from kbes.cli import main
from kbes.projections import hybrid
from kbes.projections.embedder import SemanticUnavailable, shared_model
from kbes.store.results import Hit
from kbes.store.settings import BadSetting, Settings

CAT = ("Feline care", "Feed a cat twice a day, brush its fur weekly and take it to the vet.")
CAR = ("Car maintenance", "Change the engine oil every 10,000 km and check the tyre pressure.")
TAX = ("Filing returns", "Submit the yearly income statement to the revenue office by April.")
QUERY = "looking after my kitten"
"""Shares no word with CAT: the keyword index cannot find it, meaning can."""


def ids(hits: list[Hit]) -> list[str]:
    return [hit.article_id for hit in hits]


@pytest.fixture
def hybrid_store(db_path: Path) -> KnowledgeBaseStore:
    return open_store(db_path, search="hybrid")


def test_meaning_finds_what_words_miss(db_path: Path) -> None:
    words = open_store(db_path)
    kb = words.create_knowledge_base("Home")
    cat, car, _tax = (str(words.add_article(kb, *a, publish=True)) for a in (CAT, CAR, TAX))
    assert words.search(kb, QUERY, 10) == []
    meaning = open_store(db_path, search="hybrid")
    found = ids(meaning.search(kb, QUERY, 10))
    # The car and the tax return share no word with the query and are not near it by
    # meaning either: below the floor, they are left out rather than filling the limit.
    assert found == [cat]
    # An article only the vectors found carries the start of its content as its snippet.
    assert meaning.search(kb, QUERY, 1)[0].snippet == hybrid.lead(CAT[1])
    # Words still count: the article the keywords rank first stays in the fused top.
    assert ids(meaning.search(kb, "tyre pressure", 1)) == [car]


def test_only_published_articles_of_the_knowledge_base(
    db_path: Path, hybrid_store: KnowledgeBaseStore
) -> None:
    store = hybrid_store
    kb = str(store.create_knowledge_base("Home"))
    other = str(store.create_knowledge_base("Other"))
    cat = str(store.add_article(kb, *CAT, publish=True))
    draft = str(store.add_article(kb, "Kitten diet", "What a young cat eats."))
    elsewhere = str(store.add_article(other, "Kitten toys", "Toys for a young cat.", publish=True))
    store.add_article(kb, *CAR, publish=True)
    assert cat in ids(store.search(kb, QUERY, 10))
    assert draft not in ids(store.search(kb, QUERY, 10))
    assert elsewhere not in ids(store.search(kb, QUERY, 10))
    assert ids(store.search(other, QUERY, 10)) == [elsewhere]

    store.unpublish_article(kb, cat)
    assert cat not in ids(store.search(kb, QUERY, 10))
    # Another process's store, which loads the vectors afresh, never sees it either.
    fresh = open_store(db_path, search="hybrid")
    assert cat not in ids(fresh.search(kb, QUERY, 10))
    store.publish_article(kb, cat)
    assert ids(fresh.search(kb, QUERY, 1)) == [cat]
    assert ids(store.search(kb, QUERY, 1)) == [cat]


def test_a_save_is_found_by_meaning_at_the_next_search(db_path: Path) -> None:
    searcher = open_store(db_path, search="hybrid")
    writer = open_store(db_path)  # as `kbes article save` in another process
    kb = str(writer.create_knowledge_base("Home"))
    car = str(writer.add_article(kb, *CAR, publish=True))
    writer.add_article(kb, *TAX, publish=True)
    assert ids(searcher.search(kb, QUERY, 1)) != [car]
    writer.save_article(kb, car, title="Feline care", content=CAT[1])
    assert ids(searcher.search(kb, QUERY, 1)) == [car]


def test_rebuild_reuses_every_embedding(db_path: Path) -> None:
    store = open_store(db_path, search="hybrid")
    kb = str(store.create_knowledge_base("Home"))
    for article in (CAT, CAR, TAX):
        store.add_article(kb, *article, publish=True)
    before = ids(store.search(kb, QUERY, 10))
    store.close()
    model = shared_model()
    calls = model.calls
    result = CliRunner().invoke(main, ["rebuild", "--db", str(db_path)])
    assert result.exit_code == 0, result.output
    again = open_store(db_path, search="hybrid")
    assert ids(again.search(kb, QUERY, 10)) == before
    assert again.embed_pending() == 0
    assert model.calls == calls + 1  # the query alone: no article embedded again
    with sqlite3.connect(db_path) as c:
        assert c.execute("SELECT COUNT(*) FROM embeddings").fetchone() == (3,)


def test_import_shows_its_embedding_progress(db_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for n, (title, content) in enumerate((CAT, CAR, TAX)):
        (folder / f"{n}.md").write_text(f"# {title}\n\n{content}\n")
    runner = CliRunner()
    made = runner.invoke(main, ["kb", "create", "Home", "--db", str(db_path), "--json"])
    assert made.exit_code == 0, made.output
    kb = json.loads(made.stdout)["knowledge_base_id"]
    args = ["import", str(folder), "--kb", kb, "--publish", "--db", str(db_path)]
    done = runner.invoke(main, [*args, "--search", "hybrid"])
    assert done.exit_code == 0, done.output
    assert "embedding articles" in done.stderr and "3 articles embedded" in done.stderr
    assert open_store(db_path, search="hybrid").embed_pending() == 0
    # Keyword import embeds nothing and says nothing of it.
    (folder / "3.md").write_text("# Kitten diet\n\nWhat a young cat eats.\n")
    plain = runner.invoke(main, args)
    assert plain.exit_code == 0 and "embedding" not in plain.stderr


def test_the_tool_takes_the_mode(db_path: Path) -> None:
    store = open_store(db_path)
    kb = str(store.create_knowledge_base("Home"))
    cat = str(store.add_article(kb, *CAT, publish=True))
    runner = CliRunner()
    args = ["tool", "search_knowledge_base", f"knowledge_base_id={kb}", f"query={QUERY}"]
    words = runner.invoke(main, [*args, "--db", str(db_path)])
    assert words.exit_code == 0 and json.loads(words.stdout)["hits"] == []
    meaning = runner.invoke(main, [*args, "--db", str(db_path), "--search", "hybrid"])
    assert meaning.exit_code == 0, meaning.output
    assert [h["article_id"] for h in json.loads(meaning.stdout)["hits"]] == [cat]
    answer = call_tool(
        open_store(db_path, search="hybrid"),
        "search_knowledge_base",
        {"knowledge_base_id": kb, "query": QUERY},
    )
    assert [h.article_id for h in answer.hits] == [cat]


def test_keyword_mode_builds_no_vectors(db_path: Path) -> None:
    store = open_store(db_path)
    kb = str(store.create_knowledge_base("Home"))
    store.add_article(kb, *CAT, publish=True)
    assert ids(store.search(kb, "cat", 10))
    with sqlite3.connect(db_path) as c:
        names = {r[0] for r in c.execute("SELECT name FROM sqlite_master")}
    assert "embeddings" not in names and "vector_articles" not in names


def test_a_bad_mode_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BadSetting) as caught:
        Settings.read({"KBES_SEARCH": "fuzzy"})
    assert caught.value.variable == "KBES_SEARCH" and "keyword or hybrid" in str(caught.value)
    assert Settings.read({"KBES_SEARCH": "Hybrid"}).search == "hybrid"
    assert Settings.read({}).search == "keyword"
    # The flag wins over the variable, which is then not read.
    assert Settings.read({"KBES_SEARCH": "fuzzy"}, search="keyword").search == "keyword"
    assert Settings().but(search="HYBRID").search == "hybrid"
    with pytest.raises(BadSetting):
        Settings(search="semantic")


def test_hybrid_without_the_extra_names_the_fix(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_store(db_path).create_knowledge_base("Home")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "onnxruntime" else real(name, *a),
    )
    with pytest.raises(SemanticUnavailable) as caught:
        open_store(db_path, search="hybrid")
    assert caught.value.missing == ("onnxruntime",)
    result = CliRunner().invoke(
        main, ["tool", "search_knowledge_base", "--db", str(db_path), "--search", "hybrid"]
    )
    assert result.exit_code == 2
    assert "pip install 'kbes[semantic]'" in result.stderr and "onnxruntime" in result.stderr
    monkeypatch.setenv("KBES_SEARCH", "hybrid")
    listed = CliRunner().invoke(main, ["kb", "list", "--db", str(db_path)])
    assert listed.exit_code == 1 and "pip install 'kbes[semantic]'" in listed.stderr


def test_reciprocal_rank_fusion() -> None:
    # b: 1/62 + 1/61 beats a: 1/61 alone; d (1/62) beats c (1/63).
    assert hybrid.fuse([["a", "b", "c"], ["b", "d"]]) == ["b", "a", "d", "c"]
    # Ties (1/61 each, then 1/62 each) go to the earlier list.
    assert hybrid.fuse([["a", "c"], ["b", "d"]]) == ["a", "b", "c", "d"]
    assert hybrid.fuse([[], ["x"]]) == ["x"]
    assert hybrid.lead("one two three", 2) == "one two…"


def test_above_the_floor_only_keyword_hits_may_be_dissimilar() -> None:
    similarity = {"a": 0.9, "b": 0.1, "c": 0.1}
    assert hybrid.above_floor(["a", "b", "c"], {"c"}, similarity, 0.5) == ["a", "c"]
    assert hybrid.above_floor(["x"], set(), {}, 0.5) == []


FILLER = [
    (f"Ledger entry {n}", f"Post the invoice number {n} to the quarterly ledger.") for n in range(8)
]


def test_by_words_alone_until_the_knowledge_base_is_embedded(db_path: Path) -> None:
    words = open_store(db_path)  # a bulk load without --search hybrid
    kb = str(words.create_knowledge_base("Home"))
    words.add_articles(kb, [*FILLER, CAT, CAR, TAX], publish=True)
    cat = ids(words.search(kb, "feline", 1))[0]
    meaning = open_store(db_path, search="hybrid")
    meaning.hybrid.background = True  # as under `kbes serve`: searches leave the backlog
    for query in ("ledger invoice", "tyre pressure", QUERY):
        assert meaning.search(kb, query, 10) == words.search(kb, query, 10)
    assert meaning.embedding_coverage(kb) == (0, 11)
    meaning.embed_pending()
    assert meaning.embedding_coverage(kb) == (11, 11)
    assert ids(meaning.search(kb, QUERY, 10)) == [cat]
    # Without a background thread, each search embeds EMBED_PER_SEARCH waiting articles and
    # answers by words until none waits.
    other = str(words.create_knowledge_base("Other"))
    more = [
        (f"Payroll run {n}", f"Pay the staff of branch {n} on the last Friday.") for n in range(8)
    ]
    words.add_articles(other, [*more, ("Cat care", CAT[1])], publish=True)
    alone = open_store(db_path, search="hybrid")
    answers = [alone.search(other, QUERY, 10) for _ in range(3)]
    assert answers[:2] == [[], []]
    assert [hit.title for hit in answers[2]] == ["Cat care"]


def test_random_letters_find_nothing(db_path: Path, hybrid_store: KnowledgeBaseStore) -> None:
    store = hybrid_store
    kb = str(store.create_knowledge_base("Home"))
    store.add_articles(kb, [*FILLER, CAT, CAR, TAX], publish=True)
    for query in ("qzvbrt xkcdjw plomfrq", "wmbfhtqs", "ujrvnk zzpqowe"):
        assert store.search(kb, query, 10) == []
    # The floor leaves keyword hits alone, however far their meaning.
    by_words = ids(open_store(db_path).search(kb, "quarterly ledger", 20))
    assert len(by_words) == 8 and set(by_words) <= set(
        ids(store.search(kb, "quarterly ledger", 20))
    )
