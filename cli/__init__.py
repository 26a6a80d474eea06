"""The `kbes` command line."""

from __future__ import annotations

import click

from kbes.cli.allocator import tune_allocator
from kbes.cli.article import article
from kbes.cli.audit import audit_command
from kbes.cli.bench import bench
from kbes.cli.bundle import bundle
from kbes.cli.embed import embed_command
from kbes.cli.events import events
from kbes.cli.importer import import_folder
from kbes.cli.kb import kb
from kbes.cli.log import log
from kbes.cli.rebuild import rebuild
from kbes.cli.serve import serve
from kbes.cli.sim import sim
from kbes.cli.token import token
from kbes.cli.tool import tool


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kbes")
def main() -> None:
    """kbes: an event-sourced knowledge-base store whose citations are version stamps.

    Every command that works on a store takes --db PATH (or KBES_DB); the default is
    ./kbes.sqlite. `kbes sim` and `kbes bench` build throwaway databases of their own.
    """
    tune_allocator()


main.add_command(kb)
main.add_command(article)
main.add_command(import_folder)
main.add_command(tool)
main.add_command(events)
main.add_command(rebuild)
main.add_command(embed_command)
main.add_command(serve)
main.add_command(bundle)
main.add_command(token)
main.add_command(audit_command)
main.add_command(log)
main.add_command(sim)
main.add_command(bench)
