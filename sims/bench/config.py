"""The sizes and repetitions of a `kbes bench` run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Progress = Callable[[str], None]
"""Where a measurement says what it is doing (the CLI prints it to stderr)."""


@dataclass(frozen=True)
class Config:
    """Sizes and repetitions: the full run measures the issue's datasets; `--quick` the same
    rows on small ones, quickly, so the command and its output stay exercised."""

    quick: bool
    repeats: int
    edits: int
    edits_per_process: int
    processes: int
    read_sizes: tuple[int, ...]
    samples: int
    question_samples: int
    catch_up_samples: int
    poll_small: int
    poll_large: int
    long_history: int
    process_repeats: int
    rebuild_repeats: int
    serve_repeats: int
    sim_repeats: int
    sim_seeds: str
    push_saves: int
    push_idle_seconds: float
    isolation_others: int
    isolation_articles: int
    quality_articles: int
    quality_queries: int
    hybrid_sizes: tuple[int, ...]
    hybrid_samples: int
    hybrid_repeats: int
    mcp_articles: int
    mcp_samples: int
    mcp_repeats: int
    tenant_kbs: int
    tenant_repeats: int
    freshness_articles: int
    freshness_samples: int
    freshness_repeats: int

    @classmethod
    def full(cls) -> Config:
        return cls(
            quick=False,
            repeats=5,
            edits=2000,
            edits_per_process=400,
            processes=4,
            read_sizes=(400, 10_000, 100_000),
            samples=1000,
            # A question at 100,000 articles costs FTS5 about 300 ms: 300 of them a run.
            question_samples=300,
            catch_up_samples=40,
            poll_small=1_000,
            poll_large=1_000_000,
            long_history=10_000,
            process_repeats=5,
            rebuild_repeats=3,
            serve_repeats=5,
            sim_repeats=3,
            sim_seeds="1-5",
            push_saves=200,
            push_idle_seconds=30.0,
            isolation_others=100,
            isolation_articles=1_000,
            quality_articles=3_000,
            quality_queries=500,
            hybrid_sizes=(10_000, 100_000),
            hybrid_samples=300,
            hybrid_repeats=3,
            mcp_articles=50_000,
            mcp_samples=300,
            mcp_repeats=3,
            tenant_kbs=10_000,
            tenant_repeats=3,
            freshness_articles=100_000,
            freshness_samples=40,
            freshness_repeats=3,
        )

    @classmethod
    def quick_run(cls) -> Config:
        return cls(
            quick=True,
            repeats=3,
            edits=200,
            edits_per_process=25,
            processes=4,
            read_sizes=(400, 2_000),
            samples=200,
            question_samples=100,
            catch_up_samples=10,
            poll_small=1_000,
            poll_large=20_000,
            long_history=1_000,
            process_repeats=1,
            rebuild_repeats=1,
            serve_repeats=3,
            sim_repeats=1,
            sim_seeds="1",
            push_saves=10,
            push_idle_seconds=2.0,
            isolation_others=10,
            isolation_articles=200,
            quality_articles=60,
            quality_queries=30,
            hybrid_sizes=(1_000,),
            hybrid_samples=50,
            hybrid_repeats=3,
            mcp_articles=2_000,
            mcp_samples=50,
            mcp_repeats=2,
            tenant_kbs=300,
            tenant_repeats=1,
            freshness_articles=2_000,
            freshness_samples=10,
            freshness_repeats=2,
        )
