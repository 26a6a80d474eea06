"""The server's background catch-up (kbes/store/keeping_up.py) and the keyword index's two
homes (projections/keyword_index.py: in memory below `KBES_KEYWORD_FOLDER_FROM` articles, a
folder from there), with real processes, on SQLite and on PostgreSQL (every `kbes serve` sharing
one views file, as processes on one machine may, so a kill leaves the next one its views and
folders half-done):

- a `kbes serve` killed with SIGKILL while its background thread catches its open indexes up
  (one in memory, one in a folder) under another process's saves, publishes and unpublishes;
- a `kbes serve` killed around the moment a knowledge base it searches grows past the threshold
  and its index moves from memory to a folder built whole;
- read-after-write through a `kbes serve` whose background thread races its searches.

The writer is this process, with a store of its own (`Writer`): each write counts as
acknowledged once its call returned. After each kill a new server searches every article's
words, and each search must return exactly the articles the acknowledged writes say hold the
word (cross-checked against the log read afresh, kill_loop.Truth), cited at their current
version: every published save found, no unpublished or draft article ever shown. Run with -s
to see the counts."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tantivy
from kill_loop import FILLER, Truth
from mcp_wire import Server, ServerGone

from kbes import open_store
from kbes.projections import keyword_schema as K
from kbes.projections.keyword_index import SOURCE_TABLE

pytestmark = pytest.mark.slow

KILLS_A = 5
ROUNDS_B = 5
OPS_C = 24
WAIT_SECONDS = 30.0
"""How long a check waits for the server's background thread to commit a folder (a failure
past it: the thread does nothing)."""


# The backends ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install -e '.[test]'")
    from pg_server import running_pg

    yield from running_pg()


@dataclass
class Place:
    """One test's database, the environment of its servers, and the views file they share
    (their keyword folders are beside it)."""

    name: str
    db: str
    env: dict[str, str]
    views: Path
    writer_views: str | None
    """The test process's own views file (PostgreSQL), apart from the servers'."""

    def folder(self, kb: str) -> Path:
        return Path(f"{self.views}.keyword") / kb

    def folder_state(self, kb: str) -> str:
        """Where a knowledge base's folder stands, for the counts."""
        if not self.folder(kb).exists():
            return "no folder yet"
        return "folder committed" if self.folder_position(kb) else "folder without a commit"

    def folder_position(self, kb: str) -> int:
        """The log position the knowledge base's folder last committed (0: no folder, or no
        commit beside these views), read from this process while a server may commit it."""
        folder = self.folder(kb)
        if not (folder / "meta.json").exists():
            return 0
        uri = f"{self.views.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=30)) as c:
            row = c.execute(f"SELECT id FROM {SOURCE_TABLE}").fetchone()
        for _ in range(50):
            try:  # a commit of the server may delete the files of the meta.json just read
                index = tantivy.Index(K.SCHEMA, path=os.fspath(folder), reuse=True)
                K.register(index)
                return K.read_position(index.searcher(), str(row[0]))[0]
            except ValueError:
                time.sleep(0.01)
        raise AssertionError(f"the folder {folder} stayed unreadable")


@pytest.fixture(params=["sqlite", "postgresql"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    search = {"KBES_SEARCH": "keyword", "KBES_LOCK_TIMEOUT": "60"}
    if request.param == "sqlite":
        db = tmp_path / "k.sqlite"
        return Place("sqlite", str(db), {"KBES_DB": str(db), **search}, db, None)
    url = request.getfixturevalue("pg").create_database()
    views = tmp_path / "views-servers.sqlite"
    env = {"KBES_DB": url, "KBES_VIEWS": str(views), **search}
    return Place("postgresql", url, env, views, str(tmp_path / "views-writer.sqlite"))


class Servers:
    """`kbes serve` processes over stdio (tests/mcp_wire.py), each killed at the test's end
    whatever happened."""

    def __init__(self, place: Place, folder_from: int, logs: Path) -> None:
        self.env = {**place.env, "KBES_KEYWORD_FOLDER_FROM": str(folder_from)}
        self.logs = logs
        self.started: list[Server] = []

    def start(self) -> Server:
        server = Server(self.env, "stdio", self.logs / f"serve-{len(self.started)}.log")
        self.started.append(server)
        server.open()
        return server

    def kill_all(self) -> None:
        for server in self.started:
            server.kill()


@pytest.fixture
def servers() -> Iterator[list[Servers]]:
    made: list[Servers] = []
    yield made
    for each in made:
        each.kill_all()


def kill(server: Server) -> None:
    """SIGKILL the server; it must not have ended by itself before."""
    server.kill()
    assert server.process.returncode == -signal.SIGKILL, (
        f"kbes serve ended by itself ({server.process.returncode}): "
        + server.log.read_text(errors="replace")[-3000:]
    )


# The writer ------------------------------------------------------------------------------------


@dataclass
class Mine:
    """One article as this process's acknowledged writes left it. Its title holds a word of its
    own, and each version of its content one more (ending in a digit, so the stemmer leaves
    them whole)."""

    kb: str
    n: int
    published: bool
    version: int = 0

    @property
    def title_word(self) -> str:
        return f"ka{self.n}t0"

    @property
    def word(self) -> str:
        return f"ka{self.n}v{self.version}"

    @property
    def title(self) -> str:
        return f"Note {self.title_word}"

    @property
    def content(self) -> str:
        return f"{self.word} {FILLER[self.n % len(FILLER)]}"

    def past_words(self) -> list[str]:
        return [f"ka{self.n}v{v}" for v in range(self.version)]


class Writer:
    """This process's store, writing as `kbes article` would; every write it makes is kept in
    `mine` once acknowledged (its call returned)."""

    def __init__(self, place: Place) -> None:
        self.store = open_store(place.db, views=place.writer_views)
        self.truth = Truth(self.store)
        self.mine: dict[str, Mine] = {}
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def close(self) -> None:
        self.store.close()

    def kb(self, name: str, published: int, unpublished: int = 0, drafts: int = 0) -> str:
        kb = str(self.store.create_knowledge_base(name))
        for _ in range(published + unpublished):
            self.add(kb, publish=True)
        for _ in range(drafts):
            self.add(kb, publish=False)
        for article in self.articles(kb)[published : published + unpublished]:
            self.toggle(article)
        return kb

    def articles(self, kb: str) -> list[str]:
        with self.lock:
            return [a for a, m in self.mine.items() if m.kb == kb]

    def add(self, kb: str, *, publish: bool) -> str:
        m = Mine(kb, len(self.mine), publish)
        article = str(self.store.add_article(kb, m.title, m.content, publish=publish))
        with self.lock:
            self.mine[article] = m
        self.counts["added" if publish else "drafted"] += 1
        return article

    def save(self, article: str) -> str:
        """A new content version; its old word."""
        m = self.mine[article]
        old = m.word
        new = Mine(m.kb, m.n, m.published, m.version + 1)
        self.store.save_article(m.kb, article, content=new.content)
        m.version += 1
        self.counts["saved"] += 1
        return old

    def toggle(self, article: str) -> None:
        m = self.mine[article]
        if m.published:
            self.store.unpublish_article(m.kb, article)
            self.counts["unpublished"] += 1
        else:
            self.store.publish_article(m.kb, article)
            self.counts["published"] += 1
        m.published = not m.published

    def step(self, rng: random.Random, kbs: list[str]) -> None:
        """A save (three in five) or a publish or unpublish, of a random article of `kbs`."""
        article = rng.choice([a for kb in kbs for a in self.articles(kb)])
        if rng.random() < 0.6:
            self.save(article)
        else:
            self.toggle(article)

    def writes(self) -> int:
        return sum(self.counts.values())


@pytest.fixture
def writer(place: Place) -> Iterator[Writer]:
    w = Writer(place)
    yield w
    w.close()


# Checking searches -----------------------------------------------------------------------------


def search(server: Server, kb: str, word: str) -> Any:
    return server.tool(
        "search_knowledge_base", {"knowledge_base_id": kb, "query": word, "limit": 20}
    )


class Checks:
    """Searches through a server compared with the acknowledged writes; what differs is kept."""

    def __init__(self, writer: Writer, rng: random.Random) -> None:
        self.writer = writer
        self.rng = rng
        self.problems: list[str] = []
        self.searches = 0

    def expected(self, kb: str, word: str) -> list[str]:
        """The articles of `kb` the acknowledged writes say a search for `word` finds."""
        with self.writer.lock:
            return sorted(
                a
                for a, m in self.writer.mine.items()
                if m.kb == kb and m.published and word in (m.title_word, m.word)
            )

    def one(self, server: Server, kb: str, word: str, when: str = "") -> None:
        """One search, against the acknowledged writes and the log (its current versions)."""
        self.searches += 1
        answer = search(server, kb, word)
        if answer.is_error:
            self.problems.append(f"{when}{word}: refused {answer.body}")
            return
        found = sorted(hit["article_id"] for hit in answer.body["hits"])
        expected = self.expected(kb, word)
        if found != expected:
            self.problems.append(f"{when}{word}: found {found}, acknowledged {expected}")
        truth = self.writer.truth.read()
        for hit in answer.body["hits"]:
            past = truth.articles.get(hit["article_id"])
            cited = hit["updated_at"]
            if past is not None and (cited, hit["title"]) == (past.updated_at, past.title):
                continue
            self.problems.append(
                f"{when}{word}: {hit['article_id']} cited at {cited}, "
                f"the log's current {past.updated_at if past else None}"
            )

    def knowledge_bases(self, server: Server, kbs: list[str], when: str, old: int = 10) -> None:
        """Every article's title word and current word, and `old` words of past versions (in
        no current version), searched; first, the log holds every acknowledged write."""
        truth = self.writer.truth.read()
        pasts = []
        for kb in kbs:
            for article in self.writer.articles(kb):
                m = self.writer.mine[article]
                past = truth.articles.get(article)
                if past is None or (past.published, past.title, past.content) != (
                    m.published,
                    m.title,
                    m.content,
                ):
                    self.problems.append(f"{when}the log lacks a write acknowledged: {m}")
                self.one(server, kb, m.title_word, when)
                self.one(server, kb, m.word, when)
                pasts += [(kb, w) for w in m.past_words()]
        for kb, word in self.rng.sample(pasts, min(old, len(pasts))):
            self.one(server, kb, word, when)


def report(test: str, place: Place, **counts: object) -> None:
    shown = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())
    print(f"\n{test} on {place.name}: {shown}")  # shown with -s


# (a) killed during background catch-ups ---------------------------------------------------------


def test_a_serve_killed_while_it_catches_up_in_the_background_loses_nothing(
    place: Place, writer: Writer, servers: list[Servers], tmp_path: Path
) -> None:
    """A server holds two indexes (one in memory: 8 articles; one in a folder: 30, with
    KBES_KEYWORD_FOLDER_FROM=20) and searches nothing more; this process saves, publishes and
    unpublishes their articles without pause; once the server's background thread has
    committed the folder (no search asked it to), the server is killed within half a second.
    A new server's searches then answer each acknowledged write, every time."""
    rng = random.Random(41)
    small = writer.kb("Small", published=5, unpublished=2, drafts=1)
    large = writer.kb("Large", published=24, unpublished=4, drafts=2)
    servers.append(pool := Servers(place, 20, tmp_path))
    checks = Checks(writer, rng)
    server = pool.start()
    checks.knowledge_bases(server, [small, large], "first server: ")
    assert place.folder_position(large) > 0, "a knowledge base of 30 articles has its folder"
    assert not place.folder(small).exists(), "one of 8 articles has its index in memory"
    for kill_n in range(KILLS_A):
        searched_at = place.folder_position(large)
        deadline = time.monotonic() + WAIT_SECONDS
        killer: threading.Timer | None = None
        while server.process.poll() is None:
            writer.step(rng, [small, large])
            if killer is None and place.folder_position(large) > searched_at:
                killer = threading.Timer(rng.uniform(0.0, 0.5), server.kill)
                killer.start()
            assert killer is not None or time.monotonic() < deadline, (
                f"the background catch-up never committed the folder in {WAIT_SECONDS} s"
            )
        assert killer is not None
        killer.join()
        kill(server)
        server = pool.start()
        checks.knowledge_bases(server, [small, large], f"after kill {kill_n + 1}: ")
    server.close()
    assert checks.problems == []
    report(
        "(a) killed during background catch-ups",
        place,
        kills=KILLS_A,
        writes_acknowledged=writer.writes(),
        **writer.counts,
        searches_after_restarts=checks.searches,
    )


# (b) killed while a knowledge base moves from memory to its folder ----------------------------


@dataclass
class Live:
    """The searches a thread made while the server ran, and what was wrong with them."""

    searches: int = 0
    problems: list[str] = field(default_factory=list)


def search_until_gone(
    server: Server, writer: Writer, kb: str, rng: random.Random, live: Live
) -> None:
    """Search a random article's title word, again and again until the server is gone: an
    article acknowledged before the search was sent is found if it was added published, never
    if it was drafted (no article changes status while this runs)."""
    try:
        while True:
            with writer.lock:
                mine = [
                    (a, m.title_word, m.published) for a, m in writer.mine.items() if m.kb == kb
                ]
            article, word, published = rng.choice(mine)
            try:
                answer = search(server, kb, word)
            except ServerGone:
                return
            live.searches += 1
            found = [] if answer.is_error else [h["article_id"] for h in answer.body["hits"]]
            if found != ([article] if published else []):
                live.problems.append(f"during the move, {word}: found {found}, {answer.body}")
    except Exception as e:  # counted, not lost in the thread
        live.problems.append(f"the searcher stopped: {e!r}")


def test_b_serve_killed_while_a_knowledge_base_moves_to_its_folder(
    place: Place, writer: Writer, servers: list[Servers], tmp_path: Path
) -> None:
    """KBES_KEYWORD_FOLDER_FROM=5. Each round a new knowledge base of 4 articles (an unpublish
    and a draft among them), its index in memory, grows one article at a time (a quarter of
    them drafts, with saves between) while a thread searches it through the server; the
    server is killed within a tenth of a second after the knowledge base reaches 4 to 6
    articles. A new server's searches answer right on every knowledge base so far, and the
    grown one's folder holds a commit."""
    rng = random.Random(53)
    servers.append(pool := Servers(place, 5, tmp_path))
    checks = Checks(writer, rng)
    server = pool.start()
    kbs: list[str] = []
    live = Live()
    where: Counter[str] = Counter()
    for r in range(ROUNDS_B):
        kb = writer.kb(f"Growing {r}", published=2, unpublished=1, drafts=1)
        kbs.append(kb)
        checks.knowledge_bases(server, [kb], f"round {r}, before: ")
        assert not place.folder(kb).exists(), "a knowledge base of 4 articles is in memory"
        searcher = threading.Thread(
            target=search_until_gone, args=(server, writer, kb, random.Random(r), live)
        )
        searcher.start()
        kill_at = rng.randint(4, 6)
        killer: threading.Timer | None = None
        while server.process.poll() is None:
            articles = writer.articles(kb)
            if killer is None and len(articles) >= kill_at:
                killer = threading.Timer(rng.uniform(0.0, 0.1), server.kill)
                killer.start()
            if rng.random() < 0.2:
                writer.save(rng.choice(articles))
            else:
                writer.add(kb, publish=rng.random() < 0.75)
            time.sleep(rng.uniform(0.0, 0.03))  # paced, so the searches fall between
        assert killer is not None
        killer.join()
        kill(server)
        searcher.join(timeout=120)
        assert not searcher.is_alive()
        where[place.folder_state(kb)] += 1
        server = pool.start()
        checks.knowledge_bases(server, kbs, f"round {r}, after the kill: ")
        assert place.folder_position(kb) > 0, f"round {r}: no folder after a search"
    server.close()
    assert live.problems == []
    assert checks.problems == []
    report(
        "(b) killed around the move to a folder",
        place,
        kills=ROUNDS_B,
        **where,
        writes_acknowledged=writer.writes(),
        **writer.counts,
        searches_during=live.searches,
        searches_after_restarts=checks.searches,
    )


# (c) read-after-write with the background thread -----------------------------------------------


def test_c_read_after_write_through_a_serve_that_keeps_up_in_the_background(
    place: Place, writer: Writer, servers: list[Servers], tmp_path: Path
) -> None:
    """KBES_KEYWORD_FOLDER_FROM=10: one knowledge base in memory (4 articles), one in a
    folder (12). After each acknowledged save, publish or unpublish, the server is asked at
    once, and again 100 ms later (when its background thread has most likely caught up
    first): each time the new words found, the old ones not, an unpublished article nowhere.
    Then, asked nothing, the server's background thread commits a save to the folder."""
    rng = random.Random(67)
    small = writer.kb("Small", published=3, drafts=1)
    large = writer.kb("Large", published=10, unpublished=2)
    servers.append(pool := Servers(place, 10, tmp_path))
    checks = Checks(writer, rng)
    server = pool.start()
    checks.knowledge_bases(server, [small, large], "first: ")
    assert place.folder_position(large) > 0 and not place.folder(small).exists()
    ahead = 0
    for i in range(OPS_C):
        kb = (small, large)[i % 2]
        article = rng.choice(writer.articles(kb))
        m = writer.mine[article]
        if rng.random() < 0.7:
            words = [m.title_word, writer.save(article), m.word]
        else:
            writer.toggle(article)
            words = [m.title_word, m.word]
        head = writer.store.head()
        for when in ("at once", "100 ms later"):
            if when != "at once":
                time.sleep(0.1)
                ahead += kb == large and place.folder_position(large) >= head
            for word in words:
                checks.one(server, kb, word, f"op {i} ({when}): ")
    article = next(a for a in writer.articles(large) if writer.mine[a].published)
    writer.save(article)  # a draft's or an unpublished article's would change no index
    head = writer.store.head()
    deadline = time.monotonic() + WAIT_SECONDS
    while place.folder_position(large) < head:
        assert time.monotonic() < deadline, "the background thread never caught the folder up"
        time.sleep(0.01)
    checks.knowledge_bases(server, [small, large], "last: ")
    server.close()
    assert checks.problems == []
    report(
        "(c) read-after-write",
        place,
        writes_acknowledged=writer.writes(),
        **writer.counts,
        searches=checks.searches,
        folder_caught_up_in_the_background_before_the_later_search=f"{ahead}/{OPS_C // 2}",
    )


# (d) the bug the checks above found -------------------------------------------------------


def test_d_an_article_republished_between_two_searches_is_cited_at_its_current_version(
    tmp_path: Path,
) -> None:
    """Found by the tests above (their hits cited a version before an unpublish and republish
    that one background catch-up folded together). Before the fix `read_knowledge_article`
    cited the republished version and search the one before it, which `kbes audit` calls gone
    ("unpublished at ..., republished at ..."), while a fresh index cited the current one."""
    with closing(open_store(tmp_path / "k.sqlite")) as store:
        kb = store.create_knowledge_base("Republished")
        article = store.add_article(kb, "Alpha", "alphaword text", publish=True)
        assert [h.article_id for h in store.search(kb, "alphaword", 5)] == [str(article)]
        store.unpublish_article(kb, article)
        store.publish_article(kb, article)
        current = store.read_article(kb, article).updated_at
        cited = [(h.article_id, h.updated_at) for h in store.search(kb, "alphaword", 5)]
        assert cited == [(str(article), current)]
