"""The four tools' contract: names, required arguments, limits and annotations of the live
server (docs/tools.md), generated from the request structs."""

from __future__ import annotations

import typing
from typing import Any

from kbes.tools import HISTORY_TOOLS, TOOLS, call_tool

EXPECTED: dict[str, dict[str, Any]] = {
    "search_knowledge_base": {
        "required": ["knowledge_base_id", "query"],
        "limits": {
            "query": {"minLength": 2, "maxLength": 200},
            "limit": {"minimum": 1, "maximum": 20},
        },
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    },
    "read_knowledge_article": {
        "required": ["knowledge_base_id", "article_id"],
        "limits": {},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    },
    "edit_knowledge_article": {
        "required": [
            "knowledge_base_id",
            "article_id",
            "content",
            "expected_version",
            "idempotency_key",
        ],
        "limits": {"expected_version": {"type": "string", "format": "date-time"}},
        "annotations": {
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": True,
        },
    },
    "poll_resource_events": {
        "required": ["resource_type", "resource_id"],
        "limits": {"after_sequence": {"minimum": 0}, "limit": {"minimum": 1, "maximum": 100}},
        "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    },
}


def test_exactly_the_four_tools() -> None:
    assert sorted(TOOLS) == sorted(EXPECTED)


def test_schemas_state_the_live_contract() -> None:
    for name, expected in EXPECTED.items():
        schema = TOOLS[name].input_schema()
        assert schema["type"] == "object"
        assert schema["required"] == expected["required"], name
        assert schema["additionalProperties"] is False, name
        for field, limits in expected["limits"].items():
            prop = schema["properties"][field]
            for key, value in limits.items():
                assert prop[key] == value, (name, field, key)
        assert TOOLS[name].annotations == expected["annotations"], name


def test_edit_title_is_optional_and_the_only_optional_field() -> None:
    schema = TOOLS["edit_knowledge_article"].input_schema()
    assert set(schema["properties"]) - set(schema["required"]) == {"title"}
    assert schema["properties"]["title"]["type"] == "string"


def test_output_schemas_describe_citations() -> None:
    out = TOOLS["read_knowledge_article"].output_schema()
    citation = out["$defs"]["Citation"]
    assert citation["required"] == ["knowledge_base_id", "article_id", "updated_at"]


def test_call_tool_is_typed_for_each_tool_by_its_name() -> None:
    """call_tool's overloads (what a caller's type checker sees) name every tool, each with
    the result type the tool answers with, and nothing else but the catch-all."""
    typed = {}
    for signature in typing.get_overloads(call_tool):
        hints = typing.get_type_hints(signature, localns={"KnowledgeBaseStore": object})
        name, result = hints["name"], hints["return"]
        if name is not str:
            typed[typing.get_args(name)] = result
    every_tool = [*TOOLS.values(), *HISTORY_TOOLS]
    assert typed == {(tool.name,): tool.result for tool in every_tool}
