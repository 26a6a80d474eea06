"""The scripted agent: the "Claude" of the source article, calling the four tools exactly as the
MCP server serves them (`kbes.tools.call_tool`), and metering what each call costs.

For each question it searches, reads the top two hits and keeps both citations. The size of a
result is the length of its JSON encoding as an agent receives it (for an error, the JSON of
the error object), summed per purpose so the strategies' costs can be compared."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from kbes import KbesError, call_tool, parse_timestamp
from kbes.sims.day import Question
from kbes.sims.trace import Trace

CITED_PER_ANSWER = 2
ANSWER_SEARCH_LIMIT = CITED_PER_ANSWER
"""The agent asks search for as many hits as it will read: the top two."""


@dataclass(frozen=True)
class Cited:
    """A citation the agent kept, with what the title-only strategy would have kept instead."""

    answer: int
    position: int
    """0 for the top hit the agent read, 1 for the second."""
    read_at: int
    knowledge_base_id: str
    article_id: str
    updated_at: datetime
    stamp: str
    title: str
    content: str


class Meter:
    """Calls and bytes per purpose, e.g. `check:read`, plus wall time per phase."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)

    def add(self, purpose: str, size: int) -> None:
        self.calls[purpose] += 1
        self.bytes[purpose] += size


class Agent:
    """One agent session against one knowledge base."""

    def __init__(
        self, store: Any, knowledge_base_id: str, *, clock_at: Callable[[], str], trace: Trace
    ) -> None:
        self.store = store
        self.knowledge_base_id = knowledge_base_id
        self.meter = Meter()
        self.trace = trace
        self._clock_at = clock_at

    def call(self, purpose: str, tool: str, arguments: dict[str, Any]) -> Any:
        """Call `tool`; return its result, or the `KbesError` it refused with (not raised)."""
        outcome: Any
        try:
            outcome = call_tool(self.store, tool, arguments)
            encoded = msgspec.json.encode(outcome)
        except KbesError as error:
            outcome = error
            encoded = msgspec.json.encode(error.to_dict())
        self.meter.add(purpose, len(encoded))
        if self.trace.enabled:
            key = "error" if isinstance(outcome, KbesError) else "result"
            self.trace.call(
                at=self._clock_at(),
                purpose=purpose,
                tool=tool,
                arguments=arguments,
                bytes=len(encoded),
                **{key: msgspec.Raw(encoded)},
            )
        return outcome

    def search(self, purpose: str, query: str, limit: int) -> Any:
        return self.call(
            purpose,
            "search_knowledge_base",
            {"knowledge_base_id": self.knowledge_base_id, "query": query, "limit": limit},
        )

    def read(self, purpose: str, article_id: str) -> Any:
        return self.call(
            purpose,
            "read_knowledge_article",
            {"knowledge_base_id": self.knowledge_base_id, "article_id": article_id},
        )

    def poll(self, purpose: str, after_sequence: int, limit: int = 100) -> Any:
        return self.call(
            purpose,
            "poll_resource_events",
            {
                "resource_type": "knowledge_base",
                "resource_id": self.knowledge_base_id,
                "after_sequence": after_sequence,
                "limit": limit,
            },
        )

    def diff(self, purpose: str, article_id: str, since_version: str) -> Any:
        return self.call(
            purpose,
            "diff_knowledge_article",
            {
                "knowledge_base_id": self.knowledge_base_id,
                "article_id": article_id,
                "since_version": since_version,
            },
        )

    def edit(
        self,
        purpose: str,
        article_id: str,
        content: str,
        expected_version: str,
        idempotency_key: str,
    ) -> Any:
        return self.call(
            purpose,
            "edit_knowledge_article",
            {
                "knowledge_base_id": self.knowledge_base_id,
                "article_id": article_id,
                "content": content,
                "expected_version": expected_version,
                "idempotency_key": idempotency_key,
            },
        )

    def answer(self, question: Question) -> list[Cited]:
        """Search, read the top two hits, keep both citations (as the read returned them)."""
        found = self.search("answer", question.query, ANSWER_SEARCH_LIMIT)
        if isinstance(found, KbesError):
            raise SimulationError(f"answer {question.number}: search refused: {found.to_dict()}")
        cited: list[Cited] = []
        for position, hit in enumerate(found.hits[:CITED_PER_ANSWER]):
            article = self.read("answer", hit.article_id)
            if isinstance(article, KbesError):
                raise SimulationError(
                    f"answer {question.number}: a hit of this very instant could not be read: "
                    f"{article.to_dict()}"
                )
            cited.append(
                Cited(
                    answer=question.number,
                    position=position,
                    read_at=question.at,
                    knowledge_base_id=article.citation.knowledge_base_id,
                    article_id=article.citation.article_id,
                    updated_at=parse_timestamp(article.citation.updated_at),
                    stamp=article.citation.updated_at,
                    title=article.title,
                    content=article.content,
                )
            )
        return cited


class SimulationError(AssertionError):
    """The simulation saw something the method says cannot happen: it stops, loudly."""
