"""How `kbes import` reads Markdown (issue 33): a title is never taken from a code block, a
setext heading is a title, front matter is not content (its `title:` and `id:` are read),
heading images and links are reduced to text; which files are read (`.md` and `.markdown` in
any case, not hidden, not `node_modules`, not what `.gitignore` excludes, not empty); and one
bad file is named with the reason and the fix while the rest is imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_harness import head, ok
from click.testing import CliRunner

from kbes import open_store
from kbes.cli import main
from kbes.log.markdown_file import FrontMatterRefused, read_markdown


def test_a_hash_line_in_a_code_block_is_code_not_a_title() -> None:
    text = "Run it:\n\n```sh\n# e.g. npm run example examples/borders\n```\n\nDone.\n"
    read = read_markdown(text, "borders")
    assert read.title == "borders"
    assert read.content == text.strip("\n")  # nothing cut out of the code block


def test_a_setext_heading_is_a_title_and_leaves_the_content() -> None:
    read = read_markdown("Refunds\n=======\n\nRefunds take 5 days.\n", "x")
    assert (read.title, read.content) == ("Refunds", "Refunds take 5 days.")


def test_an_atx_heading_keeps_todays_title_and_content() -> None:
    read = read_markdown("\ufeff# Refunds\r\n\r\nRefunds take 5 days.\r\n", "x")
    assert (read.title, read.content) == ("Refunds", "Refunds take 5 days.")


def test_a_level_two_heading_or_a_quoted_one_is_not_the_title() -> None:
    assert read_markdown("## Setup\n\n> # Quoted\n\ntext\n", "guide").title == "guide"


def test_badges_and_links_in_a_heading_are_reduced_to_text() -> None:
    heading = "# [chalk](https://x) *styles* `v5` [![Build](b.svg)](https://ci) ![npm](n.svg)\n"
    assert read_markdown(heading + "\nbody\n", "x").title == "chalk styles v5"
    assert read_markdown("# [![chalk](logo.svg)](https://x)\n\nbody\n", "x").title == "chalk"


def test_front_matter_is_read_and_is_not_content() -> None:
    text = "---\ntitle: Refund policy\nid: refunds\ntags: [billing]\n---\n# Refunds\n\nFive days.\n"
    read = read_markdown(text, "x")
    assert (read.title, read.pinned_id) == ("Refund policy", "refunds")
    assert read.content == "# Refunds\n\nFive days."  # with a `title:`, the heading is content
    assert "tags" not in read.content
    assert read_markdown("---\nid: 42\n---\nbody\n", "page").title == "page"


def test_front_matter_alone_is_empty() -> None:
    assert read_markdown("---\ntitle: Draft\n---\n\n", "x").empty
    assert read_markdown("", "x").empty
    assert not read_markdown("# Title only\n", "x").empty


@pytest.mark.parametrize(
    ("front", "says"),
    [
        ("title: [a, b]\n", "`title` must be text"),
        ("a: [\n", "not valid YAML"),
        ("- x\n", "mapping"),
    ],
)
def test_front_matter_that_cannot_be_read_is_refused(front: str, says: str) -> None:
    with pytest.raises(FrontMatterRefused, match=says.replace("[", r"\[")):
        read_markdown(f"---\n{front}---\nbody\n", "x")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    for name, text in {
        "guide.md": "# Guide\n\nThe guide.\n",
        "UPPER.MD": "# Upper\n\nUpper-case extension.\n",
        "notes.markdown": "Notes\n=====\n\nLong extension.\n",
        "Mixed.Markdown": "# Mixed\n\nMixed case.\n",
        "readme.txt": "# Not Markdown\n",
        ".draft.md": "# Hidden file\n",
        ".obsidian/workspace.md": "# Hidden folder\n",
        "node_modules/pkg/README.md": "# A dependency\n",
        "build/out.md": "# Built\n",
        "sub/scratch.md": "# Scratch\n",
        "sub/kept.md": "# Kept\n\nKept.\n",
        "sub/.gitignore": "scratch.md\n",
        ".gitignore": "build/\n*.tmp.md\n",
        "a.tmp.md": "# Temp\n",
        "empty.md": "",
        "front-only.md": "---\ntitle: Nothing yet\n---\n",
    }.items():
        path = docs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return docs


def test_which_files_are_read(runner: CliRunner, tree: Path, db_path: Path) -> None:
    kb = ok(runner, "kb", "create", "Docs").strip()
    result = runner.invoke(main, ["import", str(tree), "--kb", kb, "--publish", "--json"])
    assert result.exit_code == 0, result.output  # empty files are skipped, not refused
    report = json.loads(result.stdout)
    assert sorted(report["added"]) == [
        "Mixed.Markdown",
        "UPPER.MD",
        "guide.md",
        "notes.markdown",
        "sub/kept.md",
    ]
    assert sorted(report["skipped"]) == ["empty.md", "front-only.md"]
    assert "nothing to publish" in report["skipped"]["empty.md"]
    store = open_store(db_path)
    store.catch_up()
    titles = sorted(a.title for a in store.articles(kb))
    store.close()
    assert titles == ["Guide", "Kept", "Mixed", "Notes", "Upper"]


def test_one_bad_file_is_named_and_the_rest_imported(
    runner: CliRunner, tmp_path: Path, db_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Good\n\nImported.\n")
    (docs / "latin1.md").write_bytes("# Caf\xe9\n".encode("latin-1"))
    (docs / "long-title.md").write_text("# " + "t" * 301 + "\n\nbody\n")
    (docs / "huge.md").write_text("# Huge\n\n" + "x" * 1_000_001)
    (docs / "bad-yaml.md").write_text("---\ntitle: [\n---\nbody\n")
    (docs / "one.md").write_text("---\nid: same\n---\n# One\n\nfirst\n")
    (docs / "two.md").write_text("---\nid: same\n---\n# Two\n\nsecond\n")
    kb = ok(runner, "kb", "create", "Docs").strip()
    before = head(db_path)
    result = runner.invoke(main, ["import", str(docs), "--kb", kb, "--publish", "--json"])
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert sorted(report["added"]) == ["good.md", "one.md"]
    skipped = report["skipped"]
    assert sorted(skipped) == ["bad-yaml.md", "huge.md", "latin1.md", "long-title.md", "two.md"]
    assert "not UTF-8" in skipped["latin1.md"] and "save it as UTF-8" in skipped["latin1.md"]
    assert "KBES_MAX_TITLE_CHARS" in skipped["long-title.md"]
    assert "`title:`" in skipped["long-title.md"]
    assert "KBES_MAX_CONTENT_CHARS" in skipped["huge.md"]
    assert "YAML" in skipped["bad-yaml.md"]
    assert "one.md" in skipped["two.md"] and "its own id" in skipped["two.md"]
    for name in skipped:
        assert f"skipped  {name}: " in result.stderr
    assert "5 file(s) could not be imported" in result.stderr
    assert head(db_path) > before  # the rest was written


def test_the_title_from_front_matter_is_held_to_the_title_rule(
    runner: CliRunner, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text('---\ntitle: "bell\\a"\n---\nbody\n')
    kb = ok(runner, "kb", "create", "Docs").strip()
    result = runner.invoke(main, ["import", str(docs), "--kb", kb])
    assert result.exit_code == 3, result.output
    assert "U+0007" in result.stderr
