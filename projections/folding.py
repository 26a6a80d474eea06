"""How text and queries are folded for search, the same way on both sides: NFKC, then full
case folding, then NFKC again (Python's `casefold`, not a locale's rules), and Chinese,
Japanese and Korean runs cut into overlapping bigrams (with their single characters), since
they write words without spaces between them.

The keyword index (kbes.projections.keyword_schema) takes the words this module makes of any
text that is not ASCII, and a query's words the same way, so both sides are compared in one
spelling; ASCII text needs no more than the index's own tokenizer does."""

from __future__ import annotations

import functools
import re
import unicodedata

CJK_RANGES = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x2E80, 0x2FDF),  # CJK and Kangxi radicals
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x31FF),  # Hiragana, Katakana, Bopomofo, Hangul compatibility Jamo
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xA960, 0xA97F),  # Hangul Jamo extended A
    (0xAC00, 0xD7FF),  # Hangul syllables, Jamo extended B
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B to H
)
_CJK_CLASS = "".join(f"{chr(a)}-{chr(b)}" for a, b in CJK_RANGES)
_CJK_RUN = re.compile(f"[{_CJK_CLASS}]+")
_HAS_CJK = re.compile(f"[{_CJK_CLASS}]")
_ASCII_WORD = re.compile(r"\w+")


@functools.cache
def _word_pattern() -> re.Pattern[str]:
    """A word: letters, digits, `_` and combining marks (so a decomposed é or an i with its dot
    above stays one word, as unicode61 reads it). Built on first use (about 20 ms)."""
    marks = [
        c
        for c in (*range(0x80, 0x20000), *range(0xE0100, 0xE01F0))
        if unicodedata.category(chr(c))[0] == "M"
    ]
    ranges: list[tuple[int, int]] = []
    for c in marks:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    return re.compile("[\\w" + "".join(f"{chr(a)}-{chr(b)}" for a, b in ranges) + "]+")


def fold(text: str) -> str:
    """NFKC, full case folding, NFKC: the one spelling both sides are compared in."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def words(folded: str) -> list[str]:
    """The words of folded text; an ASCII text's are `\\w+`, as they always were."""
    if folded.isascii():
        return _ASCII_WORD.findall(folded)
    return _word_pattern().findall(folded)


def cjk_terms(word: str, *, unigrams: bool) -> list[str]:
    """A word holding CJK: its other parts as they are, each CJK run as its overlapping
    bigrams, and its single characters too when `unigrams` (the index) or when the run is one
    character long (a query of one character)."""
    terms: list[str] = []
    at = 0
    for run in _CJK_RUN.finditer(word):
        if run.start() > at:
            terms.append(word[at : run.start()])
        chars = run.group()
        if unigrams or len(chars) == 1:
            terms.extend(chars)
        terms.extend(chars[i : i + 2] for i in range(len(chars) - 1))
        at = run.end()
    if at < len(word):
        terms.append(word[at:])
    return terms


def query_terms(query: str, limit: int) -> list[str]:
    """The distinct terms of a query, folded and cut as the text is, at most `limit`."""
    terms: list[str] = []
    for word in words(fold(query)):
        for term in cjk_terms(word, unigrams=False) if _HAS_CJK.search(word) else (word,):
            if term not in terms:
                terms.append(term)
                if len(terms) == limit:
                    return terms
    return terms


__all__ = ["cjk_terms", "fold", "query_terms", "words"]
