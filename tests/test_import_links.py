"""`kbes import` never reads outside its folder: symbolic links (to files or folders, leading
out, staying in, or dangling) are skipped and named on stderr. It once published the target of
`ln -s /etc/hostname docs/host.md`, and agents could then search it. A file name that is not
UTF-8 is skipped and named (the rest imported), not a UnicodeEncodeError from uuid5."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_harness import ok
from click.testing import CliRunner

from kbes.cli import main


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "reset.md").write_text("# Reset\n\nOpen Settings.\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("# Secret\n\nThe vault code is swordfish.\n")
    private = tmp_path / "private"
    private.mkdir()
    (private / "plans.md").write_text("# Plans\n\nThe launch is codenamed swordfish.\n")
    return {"docs": docs, "secret": secret, "private": private}


def search(runner: CliRunner, kb: str, query: str) -> list[str]:
    found = json.loads(ok(runner, "tool", "search_knowledge_base", f"knowledge_base_id={kb}",
                          f"query={query}"))  # fmt: skip
    return [hit["title"] for hit in found["hits"]]


def test_links_are_skipped_and_named(runner: CliRunner, world: dict[str, Path]) -> None:
    docs = world["docs"]
    (docs / "host.md").symlink_to(world["secret"])
    (docs / "linked").symlink_to(world["private"], target_is_directory=True)
    (docs / "gone.md").symlink_to(docs / "nowhere.md")
    (docs / "alias.md").symlink_to(docs / "reset.md")
    (docs / "notes.txt").symlink_to(world["secret"])  # not Markdown: not a candidate at all
    kb = ok(runner, "kb", "create", "Support").strip()

    result = runner.invoke(main, ["import", str(docs), "--kb", kb, "--publish"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "1 added, 0 saved, 1 published, 0 unchanged"
    skipped = {line.split()[1].rstrip(":"): line for line in result.stderr.splitlines()}
    assert sorted(skipped) == ["alias.md", "gone.md", "host.md", "linked"]
    assert "outside the folder" in skipped["host.md"]
    assert "outside the folder" in skipped["linked"]
    assert "dangling" in skipped["gone.md"]
    assert "inside the folder" in skipped["alias.md"]
    assert all(line.startswith("skipped ") for line in skipped.values())
    assert str(world["secret"]) not in result.stderr  # where a link leads is not echoed

    assert search(runner, kb, "swordfish") == []
    assert search(runner, kb, "Settings") == ["Reset"]


def test_json_output_keeps_its_shape_and_links_still_go_to_stderr(
    runner: CliRunner, world: dict[str, Path]
) -> None:
    (world["docs"] / "host.md").symlink_to(world["secret"])
    kb = ok(runner, "kb", "create", "Support").strip()
    result = runner.invoke(main, ["import", str(world["docs"]), "--kb", kb, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == ["reset.md"]
    assert "skipped  host.md" in result.stderr


def test_the_help_says_links_are_not_followed() -> None:
    text = " ".join(CliRunner().invoke(main, ["import", "--help"]).output.split())
    assert "Symbolic links are never followed" in text


def test_a_file_name_that_is_not_utf8_is_skipped_and_named(
    runner: CliRunner, world: dict[str, Path], db_path: Path
) -> None:
    docs = world["docs"]
    with open(os.path.join(os.fsencode(docs), b"caf\xe9.md"), "w") as f:
        f.write("# Cafe\n\nLatin-1 name.\n")
    kb = ok(runner, "kb", "create", "Support").strip()
    result = runner.invoke(main, ["import", str(docs), "--kb", kb, "--publish"])
    assert not isinstance(result.exception, UnicodeError), result.exception
    assert result.exit_code == 3, result.output  # some files were skipped
    assert "file name is not valid UTF-8" in result.stderr
    assert "caf\\xe9.md" in result.stderr
    assert "rename it" in result.stderr
    assert search(runner, kb, "Settings") == ["Reset"]  # the rest was imported
    assert search(runner, kb, "Latin") == []
