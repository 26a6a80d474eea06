"""The trace: the generated day and every tool call with its result, as JSON Lines.

One line per record, each tagged with its seed and run, so a trace can be audited, replayed, or
recounted on its own (the staleness table can be rebuilt from it with no access to the store).
Record kinds, in order of appearance within a run:

- `run`: seed, run (`popularity`, `uniform` or `edits`), parameters, delay for edits runs
- `article`: index, rank, article_id, title, content, updated_at (as published)
- `question`: number, at, article (index), query
- `save`: at, article, article_id, action (`content`/`retitle`/`unpublish`), title, content,
  updated_at and sequence of the event the save wrote
- `call`: at, purpose, tool, arguments, then `result` or `error`, and `bytes` (the size of the
  JSON the agent receives)
- `check`: hour, at and that check's figures (staleness runs)
- `edit`: at, answer, article_id and its outcome (edits runs)
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import msgspec

_encoder = msgspec.json.Encoder()


class Trace:
    """Writes records for one run to a file; `enabled` is False for the null trace."""

    enabled = True

    def __init__(self, path: Path | str, *, seed: int, run: str) -> None:
        self.path = Path(path)
        self._file: IO[bytes] = self.path.open("ab")
        self._tags = {"seed": seed, "run": run}

    def write(self, kind: str, **fields: Any) -> None:
        self._file.write(_encoder.encode({"kind": kind, **self._tags, **fields}) + b"\n")

    def call(self, **fields: Any) -> None:
        self.write("call", **fields)

    def close(self) -> None:
        self._file.close()


class NullTrace(Trace):
    """No trace asked for: every write is a no-op (and costs nothing)."""

    enabled = False

    def __init__(self) -> None:
        pass

    def write(self, kind: str, **fields: Any) -> None:
        return None

    def close(self) -> None:
        return None


def read_trace(path: Path | str) -> list[dict[str, Any]]:
    """All records of a trace file, in order."""
    decoder = msgspec.json.Decoder()
    with Path(path).open("rb") as f:
        return [decoder.decode(line) for line in f if line.strip()]
