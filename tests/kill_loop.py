"""The SIGKILL loop (issue 35, acceptance line 2): real `kbes serve`, `kbes import` and
`kbes rebuild` processes killed with SIGKILL at a random moment, on SQLite and PostgreSQL, with
keyword and hybrid search, then restarted and checked against the log.

    python tests/kill_loop.py                      # 120 trials, both backends (about 15 min)
    python tests/kill_loop.py --trials 24 --seed 7 --backends sqlite

Trials cycle through the backends, then the kinds, then `--search keyword|hybrid` (every kbes
process of the trial runs with that KBES_SEARCH), then the transport of the servers (stdio,
HTTP), so 24 trials cover every combination once. Each trial gets a knowledge base of its own
in one database per backend, which keeps every earlier trial's articles (and 20,000 drafts no
trial touches, for each rebuild to replay), so a later trial's rebuild replays them all.

- serve: an agent (tests/mcp_wire.py) edits five articles through `kbes serve --edits allow`,
  each edit with its idempotency key, and searches for each edit it is acknowledged; the server
  is killed at a random moment, or (half the trials) while a random edit is being answered
  (within 1.5 times the median answer time after sending it), and started again.
- import: `kbes import FOLDER --publish` of 30 files is killed at a random moment of a whole
  run's length; a server then searches the log as the kill left it; the import is run again
  to its end.
- rebuild: `kbes rebuild` is killed at a random moment of a whole run's length while an agent
  edits and searches through a server; then run again to its end.

After each kill: every acknowledged write is in the log exactly once (an edit's content in
one event of its article, at the acknowledged `updated_at`; an imported file's article drafted
once), and its idempotency key, sent again, replays without writing; the edit in flight at
the kill is wholly in the log with its receipt or wholly absent, and sent again it is written
exactly once; an import killed part-way wrote all of its files or none; and every search,
keyword or hybrid, finds exactly the articles the log says hold its word: the one article whose
current version holds it first (hybrid fills the rest with what is near in meaning, each a
current published article of the knowledge base, at its current version). At the end every
acknowledged write is looked for again in the whole log, and the views the processes left,
caught up, are compared with a replay of the log. Any difference is printed as it is found,
and counted; the exit status is 1 if any was found. Two tables follow: what was checked, and
where the kills fell (edits in flight and whether they were written, imports killed after
their commit, rebuilds killed with views half-built aside, runs that ended before their kill).

PostgreSQL: a throwaway cluster of tests/pg_server.py; every kbes process shares one views
file (KBES_VIEWS), as processes on one machine may, so a kill can leave its views and indexes
half-done for the next one."""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID, uuid5

from mcp_harness import KBES
from mcp_wire import Server, ServerGone
from views_dump import dump

from kbes import KnowledgeBaseStore, format_timestamp, open_store
from kbes.domain.article import Article
from kbes.domain.receipt import EditReceipt, receipt_id

KINDS = ("serve", "import", "rebuild")
BACKENDS = ("sqlite", "postgresql")
SEARCHES = ("keyword", "hybrid")
TRANSPORTS = ("stdio", "http")
ARTICLES = 5
"""Articles a serve or rebuild trial's agent edits."""
EDITS = 100
"""Edits an agent makes at most in one trial."""
FILES = 30
BALLAST = 20_000
"""Drafts in a knowledge base no trial touches, so that every rebuild has a log to replay
(drafts, so that no hybrid import or search embeds them)."""
GUESSED_SECONDS = 3.0
"""Files a import trial's folder holds."""
TOKEN = re.compile(r"\bkq\d+n\d+[vf]\d+\b")
"""The word that makes each version of each article findable alone: it ends in a digit, so
the stemmer leaves it whole."""
FILLER = (
    "Clean the filter every week and check the pump for noise.",
    "Refunds take five days; the invoice shows the date of payment.",
    "Reset the password from the security page of your account.",
    "The router restarts at night; its lights blink while it updates.",
    "Water the plants in the morning and keep them out of the wind.",
)


def token(trial: int, article: int, version: int, kind: str = "v") -> str:
    return f"kq{trial}n{article}{kind}{version}"


# What the log says -----------------------------------------------------------------------------


@dataclass
class Past:
    """One article as its events in the log say."""

    kb: str
    title: str = ""
    content: str = ""
    published: bool = False
    updated_at: str = ""
    drafted: int = 0
    contents: list[tuple[str, str]] = field(default_factory=list)
    """(content, updated_at) of each event that set the content: Drafted, Saved, Retitled."""


class Truth:
    """The log folded into what it says of each article, read on from where it was last read
    (the log only grows)."""

    def __init__(self, store: KnowledgeBaseStore) -> None:
        self.store = store
        self.position = 0
        self.articles: dict[str, Past] = {}
        self.receipts: set[str] = set()

    def read(self) -> Truth:
        log = self.store.log
        while True:
            page = log.recorder.select_notifications(self.position + 1, 1000)
            if not page:
                return self
            for notification in page:
                self._fold(log.mapper.to_domain_event(notification))
            self.position = page[-1].id

    def _fold(self, event: Any) -> None:
        if isinstance(event, EditReceipt.Recorded):
            self.receipts.add(str(event.originator_id))
            return
        if not isinstance(event, Article.Event):
            return
        at = format_timestamp(event.timestamp)
        past = self.articles.setdefault(
            str(event.originator_id), Past(str(event.knowledge_base_id))
        )
        past.updated_at = at
        if isinstance(event, Article.Drafted):
            past.drafted += 1
            past.title, past.content = event.title, event.content
        elif isinstance(event, Article.Retitled):
            past.title, past.content = event.title, event.content
        elif isinstance(event, Article.Saved):
            past.content = event.content
        elif isinstance(event, Article.Published):
            past.published = True
        elif isinstance(event, Article.Unpublished):
            past.published = False
        if isinstance(event, Article.Drafted | Article.Saved | Article.Retitled):
            past.contents.append((past.content, at))

    def in_kb(self, kb: str) -> dict[str, Past]:
        return {a: p for a, p in self.articles.items() if p.kb == kb}

    def holding(self, kb: str, word: str) -> list[str]:
        """The published articles of `kb` whose current title or content holds `word`."""
        return sorted(
            a
            for a, p in self.in_kb(kb).items()
            if p.published and word in TOKEN.findall(p.title + " " + p.content)
        )


# Counting --------------------------------------------------------------------------------------


@dataclass
class Ack:
    """One acknowledged write: an agent's edit (with its arguments, to send again) or an
    imported file (arguments empty)."""

    backend: str
    kb: str
    article: str
    word: str
    """The word only this write's content holds."""
    updated_at: str
    arguments: dict[str, Any]


class Tally:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str, str, str]] = Counter()
        self.problems: list[str] = []

    def add(self, row: tuple[str, str, str], what: str, n: int = 1) -> None:
        self.counts[(*row, what)] += n

    def problem(self, row: tuple[str, str, str], what: str, detail: str) -> None:
        self.add(row, what)
        line = f"PROBLEM {'/'.join(row)} {what}: {detail}"
        self.problems.append(line)
        print(line, flush=True)

    OUTCOMES = (
        ("trials", "trials"),
        ("acked", "acked writes"),
        ("retried", "keys resent"),
        ("lost", "lost"),
        ("doubled", "doubled"),
        ("half", "half-written"),
        ("searches", "searches after"),
        ("live", "searches during"),
        ("wrong", "wrong"),
        ("failed", "failed"),
    )
    KILLS = (
        ("killed", "killed"),
        ("finished before the kill", "ended before it"),
        ("in_flight", "edit in flight"),
        ("in flight, landed", "of which written"),
        ("killed after its commit", "import committed"),
        ("killed building aside", "rebuild half-built aside"),
    )

    def table(self, columns: tuple[tuple[str, str], ...]) -> str:
        rows = sorted({key[:3] for key in self.counts})
        head = ["backend", "kind", "search", *[title for _, title in columns]]
        lines = [head]
        for row in [*rows, ("all", "", "")]:
            picked = [k for k in self.counts if row[0] == "all" or k[:3] == row]
            sums = [sum(self.counts[k] for k in picked if k[3] == c) for c, _ in columns]
            lines.append([*row, *map(str, sums)])
        widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
        return "\n".join(
            "  ".join(
                cell.rjust(w) if i > 2 else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(line, widths, strict=True))
            )
            for line in lines
        )


# One backend -----------------------------------------------------------------------------------


class Backend:
    """One database the loop's trials share, the environment of its kbes processes, and the
    loop's own store on it (setup writes and reading the log, with views of its own)."""

    def __init__(self, name: str, db: str, work: Path) -> None:
        self.name = name
        self.db = db
        self.work = work
        env = {"KBES_DB": db, "KBES_LOCK_TIMEOUT": "60"}
        if db.startswith("postgresql"):
            env["KBES_VIEWS"] = str(work / "views-shared.sqlite")
        self.env = env
        self.store = open_store(
            db, views=str(work / "views-loop.sqlite") if "KBES_VIEWS" in env else None
        )
        self.truth = Truth(self.store)
        self.servers: list[Server] = []
        """Every server a trial started, stopped at its end whatever happened."""
        self.durations: dict[tuple[str, str], float] = {}
        """How long the last whole run of `kbes import` or `kbes rebuild` took here, by kind
        and search (a guess, BALLAST_SECONDS, until one has run)."""
        ballast = self.store.create_knowledge_base("Ballast")
        for start in range(0, BALLAST, 1_000):  # writes of a size PostgreSQL takes at once
            self.store.add_articles(
                ballast,
                [(f"Ballast {i}", FILLER[i % len(FILLER)]) for i in range(start, start + 1_000)],
                publish=False,
            )

    def kbes(self, search: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [KBES, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **self.env, "KBES_SEARCH": search},
        )

    def run_to_end(self, kind: str, search: str, *args: str) -> str:
        started = time.monotonic()
        process = self.kbes(search, *args)
        try:
            out, err = process.communicate(timeout=600)
        finally:
            if process.poll() is None:  # the loop stopped (SIGTERM, Ctrl-C) or gave up
                process.kill()
                process.wait(timeout=30)
        if process.returncode != 0:
            raise RuntimeError(f"kbes {' '.join(args)} failed ({process.returncode}): {err}")
        self.durations[(kind, search)] = time.monotonic() - started
        return out

    def duration(self, kind: str, search: str) -> float:
        return self.durations.get((kind, search), GUESSED_SECONDS)

    def server(self, search: str, transport: str, name: str) -> Server:
        server = Server({**self.env, "KBES_SEARCH": search}, transport, self.work / f"{name}.log")
        self.servers.append(server)
        return server


@contextmanager
def backends(names: list[str], work: Path) -> Iterator[dict[str, Backend]]:
    with ExitStack() as stack:
        found = {}
        for name in names:
            if name == "sqlite":
                db = str(work / "kill.sqlite")
            else:
                from pg_server import PgServer

                server = PgServer().start()
                stack.callback(server.stop)
                db = server.create_database()
            (work / name).mkdir()
            backend = Backend(name, db, work / name)
            stack.callback(backend.store.close)
            found[name] = backend
        yield found


# The trials ------------------------------------------------------------------------------------


class Loop:
    def __init__(self, seed: int, work: Path) -> None:
        self.rng = random.Random(seed)
        self.work = work
        self.tally = Tally()
        self.acks: list[Ack] = []

    def trial(self, n: int, backend: Backend, kind: str, search: str, transport: str) -> None:
        row = (backend.name, kind, search)
        self.tally.add(row, "trials")
        kb = str(backend.store.create_knowledge_base(f"Trial {n}"))
        try:
            if kind == "import":
                self.import_trial(n, row, backend, kb, search, transport)
            else:
                self.edit_trial(n, row, backend, kb, search, transport, kind)
        finally:
            while backend.servers:
                backend.servers.pop().kill()

    # serve and rebuild: an agent editing through a server -------------------------------------

    def edit_trial(
        self, n: int, row: tuple[str, str, str], backend: Backend, kb: str, search: str,
        transport: str, kind: str,
    ) -> None:  # fmt: skip
        ids = [
            str(a)
            for a in backend.store.add_articles(
                kb,
                [(f"Note {n}-{j}", f"{token(n, j, 0)} {FILLER[j]}") for j in range(ARTICLES)],
                publish=True,
            )
        ]
        truth = backend.truth.read()
        agent = Agent(
            self, row, backend, kb, n, ids, {a: truth.articles[a].updated_at for a in ids}
        )
        server = backend.server(search, transport, f"serve-{n}")
        if kind == "serve":
            # Half the kills at any moment of the server's life, half inside an edit: after a
            # random edit is sent, within one and a half times the median time the agent's
            # edits took to be answered (its transaction, or its answer, cut short).
            killer = threading.Timer(self.rng.uniform(0.3, 5.0), server.kill)
            if self.rng.random() < 0.5:
                agent.kill_at = (self.rng.randrange(5, 40), self.rng.uniform(0, 1.5))
            else:
                killer.start()
            agent.edit_until_gone(server)
            if killer.is_alive():
                killer.join()
            server.kill()  # if it ended by itself, that is a failure: said below
            ended = server.process.returncode
            self.tally.add(row, "killed")
            if ended != -signal.SIGKILL:
                self.tally.problem(row, "failed", f"kbes serve ended by itself ({ended})")
            server = backend.server(search, transport, f"serve-{n}-restarted")
            server.open()
        else:
            server.open()
            stop = threading.Event()
            editing = threading.Thread(target=agent.edit_until_gone, args=(server, stop))
            editing.start()
            agent.first.wait(timeout=120)  # the rebuild is killed among the agent's edits
            self.kill_mid_run(row, backend, "rebuild", search, ["rebuild"])
            stop.set()
            editing.join(timeout=300)
            assert not editing.is_alive(), "the agent is still waiting for an answer"
        try:
            agent.resend(server)
            self.check_searches(row, backend, kb, server)
            if kind == "rebuild":
                backend.run_to_end("rebuild", search, "rebuild")
                self.check_searches(row, backend, kb, server)
        finally:
            server.close()

    def kill_mid_run(
        self, row: tuple[str, str, str], backend: Backend, kind: str, search: str, args: list[str]
    ) -> None:
        """Start `kbes ARGS`, SIGKILL it at a random moment of a whole run's length."""
        process = backend.kbes(search, *args)
        try:
            # From a fifth of a whole run's length (a kbes process spends its first half second
            # importing) to its whole length.
            process.wait(timeout=self.rng.uniform(0.2, 1.0) * backend.duration(kind, search))
            self.tally.add(row, "finished before the kill")
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
            self.tally.add(row, "killed")
            if kind == "rebuild" and built_aside(backend):
                self.tally.add(row, "killed building aside")
        finally:
            if process.poll() is None:  # the loop stopped (SIGTERM, Ctrl-C)
                process.kill()
                process.wait(timeout=30)
        process.communicate()

    # import ------------------------------------------------------------------------------------

    def import_trial(
        self, n: int, row: tuple[str, str, str], backend: Backend, kb: str, search: str,
        transport: str,
    ) -> None:  # fmt: skip
        folder = backend.work / f"folder-{n}"
        folder.mkdir()
        for j in range(FILES):
            text = f"# Page {n}-{j}\n\n{token(n, j, 1, 'f')} {FILLER[j % len(FILLER)]}\n"
            (folder / f"page-{j}.md").write_text(text, encoding="utf-8")
        ids = [str(uuid5(UUID(kb), f"page-{j}.md")) for j in range(FILES)]
        args = ["import", str(folder), "--kb", kb, "--publish"]
        self.kill_mid_run(row, backend, "import", search, args)
        truth = backend.truth.read()
        written = [a for a in ids if a in truth.articles]
        self.tally.add(row, "killed after its commit", len(written) == FILES)
        published = [a for a in written if truth.articles[a].published]
        if len(written) not in (0, FILES) or published != written:
            self.tally.problem(
                row, "half", f"{len(written)} of {FILES} files drafted, {len(published)} published"
            )
        server = backend.server(search, transport, f"import-{n}")
        try:
            server.open()
            self.check_searches(row, backend, kb, server)  # the log as the kill left it
            backend.run_to_end("import", search, *args)
            truth = backend.truth.read()
            for j, article in enumerate(ids):
                past = truth.articles.get(article)
                word = token(n, j, 1, "f")
                at = next((at for c, at in past.contents if word in c), "") if past else ""
                ack = Ack(backend.name, kb, article, word, at, {})
                self.acks.append(ack)
                self.check_ack(row, truth, ack)
                if past is not None and past.drafted != 1:
                    self.tally.problem(row, "doubled", f"{article} drafted {past.drafted} times")
            self.check_searches(row, backend, kb, server)  # and after the import's rerun
        finally:
            server.close()

    # checks ------------------------------------------------------------------------------------

    def check_ack(self, row: tuple[str, str, str], truth: Truth, ack: Ack) -> None:
        self.tally.add(row, "acked")
        past = truth.articles.get(ack.article)
        times = written(past, ack.word)
        if not times:
            self.tally.problem(row, "lost", f"{ack.article} {ack.word}")
        elif len(times) > 1:
            self.tally.problem(row, "doubled", f"{ack.article} {ack.word} at {times}")
        elif times[0] != ack.updated_at:
            self.tally.problem(row, "wrong", f"{ack.article} at {times[0]}, acked {ack.updated_at}")

    def check_searches(
        self, row: tuple[str, str, str], backend: Backend, kb: str, server: Server
    ) -> None:
        """Search every current word of the knowledge base's articles (and some of their
        words of the past) through `server`, and compare with what the log says."""
        truth = backend.truth.read()
        articles = truth.in_kb(kb)
        words = sorted({w for p in articles.values() for w in TOKEN.findall(p.content)})
        past = sorted(
            {w for p in articles.values() for c, _ in p.contents for w in TOKEN.findall(c)}
        )
        words += self.rng.sample(past, min(3, len(past)))
        for word in words:
            self.tally.add(row, "searches")
            answer = search_call(server, kb, word)
            if answer.is_error:
                self.tally.problem(row, "failed", f"{word}: {answer.body}")
                continue
            wrong = judge(truth, kb, word, answer.body["hits"], row[2])
            if wrong:
                self.tally.problem(row, "wrong", f"{word}: {wrong}")


def built_aside(backend: Backend) -> bool:
    """Whether a killed rebuild left views part-built aside (the `_next` tables)."""
    path = backend.env.get("KBES_VIEWS", backend.db)
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60)) as c:
        found = c.execute("SELECT name FROM sqlite_master WHERE name LIKE 'view%next'").fetchall()
    return bool(found)


def written(past: Past | None, word: str) -> list[str]:
    """When each event of the article that wrote `word` was written."""
    return [at for c, at in (past.contents if past else []) if word in TOKEN.findall(c)]


def search_call(server: Server, kb: str, word: str) -> Any:
    return server.tool(
        "search_knowledge_base", {"knowledge_base_id": kb, "query": word, "limit": 20}
    )


def judge(truth: Truth, kb: str, word: str, hits: list[dict[str, Any]], search: str) -> str:
    """What is wrong with `hits` for `word`, by the log; empty if nothing."""
    expected = truth.holding(kb, word)
    found = [hit["article_id"] for hit in hits]
    if search == "keyword" and found != expected:
        return f"found {found}, the log says {expected}"
    if search == "hybrid" and expected and found[:1] != expected:
        return f"found first {found[:1]}, the log says {expected}"
    if len(set(found)) != len(found):
        return f"an article twice in {found}"
    for hit in hits:
        past = truth.articles.get(hit["article_id"])
        if past is None or past.kb != kb or not past.published:
            return f"{hit['article_id']} is not a published article of the knowledge base"
        if (hit["updated_at"], hit["title"]) != (past.updated_at, past.title):
            return f"{hit['article_id']} cited at {hit['updated_at']}, current {past.updated_at}"
    return ""


class Agent:
    """Edits a trial's articles in turn through a server, each with a key of its own, and
    searches for each acknowledged edit's word; remembers what was acknowledged and the edit
    in flight when the server went away."""

    def __init__(
        self, loop: Loop, row: tuple[str, str, str], backend: Backend, kb: str, trial: int,
        ids: list[str], versions: dict[str, str],
    ) -> None:  # fmt: skip
        self.loop, self.row, self.backend, self.kb = loop, row, backend, kb
        self.trial, self.ids, self.versions = trial, ids, versions
        self.mine: list[Ack] = []
        self.in_flight: dict[str, Any] | None = None
        self.acks = 0
        self.kill_at: tuple[int, float] | None = None
        """(edit, share): kill the server that share of the median answer time of the edits
        before it after sending that edit."""
        self.answered: list[float] = []
        """How long each acknowledged edit took to be answered."""
        self.first = threading.Event()
        """Set at the first acknowledged edit (or when the agent stops before one)."""

    def arguments(self, i: int) -> dict[str, Any]:
        j = i % len(self.ids)
        article = self.ids[j]
        return {
            "knowledge_base_id": self.kb,
            "article_id": article,
            "content": f"{token(self.trial, j, i + 1)} {FILLER[j]}",
            "expected_version": self.versions[article],
            "idempotency_key": f"edit-{self.trial}-{i}",
        }

    def edit_until_gone(self, server: Server, stop: threading.Event | None = None) -> None:
        try:
            self._edit_until_gone(server, stop)
        except Exception as e:  # in the rebuild trials' thread: counted, not just printed
            self.loop.tally.problem(self.row, "failed", f"the agent stopped: {e!r}")
        finally:
            self.first.set()

    def _edit_until_gone(self, server: Server, stop: threading.Event | None) -> None:
        try:
            server.open()
        except ServerGone:
            return
        i = 0
        while stop is None or not stop.is_set():
            if i == EDITS:  # enough: search the last word until the end
                try:
                    search_call(server, self.kb, TOKEN.findall(self.mine[-1].word)[0])
                except ServerGone:
                    return
                continue
            arguments = self.arguments(i)
            self.in_flight = arguments
            if self.kill_at is not None and self.kill_at[0] == i:
                delay = self.kill_at[1] * statistics.median(self.answered or [0.01])
                threading.Timer(delay, server.kill).start()
            sent = time.monotonic()
            try:
                answer = server.tool("edit_knowledge_article", arguments)
            except ServerGone:
                return
            self.answered.append(time.monotonic() - sent)
            self.in_flight = None
            if answer.is_error:
                self.loop.tally.problem(self.row, "failed", f"edit {i}: {answer.body}")
                return
            article = arguments["article_id"]
            self.versions[article] = answer.body["updated_at"]
            word = TOKEN.findall(arguments["content"])[0]
            ack = Ack(
                self.backend.name, self.kb, article, word, answer.body["updated_at"], arguments
            )
            self.mine.append(ack)
            self.acks += 1
            self.first.set()
            try:
                found = search_call(server, self.kb, word)
            except ServerGone:
                return
            self.loop.tally.add(self.row, "live")
            hits = [] if found.is_error else [h["article_id"] for h in found.body["hits"]]
            if hits[:1] != [article]:  # read-after-write, keyword or hybrid
                self.loop.tally.problem(self.row, "wrong", f"live search {word}: {found.body}")
            i += 1

    def resend(self, server: Server) -> None:
        """After the kill: the edit in flight was written whole or not at all, and sent again
        it is written exactly once; each acknowledged edit is in the log once, and its key sent
        again replays it without writing."""
        tally, row = self.loop.tally, self.row
        truth = self.backend.truth.read()
        if self.in_flight is not None:
            tally.add(row, "in_flight")
            arguments = self.in_flight
            past = truth.articles[arguments["article_id"]]
            word = TOKEN.findall(arguments["content"])[0]
            landed = len(written(past, word))
            receipt = str(receipt_id(UUID(self.kb), arguments["idempotency_key"])) in truth.receipts
            tally.add(row, "in flight, landed", bool(landed))
            if landed > 1 or bool(landed) != receipt:
                tally.problem(row, "half", f"in flight: {landed} saves, receipt {receipt}")
            answer = server.tool("edit_knowledge_article", arguments)
            if answer.is_error or answer.body["replay"] is not bool(landed):
                tally.problem(row, "failed", f"in flight sent again ({landed}): {answer.body}")
            else:
                self.mine.append(
                    Ack(
                        self.backend.name,
                        self.kb,
                        arguments["article_id"],
                        word,
                        answer.body["updated_at"],
                        arguments,
                    )
                )
        head = self.backend.truth.read().position
        for ack in self.mine:
            tally.add(row, "retried")
            answer = server.tool("edit_knowledge_article", ack.arguments)
            if answer.is_error or (answer.body["replay"], answer.body["updated_at"]) != (
                True,
                ack.updated_at,
            ):
                tally.problem(
                    row, "doubled", f"key {ack.arguments['idempotency_key']}: {answer.body}"
                )
        truth = self.backend.truth.read()
        if truth.position != head:
            tally.problem(
                row, "doubled", f"resending acknowledged keys wrote {truth.position - head} events"
            )
        for ack in self.mine:
            self.loop.check_ack(row, truth, ack)
        self.loop.acks += self.mine


def schedule(trials: int, names: list[str]) -> Iterator[tuple[int, str, str, str, str]]:
    """Every backend in turn, then every kind, then both searches, then both transports."""
    for n in range(trials):
        step = n // len(names)
        yield (
            n,
            names[n % len(names)],
            KINDS[step % 3],
            SEARCHES[(step // 3) % 2],
            TRANSPORTS[(step // 6) % 2],
        )


def final_sweep(loop: Loop, found: dict[str, Backend]) -> tuple[int, int, int, int]:
    """Every write acknowledged in any trial, against each whole log read afresh at the end,
    and the views the trials' processes left, caught up, against a replay of the log:
    (checked, lost, doubled, backends whose views differ)."""
    lost = doubled = differ = 0
    for name, backend in found.items():
        views = open_store(backend.db, views=backend.env.get("KBES_VIEWS"))
        try:
            views.catch_up()
            left = dump(views.views)
            views.rebuild()
            if dump(views.views) != left:
                differ += 1
                print(f"PROBLEM {name}: the views caught up differ from a replay of the log")
        finally:
            views.close()
        truth = Truth(backend.store).read()
        for ack in loop.acks:
            if ack.backend != name:
                continue
            past = truth.articles.get(ack.article)
            times = written(past, ack.word)
            lost += not times
            doubled += len(times) > 1 or (past is not None and past.drafted != 1)
    return len(loop.acks), lost, doubled, differ


def run(
    trials: int, names: list[str], seed: int, work: Path
) -> tuple[Loop, tuple[int, int, int, int]]:
    """The trials, in `work`; the loop (its tally) and the final sweep's counts."""
    loop = Loop(seed, work)
    with backends(names, work) as found:
        for n, name, kind, search, transport in schedule(trials, names):
            try:
                loop.trial(n, found[name], kind, search, transport)
            except Exception as e:  # a harness or a command gave up: count it, go on
                loop.tally.problem((name, kind, search), "failed", f"trial {n}: {e!r}")
            print(f"trial {n:3}: {name} {kind} --search {search} ({transport}) done", flush=True)
        return loop, final_sweep(loop, found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=120)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--workdir", type=Path, default=None, help="kept afterwards if given")
    args = parser.parse_args(argv)
    # SIGTERM (a maintainer's kill, a CI timeout) unwinds like Ctrl-C: servers and the
    # PostgreSQL cluster stopped, the temporary folder removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    seed = random.randrange(2**32) if args.seed is None else args.seed
    names = args.backends.split(",")
    started = time.monotonic()
    print(f"kill loop: {args.trials} trials on {', '.join(names)}, seed {seed}", flush=True)
    with ExitStack() as stack:
        if args.workdir is None:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kbes-kill-")))
        else:
            work = args.workdir
            work.mkdir(parents=True)
        loop, (checked, lost, doubled, differ) = run(args.trials, names, seed, work)
    print("\nwhat was checked after the kills:")
    print(loop.tally.table(Tally.OUTCOMES))
    print("\nwhere the kills fell:")
    print(loop.tally.table(Tally.KILLS))
    print(
        f"at the end, every acknowledged write read again from its whole log: {checked} checked, "
        f"{lost} lost, {doubled} doubled"
    )
    print(
        f"the views the processes left, caught up, equal a replay of the log on "
        f"{len(names) - differ} of {len(names)} backends"
    )
    print(f"{len(loop.tally.problems)} problems; {time.monotonic() - started:.0f} s; seed {seed}")
    return 1 if loop.tally.problems or lost or doubled or differ else 0


if __name__ == "__main__":
    sys.exit(main())
