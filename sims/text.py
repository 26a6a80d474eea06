"""Synthetic support articles: distinct titles, ~1.5 KB bodies, and the edits people make.

The text only has to behave like a support knowledge base under full-text search: each title
names a task (verb, object, qualifier), the body repeats the task's words a few times amid
generic support prose, so a search for a task finds its article first and related tasks next.
Everything is drawn from a `random.Random` the caller seeds, so a seed fixes every byte."""

from __future__ import annotations

import functools
import random
import re

VERBS = (
    "Reset", "Configure", "Export", "Import", "Troubleshoot", "Set up", "Remove", "Update",
    "Migrate", "Enable", "Disable", "Share", "Restore", "Archive", "Rotate", "Audit",
    "Schedule", "Approve", "Sync", "Review",
)  # fmt: skip
OBJECTS = (
    "passwords", "invoices", "API keys", "webhooks", "access roles", "backups", "notifications",
    "custom fields", "reports", "email templates", "payment methods", "activity logs",
    "calendar integrations", "data extracts", "team permissions", "tags", "saved searches",
    "dashboards", "two-factor codes", "billing contacts", "SSO certificates", "project folders",
    "automation rules", "timesheet entries", "support tickets",
)  # fmt: skip
QUALIFIERS = (
    "in bulk", "for a sandbox workspace", "on the mobile app", "with the REST interface",
    "from the admin console", "after a plan change", "for guest users", "during a trial",
    "across time zones", "with single sign-on", "behind a proxy", "on a borrowed device",
)  # fmt: skip

# Every word a search uses (a title's words but the stop words) belongs to one verb, object or
# qualifier alone, as the index sees it (porter stems: "exports" is "export", "one" is "on"), and
# the prose around the task words never uses one, so a search for a task's words finds that
# task's article first, as in a well-kept knowledge base: no other title holds all of them.
# `tests/test_sim_day.py` checks this over the whole vocabulary, every title and all the prose.
PLACES = (
    "the preferences page", "the control panel", "the account page", "the main menu",
    "your profile", "the connections tab", "the privacy page", "the overview screen",
    "the side panel", "the people list", "the developer page", "the tools page",
)  # fmt: skip
CONTROLS = (
    "the pencil icon", "the three-dot menu", "the Advanced toggle", "the Done button",
    "the filter bar", "the download dialog", "the confirmation prompt", "the status column",
    "the lookup box", "the drop-down list", "the checkbox beside each row", "the Apply link",
)  # fmt: skip
ROLES = ("an owner", "an administrator", "a finance lead", "a regular member", "a visitor")
CAUSES = (
    "a browser extension blocks the page", "the session expired",
    "the subscription lacks the feature", "a firewall strips the request headers",
    "the computer clock is wrong", "another administrator edited the policy",
    "the upload file uses the wrong encoding", "the account is still on an old tier",
    "the token was revoked",
)  # fmt: skip

_STEP_TEMPLATES = (
    "Open {place} and choose {control}.",
    "Select the {obj} you want to modify, then use {control}.",
    "Check that your account has the rights of {role}; only {role} can {verb} {obj}.",
    "Wait for the banner that confirms the result, which can take up to {n} minutes.",
    "If the list is long, type part of the name in {control} to narrow it down.",
    "Confirm with {control}; the result applies to every member of the account.",
    "Go back to {place} and refresh the page to see the new state of your {obj}.",
    "Download the summary from {place} if you need a record for your files.",
)
_NOTE_TEMPLATES = (
    "If nothing happens, {cause}; fix that first and try again.",
    "People often see an error here when {cause}.",
    "Edits made on a phone can take {n} minutes to appear on the web.",
    "Write to the help desk with the date of the attempt and your account name if the "
    "problem stays.",
)

TARGET_LENGTH = 1_450
"""Bodies grow sentence by sentence until they reach this many characters (~1.5 KB)."""

STOP_WORDS = frozenset(
    {"a", "an", "and", "the", "to", "for", "of", "in", "on", "with", "from", "after", "during"}
    | {"across", "behind", "up", "your", "is"}
)


@functools.cache
def _title_parts() -> dict[str, tuple[str, str, str]]:
    return {f"{v} {o} {q}": (v, o, q) for v in VERBS for o in OBJECTS for q in QUALIFIERS}


def all_titles() -> list[str]:
    """Every title the generator can produce (6,000): a day draws its 400 from these, and a
    retitle draws a title no article has had yet, so titles stay distinct all day."""
    return list(_title_parts())


def _parts(title: str) -> tuple[str, str, str]:
    try:
        return _title_parts()[title]
    except KeyError:
        raise ValueError(f"not a generated title: {title!r}") from None


def _step(rng: random.Random, verb: str, obj: str) -> str:
    return rng.choice(_STEP_TEMPLATES).format(
        place=rng.choice(PLACES),
        control=rng.choice(CONTROLS),
        role=rng.choice(ROLES),
        verb=verb.lower(),
        obj=obj,
        n=rng.randint(2, 30),
    )


def _note(rng: random.Random) -> str:
    return rng.choice(_NOTE_TEMPLATES).format(cause=rng.choice(CAUSES), n=rng.randint(2, 30))


def intro(title: str) -> str:
    verb, obj, qualifier = _parts(title)
    return (
        f"This article explains how to {verb.lower()} {obj} {qualifier}. "
        f"Read it before you {verb.lower()} {obj} yourself."
    )


def body(rng: random.Random, title: str) -> str:
    """A new article body for `title`: an intro naming the task, numbered steps, notes."""
    verb, obj, _ = _parts(title)
    steps: list[str] = []
    notes: list[str] = []
    length = len(intro(title))
    while length < TARGET_LENGTH:
        if rng.random() < 0.7:
            sentence = _step(rng, verb, obj)
            steps.append(sentence)
        else:
            sentence = _note(rng)
            notes.append(sentence)
        length += len(sentence) + 4
    return _render(title, steps, notes)


def _render(title: str, steps: list[str], notes: list[str]) -> str:
    lines = [intro(title), "", "Steps:"]
    lines += [f"{i}. {s}" for i, s in enumerate(steps, 1)]
    if notes:
        lines += ["", "Notes:", *(f"- {n}" for n in notes)]
    return "\n".join(lines)


_STEP_LINE = re.compile(r"^(\d+)\. (.*)$")


def revise(rng: random.Random, title: str, content: str) -> str:
    """A person's content edit: one step of the body rewritten (the length stays ~1.5 KB)."""
    verb, obj, _ = _parts(title)
    lines = content.split("\n")
    steps = [(i, found) for i, line in enumerate(lines) if (found := _STEP_LINE.match(line))]
    if not steps:
        return content + "\n" + _step(rng, verb, obj)
    row, step = rng.choice(steps)
    number = step.group(1)
    replacement = _step(rng, verb, obj)
    while f"{number}. {replacement}" == lines[row]:
        replacement = _step(rng, verb, obj)
    lines[row] = f"{number}. {replacement}"
    return "\n".join(lines)


def retitled_body(rng: random.Random, new_title: str, content: str) -> str:
    """The body after a retitle: the intro follows the new title, and one step is revised."""
    lines = content.split("\n")
    lines[0] = intro(new_title)
    return revise(rng, new_title, "\n".join(lines))


def new_title(rng: random.Random, title: str, taken: set[str]) -> str:
    """A retitle keeps the task's object and rewords the rest, into a title never used yet."""
    _, obj, _ = _parts(title)
    candidates = [f"{v} {obj} {q}" for v in VERBS for q in QUALIFIERS]
    free = [c for c in candidates if c not in taken]
    if not free:
        free = [c for c in all_titles() if c not in taken]
    return rng.choice(free)


def keywords(title: str) -> str:
    """What an agent types into search for a question about `title`: its content words."""
    words = [w for w in re.findall(r"\w+", title.lower()) if w not in STOP_WORDS]
    return " ".join(words)
