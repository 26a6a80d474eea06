"""The datasets the rows measure: deterministic article text, and logs built through the
product's own save path (and the same shape of feed for the baseline)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from uuid import UUID

from kbes import Article, KnowledgeBaseStore, SystemClock, next_timestamp, open_store
from kbes.sims.baseline import Baseline
from kbes.sims.bench.config import Progress


class Corpus:
    """Deterministic article text: a Zipf-distributed vocabulary for the content, topic words
    for titles, and queries an agent would type (two title words, sometimes a common word) or
    ask (`question`)."""

    SYLLABLES = tuple(f"{consonant}{vowel}" for consonant in "bkplmnrstvdg" for vowel in "aeiou")

    def __init__(self, seed: int = 7, vocabulary: int = 20_000) -> None:
        self.random = random.Random(seed)
        words = [
            "".join(parts)
            for parts in itertools.islice(
                itertools.chain(
                    itertools.product(self.SYLLABLES, repeat=2),
                    itertools.product(self.SYLLABLES, repeat=3),
                ),
                vocabulary,
            )
        ]
        self.random.shuffle(words)
        self.words = words
        self.weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(vocabulary)))
        self.topic_words = words[200:]

    def content(self, n: int = 100) -> str:
        return " ".join(self.random.choices(self.words, cum_weights=self.weights, k=n))

    def title(self) -> str:
        return " ".join(self.random.sample(self.topic_words, self.random.randint(3, 6))).title()

    def drafts(self, n: int) -> list[tuple[str, str]]:
        return [(self.title(), self.content()) for _ in range(n)]

    def query(self, title: str) -> str:
        words = title.lower().split()
        picked = self.random.sample(words, 2)
        if self.random.random() < 0.3:
            picked.append(self.random.choice(self.words[:50]))
        return " ".join(picked)

    QUESTION_OPENERS = ("how do I", "what is", "why does", "where can I find", "when should I")
    """English question words: in no generated article, so they change no score; a stop list
    may leave them out, and the common words beside them are what it cannot."""

    def question(self, title: str, rng: random.Random) -> str:
        """An agent's question about the article titled `title`: two of its title words and
        three of the corpus's 20 commonest words, shuffled, after a question opener.

        The search study's worst case (../shared/search-study/scale_build.py, "nl"): the
        common words stand for "the", "my", "do" in real text, which match nearly every
        article, so an OR query scores the whole knowledge base; in generated text no English
        stop list removes them. `rng` is the caller's, so asking questions leaves this
        corpus's own sequence (its articles and keyword queries) as it was."""
        picked = rng.sample(title.lower().split(), 2) + rng.sample(self.words[:20], 3)
        rng.shuffle(picked)
        return f"{rng.choice(self.QUESTION_OPENERS)} {' '.join(picked)}?"


# Building stores ----------------------------------------------------------------------------


def publish_generated(loader: KnowledgeBaseStore, kb: str, count: int, corpus: Corpus) -> list[str]:
    """`count` generated articles saved and published in `kb`, 2,000 a batch; their titles."""
    titles: list[str] = []
    while len(titles) < count:
        drafts = corpus.drafts(min(2000, count - len(titles)))
        loader.add_articles(kb, drafts, publish=True)
        titles += [title for title, _ in drafts]
    return titles


def bulk_store(path: Path) -> KnowledgeBaseStore:
    """A store for loading a throwaway dataset: synchronous=OFF (a power cut could lose it,
    and that is fine here); measurements reopen it at the default durability."""
    return open_store(path, synchronous="OFF")


def build_log(
    path: Path,
    *,
    knowledge_bases: int,
    events: int,
    articles_per_kb: int,
    seed: int = 11,
    progress: Progress | None = None,
) -> list[str]:
    """A log of `events` events through the product's save path: articles drafted and
    published, then rounds of one short save each on randomly picked articles, so every
    knowledge base's events are interleaved with the others'. Returns the knowledge base ids."""
    rng = random.Random(seed)
    clock = SystemClock()
    store = bulk_store(path)
    try:
        kbs = [store.create_knowledge_base(f"kb {i}") for i in range(knowledge_bases)]
        written = knowledge_bases
        articles: list[Article] = []
        for kb in kbs:
            batch = []
            for i in range(articles_per_kb):
                at = next_timestamp(clock, None)
                article = Article.draft(kb, f"article {i}", f"first text {i}", at=at)
                article.publish(at=next_timestamp(clock, article.updated_at))
                batch.append(article)
            store.save(*batch)
            written += 2 * len(batch)
            articles.extend(batch)
        rng.shuffle(articles)
        round_size = min(len(articles), 2000)
        while written < events:
            n = min(round_size, events - written)
            picked = rng.sample(articles, n)
            for article in picked:
                article.save(
                    f"saved text {written} {rng.random():.6f}",
                    at=next_timestamp(clock, article.updated_at),
                )
            store.save(*picked)
            written += n
            if progress and written % 100_000 < n:
                progress(f"  {written:,} of {events:,} events")
        return [str(kb) for kb in kbs]
    finally:
        store.close()


def baseline_log(
    path: Path, *, knowledge_bases: int, events: int, articles_per_kb: int, seed: int = 11
) -> list[str]:
    """The same shape of feed in the baseline's events table, inserted in bulk."""
    rng = random.Random(seed)
    baseline = Baseline(path)
    kbs = [baseline.create_knowledge_base() for _ in range(knowledge_bases)]
    articles = [
        (kb, str(UUID(int=rng.getrandbits(128)))) for kb in kbs for _ in range(articles_per_kb)
    ]
    rows = [(kb, article, "published", "2026-11-30T09:00:00.000000Z") for kb, article in articles]
    while len(rows) < events:
        kb, article = rng.choice(articles)
        rows.append((kb, article, "saved", "2026-11-30T09:00:00.000001Z"))
    db = baseline.db
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO events (knowledge_base_id, article_id, type, updated_at) VALUES (?, ?, ?, ?)",
        rows[:events],
    )
    db.execute("COMMIT")
    baseline.close()
    return kbs
