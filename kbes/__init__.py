"""kbes: an event-sourced knowledge-base store whose citations are version stamps."""

from kbes.domain.article import Article
from kbes.domain.clock import (
    Clock,
    SimulatedClock,
    SystemClock,
    format_timestamp,
    next_timestamp,
    parse_timestamp,
)
from kbes.domain.knowledge_base import KnowledgeBase
from kbes.domain.receipt import EditReceipt
from kbes.store.application import KnowledgeBaseStore, open_store
from kbes.store.mapper import MsgspecMapper
from kbes.tools import HISTORY_TOOLS, TOOLS, Tool, call_tool
from kbes.tools.codes import KbesError

__all__ = [
    "HISTORY_TOOLS",
    "TOOLS",
    "Article",
    "Clock",
    "EditReceipt",
    "KbesError",
    "KnowledgeBase",
    "KnowledgeBaseStore",
    "MsgspecMapper",
    "SimulatedClock",
    "SystemClock",
    "Tool",
    "call_tool",
    "format_timestamp",
    "next_timestamp",
    "open_store",
    "parse_timestamp",
]
