"""The day generator: a simulated support day, every detail fixed by one integer seed.

A day is 400 articles, 120 questions and 300 saves by people spread over 8 hours. Popularity is
Zipf (s = 0.9) over one ranking of the articles, used both for what people ask about and for
what people save (the articles people ask about are the ones they keep fixing). The uniform
control variant keeps every question and every save time and kind, and only spreads the saves'
targets uniformly over the articles. Nothing here touches the store: a `Day` is a script."""

from __future__ import annotations

import bisect
import itertools
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from kbes.sims import text

DAY_START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
"""Simulated 09:00 UTC on a Monday; every run of every seed starts here."""

HOUR = 3_600_000_000
"""One hour in microseconds: day offsets are integer microseconds, the log's resolution."""

Variant = Literal["popularity", "uniform"]
SaveKind = Literal["content", "retitle", "unpublish"]

SAVE_KINDS: tuple[tuple[SaveKind, float], ...] = (
    ("content", 0.85),
    ("retitle", 0.10),
    ("unpublish", 0.05),
)
"""Of the saves, 85% change content, 10% also retitle, 5% unpublish (the article's mix)."""


@dataclass(frozen=True)
class DayParameters:
    """The knobs of a day; the defaults are the source article's."""

    articles: int = 400
    questions: int = 120
    saves: int = 300
    hours: int = 8
    zipf: float = 0.9

    def __post_init__(self) -> None:
        if self.articles < 2:
            raise ValueError("a day needs at least 2 articles (the agent reads two hits)")
        if self.articles > len(text.all_titles()):
            raise ValueError(f"at most {len(text.all_titles())} articles have distinct titles")
        if self.questions < 1 or self.saves < 0 or self.hours < 1:
            raise ValueError("questions >= 1, saves >= 0 and hours >= 1, please")
        if self.zipf < 0:
            raise ValueError("the Zipf exponent must be >= 0 (0 is uniform popularity)")

    @property
    def length(self) -> int:
        """The day's length in microseconds."""
        return self.hours * HOUR


@dataclass(frozen=True)
class Save:
    """A person's save at `at` (µs after the day's start): last writer wins, no version."""

    at: int
    article: int
    kind: SaveKind
    title: str | None = None
    content: str | None = None


@dataclass(frozen=True)
class Question:
    """A question about `article` (by popularity), asked at `at`; `query` is what the agent
    types into search: the content words of the article's title at that moment."""

    at: int
    number: int
    article: int
    query: str


@dataclass(frozen=True)
class Day:
    seed: int
    variant: Variant
    parameters: DayParameters
    titles: list[str]
    contents: list[str]
    rank: list[int]
    """`rank[i]` is article i's popularity rank, 1 = most popular."""
    questions: list[Question]
    saves: list[Save]
    weights: list[float] = field(repr=False)
    """Zipf weight of each rank (index 0 = rank 1), normalised to sum to 1."""

    @property
    def start(self) -> datetime:
        return DAY_START

    def instant(self, at: int) -> datetime:
        return DAY_START + timedelta(microseconds=at)

    def top_share(self, n: int = 10) -> tuple[float, float, float]:
        """Share of the questions, of the saves, and of the Zipf weight, on the top `n` ranks."""
        top = {i for i, r in enumerate(self.rank) if r <= n}
        q = sum(1 for x in self.questions if x.article in top) / max(1, len(self.questions))
        s = sum(1 for x in self.saves if x.article in top) / max(1, len(self.saves))
        return q, s, sum(self.weights[:n])


def zipf_weights(n: int, s: float) -> list[float]:
    raw = [k**-s for k in range(1, n + 1)]
    total = sum(raw)
    return [w / total for w in raw]


def generate_day(seed: int, parameters: DayParameters, variant: Variant = "popularity") -> Day:
    """The day for `seed`. Both variants share articles, ranking, questions, save times and
    kinds; only the saves' targets (and so the text of the saves) differ."""
    p = parameters
    base = random.Random(f"kbes-sim day {seed}")
    titles = base.sample(text.all_titles(), p.articles)
    contents = [text.body(base, t) for t in titles]
    order = list(range(p.articles))
    base.shuffle(order)
    rank = [0] * p.articles
    for r, i in enumerate(order, 1):
        rank[i] = r
    by_rank = order  # by_rank[r - 1] is the article of rank r
    weights = zipf_weights(p.articles, p.zipf)
    cumulative = list(itertools.accumulate(weights))

    def popular() -> int:
        return by_rank[min(bisect.bisect_left(cumulative, base.random()), p.articles - 1)]

    question_times = sorted(base.randrange(p.length) for _ in range(p.questions))
    question_targets = [popular() for _ in range(p.questions)]
    save_times = sorted(base.randrange(p.length) for _ in range(p.saves))
    kind_names = [k for k, _ in SAVE_KINDS]
    kind_weights = [w for _, w in SAVE_KINDS]
    save_kinds: list[SaveKind] = [base.choices(kind_names, kind_weights)[0] for _ in save_times]

    # Walk the day in time order, so each save lands on an article that is published at that
    # moment (nobody unpublishes twice) and each question's query uses the current title.
    targets = random.Random(f"kbes-sim saves {seed} {variant}")
    published = [True] * p.articles
    current_titles = list(titles)
    current_contents = list(contents)
    taken = set(titles)
    saves: list[Save] = []
    questions: list[Question] = []
    timeline = sorted(
        [(t, 0, n) for n, t in enumerate(save_times)]
        + [(t, 1, n) for n, t in enumerate(question_times)]
    )
    for at, what, n in timeline:
        if what == 1:
            article = question_targets[n]
            questions.append(Question(at, n + 1, article, text.keywords(current_titles[article])))
            continue
        if not any(published):
            continue
        while True:
            if variant == "uniform":
                article = targets.randrange(p.articles)
            else:
                index = bisect.bisect_left(cumulative, targets.random())
                article = by_rank[min(index, p.articles - 1)]
            if published[article]:
                break
        kind = save_kinds[n]
        if kind == "unpublish":
            published[article] = False
            saves.append(Save(at, article, kind))
        elif kind == "retitle":
            title = text.new_title(targets, current_titles[article], taken)
            taken.add(title)
            content = text.retitled_body(targets, title, current_contents[article])
            current_titles[article], current_contents[article] = title, content
            saves.append(Save(at, article, kind, title=title, content=content))
        else:
            content = text.revise(targets, current_titles[article], current_contents[article])
            current_contents[article] = content
            saves.append(Save(at, article, kind, content=content))
    return Day(seed, variant, p, titles, contents, rank, questions, saves, weights)
