"""The README's embedding example runs as written."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def embedding_example() -> str:
    section = README.read_text().split("## Embedding the Article aggregate", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_embedding_example_runs(tmp_path: Path, capsys) -> None:
    script = tmp_path / "example.py"
    script.write_text(embedding_example())
    runpy.run_path(str(script), run_name="__main__")
    printed = capsys.readouterr().out
    assert printed.strip().endswith("['Drafted', 'Published', 'Saved']")
