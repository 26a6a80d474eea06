"""The four tools' behaviour, called directly as the MCP server and the CLI call them."""

from __future__ import annotations

import uuid
from datetime import timedelta, timezone
from typing import Any

import pytest
from tool_calls import call, fails

from kbes import KnowledgeBaseStore, call_tool
from kbes.domain.clock import parse_timestamp
from kbes.domain.receipt import receipt_id
from kbes.tools.codes import KbesError


@pytest.fixture
def articles(store: KnowledgeBaseStore, kb: str) -> dict[str, str]:
    return {
        "reset": str(
            store.add_article(
                kb,
                "Reset your password",
                "Open Settings, then Security, and click Reset password.",
                publish=True,
            )
        ),
        "billing": str(
            store.add_article(
                kb,
                "Billing",
                "Invoices are emailed monthly. A password is not needed.",
                publish=True,
            )
        ),
        "draft": str(store.add_article(kb, "Secret plans", "The word is xylophonic.")),
    }


def test_search_ranks_title_matches_first_and_cites(store, kb, articles) -> None:
    result = call(store, "search_knowledge_base", knowledge_base_id=kb, query="password")
    ids = [hit["article_id"] for hit in result["hits"]]
    assert ids == [articles["reset"], articles["billing"]]
    hit = result["hits"][0]
    assert hit["title"] == "Reset your password"
    assert "password" in hit["snippet"].lower()
    assert hit["citation"] == {
        "knowledge_base_id": kb,
        "article_id": articles["reset"],
        "updated_at": hit["updated_at"],
    }


def test_search_limit(store, kb, articles) -> None:
    result = call(store, "search_knowledge_base", knowledge_base_id=kb, query="password", limit=1)
    assert len(result["hits"]) == 1


@pytest.fixture
def syntax_articles(store: KnowledgeBaseStore, kb: str, articles: dict[str, str]) -> dict[str, str]:
    """`articles`, and three whose words only a query read as text would find (or miss)."""
    more = {
        "boarding": ("Boarding", "Show your boarding pass at the gate."),
        "offices": ("Offices", "Find the office near you. Title changes take a day."),
        "widgets": ("Widgets", "The foo widget resets itself."),
    }
    found = {
        key: str(store.add_article(kb, title, content, publish=True))
        for key, (title, content) in more.items()
    }
    return {**articles, **found}


# What FTS5 would make of each query, were it passed on raw, is in the comment beside it: each
# case fails then (tried: a different set of hits, or an error).
SYNTAX_AS_TEXT = {
    # A prefix search would find "password" too.
    "pass*": ({"boarding"}, {"reset", "billing"}),
    # NEAR would find only both words within ten tokens; the word "near" is a word.
    "NEAR(password reset)": ({"reset", "billing", "offices", "widgets"}, set()),
    # A minus would be a column filter ("no such column: password").
    "-password": ({"reset", "billing"}, {"boarding"}),
    # Quotes would make a phrase, found only where the two words stand together.
    '"reset password"': ({"reset", "billing", "widgets"}, {"boarding"}),
    # A column filter would look for "foo" in titles only (none has it).
    "title:foo": ({"widgets", "offices"}, {"reset", "billing"}),
    # Operators with nothing to join would be a syntax error.
    "AND OR NOT": ({"billing", "reset"}, {"boarding"}),
    "password AND": ({"reset", "billing"}, {"boarding"}),
    "(password": ({"reset", "billing"}, {"boarding"}),
    "password)": ({"reset", "billing"}, {"boarding"}),
    '"password': ({"reset", "billing"}, {"boarding"}),
    "pässword ünïcode": ({"reset", "billing"}, {"boarding"}),
    "password'; DROP TABLE x; --": ({"reset", "billing"}, {"boarding"}),
    # No word at all: nothing to find.
    "**": (set(), {"reset", "billing", "boarding", "offices", "widgets"}),
    '""': (set(), {"reset", "billing", "boarding", "offices", "widgets"}),
}


@pytest.mark.parametrize("query", SYNTAX_AS_TEXT)
def test_any_query_is_text_never_syntax(store, kb, syntax_articles, query) -> None:
    """Search's query is plain text (docs/tools.md): its words are searched for, each as it
    stands, and any FTS5 syntax in it (a prefix `*`, NEAR, `-`, quotes, a column filter,
    operators, parentheses) is text too."""
    result = call(store, "search_knowledge_base", knowledge_base_id=kb, query=query)
    by_id = {id_: key for key, id_ in syntax_articles.items()}
    hits = {by_id[hit["article_id"]] for hit in result["hits"]}
    must_find, must_miss = SYNTAX_AS_TEXT[query]
    assert must_find <= hits, f"{query!r} found {sorted(hits)}"
    assert not must_miss & hits, f"{query!r} found {sorted(hits)}"
    assert "draft" not in hits
    if not must_find:
        assert hits == set()


def test_non_ascii_is_searchable(store, kb) -> None:
    article = str(store.add_article(kb, "Café opening hours", "Le café ouvre à 8h.", publish=True))
    result = call(store, "search_knowledge_base", knowledge_base_id=kb, query="cafe")
    assert [h["article_id"] for h in result["hits"]] == [article]


def test_read_returns_content_and_the_same_version_as_search(store, kb, articles) -> None:
    hit = call(store, "search_knowledge_base", knowledge_base_id=kb, query="reset")["hits"][0]
    read = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=hit["article_id"])
    assert read["content"].startswith("Open Settings")
    assert read["citation"] == hit["citation"]
    assert read["updated_at"].endswith("Z") and len(read["updated_at"]) == len(
        "2026-11-30T09:00:00.000000Z"
    )


def test_drafts_are_invisible_everywhere(store, kb, articles) -> None:
    assert (
        call(store, "search_knowledge_base", knowledge_base_id=kb, query="xylophonic")["hits"] == []
    )
    error = fails(
        store, "read_knowledge_article", knowledge_base_id=kb, article_id=articles["draft"]
    )
    assert error["code"] == "not_found"
    store.save_article(kb, articles["draft"], content="Still xylophonic, saved again.")
    page = call(store, "poll_resource_events", resource_type="knowledge_base", resource_id=kb)
    assert articles["draft"] not in {e["article_id"] for e in page["events"]}
    error = fails(
        store,
        "edit_knowledge_article",
        knowledge_base_id=kb,
        article_id=articles["draft"],
        content="x",
        expected_version="2026-01-01T00:00:00Z",
        idempotency_key="k",
    )
    assert error["code"] == "not_found"


def test_edit_cas_replay_and_conflict(store, kb, articles) -> None:
    read = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=articles["reset"])
    edit = dict(
        knowledge_base_id=kb,
        article_id=articles["reset"],
        content="New steps.",
        expected_version=read["updated_at"],
        idempotency_key="key-1",
    )
    head = store.head()
    first = call(store, "edit_knowledge_article", **edit)
    assert first["replay"] is False and first["updated_at"] > read["updated_at"]
    assert store.head() == head + 2  # the Saved event and the receipt
    again = call(store, "edit_knowledge_article", **edit)
    assert again == {**first, "replay": True}
    assert store.head() == head + 2
    stale = fails(store, "edit_knowledge_article", **{**edit, "idempotency_key": "key-2"})
    assert stale["code"] == "version_conflict"
    assert stale["current_version"] == first["updated_at"]
    reused = fails(store, "edit_knowledge_article", **{**edit, "content": "Other text."})
    assert reused["code"] == "idempotency_key_reused"
    now = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=articles["reset"])
    assert now["content"] == "New steps." and now["updated_at"] == first["updated_at"]


def test_an_edit_that_changes_nothing_keeps_the_version(store, kb, articles) -> None:
    """Content and title as they are: no article event, so every citation of the version
    stays current and the feed shows nothing; the receipt still binds the key to the call."""
    read = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=articles["reset"])
    feed = {"resource_type": "knowledge_base", "resource_id": kb}
    cursor = call(store, "poll_resource_events", **feed)["next_sequence"]
    head = store.head()
    same = dict(
        knowledge_base_id=kb,
        article_id=articles["reset"],
        content=read["content"],
        expected_version=read["updated_at"],
        idempotency_key="no-op",
    )
    for request in (same, {**same, "title": read["title"], "idempotency_key": "no-op-titled"}):
        result = call(store, "edit_knowledge_article", **request)
        assert result["replay"] is False
        assert result["updated_at"] == read["updated_at"] == result["citation"]["updated_at"]
    assert store.head() == head + 2  # two receipts, no article event
    assert call(store, "poll_resource_events", **feed, after_sequence=cursor)["events"] == []
    again = call(store, "edit_knowledge_article", **same)
    assert (again["replay"], again["updated_at"]) == (True, read["updated_at"])
    reused = fails(store, "edit_knowledge_article", **{**same, "content": "Changed after all."})
    assert reused["code"] == "idempotency_key_reused"
    assert store.head() == head + 2
    # A changed title alone is a change: one Retitled event.
    retitled = call(store, "edit_knowledge_article", **{**same, "title": "Reset it",
                                                        "idempotency_key": "retitle"})  # fmt: skip
    assert retitled["updated_at"] > read["updated_at"]
    events = call(store, "poll_resource_events", **feed, after_sequence=cursor)["events"]
    assert [e["type"] for e in events] == ["retitled"]


def test_expected_version_compares_as_an_instant(store, kb, articles) -> None:
    read = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=articles["reset"])
    instant = parse_timestamp(read["updated_at"])
    in_paris = instant.astimezone(timezone(timedelta(hours=1))).isoformat()
    result = call(
        store,
        "edit_knowledge_article",
        knowledge_base_id=kb,
        article_id=articles["reset"],
        content="Edited with an offset.",
        expected_version=in_paris,
        idempotency_key="tz",
    )
    assert result["replay"] is False


def test_edit_with_title_retitles_in_one_event(store, kb, articles) -> None:
    read = call(
        store, "read_knowledge_article", knowledge_base_id=kb, article_id=articles["billing"]
    )
    call(
        store,
        "edit_knowledge_article",
        knowledge_base_id=kb,
        article_id=articles["billing"],
        content="Invoices monthly.",
        title="Invoices",
        expected_version=read["updated_at"],
        idempotency_key="retitle",
    )
    page = call(
        store,
        "poll_resource_events",
        resource_type="knowledge_base",
        resource_id=kb,
        after_sequence=0,
    )
    assert page["events"][-1]["type"] == "retitled"
    hits = call(store, "search_knowledge_base", knowledge_base_id=kb, query="invoices")["hits"]
    assert hits[0]["title"] == "Invoices"


def test_unpublish_is_gone_and_an_event(store, kb, articles) -> None:
    store.unpublish_article(kb, articles["billing"])
    error = fails(
        store, "read_knowledge_article", knowledge_base_id=kb, article_id=articles["billing"]
    )
    assert error["code"] == "gone"
    page = call(store, "poll_resource_events", resource_type="knowledge_base", resource_id=kb)
    assert (page["events"][-1]["type"], page["events"][-1]["article_id"]) == (
        "unpublished",
        articles["billing"],
    )
    assert (
        call(store, "search_knowledge_base", knowledge_base_id=kb, query="invoices")["hits"] == []
    )
    store.publish_article(kb, articles["billing"])
    assert call(
        store, "read_knowledge_article", knowledge_base_id=kb, article_id=articles["billing"]
    )


def test_poll_pages_and_cursor_skips_other_knowledge_bases(store, kb, articles) -> None:
    other = str(store.create_knowledge_base("Other"))
    for i in range(30):
        store.add_article(other, f"Other {i}", "noise", publish=True)
    page = call(store, "poll_resource_events", resource_type="knowledge_base", resource_id=kb)
    assert [e["type"] for e in page["events"]] == ["published", "published"]
    assert page["has_more"] is False
    assert page["next_sequence"] == store.head()
    later = call(
        store,
        "poll_resource_events",
        resource_type="knowledge_base",
        resource_id=kb,
        after_sequence=page["next_sequence"],
    )
    assert later["events"] == [] and later["next_sequence"] == page["next_sequence"]
    first = call(
        store, "poll_resource_events", resource_type="knowledge_base", resource_id=kb, limit=1
    )
    assert first["has_more"] is True
    assert first["next_sequence"] == first["events"][0]["sequence"]
    rest = call(
        store,
        "poll_resource_events",
        resource_type="knowledge_base",
        resource_id=kb,
        after_sequence=first["next_sequence"],
    )
    assert rest["events"] == page["events"][1:]


def test_poll_unsupported_resource_type(store, kb) -> None:
    error = fails(store, "poll_resource_events", resource_type="channel", resource_id=kb)
    assert error["code"] == "unsupported_resource_type"
    assert error["supported"] == ["knowledge_base"]


def test_unknown_and_ungranted_knowledge_bases_look_the_same(store, kb, articles) -> None:
    ungranted = str(store.create_knowledge_base("Secret"))
    store.add_article(ungranted, "Reset your password", "Secret steps.", publish=True)
    random_id = str(uuid.uuid4())

    def answer(name: str, target: str) -> dict[str, Any]:
        args = {
            "search_knowledge_base": {"knowledge_base_id": target, "query": "password"},
            "read_knowledge_article": {
                "knowledge_base_id": target,
                "article_id": articles["reset"],
            },
            "poll_resource_events": {"resource_type": "knowledge_base", "resource_id": target},
            "edit_knowledge_article": {
                "knowledge_base_id": target,
                "article_id": articles["reset"],
                "content": "x",
                "expected_version": "2026-11-30T09:00:00Z",
                "idempotency_key": "k",
            },
        }[name]
        with pytest.raises(KbesError) as info:
            call_tool(store, name, args, grants=frozenset({kb}))
        return {k: str(v).replace(target, "ID") for k, v in info.value.to_dict().items()}

    for name in (
        "search_knowledge_base",
        "read_knowledge_article",
        "poll_resource_events",
        "edit_knowledge_article",
    ):
        assert answer(name, ungranted) == answer(name, random_id)
        assert answer(name, random_id)["code"] == "not_found"


def test_article_from_another_knowledge_base_is_not_found(store, kb, articles) -> None:
    other = str(store.create_knowledge_base("Other"))
    error = fails(
        store, "read_knowledge_article", knowledge_base_id=other, article_id=articles["reset"]
    )
    assert error["code"] == "not_found"


def test_an_id_of_another_kind_of_aggregate_is_not_found(store, kb, articles) -> None:
    """Knowledge bases, articles and edit receipts share one id space in the log: an article's
    id where a knowledge base's belongs, or the reverse, or a receipt's, is simply not found."""
    reset = articles["reset"]
    version = call(store, "read_knowledge_article", knowledge_base_id=kb, article_id=reset)
    edit = {"content": "x", "expected_version": version["updated_at"], "idempotency_key": "k1"}
    call(store, "edit_knowledge_article", knowledge_base_id=kb, article_id=reset, **edit)
    receipt = str(receipt_id(uuid.UUID(kb), "k1"))  # the EditReceipt aggregate that edit wrote
    head = store.head()
    for wrong in (kb, receipt):
        for name, arguments in [
            ("read_knowledge_article", {"knowledge_base_id": kb, "article_id": wrong}),
            ("edit_knowledge_article", {"knowledge_base_id": kb, "article_id": wrong, **edit,
                                        "idempotency_key": f"k-{wrong}"}),
        ]:  # fmt: skip
            assert fails(store, name, **arguments)["code"] == "not_found", (name, wrong)
        for name, arguments in [
            ("search_knowledge_base", {"knowledge_base_id": reset, "query": "password"}),
            ("poll_resource_events", {"resource_type": "knowledge_base", "resource_id": reset}),
        ]:
            assert fails(store, name, **arguments)["code"] == "not_found", name
    assert store.head() == head  # nothing written


GOOD_EDIT = {
    "article_id": None,
    "content": "x",
    "expected_version": "2026-11-30T09:00:00.000000Z",
    "idempotency_key": "k",
}

BAD_INPUTS = [
    ("search_knowledge_base", {"query": "ok"}, "knowledge_base_id", "drop"),
    ("search_knowledge_base", {"query": "a"}, "query", None),
    ("search_knowledge_base", {"query": "a" * 201}, "query", None),
    ("search_knowledge_base", {"query": "ok", "limit": 0}, "limit", None),
    ("search_knowledge_base", {"query": "ok", "limit": 21}, "limit", None),
    ("search_knowledge_base", {"query": "ok", "limit": "5"}, "limit", None),
    ("search_knowledge_base", {"query": 12}, "query", None),
    ("search_knowledge_base", {"query": "ok", "color": "red"}, "color", None),
    ("read_knowledge_article", {}, "article_id", None),
    (
        "edit_knowledge_article",
        {**GOOD_EDIT, "expected_version": "yesterday"},
        "expected_version",
        None,
    ),
    (
        "edit_knowledge_article",
        {**GOOD_EDIT, "expected_version": "2026-11-30T09:00:00"},
        "expected_version",
        None,
    ),
    ("edit_knowledge_article", {**GOOD_EDIT, "idempotency_key": ""}, "idempotency_key", None),
    ("edit_knowledge_article", {**GOOD_EDIT, "content": None}, "content", None),
    ("edit_knowledge_article", {**GOOD_EDIT, "title": 5}, "title", None),
    (
        "edit_knowledge_article",
        {k: v for k, v in GOOD_EDIT.items() if k != "idempotency_key"},
        "idempotency_key",
        None,
    ),
    ("poll_resource_events", {"resource_type": "knowledge_base", "limit": 101}, "limit", None),
    (
        "poll_resource_events",
        {"resource_type": "knowledge_base", "after_sequence": -1},
        "after_sequence",
        None,
    ),
    (
        "poll_resource_events",
        {"resource_type": "knowledge_base", "after_sequence": 1.5},
        "after_sequence",
        None,
    ),
]


@pytest.mark.parametrize(("name", "arguments", "field", "mode"), BAD_INPUTS)
def test_bad_input_is_invalid_argument_naming_the_field(
    store, kb, articles, name, arguments, field, mode
) -> None:
    args = dict(arguments)
    if mode != "drop":
        key = "resource_id" if name == "poll_resource_events" else "knowledge_base_id"
        args.setdefault(key, kb)
    if "article_id" in args and args["article_id"] is None:
        args["article_id"] = articles["reset"]
    if name == "read_knowledge_article":
        args.pop("article_id", None)
    head = store.head()
    error = fails(store, name, **args)
    assert error["code"] == "invalid_argument"
    assert error["field"] == field
    assert field in error["message"]
    assert store.head() == head
