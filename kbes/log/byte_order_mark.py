"""A JSON Lines file may start with a UTF-8 byte-order mark, as Notepad and PowerShell write
one: both files kbes reads as JSON Lines (citations, an exported log) skip it; a UTF-16 mark is
named, since such a file is not UTF-8 at all."""

from __future__ import annotations

import codecs


def without_bom(first: bytes | str, name: str, error: type[Exception]) -> bytes | str:
    """The first line of a JSON Lines file without a UTF-8 byte-order mark; `error` for a
    UTF-16 one."""
    if isinstance(first, str):
        return first.removeprefix("\ufeff")
    if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise error(
            f"{name} line 1: the file starts with a UTF-16 byte-order mark, so it is UTF-16 "
            "text; save it as UTF-8 (JSON Lines are UTF-8)"
        )
    return first.removeprefix(codecs.BOM_UTF8)
