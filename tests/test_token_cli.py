"""`kbes token add/list/remove`: the token printed once and only its hash kept, in lines the
server's own parser reads; `list` never shows a secret or a hash; the file is made 0600 and
rewritten whole."""

from __future__ import annotations

import json
import stat
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbes import KnowledgeBaseStore
from kbes.cli import main
from kbes.server.tokens_file import TokenHolder, Tokens, token_digest


def holder(tokens: Tokens, token: str) -> TokenHolder:
    """The holder of `token`, which the test has just written to the file."""
    found = tokens.holder(token)
    assert found is not None, "the token is not in the file"
    return found


@pytest.fixture
def kbs(store: KnowledgeBaseStore) -> tuple[str, str]:
    return str(store.create_knowledge_base("Support")), str(store.create_knowledge_base("Other"))


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    return tmp_path / "tokens.txt"


def kbes(runner: CliRunner, tokens: Path, *args: str):
    return runner.invoke(main, ["token", *args, "--tokens", str(tokens)])


def add(runner: CliRunner, tokens: Path, name: str, *grants: str) -> str:
    args = [a for g in grants for a in ("--grant", g)]
    done = kbes(runner, tokens, "add", name, *args)
    assert done.exit_code == 0, done.output
    return done.stdout.strip()


def test_add_prints_the_token_once_and_keeps_only_its_hash(
    runner: CliRunner, tokens: Path, kbs: tuple[str, str]
) -> None:
    done = kbes(runner, tokens, "add", "support-bot", "--grant", kbs[0])
    assert done.exit_code == 0, done.output
    [secret] = done.stdout.splitlines()  # stdout is the token alone: TOKEN=$(kbes token add ...)
    assert len(secret) >= 43 and " " not in secret
    assert "shown this once" in done.stderr and secret not in done.stderr
    text = tokens.read_text()
    assert secret not in text
    assert f"support-bot sha256:{token_digest(secret)} {kbs[0]}\n" in text
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    # The server's own parser reads the line: the token names its holder and grants.
    holder = Tokens.load(tokens).holder(secret)
    assert holder is not None and holder.name == "support-bot"
    assert holder.grants == frozenset({kbs[0]})


def test_add_takes_the_grants_kbes_serve_takes(
    runner: CliRunner, tokens: Path, kbs: tuple[str, str]
) -> None:
    one, other = kbs
    listed = add(runner, tokens, "listed", f"{other},{one}")
    repeated = add(runner, tokens, "repeated", one, other)
    every = add(runner, tokens, "every", "*")
    upper = add(runner, tokens, "upper", one.upper())  # written as the canonical id
    loaded = Tokens.load(tokens)
    both = frozenset({one, other})
    assert holder(loaded, listed).grants == holder(loaded, repeated).grants == both
    assert holder(loaded, every).grants is None
    assert holder(loaded, upper).grants == frozenset({one})
    assert f"sha256:{token_digest(listed)} {','.join(sorted(kbs))}\n" in tokens.read_text()
    assert len({listed, repeated, every, upper}) == 4


def test_add_with_every_knowledge_base_needs_no_database(tmp_path: Path, tokens: Path) -> None:
    done = CliRunner().invoke(
        main,
        ["token", "add", "ci", "--grant", "*", "--tokens", str(tokens)],
        env={"KBES_DB": str(tmp_path / "missing.sqlite")},
    )
    assert done.exit_code == 0, done.output
    assert holder(Tokens.load(tokens), done.stdout.strip()).grants is None


@pytest.mark.parametrize(
    ("name", "grant", "message"),
    [
        ("bot", "{random}", "no knowledge base '{random}' in this database"),
        ("bot", "{kb},*", "'*' grants every knowledge base: give it alone"),
        ("bot", "{kb}, {kb}", "no knowledge base ' {kb}'"),
        ("two words", "*", "is what logs show of the caller"),
        ("#comment", "*", "starting with a letter or a digit"),
        ("ok\x1b[2J", "*", "is what logs show of the caller"),
        ("taken", "*", "already has a token named 'taken'"),
    ],
)
def test_add_refuses_writing_nothing(
    runner: CliRunner, tokens: Path, kbs: tuple[str, str], name: str, grant: str, message: str
) -> None:
    add(runner, tokens, "taken", "*")
    before = tokens.read_text()
    values = {"kb": kbs[0], "random": str(uuid.uuid4())}
    done = kbes(runner, tokens, "add", name, "--grant", grant.format(**values))
    assert done.exit_code != 0
    assert message.format(**values) in " ".join(done.output.split())
    assert done.stdout == "" or "Usage" in done.stdout  # no token printed
    assert tokens.read_text() == before


def test_add_refuses_a_file_the_server_would_refuse(runner: CliRunner, tokens: Path) -> None:
    tokens.write_text("ci short *\n")
    done = kbes(runner, tokens, "add", "bot", "--grant", "*")
    assert done.exit_code == 1
    assert "line 1" in done.output and "fix the tokens file first" in done.output
    assert tokens.read_text() == "ci short *\n"


def test_add_and_remove_keep_the_rest_of_the_file_and_its_mode(
    runner: CliRunner, tokens: Path
) -> None:
    hand = "# written by hand\n\nops " + "p" * 20 + " *"  # no newline at the end
    tokens.write_text(hand)
    tokens.chmod(0o640)
    secret = add(runner, tokens, "bot", "*")
    assert tokens.read_text().startswith(hand + "\n")
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o640
    done = kbes(runner, tokens, "remove", "ops")
    assert done.exit_code == 0, done.output
    text = tokens.read_text()
    assert text.startswith("# written by hand\n\nbot sha256:")
    assert "ops" not in text and holder(Tokens.load(tokens), secret).name == "bot"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o640


def test_remove_names_what_it_cannot_find(runner: CliRunner, tokens: Path) -> None:
    add(runner, tokens, "bot", "*")
    before = tokens.read_text()
    done = kbes(runner, tokens, "remove", "nobody")
    assert done.exit_code == 1
    assert "no token named 'nobody'" in done.output and "kbes token list" in done.output
    assert tokens.read_text() == before
    missing = kbes(runner, tokens.with_name("none.txt"), "remove", "bot")
    assert missing.exit_code == 1 and "no tokens file" in missing.output


def test_list_shows_names_and_grants_never_a_secret_nor_a_hash(
    runner: CliRunner, tokens: Path, kbs: tuple[str, str]
) -> None:
    secrets = [add(runner, tokens, "support-bot", kbs[0]), add(runner, tokens, "auditor", "*")]
    plaintext = "hand-" + "x" * 20
    with tokens.open("a") as file:
        file.write(f"by-hand {plaintext} {kbs[1]}\nbroken line\n")
    table = kbes(runner, tokens, "list")
    as_json = kbes(runner, tokens, "list", "--json")
    for done in (table, as_json):
        assert done.exit_code == 0, done.output
        for secret in [*secrets, plaintext]:
            assert secret not in done.output
            assert token_digest(secret) not in done.output
            assert token_digest(secret)[:12] not in done.output
        assert "line 5" in done.stderr  # the broken line, as the server would name it
    rows = [line.split() for line in table.stdout.splitlines()[2:]]
    assert rows == [
        ["support-bot", kbs[0], "sha256"],
        ["auditor", "*", "sha256"],
        ["by-hand", kbs[1], "plaintext"],
    ]
    assert "holds the token itself" in table.stderr
    assert json.loads(as_json.stdout) == [
        {"name": "support-bot", "grants": [kbs[0]], "kept_as": "sha256"},
        {"name": "auditor", "grants": "*", "kept_as": "sha256"},
        {"name": "by-hand", "grants": [kbs[1]], "kept_as": "plaintext"},
    ]


def test_list_without_a_file_says_how_to_make_one(runner: CliRunner, tokens: Path) -> None:
    done = kbes(runner, tokens, "list")
    assert done.exit_code == 1
    assert "kbes token add NAME --grant KB_ID" in done.output
