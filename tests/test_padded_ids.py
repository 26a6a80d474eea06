"""A padded id (issue 13, defect 10). Over MCP, tests/test_mcp_approval.py checks that `" KB "`
is refused before the user is asked; here `kbes tool`, which asks nobody, answers it the same
way: `not_found`, nothing written, and a message that says the blanks are the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import head, ok
from click.testing import CliRunner

from kbes.cli import main


@pytest.mark.parametrize("where", ["knowledge_base_id", "article_id"])
def test_kbes_tool_refuses_a_padded_id_naming_the_blanks(
    runner: CliRunner, db_path: Path, where: str
) -> None:
    kb = ok(runner, "kb", "create", "Support").strip()
    article = ok(runner, "article", "add", "--kb", kb, "--title", "T", "--content", "x",
                 "--publish").strip()  # fmt: skip
    read = json.loads(ok(runner, "tool", "read_knowledge_article", f"knowledge_base_id={kb}",
                         f"article_id={article}"))  # fmt: skip
    before = head(db_path)
    ids = {"knowledge_base_id": kb, "article_id": article}
    for padded in (f" {ids[where]} ", f"{ids[where]}\t"):
        arguments = {**ids, where: padded}
        result = runner.invoke(main, ["tool", "edit_knowledge_article",
                                      *(f"{k}={v}" for k, v in arguments.items()),
                                      "content=y", f"expected_version={read['updated_at']}",
                                      "idempotency_key=padded"])  # fmt: skip
        assert result.exit_code == 1
        refused = json.loads(result.stdout)
        assert refused["code"] == "not_found"
        assert repr(padded) in refused["message"], refused
        assert "blanks around it" in refused["message"]
    assert head(db_path) == before
