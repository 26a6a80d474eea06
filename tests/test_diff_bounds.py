"""The diff tool and the approval prompt do bounded work (issue 18, defect 4): two versions of
a 1,000,000-character article built to defeat difflib's matcher took it minutes of CPU, and
with four such diffs in flight a search on the same server waited 512 s. Now the matcher counts
its steps and gives up past a budget (`kbes.log.line_diff`): the diff tool answers
`too_large_to_diff`, the approval prompt says the changed lines are too many to list, and a
server runs such work one call at a time beside the others. Under the budget, diffs are
difflib's, byte for byte."""

from __future__ import annotations

import difflib
import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from diff_texts import edited_corpus, scattered
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp_harness import Elicitations, body, http_client, http_server
from tool_calls import call, fails

from kbes import KnowledgeBaseStore, open_store
from kbes.domain.article import markdown
from kbes.domain.errors import DiffTooLarge
from kbes.log.audit import audit, parse_citations
from kbes.log.history import History, StoreSource
from kbes.log.line_diff import DIFF_BUDGET, bounded_unified_diff
from kbes.server.approval import approval_message
from kbes.tools import TOOLS

ROOT = Path(__file__).resolve().parent.parent
LINES = st.lists(st.sampled_from(["a", "b", "c", "", "d e", "\tf"]), max_size=14)


@given(LINES, LINES, st.integers(min_value=0, max_value=4))
@settings(max_examples=400, deadline=None)
def test_under_the_budget_the_diff_is_difflibs(a: list[str], b: list[str], n: int) -> None:
    expected = list(difflib.unified_diff(a, b, fromfile="x@1", tofile="x@2", n=n, lineterm=""))
    assert bounded_unified_diff(a, b, fromfile="x@1", tofile="x@2", n=n) == expected


def test_a_pair_built_to_defeat_the_matcher_is_refused_quickly() -> None:
    old, new = scattered(250, 3)
    started = time.process_time()
    with pytest.raises(DiffTooLarge) as refused:
        bounded_unified_diff(old.splitlines(), new.splitlines())
    assert (refused.value.old_lines, refused.value.new_lines) == (20_001, 20_001)
    # Not a timing claim (tests/diff_worst.py prints those): difflib alone takes many
    # seconds on this pair, and the refusal must not wait for it.
    assert time.process_time() - started < 30


def versions(store: KnowledgeBaseStore, kb: str, old: str, new: str) -> tuple[str, str]:
    """An article saved as `old`, then as `new`: its id and the old version's updated_at."""
    article = str(store.add_article(kb, "Large", old, publish=True))
    since = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    store.save_article(kb, article, content=new)
    return article, since["updated_at"]


def test_the_diff_tool_refuses_a_diff_too_large_and_says_what_to_do(
    store: KnowledgeBaseStore, kb: str
) -> None:
    old, new = scattered(1000, 2)
    article, since = versions(store, kb, old, new)
    current = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    refused = fails(
        store, "diff_knowledge_article", knowledge_base_id=kb, article_id=article,
        since_version=since,
    )  # fmt: skip
    assert refused["code"] == "too_large_to_diff"
    assert refused["updated_at"] == current["updated_at"]
    assert refused["since_version"] == since
    assert "read_knowledge_article" in refused["message"]
    assert "changed too much since" in refused["message"]


def test_an_ordinary_large_edit_is_still_diffed_as_before(
    store: KnowledgeBaseStore, kb: str
) -> None:
    old, new = edited_corpus(40)
    article, since = versions(store, kb, old, new)
    diff = call(
        store, "diff_knowledge_article", knowledge_base_id=kb, article_id=article,
        since_version=since,
    )  # fmt: skip
    expected = difflib.unified_diff(
        markdown("Large", old).splitlines(),
        markdown("Large", new).splitlines(),
        fromfile=f"{article}@{since}",
        tofile=f"{article}@{diff['updated_at']}",
        lineterm="",
    )
    assert diff["diff"] == "\n".join(expected) + "\n"
    assert diff["diff"].count("\n+rewritten ") == 40


def approval(store: KnowledgeBaseStore, kb: str, old: str, new: str) -> str:
    article = str(store.add_article(kb, "Large", old, publish=True))
    cited = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    arguments = {
        "knowledge_base_id": kb, "article_id": article, "content": new,
        "expected_version": cited["updated_at"], "idempotency_key": "large",
    }  # fmt: skip
    return approval_message(TOOLS["edit_knowledge_article"].admit(arguments, None), store)


def test_the_approval_prompt_summarises_changes_too_large_to_diff(
    store: KnowledgeBaseStore, kb: str
) -> None:
    old, new = scattered(250, 3)
    message = approval(store, kb, old, new)
    assert "Content: 1000000 characters in 20001 lines now" in message
    assert "Changed lines: too many, in too many places, for kbes to list them here" in message
    assert "\n    - " not in message


def test_the_approval_prompt_of_an_ordinary_large_edit_lists_its_lines(
    store: KnowledgeBaseStore, kb: str
) -> None:
    old, new = edited_corpus(40)
    message = approval(store, kb, old, new)
    assert "Changed lines (- now, + after" in message
    assert "    + rewritten " in message


def test_docs_state_the_budget_and_the_refusal() -> None:
    page = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    assert f"past {DIFF_BUDGET:,} of them" in page
    assert "| `too_large_to_diff` |" in page


# A real server --------------------------------------------------------------------------

IN_FLIGHT = 8
PROMPT = 5.0
"""Seconds a search may take while worst-case diffs run (alone it takes milliseconds; before
the fix it waited for them, minutes)."""


@pytest.mark.slow
def test_a_search_answers_promptly_while_worst_case_diffs_run(tmp_path: Path) -> None:
    db = tmp_path / "kbes.sqlite"
    store = open_store(db)
    try:
        kb = str(store.create_knowledge_base("Large"))
        store.add_article(kb, "Refunds", "Refunds are paid within five days.", publish=True)
        old, new = scattered(250, 3)
        article, since = versions(store, kb, old, new)
    finally:
        store.close()
    diff = {"knowledge_base_id": kb, "article_id": article, "since_version": since}
    search = {"knowledge_base_id": kb, "query": "refunds"}
    outcome: dict[str, Any] = {"diffs": []}

    async def session(url: str) -> None:
        async with http_client(url) as searcher:
            await searcher.call_tool("search_knowledge_base", search)  # connected and warm

            async def one_diff() -> None:
                try:
                    async with http_client(url) as client:
                        result = await client.call_tool("diff_knowledge_article", diff)
                        outcome["diffs"].append(body(result).get("code", "answered"))
                except Exception as e:  # a diff of megabytes overflows the client's SSE limit
                    outcome["diffs"].append(repr(e))

            async with anyio.create_task_group() as group:
                for _ in range(IN_FLIGHT):
                    group.start_soon(one_diff)
                await anyio.sleep(0.5)  # the diffs are running
                started = time.monotonic()
                with anyio.fail_after(120):
                    found = body(await searcher.call_tool("search_knowledge_base", search))
                outcome["search_s"] = time.monotonic() - started
                outcome["diffs_running"] = len(outcome["diffs"]) < IN_FLIGHT
                outcome["hits"] = [hit["title"] for hit in found["hits"]]

    with http_server(db, "--grant-all", "--history-tools") as server:
        anyio.run(session, server.url)
    assert outcome["hits"] == ["Refunds"]
    assert outcome["diffs_running"], "the diffs ended before the search: nothing was measured"
    assert outcome["search_s"] < PROMPT, outcome
    assert outcome["diffs"] == ["too_large_to_diff"] * IN_FLIGHT


@pytest.mark.slow
def test_the_approval_prompt_of_a_worst_case_edit_is_asked_promptly(tmp_path: Path) -> None:
    """`--edits ask`: building the prompt for such an edit took 87 s before anyone was asked;
    now the person is asked at once, told the changed lines are too many to list, and the
    edit is written once they accept."""
    db = tmp_path / "kbes.sqlite"
    old, new = scattered(1000, 2)
    store = open_store(db)
    try:
        kb = str(store.create_knowledge_base("Large"))
        article = str(store.add_article(kb, "Large", old, publish=True))
        cited = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=article)
    finally:
        store.close()
    arguments = {
        "knowledge_base_id": kb, "article_id": article, "content": new,
        "expected_version": cited["updated_at"], "idempotency_key": "worst",
    }  # fmt: skip
    user = Elicitations()
    outcome: dict[str, Any] = {}

    async def session(url: str) -> None:
        async with http_client(url, mode="legacy", elicitation_callback=user) as client:
            started = time.monotonic()
            with anyio.fail_after(120):
                outcome["edit"] = body(await client.call_tool("edit_knowledge_article", arguments))
            outcome["seconds"] = time.monotonic() - started

    with http_server(db, "--grant-all", "--edits", "ask") as server:
        anyio.run(session, server.url)
    assert outcome["edit"]["replay"] is False
    [message] = user.messages
    assert "Changed lines: too many, in too many places, for kbes to list them here" in message
    assert outcome["seconds"] < 30, outcome  # the 87 s of the report; here about a second


def test_an_audit_bounds_its_diffs_like_the_diff_tool(
    store: KnowledgeBaseStore, kb: str, tmp_path: Path
) -> None:
    """Issue 35: `kbes audit` diffed each changed citation without a bound, 19.9 s on one
    worst-case citation that the diff tool refuses in a second. Now the diff is left out and
    the reason says why; the citation is still classified."""
    old, new = scattered(1000, 2)
    article, since = versions(store, kb, old, new)
    cited = {"knowledge_base_id": kb, "article_id": article, "updated_at": since}
    started = time.process_time()
    entries = parse_citations([json.dumps(cited).encode()], name="citations")
    [entry] = audit(entries, History(StoreSource(store))).citations
    assert time.process_time() - started < 30  # not a timing claim: difflib alone takes long
    assert entry.status == "changed"
    assert entry.diff is None
    assert "too changed to diff (20003 lines then, 20003 now" in entry.reason
