"""`kbes serve`: the MCP server agents connect to (Claude Code, Claude Desktop, any MCP client)."""

from __future__ import annotations

import functools
import ipaddress
import logging
import sys
from pathlib import Path

import anyio
import click

from kbes.cli.grants import GRANT_HELP, grant_values
from kbes.cli.options import existing_db_option, store_at
from kbes.cli.search_option import search_option, search_settings
from kbes.server.edit_policy import EDIT_POLICIES, EditPolicy
from kbes.server.identity import describe_grants, instructions_for
from kbes.server.query_redaction import RedactQueryCredentials
from kbes.server.serve_limits import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_SESSIONS_PER_CLIENT,
    DEFAULT_MAX_SUBSCRIPTIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    ServeLimits,
)
from kbes.server.tokens_file import (
    TOKENS_FILE_HELP,
    TokensFile,
    TokensFileError,
    grant_problems,
    readable_by_others,
)
from kbes.store.application import KnowledgeBaseStore
from kbes.store.embedding import Progress as EmbeddingProgress
from kbes.store.urls import redact
from kbes.tools import HISTORY_TOOLS, TOOLS, Grants

# `kbes.server.mcp_server` and `kbes.server.http_auth` import the MCP SDK, the slowest import
# kbes has, so they are imported only when `kbes serve` runs: `kbes --help` and every other
# command never load it.
LOG_LEVELS = ("debug", "info", "warning", "error")


@click.command("serve")
@existing_db_option
@click.option(
    "--grant",
    "grant_ids",
    multiple=True,
    metavar="KB_ID[,...]",
    help="Let agents touch this knowledge base (repeatable). Any other id answers not_found, "
    "exactly as a non-existent one does; " + GRANT_HELP + " --grant '*' is --grant-all.",
)
@click.option(
    "--grant-all",
    is_flag=True,
    help="Let agents touch every knowledge base in the database, including ones created later.",
)
@click.option(
    "--http",
    "http",
    metavar="[HOST:]PORT",
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio. HOST defaults to "
    "127.0.0.1 (loopback); a non-loopback HOST needs --tokens. PORT 0 picks a free port "
    "(printed on stderr).",
)
@click.option(
    "--tokens",
    "tokens_file",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="With --http: accept only requests bearing a token listed in FILE (401 otherwise); "
    "each token is confined to the knowledge bases FILE grants it, within the server's "
    "grants. Each line of FILE is: NAME TOKEN GRANTS, where GRANTS is '*' or "
    "comma-separated knowledge-base ids and TOKEN may be written as sha256:HEX; "
    "`kbes token add` writes them. A changed FILE counts from the next request on.",
)
@click.option(
    "--approval-keys",
    "approval_keys_file",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    envvar="KBES_APPROVAL_KEYS",
    show_envvar=True,
    help="With --http and --edits ask: the secrets that seal the approval round trip of MCP "
    "2026-07-28 clients, so that when several kbes serve share FILE, the user's answer may "
    "reach any of them (behind one load balancer, or after a restart). One secret of at "
    "least 32 bytes per line, the first sealing and every line unsealing (rotation: see "
    "docs/operations.md). Servers with --tokens must also share the tokens file: an approval "
    "is bound to the token's NAME. Default: a key of this process alone (KBES_APPROVAL_KEYS "
    "is ignored over stdio).",
)
@click.option(
    "--edits",
    type=click.Choice(EDIT_POLICIES),
    default="ask",
    show_default=True,
    help="ask: the client asks the user to approve each edit (MCP elicitation) and kbes "
    "writes only on acceptance; a client that cannot ask gets approval_required. "
    "allow: edits go through without asking. deny: edits are refused (edits_disabled).",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS),
    default="warning",
    show_default=True,
    help="How much the server logs on stderr. Tokens are redacted at every level.",
)
@click.option(
    "--history-tools",
    is_flag=True,
    help="Also serve diff_knowledge_article (read-only): what changed in an article since a "
    "cited version, as a unified diff, instead of re-reading it whole.",
)
@click.option(
    "--max-subscriptions",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_SUBSCRIPTIONS,
    show_default=True,
    metavar="N",
    help="Resource URIs one 2025-era MCP session may subscribe to (resources/subscribe); one "
    "more is refused. A session's subscriptions end with it.",
)
@click.option(
    "--session-idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_SESSION_IDLE_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="With --http: end a 2025-era client's session once it has had no request in flight "
    "(no call, no open event stream) this long; the client then starts a new one.",
)
@click.option(
    "--max-sessions-per-client",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_SESSIONS_PER_CLIENT,
    show_default=True,
    metavar="N",
    help="With --http: sessions one token NAME (without --tokens, one client address) may "
    "hold open; another is refused with 429 and Retry-After, and other clients are unaffected. "
    "Without --tokens the client's least recently used idle session is ended instead, to make "
    "room; only a client whose every session is busy is refused.",
)
@click.option(
    "--http-header-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_HEADER_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="With --http: how long a request's headers may take to arrive, from the connection's "
    "opening or its previous response (so also how long an idle connection stays open); "
    "then the connection is closed.",
)
@click.option(
    "--http-max-connections",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_CONNECTIONS,
    show_default=True,
    metavar="N",
    help="With --http: requests in flight (an open event stream counts) past which a "
    "request is answered 503 at once.",
)
@search_option
def serve(
    db: str,
    grant_ids: tuple[str, ...],
    grant_all: bool,
    http: str | None,
    tokens_file: str | None,
    approval_keys_file: str | None,
    edits: EditPolicy,
    log_level: str,
    history_tools: bool,
    max_subscriptions: int,
    session_idle_timeout: float,
    max_sessions_per_client: int,
    http_header_timeout: float,
    http_max_connections: int,
    search: str | None,
) -> None:
    """Serve the four knowledge-base tools over MCP: stdio by default, or streamable HTTP.

    The server touches only the knowledge bases granted to it: pass --grant KB_ID (repeatable,
    or KB_ID,KB_ID...) or --grant-all. Runs alongside the other kbes commands on the same
    database: a save made with `kbes article save` is seen by the next tool call.

    \b
    Examples:
      kbes serve --db kb.sqlite --grant 6f1c...                # stdio, for Claude Desktop
      kbes serve --grant-all --http 8765                        # http://127.0.0.1:8765/mcp
      kbes serve --grant-all --http 0.0.0.0:8765 --tokens tokens.txt
    """
    if not grant_ids and not grant_all:
        raise click.UsageError(
            "kbes serve needs to know which knowledge bases agents may touch: pass "
            "--grant KB_ID (repeatable) or --grant-all. `kbes kb list` shows the ids."
        )
    if grant_ids and grant_all:
        raise click.UsageError("pass either --grant KB_ID or --grant-all, not both")
    if tokens_file and not http:
        raise click.UsageError("--tokens applies to --http; over stdio the client is local")
    address = parse_address(http) if http else None
    if address and not tokens_file and not is_loopback(address[0]):
        raise click.UsageError(
            f"refusing to serve {address[0]} without --tokens: anyone who can reach the port "
            "could read and edit the granted knowledge bases. Add --tokens FILE, or serve on "
            "loopback (the default host)."
        )
    if approval_keys_file and not http:
        source = click.get_current_context().get_parameter_source("approval_keys_file")
        if source != click.core.ParameterSource.ENVIRONMENT:
            raise click.UsageError(
                "--approval-keys applies to --http; over stdio one process serves the whole session"
            )
        approval_keys_file = None  # KBES_APPROVAL_KEYS set for the HTTP servers of a shell
    approval_keys = load_approval_keys(approval_keys_file) if approval_keys_file else None
    if not http:
        refuse_http_only_options(
            "session_idle_timeout",
            "max_sessions_per_client",
            "http_header_timeout",
            "http_max_connections",
        )
    limits = ServeLimits(
        header_timeout=http_header_timeout,
        max_connections=http_max_connections,
        session_idle_timeout=session_idle_timeout,
        max_sessions_per_client=max_sessions_per_client,
        max_subscriptions=max_subscriptions,
    )
    tokens = load_tokens(tokens_file) if tokens_file else None
    configure_logging(log_level, tokens)
    tools = [*TOOLS.values(), *(HISTORY_TOOLS if history_tools else [])]
    with store_at(db, checked=search_settings(db, search)) as store:
        grants = resolve_grants(store, grant_ids, grant_all)
        if tokens is not None:
            check_token_grants(store, tokens, grants)
            # A changed tokens file is read again at the next request; its tokens are held
            # to the same grants, each refused one left out (kbes.server.tokens_file).
            tokens.check = functools.partial(grant_problems, store=store, grants=grants)
        known = None if tokens is not None else describe_grants(store, grants)
        if address is None:
            # Said before the MCP SDK's import, the slow one, as the stdio server starts.
            note(
                f"kbes serve: MCP over stdio; database {redact(db)}; "
                f"grants {granted(grants)}; edits {edits}; search {store.settings.search}"
            )
        store.keep_up_in_background()
        if store.settings.search == "hybrid":
            store.embed_in_background(report=embedding_progress)
        from kbes.server.mcp_server import KbesMCP, bind, url_host

        mcp = KbesMCP(
            store,
            grants=grants,
            tools=tools,
            edits=edits,
            tokens=tokens,
            instructions=instructions_for(known),
            approval_keys=approval_keys,
            limits=limits,
        )
        if address is None:
            anyio.run(mcp.run_stdio)
            return
        host, port = address
        try:
            sock = bind(host, port)
        except OSError as e:
            raise click.ClickException(f"cannot listen on {host}:{port}: {e}") from e
        bound = sock.getsockname()[1]
        auth = f"{len(tokens.holders)} token(s) from {tokens_file}" if tokens else "no tokens"
        if approval_keys:
            auth += f"; approvals sealed with {len(approval_keys)} key(s) from {approval_keys_file}"
        note(
            f"kbes serve: MCP over streamable HTTP at http://{url_host(host)}:{bound}/mcp; "
            f"database {redact(db)}; grants {granted(grants)}; {auth}; edits {edits}; "
            f"search {store.settings.search}"
        )
        try:
            stopped_by = anyio.run(lambda: mcp.serve_http(sock, log_level=log_level))
        finally:
            sock.close()
        note(f"kbes serve: stopped ({stopped_by or 'the server ended'})")


def refuse_http_only_options(*names: str) -> None:
    """A usage error for an HTTP-only option given to a stdio server."""
    context = click.get_current_context()
    for name in names:
        if context.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE:
            flag = "--" + name.replace("_", "-")
            raise click.UsageError(f"{flag} applies to --http; over stdio there is one client")


MIN_APPROVAL_KEY = 32
"""Bytes; the SDK's AES-GCM codec refuses shorter secrets."""


def load_approval_keys(path: str) -> list[str]:
    """The secrets of an --approval-keys FILE: one per line; blank lines and `#` comments
    skipped. Checked here so a bad file is a usage error naming the flag, not a traceback."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise click.BadParameter(f"cannot read {path}: {e}", param_hint="--approval-keys") from e
    keys = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    fix = 'make one with: python -c "import secrets; print(secrets.token_hex(32))"'
    if not keys:
        raise click.BadParameter(f"{path} holds no key; {fix}", param_hint="--approval-keys")
    for number, key in enumerate(keys, start=1):
        if len(key.encode()) < MIN_APPROVAL_KEY:
            raise click.BadParameter(
                f"key {number} of {path} is {len(key.encode())} bytes; each needs at least "
                f"{MIN_APPROVAL_KEY} bytes of secret randomness ({fix})",
                param_hint="--approval-keys",
            )
    if len(set(keys)) != len(keys):
        raise click.BadParameter(f"{path} lists a key twice", param_hint="--approval-keys")
    return keys


def granted(grants: Grants) -> str:
    """What the start-up line says the server may touch."""
    return "every knowledge base" if grants is None else f"{len(grants)} knowledge base(s)"


def parse_address(value: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[IPv6]:PORT`; the host defaults to loopback."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "127.0.0.1", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise click.BadParameter(
            f"{value!r} is not [HOST:]PORT (e.g. 8765, 127.0.0.1:8765, 0.0.0.0:8765)",
            param_hint="--http",
        )
    return host, port


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_grants(
    store: KnowledgeBaseStore, grant_ids: tuple[str, ...], grant_all: bool
) -> Grants:
    """Canonical ids of the granted knowledge bases (kbes.cli.grants); None: every one."""
    return None if grant_all else grant_values(store, grant_ids)


def load_tokens(path: str) -> TokensFile:
    try:
        tokens = TokensFile(path)
    except TokensFileError as e:
        raise click.BadParameter(f"{e}\n\n{TOKENS_FILE_HELP}", param_hint="--tokens") from None
    if tokens.secrets and readable_by_others(path):
        note(f"kbes serve: warning: {path} holds tokens and other users can read it (chmod 600)")
    return tokens


def check_token_grants(store: KnowledgeBaseStore, tokens: TokensFile, grants: Grants) -> None:
    """Each knowledge base a token names must exist and be granted to the server."""
    for _holder, problem in grant_problems(tokens.tokens, store, grants):
        raise click.BadParameter(problem, param_hint="--tokens")


def configure_logging(level: str, tokens: TokensFile | None) -> None:
    """Log to stderr (stdout carries the protocol over stdio), with tokens redacted: the ones
    the tokens file holds in the clear, and any credential in a URL's query string."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactQueryCredentials())
    if tokens is not None:
        from kbes.server.http_auth import RedactTokens

        handler.addFilter(RedactTokens(lambda: tokens.secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def note(message: str) -> None:
    click.echo(message, err=True)


def embedding_progress(progress: EmbeddingProgress) -> None:
    """The background embedding's progress, in the server's log (stderr)."""
    if progress.done:
        per = progress.cpu_seconds * 1000 / max(progress.embedded, 1)
        note(
            f"kbes serve: embedded {progress.embedded:,} articles for hybrid search in "
            f"{progress.seconds:.0f} s ({progress.cpu_seconds:.0f} s of CPU, {per:.0f} s per "
            "1,000): every published article has its vector"
        )
    elif progress.embedded == 0:
        note(
            f"kbes serve: embedding {progress.waiting:,} articles for hybrid search in the "
            "background; a knowledge base with articles still waiting is searched by keywords"
        )
    else:
        share = min(progress.embedded / max(progress.waiting, 1), 1.0)
        left = progress.seconds * (1 - share) / share if share else 0.0
        note(
            f"kbes serve: embedded {progress.embedded:,} of {progress.waiting:,} articles "
            f"({share:.0%}, {progress.seconds:.0f} s; about {left:.0f} s left)"
        )
