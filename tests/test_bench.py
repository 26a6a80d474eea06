"""`kbes bench`: the quick run produces every row with its figures (never a timing assertion),
and the plain-sqlite3 baseline it divides by is a correct implementation of the tools."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from views_dump import dump

from kbes import KnowledgeBaseStore, format_timestamp, open_store
from kbes.cli import main
from kbes.domain.article import EVENT_TYPES
from kbes.projections import fold
from kbes.projections.catch_up import CatchUp
from kbes.sims.baseline import Baseline, BaselineError, normalise
from kbes.sims.bench.config import Config
from kbes.sims.bench.dataset import Corpus
from kbes.sims.bench.freshness import measure_freshness
from kbes.sims.bench.mcp_search import measure_mcp_search
from kbes.sims.bench.results import Report
from kbes.sims.bench.runner import GROUPS
from kbes.sims.bench.tenants import measure_tenants
from kbes.store.sqlite import FeedApplicationRecorder
from kbes.tools import TOOLS
from kbes.tools.wire import PollRequest, ResourceEvent, SearchRequest, SearchResult

ROWS_WITH_BASELINE = {"1a", "1b", "1c", "3a", "3b", "3c", "4a", "4b"}


@pytest.mark.slow
def test_quick_bench_prints_and_writes_every_row(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = CliRunner().invoke(main, ["bench", "--quick", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["quick"] is True
    rows = {row["key"]: row for row in data["rows"]}
    expected = {"1a", "1b", "1c", "3a", "3b", "3c", "4a", "4b", "4c", "4d", "5a", "5b"}
    expected |= {"6a", "6b", "7", "8", "9a", "9b", "9c", "9d", "10a", "10b", "10c", "10d"}
    expected |= {"11a", "11b", "11c", "11d", "11e", "12a", "12c", "12e"}
    expected |= {f"13-{shape}-p{q}" for shape in ("keyword", "question") for q in (50, 99)}
    expected |= {"14-first-search-p50", "14-first-search-p99", "14-threads", "14-maps"}
    expected |= {"14-files", "14-rss", "14-idle-cpu", "15-after-save-p50", "15-at-once-p50"}
    expected |= {"15-background-cpu"}
    expected |= {
        f"2-{tool}-p{q}-{size}"
        for tool in ("read", "search", "question")
        for q in (50, 99)
        for size in (400, 2000)
    }
    assert expected <= set(rows)
    for key, row in rows.items():
        # An idle server may spend not one clock tick (/proc counts hundredths of a second) in
        # the seconds the row reads: zero is an honest figure there, and only there.
        if key == "14-idle-cpu":
            assert row["kbes"]["median"] >= 0, key
        else:
            assert row["kbes"]["median"] > 0, key
        assert row["kbes"]["min"] <= row["kbes"]["median"] <= row["kbes"]["max"], key
        if key in ROWS_WITH_BASELINE or key.startswith("2-"):
            assert row["baseline"]["median"] > 0, key
            assert row["ratio"] == pytest.approx(row["kbes"]["median"] / row["baseline"]["median"])
    # Row 7 times what an agent waits for, the first tools/call answer, and has no target.
    assert "first tools/call answer" in rows["7"]["measurement"]
    assert rows["7"]["target"] == "—"
    # Row 10c is each run's ratio of the same knowledge base's search p50, shared over alone.
    alone, shared = rows["10a"]["kbes"]["runs"], rows["10b"]["kbes"]["runs"]
    ratios = [b / a for a, b in zip(alone, shared, strict=True)]
    assert rows["10c"]["kbes"]["runs"] == pytest.approx(ratios)
    assert rows["10c"]["target"] == "<= 1.3x" and rows["10c"]["met"] is None
    # Row 11's hybrid rows carry the gain over keyword and its paired-bootstrap interval.
    assert "paired bootstrap 95%" in rows["11b"]["note"] and rows["11b"]["met"] is None
    assert rows["11a"]["kbes"]["max"] <= 1 and rows["11b"]["target"] == ">= keyword + 0.04"
    # Row 13's p99 rows carry the issue's MCP target, judged on the full run only.
    assert (
        rows["13-question-p99"]["target"] == "<= 25 ms" and rows["13-question-p99"]["met"] is None
    )
    for key in (
        "1a",
        "2-read-p50-400",
        "2-question-p99-2000",
        "2-catch-up-p50-2000",
        "3b",
        "6a",
        "7",
        "8",
        "10c",
    ):
        assert key in result.output
    for key in ("11d", "12a", "13-keyword-p50"):
        assert key in result.output
    assert "ratio" in result.output and "target" in result.output


def test_bench_rejects_unknown_rows() -> None:
    result = CliRunner().invoke(main, ["bench", "--rows", "16"])
    assert result.exit_code != 0
    assert "unknown row" in result.output


def test_bench_help_lists_every_row() -> None:
    help_text = " ".join(CliRunner().invoke(main, ["bench", "--help"]).output.split())
    for group in GROUPS:  # "(1 edits, 2 read/search, ..." names every row group
        assert re.search(rf"(\(|, ){group} [a-z]", help_text), group
    assert "question-shaped" in help_text and "13 search over MCP" in help_text
    assert "14 many knowledge bases on one server" in help_text


def test_questions_are_the_search_studys_shape_and_seeded() -> None:
    """Two title words and three of the 20 commonest words after a question opener, the same
    for the same seed, and drawn without moving the corpus's own sequence."""
    corpus = Corpus()
    titles = [title for title, _ in corpus.drafts(50)]
    after = Corpus()
    after.drafts(50)
    asked = [corpus.question(title, random.Random(i)) for i, title in enumerate(titles)]
    assert asked == [after.question(title, random.Random(i)) for i, title in enumerate(titles)]
    assert corpus.drafts(3) == after.drafts(3)  # asking did not move the corpus's generator
    common = set(corpus.words[:20])
    for title, question in zip(titles, asked, strict=True):
        opener = next(o for o in Corpus.QUESTION_OPENERS if question.startswith(o + " "))
        assert question.endswith("?")
        words = question[len(opener) : -1].split()
        assert len(words) == 5
        assert sum(w in common for w in words) == 3
        assert sum(w in title.lower().split() for w in words) == 2


@pytest.mark.slow
def test_mcp_search_row_times_a_real_server(tmp_path: Path) -> None:
    """Row 13 on a small store: a real `kbes serve` answers every search with hits (the row
    refuses an error or an empty answer), and both shapes get p50 and p99 rows of each run."""
    config = dataclasses.replace(Config.quick_run(), mcp_articles=300, mcp_samples=25)
    report = Report(config)
    measure_mcp_search(report, tmp_path, lambda _: None)
    rows = {row.key: row for row in report.rows}
    assert set(rows) == {f"13-{s}-p{q}" for s in ("keyword", "question") for q in (50, 99)}
    for row in rows.values():
        assert row.kbes is not None and len(row.kbes.runs) == config.mcp_repeats
        assert 0 < row.kbes.min <= row.kbes.median <= row.kbes.max
    for shape in ("keyword", "question"):
        p50, p99 = (rows[f"13-{shape}-p{q}"].kbes for q in (50, 99))
        assert p50 is not None and p99 is not None
        assert all(a <= b for a, b in zip(p50.runs, p99.runs, strict=True)), shape
    assert rows["13-question-p99"].target == "<= 25 ms"


@pytest.mark.slow
def test_tenants_row_reads_a_real_server_after_100_and_after_all(tmp_path: Path) -> None:
    """Row 14 on 150 knowledge bases: a real `kbes serve` finds each one's article (the row
    refuses a miss), and the holdings rows compare after all with after 100."""
    config = dataclasses.replace(Config.quick_run(), tenant_kbs=150, tenant_repeats=1)
    report = Report(config)
    measure_tenants(report, tmp_path, lambda _: None)
    rows = {row.key: row for row in report.rows}
    assert {"14-first-search-p50", "14-threads", "14-maps", "14-files", "14-rss"} <= set(rows)
    for key in ("14-threads", "14-maps", "14-files", "14-rss", "14-idle-cpu"):
        row = rows[key]
        assert row.kbes is not None and row.baseline is not None, key
        assert "after 100" in row.measurement
    threads = rows["14-threads"]
    assert threads.kbes is not None and 1 <= threads.kbes.median < 64
    assert rows["14-first-search-p50"].target == "<= 10 ms"


@pytest.mark.slow
def test_freshness_row_finds_each_save_through_a_real_server(tmp_path: Path) -> None:
    """Row 15 on a small knowledge base: every search after another process's save found the
    saved article (the row refuses a miss), and the background's CPU per save is measured."""
    config = dataclasses.replace(
        Config.quick_run(), freshness_articles=300, freshness_samples=5, freshness_repeats=1
    )
    report = Report(config)
    measure_freshness(report, tmp_path, lambda _: None)
    rows = {row.key: row for row in report.rows}
    assert set(rows) == {"15-after-save-p50", "15-at-once-p50", "15-background-cpu"}
    after = rows["15-after-save-p50"]
    assert after.kbes is not None and after.baseline is not None
    assert after.target == "<= 1.5x caught up"
    cpu = rows["15-background-cpu"].kbes
    assert cpu is not None and cpu.median >= 0


@pytest.fixture
def baseline(tmp_path: Path) -> Iterator[Baseline]:
    b = Baseline(str(tmp_path / "baseline.sqlite"))
    yield b
    b.close()


def test_baseline_is_durable_wal(baseline: Baseline) -> None:
    assert baseline.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert baseline.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_baseline_edit_is_compare_and_swap_with_idempotency(baseline: Baseline) -> None:
    kb = baseline.create_knowledge_base()
    [article] = baseline.add_articles(kb, [("Reset a password", "Open settings.")])
    v1 = baseline.read(kb, article)["updated_at"]

    first = baseline.edit(kb, article, "Open the account page.", v1, "key-1")
    assert first.replay is False and first.updated_at > v1
    assert baseline.read(kb, article)["content"] == "Open the account page."

    # The same request again with the same key: the first result, nothing written twice.
    again = baseline.edit(kb, article, "Open the account page.", v1, "key-1")
    assert again.replay is True and again.updated_at == first.updated_at
    # The same key for a different request: refused.
    with pytest.raises(BaselineError) as reused:
        baseline.edit(kb, article, "Something else.", v1, "key-1")
    assert reused.value.code == "idempotency_key_reused"
    # A stale version: refused with the current one, and no key consumed.
    with pytest.raises(BaselineError) as conflict:
        baseline.edit(kb, article, "Stale.", v1, "key-2")
    assert conflict.value.code == "version_conflict"
    assert conflict.value.details["current_version"] == first.updated_at
    # The version compares as an instant, whatever the offset it is written with.
    plus_zero = first.updated_at.replace("Z", "+00:00")
    assert normalise(plus_zero) == first.updated_at
    second = baseline.edit(kb, article, "Fresh.", plus_zero, "key-2")
    assert second.replay is False and second.updated_at > first.updated_at
    # A retitle is its own event type; the feed has every accepted change once.
    baseline.edit(kb, article, "Fresh.", second.updated_at, "key-3", title="Reset your password")
    page = baseline.poll(kb)
    assert [e["type"] for e in page["events"]] == ["published", "saved", "saved", "retitled"]
    assert page["has_more"] is False


def test_baseline_search_read_poll_and_unpublish(baseline: Baseline) -> None:
    kb, other = baseline.create_knowledge_base(), baseline.create_knowledge_base()
    ids = baseline.add_articles(
        kb, [("Reset a password", "Open settings."), ("Export data", "Use the export page.")]
    )
    baseline.add_articles(other, [("Reset a password", "Elsewhere.")])
    hits = baseline.search(kb, "password reset")
    assert [h["article_id"] for h in hits] == [ids[0]]
    assert baseline.search(kb, '"') == []  # no word: nothing to match, no FTS5 syntax error
    assert baseline.search(kb, 'password" OR "export') != []  # quotes are searched, not parsed

    page = baseline.poll(kb, 0, limit=1)
    assert len(page["events"]) == 1 and page["has_more"] is True
    rest = baseline.poll(kb, page["next_sequence"], limit=100)
    assert [e["article_id"] for e in rest["events"]] == [ids[1]]
    assert rest["has_more"] is False and rest["next_sequence"] >= rest["events"][-1]["sequence"]

    baseline.unpublish(kb, ids[0])
    with pytest.raises(BaselineError) as gone:
        baseline.read(kb, ids[0])
    assert gone.value.code == "gone"
    assert baseline.search(kb, "password") == []
    with pytest.raises(BaselineError) as not_found:
        baseline.read(other, ids[1])  # another knowledge base's article does not leak
    assert not_found.value.code == "not_found"
    with pytest.raises(BaselineError) as gone_edit:
        baseline.edit(kb, ids[0], "x", "2026-01-01T00:00:00Z", "key-9")
    assert gone_edit.value.code == "gone"
    assert baseline.poll(kb, rest["next_sequence"])["events"][0]["type"] == "unpublished"


def test_replay_in_small_batches_and_after_a_crash_equals_incremental_views(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replay path `kbes bench` row 6 measures: big batches folded in memory, the search
    index and the dropped indexes built whole at the end; the same views as event by event."""
    path = tmp_path / "replay.sqlite"
    store = open_store(path, synchronous="OFF")
    kb = store.create_knowledge_base("kb")
    ids = [
        store.add_article(kb, f"title {i}", f"content {i}", publish=i % 3 != 0) for i in range(30)
    ]
    for n in range(4):
        for i, article in enumerate(ids):
            title = f"retitled {n} {i}" if i % 5 == 0 else None
            store.save_article(kb, article, content=f"round {n} word{i}", title=title)
    store.unpublish_article(kb, ids[1])
    store.publish_article(kb, ids[3])
    store.catch_up()
    expected = dump(store.views)
    monkeypatch.setattr(fold, "REPLAY_CHUNK", 7)
    monkeypatch.setattr(fold, "REPLAY_EVENTS", 20)
    store.rebuild()
    assert dump(store.views) == expected
    # A replay that stops (a crash) part-way, or after its last batch but before the search
    # index is built, is finished by the next catch-up or the next process to open the store.
    store.close()
    for stop in (50, None):
        store = open_store(path, synchronous="OFF")
        store.views.drop()
        with monkeypatch.context() as crash:
            crash.setattr(CatchUp, "finish_replay", lambda self: None)
            store.views.catch_up(store.log.feed, store.log.mapper, head=stop)
        store.close()
        store = open_store(path, synchronous="OFF")
        try:
            store.catch_up()
            assert dump(store.views) == expected
            hits = TOOLS["search_knowledge_base"].run(
                store, SearchRequest(knowledge_base_id=str(kb), query="word2"), None
            )
            assert isinstance(hits, SearchResult)
            assert [hit.article_id for hit in hits.hits] == [str(ids[2])]
        finally:
            store.close()


def poll(store: KnowledgeBaseStore, request: PollRequest) -> Any:
    return TOOLS["poll_resource_events"].run(store, request, None)


def test_poll_fast_path_answers_as_the_mapper_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The feed page read as tuples, decoding only timestamps (`kbes bench` row 3), equals the
    page built from Notification objects and the mapper's domain events."""
    store = open_store(tmp_path / "poll.sqlite", synchronous="OFF")
    try:
        kb, other = store.create_knowledge_base("kb"), store.create_knowledge_base("other")
        ids = [
            store.add_article(k, f"t{i}", "text", publish=True)
            for i in range(5)
            for k in (kb, other)
        ]
        store.add_article(kb, "draft", "never in the feed")
        for article in ids[:4]:
            owner = kb if article in ids[::2] else other
            store.save_article(owner, article, content="saved", title="renamed")
        store.unpublish_article(kb, ids[0])
        request = PollRequest(resource_type="knowledge_base", resource_id=str(kb), limit=4)
        fast = [
            poll(store, request),
            poll(store, msgspec.structs.replace(request, after_sequence=3)),
        ]
        assert [e.type for e in fast[0].events][:1] == ["published"]
        monkeypatch.setattr(store.log.mapper, "decode_stamp", lambda topic, state: None)
        fallback = [
            poll(store, request),
            poll(store, msgspec.structs.replace(request, after_sequence=3)),
        ]
        # eventsourcing's own path: its Notification objects and the mapper's domain events.
        assert isinstance(store.log.recorder, FeedApplicationRecorder)
        with store.log.recorder.datastore.transaction(commit=False) as c:
            c.execute("SELECT notification_id FROM kb_feed WHERE knowledge_base_id = ?", (kb.hex,))
            visible = {row[0] for row in c.fetchall()}
        feed = [
            ResourceEvent(
                sequence=sequence,
                type=EVENT_TYPES[type(event)],
                article_id=str(event.originator_id),
                updated_at=format_timestamp(event.timestamp),
            )
            for sequence, event in store.logged_events()
            if sequence in visible
        ]
        generic = [feed[:4], [e for e in feed if e.sequence > 3][:4]]
        assert fast == fallback
        assert [page.events for page in fast] == generic
        everything = poll(store, msgspec.structs.replace(request, limit=100))
        assert {e.type for e in everything.events} == {"published", "retitled", "unpublished"}
        assert all(e.article_id in {str(a) for a in ids} for e in everything.events)
    finally:
        store.close()
