"""The citation workflow as prompts a user can pick (in Claude Code, `/mcp__kbes__cite_answer`):
answer a question with version-stamped citations and keep the cursor, and later re-check those
citations from the cursor, re-reading only what moved. These are words a model reads, so they
live with the tools they name; the MCP server serves them (`kbes.server.prompts`).

Like a tool call, a prompt is checked before it is worded: unknown or missing arguments, a
cursor that is not a sequence number, and a knowledge base the caller may not see are refused
with the tools' own errors."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from string import Template
from typing import TYPE_CHECKING

from kbes.tools.grants import Grants, admit
from kbes.tools.refusals import (
    Asked,
    not_a_cursor,
    prompt_argument_missing,
    refusing,
    unknown_prompt_argument,
)

if TYPE_CHECKING:
    from kbes.store.application import KnowledgeBaseStore


@dataclass(frozen=True)
class PromptArgument:
    """One argument of a prompt. `absent` is what the text says in its place when an optional
    argument is not given; `completes` says its values are granted knowledge-base ids."""

    name: str
    title: str
    description: str
    required: bool = True
    absent: str = ""
    completes: bool = False


@dataclass(frozen=True)
class Prompt:
    """One prompt: its name and words for the user's client, its arguments, and the text the
    model gets (a `string.Template` over the arguments and the steps that depend on the tools
    the server serves)."""

    name: str
    title: str
    description: str
    arguments: tuple[PromptArgument, ...]
    template: str

    def text(
        self,
        store: KnowledgeBaseStore,
        given: Mapping[str, str] | None,
        grants: Grants,
        tools: Collection[str],
    ) -> str:
        """The prompt's text for these arguments, served with `tools`; a `KbesError` for an
        argument that is unknown, missing or names nothing the caller may see."""
        values = {k: v.strip() for k, v in (given or {}).items()}
        known = {a.name: a for a in self.arguments}
        for name in values:
            if name not in known:
                raise unknown_prompt_argument(self.name, name, list(known))
        words: dict[str, str] = {}
        for argument in self.arguments:
            value = values.get(argument.name, "")
            if not value:
                if argument.required:
                    raise prompt_argument_missing(self.name, argument.name)
                words[argument.name] = argument.absent
                continue
            if argument.completes:
                value = str(admit(value, grants))
                with refusing(Asked(knowledge_base_id=values[argument.name])):
                    store.require_knowledge_base(value)
            elif argument.name == "cursor" and not (value.isascii() and value.isdigit()):
                raise not_a_cursor(value)
            words[argument.name] = value
        words["changed"] = CHANGED_BY_DIFF if "diff_knowledge_article" in tools else CHANGED_BY_READ
        return Template(self.template).substitute(words)


def knowledge_base_completions(store: KnowledgeBaseStore, grants: Grants, typed: str) -> list[str]:
    """The ids of the granted knowledge bases whose id or name starts with what the user typed
    (ignoring case), by name: what a knowledge_base_id argument completes to."""
    store.catch_up()
    prefix = typed.strip().lower()
    found = sorted(
        (kb.name.lower(), kb.knowledge_base_id)
        for kb in store.knowledge_bases()
        if (grants is None or kb.knowledge_base_id in grants)
        and (kb.knowledge_base_id.startswith(prefix) or kb.name.lower().startswith(prefix))
    )
    return [kb for _, kb in found]


KNOWLEDGE_BASE = PromptArgument(
    name="knowledge_base_id",
    title="Knowledge base",
    description="The id of a granted knowledge base (type part of its name to complete it).",
    completes=True,
)

CHANGED_BY_READ = (
    "Call read_knowledge_article once for it, say whether what your answer took from it still "
    "holds, and cite the read's citation from now on."
)
CHANGED_BY_DIFF = (
    "Call diff_knowledge_article with its knowledge_base_id and article_id and since_version "
    "set to the citation's updated_at, say whether the passage your answer took from it still "
    "says the same, and cite the current citation it returns from now on."
)

CITE_ANSWER = Prompt(
    name="cite_answer",
    title="Answer with citations",
    description=(
        "Answer a question from one knowledge base, citing each article read as "
        "{knowledge_base_id, article_id, updated_at}, and keep the cursor to re-check the "
        "citations later."
    ),
    arguments=(
        KNOWLEDGE_BASE,
        PromptArgument(name="question", title="Question", description="What to answer."),
    ),
    template="""\
Answer this question from knowledge base $knowledge_base_id, citing what you read:

$question

1. Take the cursor first. If you keep one for this knowledge base, use it. Otherwise call \
poll_resource_events with resource_type "knowledge_base", resource_id "$knowledge_base_id" and \
after_sequence 0, and again from next_sequence while has_more is true; the last next_sequence \
is the cursor. From it, a later check sees every change to what you are about to read.
2. Call search_knowledge_base with knowledge_base_id "$knowledge_base_id" and the question's \
key words as the query; search again with other words if the hits do not answer it.
3. Call read_knowledge_article for each hit you use, and answer from the content you read, \
not from snippets.
4. Answer only from what you read. After each statement, cite the article it comes from as \
{knowledge_base_id, article_id, updated_at}, copied from that read's citation: updated_at \
names the exact version you read. If the knowledge base does not answer the question, say so \
rather than guess.
5. End with the citations and the cursor, so the citations can be re-checked later \
(the recheck_citations prompt).""",
)

RECHECK_CITATIONS = Prompt(
    name="recheck_citations",
    title="Re-check citations",
    description=(
        "Re-check earlier citations from the cursor kept with them: poll what changed since, "
        "re-read only the articles that moved, and say which citations are current, changed "
        "or gone."
    ),
    arguments=(
        KNOWLEDGE_BASE,
        PromptArgument(
            name="cursor",
            title="Cursor",
            description="The next_sequence kept with the citations (else the one given with "
            "them earlier in this conversation).",
            required=False,
            absent="set to the cursor kept with them",
        ),
        PromptArgument(
            name="citations",
            title="Citations",
            description="The citations to re-check, each {knowledge_base_id, article_id, "
            "updated_at} (else the ones given earlier in this conversation).",
            required=False,
            absent="the ones given earlier in this conversation",
        ),
    ),
    template="""\
Re-check these citations from knowledge base $knowledge_base_id: $citations.

1. Call poll_resource_events with resource_type "knowledge_base", resource_id \
"$knowledge_base_id" and after_sequence $cursor, and again from next_sequence while has_more \
is true. The last next_sequence is the new cursor.
2. For each citation, take the events of its article_id whose updated_at is later than the \
citation's updated_at (an event at or before it is already in the version cited). The latest \
of them decides:
   - none: current. Do not read the article again.
   - unpublished: gone. It is no longer an answer; do not cite it.
   - published, saved or retitled: changed. $changed
3. Report each citation as current, changed (with its new citation and what changed) or gone, \
then give the new cursor to keep with the citations.""",
)

PROMPTS: dict[str, Prompt] = {prompt.name: prompt for prompt in (CITE_ANSWER, RECHECK_CITATIONS)}
"""The prompts every server serves."""
