"""`kbes token`: make, list and remove the bearer tokens of `kbes serve --http --tokens FILE`.

The file keeps only each token's sha256, so the secret is printed once, by `add`, and exists
nowhere else; `list` shows names and grants, never a secret nor a hash. Every change rewrites the
file whole, atomically (a temporary file beside it, then a rename), so a running server, which
reads the file again when it changes, never sees half a line."""

from __future__ import annotations

import os
import re
import secrets
import stat
import tempfile
from pathlib import Path

import click

from kbes.cli.grants import grant_values
from kbes.cli.options import existing_db_option, json_option, print_json, print_table, store_at
from kbes.server.tokens_file import HASHED, TokenLine, parse_lines, token_digest
from kbes.tools.grants import EVERY

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
"""What a token's NAME may be: it is what logs show of the caller, so it must not forge a log
line, and it has no spaces (the file's separator)."""

HEADER = "# NAME TOKEN GRANTS: written by `kbes token add`, read by `kbes serve --tokens FILE`\n"

tokens_option = click.option(
    "--tokens",
    "tokens_file",
    type=click.Path(dir_okay=False),
    default="tokens.txt",
    show_default=True,
    metavar="FILE",
    help="The tokens file, as `kbes serve --http --tokens FILE` reads it.",
)


@click.group("token")
def token() -> None:
    """Bearer tokens for `kbes serve --http --tokens FILE`: add, list, remove.

    \b
      TOKEN=$(kbes token add support-bot --grant KB_ID)   # prints the token, once
      kbes token list                                      # names and grants
      kbes token remove support-bot

    The file keeps only each token's sha256. A running server reads the file again when it
    changes: a token added or removed counts from its next request on.
    """


@token.command("add")
@click.argument("name")
@click.option(
    "--grant",
    "grant_ids",
    multiple=True,
    required=True,
    metavar="KB_ID[,...]",
    help="A knowledge base the token may reach (repeatable; ids separated by commas, no "
    "spaces), or '*' for every one the server is granted. `kbes kb list` shows the ids.",
)
@tokens_option
@existing_db_option
def add(name: str, grant_ids: tuple[str, ...], tokens_file: str, db: str) -> None:
    """Make a token named NAME and add its line to the tokens file (created, mode 0600, if
    missing). The token is printed on stdout, once, and nothing else is: TOKEN=$(kbes token add
    ...) keeps it. Each id must name a knowledge base of --db."""
    if not NAME.fullmatch(name):
        raise click.BadParameter(
            f"{name!r}: a NAME is what logs show of the caller: 1 to 64 letters, digits and "
            ". _ @ + -, starting with a letter or a digit",
            param_hint="NAME",
        )
    path = Path(tokens_file)
    text = existing_text(path)
    lines = read_lines(path, text)
    if any(line.name == name for line in lines):
        raise click.ClickException(
            f"{path} already has a token named {name!r}: choose another name, or "
            f"`kbes token remove {name}` first"
        )
    if list(grant_ids) == [EVERY]:
        grants_text = EVERY
    else:
        with store_at(db) as store:
            grants = grant_values(store, grant_ids)
        grants_text = EVERY if grants is None else ",".join(sorted(grants))
    secret = secrets.token_urlsafe(32)
    line = f"{name} {HASHED}{token_digest(secret)} {grants_text}\n"
    if text is None:
        text = HEADER
    elif text and not text.endswith("\n"):
        text += "\n"
    write_atomically(path, text + line)
    click.echo(secret)
    click.echo(
        f"added {name} to {path}, which keeps only its sha256: the token (on stdout) is shown this "
        f"once. A running `kbes serve --tokens {path}` accepts it from its next request.",
        err=True,
    )


@token.command("list")
@tokens_option
@json_option
def list_tokens(tokens_file: str, as_json: bool) -> None:
    """The tokens of the file: NAME, GRANTS and how the token is kept (never the token, nor its
    hash). Lines the server would not accept are named on stderr."""
    path = Path(tokens_file)
    text = existing_text(path)
    if text is None:
        raise click.ClickException(
            f"no tokens file {path}; make one with `kbes token add NAME --grant KB_ID`"
        )
    lines, problems = parse_lines(text, str(path))
    for problem in problems:
        click.echo(f"warning: {problem}", err=True)
    if as_json:
        print_json([entry(line) for line in lines])
    else:
        print_table(
            ["name", "grants", "kept as"],
            [(line.name, line.grants_text, kept_as(line)) for line in lines],
        )
    for line in lines:
        if line.secret is not None:
            click.echo(
                f"note: the line of {line.name} holds the token itself; to keep only a hash, "
                f"`kbes token remove {line.name}` and add it again (a new token)",
                err=True,
            )


@token.command("remove")
@click.argument("name")
@tokens_option
def remove(name: str, tokens_file: str) -> None:
    """Remove the token named NAME from the tokens file. A running server refuses it (401)
    from its next request on."""
    path = Path(tokens_file)
    text = existing_text(path)
    if text is None:
        raise click.ClickException(f"no tokens file {path}")
    kept = [line for line in text.splitlines(keepends=True) if line_name(line) != name]
    if len(kept) == len(text.splitlines()):
        raise click.ClickException(
            f"no token named {name!r} in {path}; `kbes token list` shows the names"
        )
    write_atomically(path, "".join(kept))
    click.echo(
        f"removed {name} from {path}; a running `kbes serve --tokens {path}` refuses its token "
        "from its next request on",
        err=True,
    )


def existing_text(path: Path) -> str | None:
    """The file's text; None if there is no file."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise click.ClickException(f"cannot read tokens file {path}: {e}") from None


def read_lines(path: Path, text: str | None) -> list[TokenLine]:
    """The token lines of a file `add` is about to change; one the server would not accept
    must be fixed first, or the server would refuse the whole file as it starts."""
    if text is None:
        return []
    lines, problems = parse_lines(text, str(path))
    if problems:
        raise click.ClickException(
            "fix the tokens file first (`kbes token remove NAME` removes a line):\n"
            + "\n".join(problems)
        )
    return lines


def line_name(line: str) -> str | None:
    """The NAME a line of a tokens file starts with; None for a blank line or a comment."""
    fields = line.split()
    if not fields or fields[0].startswith("#"):
        return None
    return fields[0]


def kept_as(line: TokenLine) -> str:
    return "plaintext" if line.secret is not None else "sha256"


def entry(line: TokenLine) -> dict[str, object]:
    grants = EVERY if line.grants is None else sorted(line.grants)
    return {"name": line.name, "grants": grants, "kept_as": kept_as(line)}


def write_atomically(path: Path, text: str) -> None:
    """Replace the file's contents at once, keeping its mode (0600 for a new file): a reader
    sees the old file or the new one, never a part."""
    target = path.resolve()  # a symbolic link: change the file it names
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o600
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
