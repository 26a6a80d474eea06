"""A process for the keyword-engine tests: it opens a store and runs one search, printing the
hits' article ids; with `--hang-before-commit` it stops inside the keyword index's catch-up,
after the documents and the new position went to the writer and before the commit, says so,
and waits to be killed (holding tantivy's writer lock).

    python keyword_worker.py DB VIEWS KB QUERY [--hang-before-commit]
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from kbes import call_tool, open_store

HANGING = "hanging before the keyword index commit"


def say(**line: Any) -> None:
    print(json.dumps(line), flush=True)


def hang_before_commit() -> None:
    from kbes.projections import keyword_schema

    original = keyword_schema.position_document

    def then_hang(position: int, source: str, mark: str = "") -> Any:
        document = original(position, source, mark)
        say(state=HANGING, position=position)
        time.sleep(3600)
        return document

    keyword_schema.position_document = then_hang


def main(argv: list[str]) -> None:
    if "--hang-before-commit" in argv:
        argv.remove("--hang-before-commit")
        hang_before_commit()
    db, views, kb, query = argv
    store = open_store(db, views=views or None)
    result = call_tool(store, "search_knowledge_base", {"knowledge_base_id": kb, "query": query})
    say(hits=[hit.article_id for hit in result.hits])
    store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
