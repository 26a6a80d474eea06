"""Every code block of README.md and docs/*.md runs, or is checked, as the reader will use it.

- ```sh: a file's blocks run in order, in one bash (`set -euo pipefail`), in a fresh folder with
  a fresh `KBES_DB` and this environment's `kbes` first on PATH, so a later block may use the
  variables an earlier one set, as a reader following the page would.
- ```sh no-run: REASON: for commands that cannot run here (they serve until stopped, need
  PostgreSQL or Node.js, install packages, or run for minutes). The reason is required; bash
  must parse the block.
- In both, every `kbes ...` command must name real subcommands and options, and `kbes tool`
  a real tool.
- ```python: run as a script in a fresh folder with a fresh `KBES_DB`.
- ```json and ```jsonc: parsed; an MCP client configuration must start `kbes serve` by an
  absolute path (or the mcp-remote bridge), and an example answer must have exactly the shape
  of the real answer (a `prompts/list` or `completion/complete` answer: exactly the real one).
- ```text: a tokens file (`text tokens-file`) is checked line by line; a prompt's text (`text
  prompt NAME`) must be exactly what the model reads for the arguments of the page's
  `// prompts/get` example of NAME; plain text is a diagram, not code.
Any other kind of block fails, so a new one gets a rule here before it gets into the docs."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import click
import msgspec
import pytest

from kbes import KbesError, open_store
from kbes.cli import main
from kbes.server.prompts import (
    completes_knowledge_bases,
    completion_result,
    get_result,
    list_result,
)
from kbes.tools import HISTORY_TOOLS, TOOLS, call_tool
from kbes.tools.prompts import PROMPTS, knowledge_base_completions

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
KINDS = {"sh", "python", "json", "jsonc", "text"}
SHELL_TOOLS = {*TOOLS, *(tool.name for tool in HISTORY_TOOLS)}
"""What `kbes tool` serves: the four, and the opt-in diff tool."""


class Block(NamedTuple):
    page: Path
    line: int
    kind: str
    info: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return not self.info.startswith("no-run")


def blocks(page: Path) -> list[Block]:
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    opening: tuple[int, str] | None = None
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.startswith("```"):
            if opening is not None:
                body.append(line)
            continue
        if opening is None:
            opening = (number, line[3:].strip())
            body = []
            continue
        kind, _, info = opening[1].partition(" ")
        found.append(Block(page, opening[0], kind, info.strip(), "\n".join(body) + "\n"))
        opening = None
    assert opening is None, f"{page.name}:{opening[0]}: a code block is never closed"
    return found


ALL = [block for page in PAGES for block in blocks(page)]


def of(kind: str, *, runs: bool | None = None) -> list[Any]:
    chosen = [b for b in ALL if b.kind == kind and (runs is None or b.runs == runs)]
    return [pytest.param(b, id=b.where) for b in chosen]


def test_every_page_has_blocks_and_every_block_a_rule() -> None:
    assert {p.name for p in PAGES} >= {
        "README.md",
        "architecture.md",
        "operations.md",
        "performance.md",
        "python-api.md",
        "reproduction.md",
    }
    assert [b.where for b in ALL if b.kind not in KINDS] == []
    assert [b.where for b in ALL if b.kind != "sh" and not b.runs] == []


def test_the_readme_is_for_users() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    table = re.findall(r"^\| `([a-z_]+)` ", text, re.M)
    assert set(table) == {*TOOLS, "diff_knowledge_article"}


def test_ci_installs_and_tests_as_the_readme_says() -> None:
    [setup] = [b for b in blocks(ROOT / "README.md") if "pip install" in b.code]
    assert "pip install . && kbes sim day" in setup.code
    assert "pip install -e '.[test]' && pytest" in setup.code
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^pip install (--quiet )?-e '\.\[test\]'$", ci, re.M)
    assert re.search(r"^pytest$", ci, re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_reach_their_page_and_heading(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor:
            headings = re.findall(r"^#+ (.*)$", linked.read_text(encoding="utf-8"), re.M)
            if anchor not in {slug(h) for h in headings}:
                broken.append(target)
    assert broken == []


# Shell --------------------------------------------------------------------------------------


def kbes_calls(code: str) -> list[tuple[list[str], list[str]]]:
    """(subcommand path, the words after it) for each `kbes` command in a shell block."""
    calls = []
    for line in code.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        calls += kbes_calls_in(list(lexer))
    return calls


def kbes_calls_in(words: list[str]) -> list[tuple[list[str], list[str]]]:
    calls = []
    for i, word in enumerate(words):
        if word != "kbes" and not word.endswith("/bin/kbes"):
            continue
        rest: list[str] = []
        for following in words[i + 1 :]:
            if following and set(following) <= set("();<>|&"):
                break
            rest.append(following)
        command: click.Command = main
        path: list[str] = []
        while isinstance(command, click.Group) and rest and rest[0] in command.commands:
            command = command.commands[rest[0]]
            path.append(rest.pop(0))
        if path:
            calls.append((path, rest))
    return calls


def check_kbes_calls(block: Block) -> int:
    calls = kbes_calls(block.code)
    for path, rest in calls:
        command: click.Command = main
        for name in path:
            assert isinstance(command, click.Group), f"{block.where}: `kbes {' '.join(path)}`"
            command = command.commands[name]
        assert not isinstance(command, click.Group), f"{block.where}: `kbes {' '.join(path)}`"
        options = {o for p in command.params for o in p.opts + p.secondary_opts} | {"-h", "--help"}
        named = {w.split("=")[0] for w in rest if re.match(r"^--?[a-z]", w)}
        assert named <= options, f"{block.where}: kbes {' '.join(path)} has no {named - options}"
        if path == ["tool"]:
            assert rest and rest[0] in SHELL_TOOLS, f"{block.where}: kbes tool {rest[:1]}"
    return len(calls)


@pytest.mark.slow
@pytest.mark.parametrize("block", of("sh"))
def test_shell_blocks_name_real_commands(block: Block) -> None:
    parsed = subprocess.run(["bash", "-n"], input=block.code, text=True, capture_output=True)
    assert parsed.returncode == 0, f"{block.where}: {parsed.stderr}"
    if not block.runs:
        assert block.info.startswith("no-run: ") and len(block.info) > len("no-run: ") + 10, (
            f"{block.where}: a block that is not run says why: ```sh no-run: REASON"
        )
    named = check_kbes_calls(block)
    mentions_kbes = re.search(r"(?<![\w/.-])kbes [a-z]", block.code)
    assert named or not mentions_kbes or "claude mcp" in block.code, block.where


def shell_env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBES_")}
    env["KBES_DB"] = str(folder / "kbes.sqlite")
    env["XDG_CACHE_HOME"] = str(folder / "cache")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.slow
@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if any(b.kind == "sh" and b.runs for b in blocks(p))],
    ids=lambda p: p.name,
)
def test_shell_blocks_run_in_order(page: Path, tmp_path: Path) -> None:
    script = ["set -euo pipefail"]
    for block in blocks(page):
        if block.kind == "sh" and block.runs:
            script += [f"echo '>>> {block.where}' >&2", block.code]
    ran = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=shell_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, f"{ran.stderr[-3000:]}\n{ran.stdout[-2000:]}"
    ran_blocks = ran.stderr.count(">>> ")
    assert ran_blocks == sum(1 for b in blocks(page) if b.kind == "sh" and b.runs)


# Python -------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", of("python"))
def test_python_blocks_run(block: Block, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in [k for k in os.environ if k.startswith("KBES_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KBES_DB", str(tmp_path / "kbes.sqlite"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    code = compile(block.code, block.where, "exec")
    exec(code, {"__name__": "__main__"})


# JSON ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> dict[str, Any]:
    """Real answers of every tool, two real refusals and a real log export line."""
    folder = tmp_path_factory.mktemp("real")
    store = open_store(folder / "kbes.sqlite")
    kb = str(store.create_knowledge_base("Support"))
    article = str(store.add_article(kb, "Reset your password", "Open Settings.", publish=True))
    answers: dict[str, Any] = {}

    def call(name: str, arguments: dict[str, Any]) -> Any:
        try:
            answers[name] = msgspec.to_builtins(call_tool(store, name, arguments))
        except KbesError as error:
            answers[error.code] = error.to_dict()
        return answers.get(name)

    call("search_knowledge_base", {"knowledge_base_id": kb, "query": "reset password"})
    read = call("read_knowledge_article", {"knowledge_base_id": kb, "article_id": article})
    edit = {
        "knowledge_base_id": kb,
        "article_id": article,
        "content": "Open Settings > Security.",
        "expected_version": read["updated_at"],
        "idempotency_key": "7f1c",
    }
    call("edit_knowledge_article", edit)
    call("edit_knowledge_article", {**edit, "idempotency_key": "other"})
    call("search_knowledge_base", {"knowledge_base_id": kb, "query": "r"})
    call("poll_resource_events", {"resource_type": "knowledge_base", "resource_id": kb})
    store.close()
    exported = subprocess.run(
        [str(BIN / "kbes"), "log", "export", "--db", str(folder / "kbes.sqlite")],
        capture_output=True,
        text=True,
        check=True,
    )
    answers["log export"] = json.loads(exported.stdout.splitlines()[-1])
    assert {"version_conflict", "invalid_argument", *TOOLS} <= set(answers)
    return answers


SHORT_ID = "51817ef4-…"
"""The knowledge-base id of the docs' examples, shortened."""
PROMPT_METHODS = ("prompts/list", "prompts/get", "completion/complete")


@pytest.fixture(scope="module")
def prompting(tmp_path_factory) -> Iterator[Callable[[str, dict[str, Any]], Any]]:
    """`answer(method, params)`: the real MCP answer about the prompts, as the wire JSON (less
    the envelope's `resultType`), for params and answer spelling the knowledge base SHORT_ID."""
    import mcp_types as types

    store = open_store(tmp_path_factory.mktemp("prompts") / "kbes.sqlite")
    kb = str(store.create_knowledge_base("Support"))

    def answer(method: str, params: dict[str, Any]) -> Any:
        params = json.loads(json.dumps(params, ensure_ascii=False).replace(SHORT_ID, kb))
        result: types.ListPromptsResult | types.GetPromptResult | types.CompleteResult
        if method == "prompts/list":
            result = list_result()
        elif method == "prompts/get":
            prompt = PROMPTS[params["name"]]
            result = get_result(prompt, prompt.text(store, params["arguments"], None, TOOLS))
        else:
            asked = types.CompleteRequestParams.model_validate(params)
            typed = asked.argument.value
            found = knowledge_base_completions(store, None, typed)
            result = completion_result(found if completes_knowledge_bases(asked) else [])
        wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        wire.pop("resultType", None)
        return json.loads(json.dumps(wire, ensure_ascii=False).replace(kb, SHORT_ID))

    yield answer
    store.close()


def prompt_gets(page: Path) -> dict[str, dict[str, Any]]:
    """The params of each `// prompts/get` example of a page, by prompt name."""
    found = {}
    for block in blocks(page):
        if block.kind == "jsonc":
            for comment, _ in json_values(block.code):
                method, _, params = comment.partition(" ")
                if method == "prompts/get":
                    found[json.loads(params)["name"]] = json.loads(params)
    return found


def shape(value: Any) -> Any:
    """The keys of a JSON value, nested; lists by their first element."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return None


def json_values(text: str) -> list[tuple[str, Any]]:
    """(the comment before it, value) for each JSON value of a JSON or JSONC block."""
    decoder = json.JSONDecoder()
    found, comment, at = [], "", 0
    while at < len(text):
        if text[at].isspace():
            at += 1
        elif text.startswith("//", at):
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
            comment = comment or text[at + 2 : end].strip()
            at = end
        else:
            value, at = decoder.raw_decode(text, at)
            found.append((comment, value))
            comment = ""
    return found


@pytest.mark.slow
@pytest.mark.parametrize("block", of("jsonc"))
def test_example_answers_have_the_shape_of_real_ones(block: Block, real, prompting) -> None:
    values = json_values(block.code)
    assert values, block.where
    for comment, value in values:
        method, _, params = comment.partition(" ")
        if method in PROMPT_METHODS:
            answer = prompting(method, json.loads(params or "{}"))
            if method == "prompts/get":
                assert shape(value) == shape(answer), f"{block.where}: {comment}"
            else:
                assert value == answer, f"{block.where}: {comment}"
        elif "code" in value:
            assert shape(value) == shape(real[value["code"]]), f"{block.where}: {value['code']}"
        else:
            tool = comment.split()[0]
            assert tool in TOOLS, f"{block.where}: say which tool answered: // TOOL_NAME ..."
            assert shape(value) == shape(real[tool]), f"{block.where}: {tool}"


CITATION = {"knowledge_base_id", "article_id", "updated_at"}


def check_client_config(block: Block, servers: dict[str, Any]) -> None:
    for server in servers.values():
        command, args = server["command"], server["args"]
        if command == "npx":
            assert args[0] == "mcp-remote" and args[1].endswith("/mcp"), block.where
            continue
        assert command.startswith("/") and command.endswith("/bin/kbes"), (
            f"{block.where}: a client starts kbes by the absolute path of the venv's script"
        )
        assert check_kbes_calls(block._replace(code=shlex.join(["kbes", *args]))) == 1
        assert args[0] == "serve", block.where


@pytest.mark.slow
@pytest.mark.parametrize("block", of("json"))
def test_json_blocks_are_what_they_say(block: Block, real) -> None:
    [(_, value)] = json_values(block.code)
    if "mcpServers" in value:
        check_client_config(block, value["mcpServers"])
    elif "topic" in value:
        assert shape(value).keys() == shape(real["log export"]).keys(), block.where
    else:
        assert CITATION <= value.keys() <= CITATION | {"quote"}, f"{block.where}: not a citation"


# Text ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", of("text"))
def test_text_blocks(block: Block, prompting) -> None:
    if block.info == "":
        return  # a diagram, not code
    if block.info.startswith("prompt "):
        name = block.info.removeprefix("prompt ")
        gets = prompt_gets(block.page)
        assert name in gets, f"{block.where}: no `// prompts/get` example of {name} on the page"
        [message] = prompting("prompts/get", gets[name])["messages"]
        assert block.code == message["content"]["text"] + "\n", block.where
        return
    assert block.info == "tokens-file", f"{block.where}: no rule for ```text {block.info}"
    lines = [line for line in block.code.splitlines() if line and not line.startswith("#")]
    assert lines, block.where
    for line in lines:
        _name, token, grants = line.split()
        hashed = token.startswith("sha256:") and len(token) == len("sha256:") + 64
        assert hashed or len(token) >= 16, line
        assert grants == "*" or all(g for g in grants.split(",")), line
