"""Historical reads, the exported log as an event source, and `diff_knowledge_article` called
directly as a tool: it shows no more than the feed, by the one visibility rule they share."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypedDict
from uuid import UUID, uuid4

import pytest
from click.testing import CliRunner
from tool_calls import call

from kbes import Article, KnowledgeBaseStore, SimulatedClock, open_store
from kbes.cli import main
from kbes.domain.article import in_feed
from kbes.domain.author import person
from kbes.domain.errors import ArticleNotInLog, NotATime, VersionNotFound
from kbes.log.export import LogFormatError, LogSource, export_log
from kbes.log.history import History, StoreSource, article_at, article_versions, unified_diff
from kbes.tools import HISTORY_TOOLS, TOOLS
from kbes.tools.codes import Gone, InvalidArgument, InvalidVersion, NotFound
from kbes.tools.refusals import refusal
from kbes.tools.wire import ArticleResult, DiffResult, ReadRequest

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
DIFF = HISTORY_TOOLS[0]


@pytest.fixture
def clock() -> SimulatedClock:
    return SimulatedClock(START)


@pytest.fixture
def timed(db_path: Path, clock: SimulatedClock) -> Iterator[KnowledgeBaseStore]:
    store = open_store(db_path, clock=clock)
    yield store
    store.close()


def minutes(clock: SimulatedClock, n: int) -> str:
    clock.set(START + timedelta(minutes=n))
    return clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def cite(store: KnowledgeBaseStore, kb: UUID, article: UUID) -> str:
    read = TOOLS["read_knowledge_article"].run(
        store, ReadRequest(knowledge_base_id=str(kb), article_id=str(article)), None
    )
    assert isinstance(read, ArticleResult)
    return read.citation.updated_at


def test_versions_and_the_article_as_it_was(
    timed: KnowledgeBaseStore, clock: SimulatedClock
) -> None:
    kb = timed.create_knowledge_base("Support")
    article = timed.add_article(kb, "VPN", "one\ntwo\nthree", publish=True)
    cited = cite(timed, kb, article)
    saved_at = minutes(clock, 30)
    timed.save_article(kb, article, content="one\n2\nthree")
    retitled_at = minutes(clock, 60)
    timed.save_article(kb, article, title="VPN setup")
    unpublished_at = minutes(clock, 90)
    timed.unpublish_article(kb, article)

    versions = article_versions(timed, article)
    assert [(v.version, v.type) for v in versions] == [
        (1, "drafted"),
        (2, "published"),
        (3, "saved"),
        (4, "retitled"),
        (5, "unpublished"),
    ]
    assert [v.updated_at for v in versions[1:]] == [cited, saved_at, retitled_at, unpublished_at]
    assert [v.sequence for v in versions] == sorted(v.sequence for v in versions)

    then = article_at(timed, article, cited)
    assert (then.title, then.content, then.published, then.version) == (
        "VPN",
        "one\ntwo\nthree",
        True,
        2,
    )
    # Compared as instants: the same moment with another offset names the same version.
    assert article_at(timed, article, "2026-11-30T10:30:00.000000+01:00").content == "one\n2\nthree"
    assert article_at(timed, article, datetime.fromisoformat(retitled_at)).title == "VPN setup"
    assert article_at(timed, article, unpublished_at).published is False

    history = History.of(timed)
    as_of = history.article_as_of(article, "2026-11-30T09:45:00Z")
    assert as_of is not None and as_of.version == 3
    assert history.article_as_of(article, "2026-11-30T08:00:00Z") is None

    with pytest.raises(VersionNotFound) as garbled:
        article_at(timed, article, "2026-11-30T09:30:00.000001Z")
    assert refusal(garbled.value).code == "invalid"
    with pytest.raises(ArticleNotInLog):
        article_versions(timed, uuid4())
    with pytest.raises(NotATime):
        article_at(timed, article, "half past nine")


def test_unified_diff_names_both_versions(timed: KnowledgeBaseStore, clock: SimulatedClock) -> None:
    kb = timed.create_knowledge_base("Support")
    article = timed.add_article(kb, "T", "a\nb\nc", publish=True)
    cited = cite(timed, kb, article)
    now = minutes(clock, 5)
    timed.save_article(kb, article, content="a\nB\nc")
    history = History.of(timed)
    old, new = history.article_at(article, cited), history.article_at(article, now)
    assert unified_diff(old, new) == (
        f"--- {article}@{cited}\n+++ {article}@{now}\n@@ -1,5 +1,5 @@\n # T\n \n a\n-b\n+B\n c\n"
    )
    assert unified_diff(new, new) == ""


def busy_history(store: KnowledgeBaseStore, clock: SimulatedClock) -> list[UUID]:
    kb = store.create_knowledge_base("Support")
    other = store.create_knowledge_base("Billing")
    ids = [store.add_article(kb, f"A{i}", f"text {i}\nline", publish=True) for i in range(4)]
    ids.append(store.add_article(other, "B", "billing", publish=True))
    ids.append(store.add_article(kb, "Draft", "never published"))
    for n in range(1, 8):
        minutes(clock, n)
        store.save_article(kb, ids[n % 4], content=f"text {n}\nline {n}", title=f"A{n % 3}")
    store.unpublish_article(kb, ids[1])
    store.publish_article(kb, ids[1])
    store.unpublish_article(other, ids[4])
    store.save_article(kb, ids[5], content="draft save")
    return ids


def test_store_and_exported_log_agree_on_every_version(
    timed: KnowledgeBaseStore, clock: SimulatedClock
) -> None:
    ids = busy_history(timed, clock)
    buffer = io.BytesIO()
    written = export_log(timed, buffer)
    assert written == timed.head()
    from_store = History(StoreSource(timed))
    from_log = History(LogSource.from_lines(buffer.getvalue().splitlines()))
    for article in ids:
        store_history = from_store.history(article)
        assert store_history is not None
        assert store_history == from_log.history(article)
        for version in store_history.versions:
            assert from_store.state(store_history, version) == from_log.state(
                store_history, version
            )
    assert from_log.history(uuid4()) is None


def test_export_lines_carry_sequence_type_ids_timestamp_and_payload(
    timed: KnowledgeBaseStore, clock: SimulatedClock
) -> None:
    kb = timed.create_knowledge_base("Support")
    article = timed.add_article(kb, "T", "body", publish=True)
    minutes(clock, 1)
    timed.save_article(kb, article, content="new body", by=person("alice"))
    buffer = io.BytesIO()
    export_log(timed, buffer)
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [line["type"] for line in lines] == [
        "knowledge_base_created",
        "drafted",
        "published",
        "saved",
    ]
    assert [line["sequence"] for line in lines] == [1, 2, 3, 4]
    saved = lines[-1]
    assert saved == {
        "sequence": 4,
        "type": "saved",
        "topic": "kbes.domain.article:Article.Saved",
        "originator_id": str(article),
        "originator_version": 3,
        "knowledge_base_id": str(kb),
        "timestamp": "2026-11-30T09:01:00.000000Z",
        "author": {"kind": "person", "name": "alice", "how": "api", "approved": False},
        "payload": {"content": "new body"},
    }
    assert lines[0]["payload"] == {"name": "Support"}
    assert lines[1]["payload"] == {"title": "T", "content": "body"}


def test_log_export_cli_kb_after_and_concatenation(
    timed: KnowledgeBaseStore, clock: SimulatedClock, db_path: Path, tmp_path: Path
) -> None:
    ids = busy_history(timed, clock)
    kb = str(timed.get_article(ids[0]).knowledge_base_id)
    runner = CliRunner()

    def export(*args: str) -> list[dict]:
        result = runner.invoke(main, ["log", "export", "--db", str(db_path), *args])
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in result.stdout.splitlines()]

    everything = export()
    assert [e["sequence"] for e in everything] == list(range(1, len(everything) + 1))
    only_kb = export("--kb", kb)
    assert only_kb and all(e["knowledge_base_id"] == kb for e in only_kb)
    assert len(only_kb) < len(everything)
    assert [e["sequence"] for e in export("--after", "10")] == list(range(11, len(everything) + 1))

    # An export followed by `--after N` increments reads as the whole log.
    head = everything[-1]["sequence"]
    minutes(clock, 30)
    timed.save_article(kb, ids[0], content="later")
    later = export("--after", str(head))
    assert [e["type"] for e in later] == ["saved"]
    combined = tmp_path / "events.jsonl"
    combined.write_text("".join(json.dumps(e) + "\n" for e in everything + later + later[:1]))
    source = LogSource.from_path(str(combined))
    assert History(source).article_at(ids[0], later[0]["timestamp"]).content == "later"

    # An increment alone is not a whole history, and says how to fix that.
    alone = tmp_path / "alone.jsonl"
    alone.write_text("".join(json.dumps(e) + "\n" for e in export("--after", "10")))
    with pytest.raises(LogFormatError, match="export without --after"):
        LogSource.from_path(str(alone))

    bad = runner.invoke(main, ["log", "export", "--db", str(db_path), "--kb", str(uuid4())])
    assert bad.exit_code == 2 and "no knowledge base" in bad.stderr
    missing = runner.invoke(main, ["log", "export", "--db", str(tmp_path / "none.sqlite")])
    assert missing.exit_code != 0 and "no kbes database" in missing.stderr
    assert not (tmp_path / "none.sqlite").exists()


def test_audit_reports_a_broken_log_by_line(tmp_path: Path) -> None:
    citations = tmp_path / "c.jsonl"
    citations.write_text(
        json.dumps(
            {"knowledge_base_id": str(uuid4()), "article_id": str(uuid4()), "updated_at": "x"}
        )
        + "\n"
    )
    log = tmp_path / "events.jsonl"
    log.write_text('{"sequence": 1}\n')
    result = CliRunner().invoke(main, ["audit", str(citations), "--log", str(log)])
    assert result.exit_code == 2
    assert "line 1" in result.stderr and "kbes log export" in result.stderr


def test_conflicting_exports_are_refused() -> None:
    line = {
        "sequence": 1,
        "type": "knowledge_base_created",
        "topic": "kbes.knowledge_base:KnowledgeBase.Created",
        "originator_id": str(uuid4()),
        "originator_version": 1,
        "knowledge_base_id": None,
        "timestamp": "2026-11-30T09:00:00.000000Z",
        "payload": {"name": "A"},
    }
    other = {**line, "payload": {"name": "B"}}
    with pytest.raises(LogFormatError, match="two different events carry sequence 1"):
        LogSource.from_lines([json.dumps(line), json.dumps(other)])


# The diff tool shows no more than the feed --------------------------------------------------
# Its `changes` are exactly the events `poll_resource_events` reported for the article after the
# cited version, so saves and retitles made while the article was unpublished never show.


def polled(store: KnowledgeBaseStore, kb: str, article: str, after: int) -> list[dict]:
    page = call(store, "poll_resource_events", resource_type="knowledge_base", resource_id=kb)
    return [
        {k: e[k] for k in ("sequence", "type", "updated_at")}
        for e in page["events"]
        if e["article_id"] == article and e["sequence"] > after
    ]


def test_changes_are_what_the_feed_showed(store: KnowledgeBaseStore, kb: str) -> None:
    article = str(store.add_article(kb, "Billing", "Invoices go out monthly.", publish=True))
    cited = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    store.save_article(kb, article, content="Invoices go out weekly.")  # published: polled
    head = polled(store, kb, article, 0)[-1]["sequence"]
    store.unpublish_article(kb, article)
    store.save_article(kb, article, content="Draft: the merger closes on Friday.")
    store.save_article(kb, article, title="Project Falcon", content="Still secret.")
    store.save_article(kb, article, title="Billing", content="Invoices go out weekly, by email.")
    store.publish_article(kb, article)
    store.save_article(kb, article, content="Invoices go out weekly, by email, in PDF.")

    diff = call(
        store,
        "diff_knowledge_article",
        knowledge_base_id=kb,
        article_id=article,
        since_version=cited["updated_at"],
    )
    feed = polled(store, kb, article, 0)
    assert [c["type"] for c in diff["changes"]] == [
        "saved",
        "unpublished",
        "published",
        "saved",
    ]
    assert diff["changes"] == feed[1:]  # everything the feed showed after the cited publish
    assert all(c["sequence"] <= head or c["type"] != "retitled" for c in diff["changes"])
    # The diff runs from the cited version to the current one: both were readable; nothing
    # of the versions the article had while unpublished is in it.
    for secret in ("merger", "Falcon", "Still secret"):
        assert secret not in diff["diff"]
    assert diff["changed"] is True


def test_one_visibility_rule_for_the_feed_and_the_histories(
    store: KnowledgeBaseStore, kb: str
) -> None:
    """The feed's rule is the domain's `in_feed`: the feed index written with each batch (walked
    backwards from the article's final state) and `ArticleHistory.polled` (walked forwards
    through the versions) show the same events."""
    assert [
        in_feed(kind, published)
        for kind in (
            Article.Drafted,
            Article.Published,
            Article.Saved,
            Article.Retitled,
            Article.Unpublished,
        )
        for published in (False, True)
    ] == [False, False, True, True, False, True, False, True, True, True]
    article = Article.draft(UUID(kb), "Billing", "v1")
    article.save("v2")  # a draft's save: never shown
    article.publish()
    article.save("v3", "Invoices")
    article.unpublish()
    article.save("v4")  # a save while unpublished: never shown
    article.publish()
    article.save("v5")
    store.save(article)  # one batch of eight events
    store.save_article(kb, article.id, content="v6")

    feed = polled(store, kb, str(article.id), 0)
    assert [e["type"] for e in feed] == [
        "published",
        "retitled",
        "unpublished",
        "published",
        "saved",
        "saved",
    ]
    history = History.of(store).history(article.id)
    assert history is not None
    assert [(v.sequence, v.type, v.updated_at) for v in history.polled()] == [
        (e["sequence"], e["type"], e["updated_at"]) for e in feed
    ]


# The diff tool, called directly ----------------------------------------------------------


class ArticleIds(TypedDict):
    """The ids a diff names, spread into `call_diff` beside its `grants`."""

    knowledge_base_id: str
    article_id: str


def call_diff(store: KnowledgeBaseStore, grants: frozenset[str] | None = None, **args: str):
    return DIFF.run(store, DIFF.parse(args), grants)


def test_diff_tool_contract() -> None:
    assert [tool.name for tool in HISTORY_TOOLS] == ["diff_knowledge_article"]
    assert DIFF.name not in TOOLS  # opt-in: not among the live server's four
    assert DIFF.annotations == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "openWorldHint": False,
    }
    schema = DIFF.input_schema()
    assert schema["type"] == "object"
    assert sorted(schema["required"]) == ["article_id", "knowledge_base_id", "since_version"]
    assert schema["properties"]["since_version"]["format"] == "date-time"
    assert "diff" in DIFF.output_schema()["properties"]


def test_diff_tool_returns_the_changes_since_a_citation(
    timed: KnowledgeBaseStore, clock: SimulatedClock
) -> None:
    kb = timed.create_knowledge_base("Support")
    article = timed.add_article(kb, "VPN", "Install.\nConnect to vpn.example.\nDone.", publish=True)
    cited = cite(timed, kb, article)
    same = call_diff(timed, knowledge_base_id=str(kb), article_id=str(article), since_version=cited)
    assert isinstance(same, DiffResult)
    assert (same.changed, same.changes, same.diff) == (False, [], "")
    assert same.citation.updated_at == cited

    saved_at = minutes(clock, 10)
    timed.save_article(kb, article, content="Install.\nConnect to vpn2.example.\nDone.")
    retitled_at = minutes(clock, 20)
    timed.save_article(kb, article, title="VPN setup")
    result = call_diff(
        timed, knowledge_base_id=str(kb), article_id=str(article), since_version=cited
    )
    assert result.changed is True
    assert [(c.type, c.updated_at) for c in result.changes] == [
        ("saved", saved_at),
        ("retitled", retitled_at),
    ]
    assert result.since_version == cited
    assert result.updated_at == retitled_at == result.citation.updated_at
    assert result.title == "VPN setup"
    assert "-# VPN\n+# VPN setup\n" in result.diff
    assert "-Connect to vpn.example.\n+Connect to vpn2.example.\n" in result.diff
    # From an intermediate citation, only the retitle remains.
    later = call_diff(
        timed, knowledge_base_id=str(kb), article_id=str(article), since_version=saved_at
    )
    assert [c.type for c in later.changes] == ["retitled"]
    assert "-Connect" not in later.diff and " Connect to vpn2.example.\n" in later.diff


def test_diff_tool_gone_invalid_and_not_found(
    timed: KnowledgeBaseStore, clock: SimulatedClock
) -> None:
    kb = timed.create_knowledge_base("Support")
    other = timed.create_knowledge_base("Billing")
    article = timed.add_article(kb, "Fax", "Faxes go through the portal.", publish=True)
    draft = timed.add_article(kb, "Draft", "not yet")
    cited = cite(timed, kb, article)
    history = timed.version_history(article)
    assert history is not None
    drafted_at = history.versions[0].updated_at
    ids: ArticleIds = {"knowledge_base_id": str(kb), "article_id": str(article)}

    for garbled in (
        (datetime.fromisoformat(cited) + timedelta(microseconds=1)).isoformat(),
        drafted_at,  # a version that existed, but only as a draft: never citable
    ):
        with pytest.raises(InvalidVersion) as invalid:
            call_diff(timed, **ids, since_version=garbled)
        assert invalid.value.code == "invalid"
        assert "never had a published version" in invalid.value.message

    with pytest.raises(NotFound):
        call_diff(timed, knowledge_base_id=str(kb), article_id=str(draft), since_version=cited)
    with pytest.raises(NotFound):
        call_diff(timed, knowledge_base_id=str(other), article_id=str(article), since_version=cited)
    with pytest.raises(NotFound):  # not granted reads as not found
        call_diff(timed, grants=frozenset({str(other)}), **ids, since_version=cited)
    with pytest.raises(InvalidArgument):
        call_diff(timed, **ids, since_version="yesterday")

    unpublished_at = minutes(clock, 15)
    timed.unpublish_article(kb, article)
    with pytest.raises(Gone) as gone:
        call_diff(timed, **ids, since_version=cited)
    assert gone.value.code == "gone"
    assert gone.value.details["unpublished_at"] == unpublished_at
