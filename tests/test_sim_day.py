"""The day generator: one seed fixes everything, the mix and popularity are the article's, and
the generated knowledge base behaves like one under search (a task's words find its article)."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from kbes import call_tool
from kbes.projections import keyword_schema
from kbes.sims import text
from kbes.sims.day import HOUR, DayParameters, generate_day, zipf_weights
from kbes.sims.people import import_articles, open_day_store

SMALL = DayParameters(articles=80, questions=30, saves=80, hours=4)


def test_a_seed_fixes_the_whole_day() -> None:
    assert generate_day(3, SMALL) == generate_day(3, SMALL)
    assert generate_day(3, SMALL) != generate_day(4, SMALL)


def test_the_articles_default_day_has_the_articles_shape() -> None:
    day = generate_day(1, DayParameters())
    assert len(day.titles) == len(set(day.titles)) == 400
    assert len(day.questions) == 120 and len(day.saves) == 300
    sizes = [len(c.encode()) for c in day.contents]
    assert 1400 <= sum(sizes) / len(sizes) <= 1700, "articles are about 1.5 KB of text"
    assert all(0 <= q.at < 8 * HOUR for q in day.questions)
    assert all(0 <= s.at < 8 * HOUR for s in day.saves)
    assert [q.at for q in day.questions] == sorted(q.at for q in day.questions)
    assert sorted(day.rank) == list(range(1, 401))
    # Zipf s = 0.9 over 400 ranks puts 36.7% of the weight on the top 10 (the article's figure).
    assert round(100 * sum(zipf_weights(400, 0.9)[:10]), 1) == 36.7
    questions, saves, weight = day.top_share(10)
    assert round(weight * 100, 1) == 36.7
    assert 0.25 < questions < 0.5 and 0.2 < saves < 0.5


def test_save_mix_over_many_seeds_is_85_10_5() -> None:
    kinds: Counter[str] = Counter()
    for seed in range(1, 11):
        kinds.update(s.kind for s in generate_day(seed, DayParameters()).saves)
    total = sum(kinds.values())
    assert abs(kinds["content"] / total - 0.85) < 0.03
    assert abs(kinds["retitle"] / total - 0.10) < 0.02
    assert abs(kinds["unpublish"] / total - 0.05) < 0.015


def test_saves_land_on_published_articles_and_retitles_stay_distinct() -> None:
    day = generate_day(2, DayParameters())
    published = [True] * len(day.titles)
    titles = set(day.titles)
    for save in day.saves:
        assert published[save.article], "nobody saves or unpublishes a withdrawn article"
        if save.kind == "unpublish":
            published[save.article] = False
            assert save.content is None and save.title is None
        elif save.kind == "retitle":
            assert save.title is not None
            assert save.title not in titles, "a retitle never reuses a title"
            titles.add(save.title)
            assert save.content and save.content.startswith(text.intro(save.title))
        else:
            assert save.title is None and save.content


def test_the_uniform_control_keeps_everything_but_the_saves_targets() -> None:
    zipf = generate_day(5, DayParameters(), "popularity")
    uniform = generate_day(5, DayParameters(), "uniform")
    assert zipf.titles == uniform.titles and zipf.contents == uniform.contents
    assert [(q.at, q.article) for q in zipf.questions] == [
        (q.at, q.article) for q in uniform.questions
    ]
    assert [(s.at, s.kind) for s in zipf.saves] == [(s.at, s.kind) for s in uniform.saves]
    top = {i for i, r in enumerate(zipf.rank) if r <= 10}
    on_top = sum(1 for s in uniform.saves if s.article in top)
    assert on_top < 30, "uniform saves hit the top 10 of 400 about 2.5% of the time"


def test_every_article_is_the_top_hit_for_its_own_titles_words(tmp_path: Path) -> None:
    """What makes the agent's answers and the title-only check meaningful: the prose never
    reuses a title word, so a search for a task finds that task's article first."""
    day = generate_day(1, DayParameters())
    store, _ = open_day_store(day, tmp_path / "kb.sqlite", throwaway=True)
    try:
        imported = import_articles(store, day, "search quality")
        for i, title in enumerate(day.titles):
            result = call_tool(
                store,
                "search_knowledge_base",
                {
                    "knowledge_base_id": imported.knowledge_base_id,
                    "query": text.keywords(title),
                    "limit": 2,
                },
            )
            assert result.hits[0].article_id == imported.article_ids[i], title
    finally:
        store.close()


def _index_terms(texts: Sequence[str], only: set[str] | None = None) -> list[Counter[str]]:
    """The terms the store's keyword index makes of each text (its analyzer: it stems), with
    how often each occurs; a query word is analysed the same way. With `only`, just those."""
    analyze = keyword_schema.WORDS_ANALYZER.analyze
    found: list[Counter[str]] = []
    for t in texts:
        terms = Counter(analyze(keyword_schema.ranked_text(t)))
        found.append(terms if only is None else Counter({k: terms[k] for k in only & terms.keys()}))
    return found


VOCABULARY = (*text.VERBS, *text.OBJECTS, *text.QUALIFIERS)


def _search_words() -> dict[str, set[str]]:
    """Every title's search words as the index sees them: the stems of `keywords(title)`."""
    titles = text.all_titles()
    terms = _index_terms([text.keywords(t) for t in titles])
    return {t: set(found) for t, found in zip(titles, terms, strict=True)}


def test_every_search_word_belongs_to_one_verb_object_or_qualifier() -> None:
    """No stem a search uses appears in any other verb, object or qualifier (not even as a
    stop word: porter makes "one" "on"), so no title holds all the search words of another:
    "Sync calendar sync", "Export data exports" or "Share shared folders" would tie with
    "Reset calendar sync", "Reset data exports", "Reset shared folders"."""
    searched = dict(
        zip(VOCABULARY, _index_terms([text.keywords(e) for e in VOCABULARY]), strict=True)
    )
    written = dict(zip(VOCABULARY, _index_terms(VOCABULARY), strict=True))
    assert all(searched.values()), "every verb, object and qualifier has a search word"
    clashes = [
        (e, f, sorted(set(searched[e]) & set(written[f])))
        for e in VOCABULARY
        for f in VOCABULARY
        if e != f and set(searched[e]) & set(written[f])
    ]
    assert clashes == []

    # Over every title the generator can produce, stemmed as the index stems it: each search
    # word occurs once in the title, and no other title holds all of them.
    titles = text.all_titles()
    words = _search_words()
    in_title = _index_terms(titles)
    holding: dict[str, set[str]] = {}
    for title, terms in zip(titles, in_title, strict=True):
        assert all(terms[w] == 1 for w in words[title]), (title, terms)
        for term in terms:
            holding.setdefault(term, set()).add(title)
    for title in titles:
        assert set.intersection(*(holding[w] for w in words[title])) == {title}


def test_the_prose_never_uses_a_search_word() -> None:
    """The generic prose (places, controls, roles, causes, the sentences around them) stems to
    no search word of any title, and every body, first version or edited, holds the search
    words of its own title alone: a task's words find nothing but that task."""
    every_word = set().union(*_search_words().values())
    pieces = [
        *text.PLACES, *text.CONTROLS, *text.ROLES, *text.CAUSES,
        *(re.sub(r"\{\w+\}", " ", t) for t in (*text._STEP_TEMPLATES, *text._NOTE_TEMPLATES)),
    ]  # fmt: skip
    assert [
        (piece, sorted(set(terms) & every_word))
        for piece, terms in zip(pieces, _index_terms(pieces), strict=True)
        if set(terms) & every_word
    ] == []

    rng = random.Random("kbes-sim prose")
    titles = text.all_titles()
    bodies = [text.body(rng, t) for t in titles]
    bodies = [text.revise(rng, t, b) for t, b in zip(titles, bodies, strict=True)]
    own = _search_words()
    strays = [
        (title, sorted((set(terms) & every_word) - own[title]))
        for title, terms in zip(titles, _index_terms(bodies, every_word), strict=True)
        if (set(terms) & every_word) - own[title]
    ]
    assert strays == []


def test_keywords_drop_stop_words_and_split_like_the_index() -> None:
    assert text.keywords("Set up SSO certificates with single sign-on") == (
        "set sso certificates single sign"
    )


def test_content_edits_keep_the_bodys_size_and_task_words() -> None:
    """A person's edit rewrites one step in place: however often an article is edited, its
    body keeps its length, its lines and how often it names its task, so edited articles do
    not come to win more searches (docs/reproduction.md, note 2)."""
    rng = random.Random("kbes-sim edits keep the profile")
    titles = rng.sample(text.all_titles(), 40)
    length_drift: list[int] = []
    word_drift: list[int] = []
    for title in titles:
        words = set(text.keywords(title).split())

        def task_words(content: str, words: set[str] = words) -> int:
            return sum(1 for w in re.findall(r"\w+", content.lower()) if w in words)

        first = content = text.body(rng, title)
        for _ in range(30):
            content = text.revise(rng, title, content)
            assert content.count("\n") == first.count("\n")
        length_drift.append(len(content) - len(first))
        word_drift.append(task_words(content) - task_words(first))
    assert abs(sum(length_drift) / len(titles)) < 30, length_drift
    assert abs(sum(word_drift) / len(titles)) < 1.5, word_drift
