"""kbes: an event-sourced knowledge-base store whose citations are version stamps."""

from kbes.application import KnowledgeBaseStore, open_store
from kbes.article import Article
from kbes.clock import (
    Clock,
    SimulatedClock,
    SystemClock,
    format_timestamp,
    next_timestamp,
    parse_timestamp,
)
from kbes.errors import KbesError
from kbes.knowledge_base import KnowledgeBase
from kbes.mapper import MsgspecMapper
from kbes.receipt import EditReceipt
from kbes.tools import HISTORY_TOOLS, TOOLS, Tool, call_tool

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
