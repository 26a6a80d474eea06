"""Judged collections nobody here built, read from a folder given on the command line
(`kbes bench --rows 11 --judged DIR`); the data is fetched, never committed (docs/performance.md
says where from):

- `DIR/scifact/`: the allenai SciFact release (`corpus_train.csv`, `claims_validation.csv`):
  5,183 abstracts, BEIR's test split of 300 claims with the abstracts they cite (CC BY-NC 2.0).
- `DIR/mtrag/mtragun-human/`: IBM's MT-RAG benchmark (Apache-2.0): the reference passages of
  its generation tasks pooled into one corpus, and the last user turn of each judged task as
  the query, graded by annotators (`retrieval_tasks/qrels/*.tsv`).

Each loader returns a `Judged`: articles (title, content) in a fixed order, queries and their
graded judgments by article index. Titles follow kbes's title rule (refused characters become
spaces, at most 300 characters; a passage without one gets its document id); queries are cut
to the search tool's 200 characters at a word, so every method is asked the same text. The
search study's loaders (`colls.py`), made to read from a path."""

from __future__ import annotations

import ast
import contextlib
import csv
import json
import re
import sys
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

MAX_QUERY = 200
MAX_TITLE = 300
_REFUSED = {"Cc", "Cs", "Zl", "Zp", "Cf"}
_STRING = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")
MTRAG_DOMAINS = ("clapnq", "cloud", "fiqa", "govt")


@dataclass(frozen=True)
class Judged:
    name: str
    articles: list[tuple[str, str]]
    queries: list[tuple[str, str]]
    """(query id, text), in a fixed order."""
    judgments: dict[str, dict[int, int]]
    """Query id -> {article index: grade > 0}."""
    domains: dict[str, str]
    """Query id -> its domain, where the collection has several (MT-RAG)."""


def _sentences(array: str) -> list[str]:
    out = []
    for m in _STRING.finditer(array):
        s = m.group(1) if m.group(1) is not None else m.group(2)
        if "\\" in s:
            with contextlib.suppress(ValueError, SyntaxError):
                s = ast.literal_eval("'" + s.replace("'", "\\'") + "'")
        out.append(s)
    return out


def _title(title: str, doc_id: str) -> str:
    title = "".join(" " if unicodedata.category(c) in _REFUSED else c for c in title)
    title = " ".join(title.split())
    if not title:
        return doc_id
    if len(title) > MAX_TITLE:
        title = title[: MAX_TITLE - 1].rsplit(" ", 1)[0]
    return title


def _query(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_QUERY:
        text = text[:MAX_QUERY].rsplit(" ", 1)[0]
    return text


def _judged(
    name: str,
    docs: dict[str, tuple[str, str]],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    domains: dict[str, str] | None = None,
) -> Judged:
    order = list(docs)
    index = {d: i for i, d in enumerate(order)}
    articles = [(_title(docs[d][0], d), docs[d][1]) for d in order]
    judgments = {
        q: {index[d]: g for d, g in rel.items() if d in index and g > 0}
        for q, rel in qrels.items()
        if q in queries
    }
    judgments = {q: rel for q, rel in judgments.items() if rel}
    asked = [(q, _query(queries[q])) for q in queries if q in judgments]
    return Judged(name, articles, asked, judgments, domains or {})


def scifact(root: Path) -> Judged:
    base = root / "scifact"
    csv.field_size_limit(sys.maxsize)
    docs: dict[str, tuple[str, str]] = {}
    with open(base / "corpus_train.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            docs[r["doc_id"]] = (r["title"], " ".join(_sentences(r["abstract"])))
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with open(base / "claims_validation.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            queries[r["id"]] = r["claim"]
            for d in re.findall(r"\d+", r["cited_doc_ids"]):
                if d in docs:
                    qrels[r["id"]][d] = 1
    return _judged("SciFact", docs, queries, qrels)


def mtrag(root: Path) -> Judged:
    base = root / "mtrag" / "mtragun-human"
    rename = {"ibmcloud": "cloud"}
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    domain_of: dict[str, str] = {}
    for domain in MTRAG_DOMAINS:
        lines = (base / "retrieval_tasks" / "qrels" / f"{domain}.tsv").read_text().split("\n")
        for line in lines[1:]:
            if line:
                q, doc, score = line.split("\t")
                qrels[q][doc] = int(score)
                domain_of[q] = domain
    docs: dict[str, tuple[str, str]] = {}
    queries: dict[str, str] = {}
    with open(base / "generation_tasks" / "reference.jsonl", encoding="utf-8") as f:
        for line in f:
            task = json.loads(line)
            for c in task.get("contexts", []):
                docs[c["document_id"]] = (c.get("title") or "", c["text"].strip())
            if task["task_id"] in qrels:
                users = [m["text"] for m in task["input"] if m["speaker"] == "user"]
                queries[task["task_id"]] = users[-1]
                domain_of.setdefault(
                    task["task_id"], rename.get(task["Collection"], task["Collection"])
                )
    return _judged("MT-RAG", docs, queries, qrels, domain_of)


LOADERS = {"scifact": scifact, "mtrag": mtrag}


def load_all(root: Path) -> list[Judged]:
    """Every collection found under `root` (a missing one is left out, not an error)."""
    found = []
    if (root / "scifact" / "corpus_train.csv").is_file():
        found.append(scifact(root))
    if (root / "mtrag" / "mtragun-human" / "generation_tasks" / "reference.jsonl").is_file():
        found.append(mtrag(root))
    return found


__all__ = ["LOADERS", "Judged", "load_all", "mtrag", "scifact"]
