"""The staleness checks: every hour, every citation given so far, checked three ways.

- Ground truth: the article's current `updated_at` differs from the cited one, or it is
  unpublished ("gone"). Read from the aggregate, not through the tools.
- Title-only: re-search each cited title (its content words, as the agent types any query);
  a citation is caught when no hit carries exactly its title (the article was retitled or
  unpublished). A content edit under the same title looks fine.
- Re-read: `read_knowledge_article` of each cited article; stale when the version moved or the
  read says `gone`.
- Poll: `poll_resource_events` from a cursor kept between checks (pages of up to 100); stale
  when an event for the article is later than the cited version.
- Poll, then diff only what moved: the same poll pages, then `diff_knowledge_article` for each
  cited version whose article moved past it since the last check (the opt-in history tool);
  stale when a diff reports a change or the poll an unpublish. Its cost counts the poll's too.
- Listen, then read only what moved (kbes's own, no figure in the article): the agent listens
  to the current URI of each article it cites, from its first citation on. A notification is
  counted for each feed event of a listened article later than the version first cited (the
  version read, so every such event happened after the listener opened); the feed is the one
  the server's log tail reads, taken here from the poll strategy's pages at no cost of its own.
  At each check, one `read_knowledge_article` per article notified since the last check; stale
  when that read says `gone` or another version than the citation's. The server may fold
  several saves of one article within one look at the log into one notification, so the count
  is an upper bound; the reads are exact.

The re-read, poll, diff and listen strategies must equal the ground truth at every check, and the
title-only check must catch exactly the stale citations whose article was retitled or
unpublished since the read: anything else stops the run with a `SimulationError`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

from kbes import KbesError, format_timestamp, parse_timestamp
from kbes.sims.agent import Agent, Cited, SimulationError
from kbes.sims.day import HOUR, Day, Question
from kbes.sims.people import People
from kbes.sims.text import keywords
from kbes.sims.timeline import play_day

TITLE_SEARCH_LIMIT = 2
"""Hits asked for when re-searching a title, as for an answer: the exact title, when it still
exists, ranks first (its words are all in the title, which search weights above content)."""

POLL_PAGE = 100
STRATEGIES = ("title", "read", "poll", "diff", "listen")


@dataclass
class CheckFigures:
    """One hourly check of one run."""

    hour: int
    citations: int
    answers: int
    stale: int
    changed: int
    gone: int
    answers_with_stale: int
    stale_first: int
    """Stale citations that were the top hit of their answer (the article asked about)."""
    first_citations: int
    title_caught: int | None
    """None when the title-only check did not run (the control run)."""
    calls: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)
    notifications: int = 0
    """What a listener on the cited articles' current URIs heard since the last check."""


@dataclass
class StalenessRun:
    """All checks of one run, plus the calls spent setting the poll cursor before the day."""

    checks: list[CheckFigures]
    cursor_start_calls: int
    cursor_start_bytes: int


class Checker:
    """Runs the hourly checks for one agent, keeping the poll cursor between them."""

    def __init__(self, people: People, agent: Agent, *, title_check: bool = True) -> None:
        self.people = people
        self.agent = agent
        self.title_check = title_check
        self.cursor = 0
        self.latest: dict[str, tuple[datetime, str]] = {}
        self.moved: set[str] = set()
        self.diff_stale: set[tuple[str, str]] = set()
        self.listening: dict[str, datetime] = {}
        """Article -> the version first cited: its listener hears every later event."""
        self.notified: set[str] = set()
        self.notifications = 0
        self.heard: dict[str, datetime | None] = {}
        """Article -> the version its last notified read returned (None: gone)."""

    def start_cursor(self) -> tuple[int, int]:
        """Page the feed from 0 to its head before the day starts, so the first hourly poll
        resumes after the import. Returns (calls, bytes) spent, reported apart from the checks."""
        calls = size = 0
        while True:
            before = self.agent.meter.bytes["cursor"]
            page = self._poll_page("cursor")
            calls += 1
            size += self.agent.meter.bytes["cursor"] - before
            if not page:
                return calls, size

    def _poll_page(self, purpose: str) -> bool:
        """Poll one page from the cursor; True if there is more to fetch right away."""
        page = self.agent.poll(purpose, self.cursor, POLL_PAGE)
        if isinstance(page, KbesError):
            raise SimulationError(f"poll refused: {page.to_dict()}")
        for event in page.events:
            at = parse_timestamp(event.updated_at)
            self.latest[event.article_id] = (at, event.type)
            self.moved.add(event.article_id)
            since = self.listening.get(event.article_id)
            if since is not None and at > since:
                self.notifications += 1
                self.notified.add(event.article_id)
        self.cursor = page.next_sequence
        return page.has_more

    def check(self, hour: int, citations: list[Cited], answers: int) -> CheckFigures:
        meter = self.agent.meter
        calls_before = {s: meter.calls[f"check:{s}"] for s in STRATEGIES}
        bytes_before = {s: meter.bytes[f"check:{s}"] for s in STRATEGIES}

        started = time.perf_counter()
        truth: set[int] = set()
        gone: set[int] = set()
        retitled_or_gone: set[int] = set()
        current: dict[str, tuple[datetime, bool]] = {}
        for i, c in enumerate(citations):
            if c.article_id not in current:
                current[c.article_id] = self.people.truth(c.article_id)
            updated_at, published = current[c.article_id]
            if not published:
                truth.add(i)
                gone.add(i)
            elif updated_at != c.updated_at:
                truth.add(i)
            if any(
                s.kind in ("retitle", "unpublish") and s.updated_at > c.updated_at
                for s in self.people.history.get(c.article_id, ())
            ):
                retitled_or_gone.add(i)
        meter.seconds["check:truth"] += time.perf_counter() - started

        started = time.perf_counter()
        by_read = self._by_read(citations)
        meter.seconds["check:read"] += time.perf_counter() - started
        for c in citations:  # a listener opens on each newly cited article's current URI
            self.listening.setdefault(c.article_id, c.updated_at)
        started = time.perf_counter()
        by_poll = self._by_poll(citations)
        meter.seconds["check:poll"] += time.perf_counter() - started
        started = time.perf_counter()
        by_diff = self._by_diff(citations)
        meter.seconds["check:diff"] += time.perf_counter() - started
        started = time.perf_counter()
        by_listen = self._by_listen(citations)
        meter.seconds["check:listen"] += time.perf_counter() - started
        started = time.perf_counter()
        by_title = self._by_title(citations) if self.title_check else retitled_or_gone
        meter.seconds["check:title"] += time.perf_counter() - started

        for name, found in (
            ("re-read", by_read),
            ("poll", by_poll),
            ("diff", by_diff),
            ("listen", by_listen),
        ):
            if found != truth:
                raise SimulationError(
                    f"hour {hour}: the {name} strategy found {len(found)} stale citations, the "
                    f"ground truth {len(truth)}; missed {sorted(truth - found)[:5]}, "
                    f"false {sorted(found - truth)[:5]}"
                )
        if by_title != retitled_or_gone:
            raise SimulationError(
                f"hour {hour}: the title-only check caught {len(by_title)} citations; exactly "
                f"the {len(retitled_or_gone)} whose article was retitled or unpublished since the "
                f"read were expected (differences: {sorted(by_title ^ retitled_or_gone)[:5]})"
            )
        if not by_title <= truth:
            raise SimulationError(f"hour {hour}: the title-only check flagged a fresh citation")

        calls = {s: meter.calls[f"check:{s}"] - calls_before[s] for s in STRATEGIES}
        size = {s: meter.bytes[f"check:{s}"] - bytes_before[s] for s in STRATEGIES}
        calls["diff"] += calls["poll"]  # the diff strategy reads the same poll pages first
        size["diff"] += size["poll"]
        notifications, self.notifications = self.notifications, 0
        return CheckFigures(
            hour=hour,
            citations=len(citations),
            answers=answers,
            stale=len(truth),
            changed=len(truth - gone),
            gone=len(gone),
            answers_with_stale=len({citations[i].answer for i in truth}),
            stale_first=sum(1 for i in truth if citations[i].position == 0),
            first_citations=sum(1 for c in citations if c.position == 0),
            title_caught=len(by_title) if self.title_check else None,
            calls=calls,
            bytes=size,
            notifications=notifications,
        )

    def _by_read(self, citations: list[Cited]) -> set[int]:
        seen: dict[str, datetime | None] = {}
        for c in citations:
            if c.article_id in seen:
                continue
            result = self.agent.read("check:read", c.article_id)
            if isinstance(result, KbesError):
                if result.code != "gone":
                    raise SimulationError(f"re-read of a cited article: {result.to_dict()}")
                seen[c.article_id] = None
            else:
                seen[c.article_id] = parse_timestamp(result.updated_at)
        return {
            i
            for i, c in enumerate(citations)
            if seen[c.article_id] is None or seen[c.article_id] != c.updated_at
        }

    def _by_poll(self, citations: list[Cited]) -> set[int]:
        while self._poll_page("check:poll"):
            pass
        stale: set[int] = set()
        for i, c in enumerate(citations):
            latest = self.latest.get(c.article_id)
            if latest is not None and (latest[1] == "unpublished" or latest[0] > c.updated_at):
                stale.add(i)
        return stale

    def _by_diff(self, citations: list[Cited]) -> set[int]:
        """After the poll: one diff per cited version whose article moved past it since the
        last check, so the agent learns what changed without re-reading whole articles."""
        moved, self.moved = self.moved, set()
        done: set[tuple[str, str]] = set()
        for c in citations:
            key = (c.article_id, c.stamp)
            if c.article_id not in moved or key in done:
                continue
            done.add(key)
            latest_at, latest_type = self.latest[c.article_id]
            if latest_type == "unpublished":
                self.diff_stale.add(key)  # gone: the poll said so, there is nothing to diff
            elif latest_at > c.updated_at:
                result = self.agent.diff("check:diff", c.article_id, c.stamp)
                if isinstance(result, KbesError):
                    raise SimulationError(f"diff of a moved citation: {result.to_dict()}")
                if result.changed:
                    self.diff_stale.add(key)
        return {i for i, c in enumerate(citations) if (c.article_id, c.stamp) in self.diff_stale}

    def _by_listen(self, citations: list[Cited]) -> set[int]:
        """One read per article notified since the last check; a citation is stale when the
        last such read of its article returned another version, or `gone`."""
        notified, self.notified = self.notified, set()
        for article_id in sorted(notified):
            result = self.agent.read("check:listen", article_id)
            if isinstance(result, KbesError):
                if result.code != "gone":
                    raise SimulationError(f"read of a notified article: {result.to_dict()}")
                self.heard[article_id] = None
            else:
                self.heard[article_id] = parse_timestamp(result.updated_at)
        # An article never notified is as cited: its default is the citation's own version.
        return {
            i
            for i, c in enumerate(citations)
            if self.heard.get(c.article_id, c.updated_at) != c.updated_at
        }

    def _by_title(self, citations: list[Cited]) -> set[int]:
        still_there: dict[str, bool] = {}
        for c in citations:
            if c.title in still_there:
                continue
            result = self.agent.search("check:title", keywords(c.title), TITLE_SEARCH_LIMIT)
            if isinstance(result, KbesError):
                raise SimulationError(f"title search refused: {result.to_dict()}")
            still_there[c.title] = any(hit.title == c.title for hit in result.hits)
        return {i for i, c in enumerate(citations) if not still_there[c.title]}


def run_staleness(
    day: Day, people: People, agent: Agent, *, title_check: bool = True
) -> StalenessRun:
    """Play the day: people's saves, the agent's answers, and a check at the end of each hour.
    The control run skips the title-only check (the article reports none for it)."""
    checker = Checker(people, agent, title_check=title_check)
    cursor_calls, cursor_bytes = checker.start_cursor()
    citations: list[Cited] = []
    answers = 0
    checks: list[CheckFigures] = []

    def answer(question: Question) -> None:
        nonlocal answers
        citations.extend(agent.answer(question))
        answers += 1

    def check(at: int, hour: int) -> None:
        figures = checker.check(hour, citations, answers)
        checks.append(figures)
        if agent.trace.enabled:
            agent.trace.write("check", at=format_timestamp(day.instant(at)), **figures.__dict__)

    hours = range(1, day.parameters.hours + 1)
    play_day(day, people, agent, day.questions, answer, [(h * HOUR, h) for h in hours], check)
    return StalenessRun(checks, cursor_calls, cursor_bytes)
