"""A citations file that starts with a UTF-8 byte-order mark (issue 18), as Notepad and
PowerShell write one, was refused with `line 1: JSON is malformed: invalid character (byte 0)`.
Now the mark is skipped, from a file or from stdin; a UTF-16 file, which is not UTF-8 at all,
is refused in words that say so."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

from click.testing import CliRunner
from tool_calls import call

from kbes import open_store
from kbes.cli import main


def citation(db: Path) -> dict[str, str]:
    store = open_store(db)
    try:
        kb = str(store.create_knowledge_base("Support"))
        article = str(store.add_article(kb, "Refunds", "Refunds take five days.", publish=True))
        return call(store, "read_knowledge_article", knowledge_base_id=kb,
                    article_id=article)["citation"]  # fmt: skip
    finally:
        store.close()


def test_a_utf8_byte_order_mark_is_skipped(
    runner: CliRunner, db_path: Path, tmp_path: Path
) -> None:
    lines = (json.dumps(citation(db_path)) + "\n").encode() * 2
    path = tmp_path / "citations.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + lines)
    for args, given in (
        (["audit", str(path), "--json"], None),
        (["audit", "-", "--json"], path.read_bytes()),
    ):
        result = runner.invoke(main, args, input=given)
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert [entry["class"] for entry in report["citations"]] == ["current", "current"]
        assert [entry["line"] for entry in report["citations"]] == [1, 2]


def test_a_utf16_file_is_refused_naming_its_encoding(
    runner: CliRunner, db_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "citations.jsonl"
    path.write_text(json.dumps(citation(db_path)) + "\n", encoding="utf-16")
    result = runner.invoke(main, ["audit", str(path)])
    assert result.exit_code == 2, result.output
    assert "UTF-16 byte-order mark" in result.output
    assert "save it as UTF-8" in result.output


def test_a_mark_anywhere_but_the_start_is_still_malformed(
    runner: CliRunner, db_path: Path, tmp_path: Path
) -> None:
    line = (json.dumps(citation(db_path)) + "\n").encode()
    path = tmp_path / "citations.jsonl"
    path.write_bytes(line + codecs.BOM_UTF8 + line)
    result = runner.invoke(main, ["audit", str(path)])
    assert result.exit_code == 2 and "line 2" in result.output, result.output


def test_an_exported_log_with_a_byte_order_mark_is_read(
    runner: CliRunner, db_path: Path, tmp_path: Path
) -> None:
    """Issue 35: a `--log` file starting with the mark was refused as malformed JSON."""
    cited = citation(db_path)
    citations = tmp_path / "citations.jsonl"
    citations.write_text(json.dumps(cited) + "\n")
    exported = runner.invoke(main, ["log", "export", "--db", str(db_path)])
    assert exported.exit_code == 0, exported.output
    log = tmp_path / "events.jsonl"
    log.write_bytes(codecs.BOM_UTF8 + exported.stdout_bytes)
    result = runner.invoke(main, ["audit", str(citations), "--log", str(log), "--json"])
    assert result.exit_code == 0, result.output
    assert [entry["class"] for entry in json.loads(result.output)["citations"]] == ["current"]
    log.write_text(exported.stdout_bytes.decode(), encoding="utf-16")
    result = runner.invoke(main, ["audit", str(citations), "--log", str(log)])
    assert result.exit_code == 2, result.output
    assert "UTF-16 byte-order mark" in result.output
