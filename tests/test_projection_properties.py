"""Property: for any history of commands, the projections equal a fold of the log, and
`rebuild` reproduces them exactly."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from views_dump import dump

from kbes import KnowledgeBaseStore, call_tool, format_timestamp, open_store
from kbes.domain.article import EVENT_TYPES, Article
from kbes.domain.errors import DomainError
from kbes.domain.knowledge_base import KnowledgeBase
from kbes.tools.codes import KbesError

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "reset",
    "password",
    "billing",
    "café",
    "zeta",
    "Straße",
    "東京",
]

OPS = [
    "kb",
    "add",
    "add_draft",
    "save",
    "retitle",
    "publish",
    "unpublish",
    "edit",
    "stale_edit",
    "catch_up",
]

command = st.tuples(
    st.sampled_from(OPS),
    st.integers(min_value=0, max_value=10_000),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
)


def run(store: KnowledgeBaseStore, commands: list[tuple[str, int, list[str]]]) -> None:
    kbs = [str(store.create_knowledge_base("First"))]
    articles: list[tuple[str, str]] = []
    for op, n, words in commands:
        text = " ".join(words)
        kb = kbs[n % len(kbs)]
        try:
            if op == "kb":
                kbs.append(str(store.create_knowledge_base(f"KB {len(kbs)}")))
            elif op in ("add", "add_draft"):
                added = store.add_article(kb, f"{text} {n}", text, publish=op == "add")
                articles.append((kb, str(added)))
            elif not articles:
                continue
            elif op == "catch_up":
                store.catch_up()
            else:
                akb, aid = articles[n % len(articles)]
                if op == "save":
                    store.save_article(akb, aid, content=f"{text} saved {n}")
                elif op == "retitle":
                    store.save_article(akb, aid, content=text, title=f"{words[0]} title {n}")
                elif op == "publish":
                    store.publish_article(akb, aid)
                elif op == "unpublish":
                    store.unpublish_article(akb, aid)
                else:
                    current = store.get_article(aid).updated_at
                    version = format_timestamp(current)
                    if op == "stale_edit":
                        version = "2020-01-01T00:00:00.000000Z"
                    call_tool(
                        store,
                        "edit_knowledge_article",
                        {
                            "knowledge_base_id": akb,
                            "article_id": aid,
                            "content": f"edit {text}",
                            "expected_version": version,
                            "idempotency_key": f"k{n}-{len(text)}",
                        },
                    )
        except (DomainError, KbesError):
            pass  # refusals (publishing twice, stale versions, ...) write nothing


def fold(store: KnowledgeBaseStore) -> dict[str, list[tuple[Any, ...]]]:
    """An independent fold of the raw notification log into the views' shape."""
    kbs: dict[str, tuple[Any, ...]] = {}
    arts: dict[str, dict[str, Any]] = {}
    versions: list[tuple[Any, ...]] = []
    start = 1
    while True:
        page = store.log.recorder.select_notifications(start=start, limit=1000)
        if not page:
            break
        for n in page:
            e = store.log.mapper.to_domain_event(n)
            at = format_timestamp(e.timestamp)
            if isinstance(e, KnowledgeBase.Created):
                kbs[str(e.originator_id)] = (str(e.originator_id), e.name, at)
            if not isinstance(e, Article.Event):
                continue
            aid = str(e.originator_id)
            versions.append((aid, e.originator_version, at, EVENT_TYPES[type(e)], n.id))
            if isinstance(e, Article.Drafted):
                arts[aid] = dict(
                    kb=str(e.knowledge_base_id),
                    title=e.title,
                    content=e.content,
                    status="draft",
                    created=at,
                )
            a = arts[aid]
            if isinstance(e, Article.Published):
                a["status"] = "published"
            elif isinstance(e, Article.Unpublished):
                a["status"] = "unpublished"
            elif isinstance(e, Article.Saved):
                a["content"] = e.content
            elif isinstance(e, Article.Retitled):
                a["title"], a["content"] = e.title, e.content
            a["version"], a["updated"] = e.originator_version, at
        start = page[-1].id + 1
    return {
        "view_knowledge_bases": sorted(kbs.values()),
        "view_articles": sorted(
            (
                aid,
                a["kb"],
                a["title"],
                a["content"],
                a["status"],
                a["version"],
                a["updated"],
                a["created"],
            )
            for aid, a in arts.items()
        ),
        "view_article_versions": sorted(versions),
        "keyword_index": sorted(
            (a["kb"], aid, a["title"], a["content"], a["updated"])
            for aid, a in arts.items()
            if a["status"] == "published"
        ),
    }


def check(commands: list[tuple[str, int, list[str]]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # A throwaway database: synchronous=OFF only skips fsync; the code paths are the same.
        store = open_store(Path(tmp) / "prop.sqlite", synchronous="OFF")
        try:
            run(store, commands)
            store.catch_up()
            views = dump(store.views)
            assert views == fold(store)
            store.rebuild()
            assert dump(store.views) == views
        finally:
            store.close()


@settings(max_examples=60, deadline=None)
@given(st.lists(command, max_size=60))
def test_short_histories(commands) -> None:
    """Small histories, which hypothesis can shrink to a minimal counterexample."""
    check(commands)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=1000, max_value=3000))
def test_long_histories(seed, length) -> None:
    """Thousands of commands per history, expanded from a hypothesis-drawn seed."""
    rnd = random.Random(seed)
    commands = [
        (rnd.choice(OPS), rnd.randrange(10_000), rnd.choices(WORDS, k=rnd.randint(1, 6)))
        for _ in range(length)
    ]
    check(commands)
