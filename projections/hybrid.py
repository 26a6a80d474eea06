"""Reciprocal rank fusion: the keyword ranking and the vector ranking merged by rank alone,
each list's article at rank r (from 1) scoring 1 / (K + r), as Cormack, Clarke and Büttcher
(2009) define it. Ranks, not scores: BM25 and cosine similarity are on no common scale."""

from __future__ import annotations

import random
import string
from collections.abc import Container, Mapping, Sequence
from typing import Any

K = 60
DEPTH = 50
"""How many hits each list contributes (docs/search.md gives the measured effect)."""
FLOOR = 0.35
"""The cosine similarity a hit only the vectors found must reach (all-MiniLM-L6-v2): below
it, the nearest articles are only the least far (docs/search.md gives its calibration)."""
NOISE_MARGIN = 0.10
"""A hit only the vectors found must also be this much more similar to the query than the
query is to random letters (`noise`): a query of random letters is near other random letters,
and as near some short names ("ssugl" to `ss`), which the fixed floor alone let through."""
NOISE_STRINGS = 64
NOISE_SEED = 11
SNIPPET_WORDS = 24
"""A vector-only hit's snippet: the first words of its content (the keyword index's snippets
are its own, SNIPPET_TOKENS around the matched words)."""


def fuse(rankings: Sequence[Sequence[str]], k: int = K) -> list[str]:
    """The ids of `rankings` (each best first) by summed 1 / (k + rank); ties go to the id
    ranked higher in the earlier list, then by id."""
    score: dict[str, float] = {}
    first: dict[str, tuple[int, int]] = {}
    for n, ranking in enumerate(rankings):
        for rank, key in enumerate(ranking, start=1):
            score[key] = score.get(key, 0.0) + 1.0 / (k + rank)
            first.setdefault(key, (n, rank))
    return sorted(score, key=lambda key: (-score[key], first[key], key))


def noise(n: int = NOISE_STRINGS, seed: int = NOISE_SEED) -> list[str]:
    """Strings of random letters, the same every time: one to four words of five to nine
    letters. The mean of their embeddings is what a query of random letters is near."""
    rng = random.Random(seed)
    return [
        " ".join(
            "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9)))
            for _ in range(rng.randint(1, 4))
        )
        for _ in range(n)
    ]


def unit_mean(matrix: Any) -> Any:
    """The unit vector along the mean of `matrix`'s rows (numpy, the semantic extra's)."""
    import numpy as np

    mean = matrix.mean(axis=0)
    return (mean / np.linalg.norm(mean)).astype(np.float32)


def floor_for(noise_similarity: float, floor: float = FLOOR) -> float:
    """The floor of one query: `floor`, raised for a query close to random letters."""
    return max(floor, noise_similarity + NOISE_MARGIN)


def above_floor(
    fused: Sequence[str],
    by_words: Container[str],
    similarity: Mapping[str, float],
    floor: float = FLOOR,
) -> list[str]:
    """`fused` without the ids the keyword list lacks whose similarity is below `floor`:
    keyword hits are kept whatever their similarity."""
    return [key for key in fused if key in by_words or similarity.get(key, -1.0) >= floor]


def lead(content: str, words: int = SNIPPET_WORDS) -> str:
    """The first `words` words of `content`, with an ellipsis when there are more."""
    parts = content.split(maxsplit=words)
    if len(parts) > words:
        return " ".join(parts[:words]) + "…"
    return " ".join(parts)


__all__ = [
    "DEPTH",
    "FLOOR",
    "NOISE_MARGIN",
    "K",
    "above_floor",
    "floor_for",
    "fuse",
    "lead",
    "noise",
]
